#include <algorithm>
#include <cmath>

#include "sampling/samplers.h"

namespace wb {

void MinPSampler::apply(CandidateSet& cands) {
    min_logit_ = kNoThreshold;
    if (p_ <= 0.0f || cands.data.empty()) {
        return;
    }
    float max_logit = cands.data.front().logit;
    if (!cands.sorted) {
        for (const Candidate& c : cands.data) {
            max_logit = std::max(max_logit, c.logit);
        }
    }
    // p >= min_p * p_max  <=>  logit >= max_logit + log(min_p): no softmax needed. min_p > 1 would
    // drop even the best token, so it counts as 1 (only the tokens tied with the best stay).
    const float min_logit = max_logit + std::log(std::min(p_, 1.0f));
    min_logit_ = min_logit;
    // erase_if keeps the order, so a sorted set stays sorted.
    std::erase_if(cands.data, [min_logit](const Candidate& c) { return c.logit < min_logit; });
}

}  // namespace wb
