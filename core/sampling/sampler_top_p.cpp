#include "sampling/samplers.h"

namespace wb {

void TopPSampler::apply(CandidateSet& cands) {
    mass_reached_ = kNoThreshold;
    if (p_ >= 1.0f || cands.data.size() <= 1) {
        return;
    }
    compute_probs(cands);
    // top_p <= 0 is reached by the first token: the most likely token alone survives.
    const size_t keep = sorted_prefix_reaching(cands, p_);
    cands.data.resize(keep);
    cands.sorted = true;
    // The mass in sort_until_mass's order and arithmetic (double sum of the float p).
    double mass = 0.0;
    for (const Candidate& c : cands.data) mass += c.p;
    mass_reached_ = mass;
}

}  // namespace wb
