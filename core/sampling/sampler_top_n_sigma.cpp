#include <cmath>
#include <limits>

#include "sampling/samplers.h"

namespace wb {

void TopNSigmaSampler::apply(CandidateSet& cands) {
    auto& data = cands.data;
    cutoff_ = kNoThreshold;
    if (n_ <= 0.0f || data.size() <= 1) {
        return;
    }
    const float ninf = -std::numeric_limits<float>::infinity();
    // Float sums in the set's order, as llama.cpp accumulates them, so the same logits in the same
    // order give the same cut-off to the bit.
    float max_logit = data.front().logit;
    float sum = 0.0f;
    size_t n_finite = 0;
    for (const Candidate& c : data) {
        if (c.logit != ninf) {
            max_logit = std::max(max_logit, c.logit);
            sum += c.logit;
            ++n_finite;
        }
    }
    if (n_finite == 0) {
        return;  // everything masked: nothing to measure
    }
    const float mean = sum / static_cast<float>(n_finite);
    float acc = 0.0f;
    for (const Candidate& c : data) {
        if (c.logit != ninf) {
            acc = static_cast<float>(acc + std::pow(static_cast<double>(c.logit - mean), 2));
        }
    }
    const float sigma = std::sqrt(acc / static_cast<float>(n_finite));
    const float cutoff = max_logit - n_ * sigma;
    cutoff_ = cutoff;
    // The best logit always passes, so at least one candidate stays; erase_if keeps the order.
    std::erase_if(data, [cutoff](const Candidate& c) { return c.logit < cutoff; });
}

std::string TopNSigmaSampler::describe() const {
    if (n_ <= 0.0f) return "n = " + format_number(n_) + " (off)";
    if (std::isnan(cutoff_)) return "n = " + format_number(n_) + ": fewer than two finite logits, nothing cut";
    return "logit >= max - " + format_number(n_) + " sigma = " + format_number(cutoff_);
}

}  // namespace wb
