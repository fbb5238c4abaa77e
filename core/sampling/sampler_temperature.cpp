#include "sampling/samplers.h"

namespace wb {

void TemperatureSampler::apply(CandidateSet& cands) {
    n_seen_ = cands.data.size();
    // A positive divisor keeps the order, so sorted stays as it was; p must be recomputed.
    for (Candidate& c : cands.data) {
        c.logit /= t_;
    }
}

}  // namespace wb
