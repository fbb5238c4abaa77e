#include <cmath>

#include "sampling/samplers.h"

namespace wb {

void MirostatV2Sampler::truncate(CandidateSet& cands) const {
    cands.softmax();
    auto& data = cands.data;
    size_t keep = 0;
    while (keep < data.size() && -std::log2(data[keep].p) <= mu_) {
        ++keep;
    }
    data.resize(std::max<size_t>(keep, 1));
    compute_probs(cands);
}

void MirostatV2Sampler::apply(CandidateSet& cands) {
    if (cands.data.empty()) {
        return;
    }
    mu_before_ = mu_;
    truncate(cands);
    const size_t index = draw_index(cands, rng_);
    cands.selected = static_cast<int32_t>(index);
    mu_ = mirostat_next_mu(mu_, eta_, tau_, cands.data[index].p);
}

std::string MirostatV2Sampler::describe() const {
    return "tau " + format_number(tau_) + ", eta " + format_number(eta_) + ": surprise <= mu " +
           format_number(mu_before_) + ", mu -> " + format_number(mu_);
}

}  // namespace wb
