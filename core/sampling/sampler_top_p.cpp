#include "sampling/samplers.h"

namespace wb {

void TopPSampler::apply(CandidateSet& cands) {
    if (p_ >= 1.0f || cands.data.size() <= 1) {
        return;
    }
    compute_probs(cands);
    // top_p <= 0 is reached by the first token: the most likely token alone survives.
    const size_t keep = sorted_prefix_reaching(cands, p_);
    cands.data.resize(keep);
    cands.sorted = true;
}

}  // namespace wb
