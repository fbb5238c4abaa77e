#include <cmath>

#include "sampling/samplers.h"

namespace wb {

float mirostat_next_mu(float mu, float eta, float tau, float p_selected) {
    const float surprise = -std::log2(p_selected);
    return mu - eta * (surprise - tau);
}

int32_t MirostatSampler::truncate(CandidateSet& cands, int32_t n_vocab) const {
    cands.softmax();
    const auto& data = cands.data;
    // Least-squares fit of log(p_i / p_i+1) against log((i + 2) / (i + 1)) over the best m tokens
    // estimates the Zipf exponent s of the distribution (float, as in llama.cpp).
    float sum_ti_bi = 0.0f;
    float sum_ti_sq = 0.0f;
    for (size_t i = 0; i + 1 < static_cast<size_t>(m_) && i + 1 < data.size(); ++i) {
        const float t_i = std::log(static_cast<float>(i + 2) / static_cast<float>(i + 1));
        const float b_i = std::log(data[i].p / data[i + 1].p);
        sum_ti_bi += t_i * b_i;
        sum_ti_sq += t_i * t_i;
    }
    const float s_hat = sum_ti_bi / sum_ti_sq;
    const float epsilon_hat = s_hat - 1.0f;
    const float k = std::pow((epsilon_hat * std::pow(2.0f, mu_)) /
                                 (1.0f - std::pow(static_cast<float>(n_vocab), -epsilon_hat)),
                             1.0f / s_hat);
    // llama.cpp keeps max(int(k), 1). A k that int cannot hold (infinite when a zero p among the best m
    // makes the fit infinite, NaN, or past 2^31) converts to INT_MIN on x86, so llama.cpp keeps 1 token
    // there, and so do we.
    const size_t n = data.size();
    size_t keep = 1;
    if (std::isfinite(k) && k < 2147483648.0f && k >= 1.0f) {
        keep = std::min(static_cast<size_t>(k), n);
    }
    cands.data.resize(keep);
    compute_probs(cands);
    return static_cast<int32_t>(keep);
}

void MirostatSampler::apply(CandidateSet& cands) {
    if (cands.data.empty()) {
        return;
    }
    mu_before_ = mu_;
    k_ = truncate(cands, static_cast<int32_t>(cands.data.size()));
    const size_t index = draw_index(cands, rng_);
    cands.selected = static_cast<int32_t>(index);
    mu_ = mirostat_next_mu(mu_, eta_, tau_, cands.data[index].p);
}

std::string MirostatSampler::describe() const {
    return "tau " + format_number(tau_) + ", eta " + format_number(eta_) + ": k = " + format_number(k_) + ", mu " +
           format_number(mu_before_) + " -> " + format_number(mu_);
}

}  // namespace wb
