#include <algorithm>

#include "sampling/samplers.h"

namespace wb {

void TopKSampler::apply(CandidateSet& cands) {
    const size_t n = cands.data.size();
    if (k_ <= 0 || static_cast<size_t>(k_) >= n) {
        return;
    }
    const size_t k = static_cast<size_t>(k_);
    if (!cands.sorted) {
        // Select, then sort only the k survivors: O(n + k log k) instead of sorting the vocabulary.
        auto kth = cands.data.begin() + static_cast<std::ptrdiff_t>(k);
        std::nth_element(cands.data.begin(), kth, cands.data.end(), candidate_before);
        std::sort(cands.data.begin(), kth, candidate_before);
    }
    cands.data.resize(k);
    cands.sorted = true;
}

}  // namespace wb
