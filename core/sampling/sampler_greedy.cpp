#include <algorithm>
#include <cmath>

#include "sampling/exp_sum.h"
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
    const float max_logit = best->logit;
    if (!std::isfinite(max_logit)) {
        compute_probs(cands);  // all masked (uniform) or +inf (no distribution): compute_probs' rules
        return;
    }
    // p = term / sum as compute_probs forms it, with exp_sum's terms (see GreedySampler in samplers.h).
    terms_.resize(cands.data.size());
    for (size_t i = 0; i < cands.data.size(); ++i) terms_[i] = cands.data[i].logit;
    const double inv = 1.0 / exp_sum(terms_.data(), terms_.size(), max_logit, terms_.data());
    for (size_t i = 0; i < cands.data.size(); ++i) cands.data[i].p = static_cast<float>(terms_[i] * inv);
}

}  // namespace wb
