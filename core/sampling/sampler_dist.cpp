#include "sampling/samplers.h"

namespace wb {

size_t draw_index(CandidateSet& cands, std::mt19937_64& rng) {
    // The 53 high bits of one 64-bit draw give a uniform double in [0, 1) that is identical on every
    // platform, unlike std::uniform_real_distribution / std::discrete_distribution.
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    // Token i owns the interval (cum_{i-1}, cum_i] of the likelihood-sorted walk; walking a fixed
    // total order makes the draw independent of how earlier stages permuted the set.
    size_t index = sorted_prefix_reaching(cands, u) - 1;
    while (index > 0 && cands.data[index].p == 0.0f) {
        --index;  // u beyond a total rounded below 1: take the last token that has any mass
    }
    return index;
}

void DistSampler::apply(CandidateSet& cands) {
    if (cands.data.empty()) {
        return;
    }
    compute_probs(cands);
    cands.selected = static_cast<int32_t>(draw_index(cands, rng_));
}

}  // namespace wb
