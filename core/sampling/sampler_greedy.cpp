#include <algorithm>

#include "sampling/samplers.h"

namespace wb {

void GreedySampler::apply(CandidateSet& cands) {
    if (cands.data.empty()) {
        return;
    }
    // candidate_before breaks logit ties towards the lowest id.
    auto best = cands.sorted ? cands.data.begin()
                             : std::min_element(cands.data.begin(), cands.data.end(), candidate_before);
    cands.selected = static_cast<int32_t>(best - cands.data.begin());
    compute_probs(cands);
}

}  // namespace wb
