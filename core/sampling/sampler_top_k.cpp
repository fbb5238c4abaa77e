#include <algorithm>

#include "sampling/samplers.h"

namespace wb {

void TopKSampler::apply(CandidateSet& cands) {
    const size_t n = cands.data.size();
    if (k_ <= 0 || static_cast<size_t>(k_) >= n) {
        return;
    }
    const size_t k = static_cast<size_t>(k_);
    if (cands.sorted) {
        cands.data.resize(k);
    } else {
        cands.data = best_candidates(cands.data, k);  // O(n), not a sort of the vocabulary
    }
    cands.sorted = true;
}

}  // namespace wb
