#pragma once
// KL(ref || got) in nats between the next-token distributions of two logit rows over the whole
// vocabulary: log-softmax of both in double, then sum p_ref * (log p_ref - log p_got). A row that
// gives a non-finite value (a NaN logit) counts as 1e9, so a broken backend cannot pass a mean.
// Shared by the plain (Qt-free) tests that compare backends or schedules on random models.
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace wb_test {

inline double kl_nats(const float* ref, const float* got, int32_t n_vocab) {
    const double mr = *std::max_element(ref, ref + n_vocab), mg = *std::max_element(got, got + n_vocab);
    double zr = 0.0, zg = 0.0;
    for (int32_t i = 0; i < n_vocab; ++i) {
        zr += std::exp(double(ref[i]) - mr);
        zg += std::exp(double(got[i]) - mg);
    }
    const double lzr = std::log(zr) + mr, lzg = std::log(zg) + mg;
    double kl = 0.0;
    for (int32_t i = 0; i < n_vocab; ++i) {
        const double lpr = double(ref[i]) - lzr, lpg = double(got[i]) - lzg;
        kl += std::exp(lpr) * (lpr - lpg);
    }
    return std::isfinite(kl) ? kl : 1e9;
}

}  // namespace wb_test
