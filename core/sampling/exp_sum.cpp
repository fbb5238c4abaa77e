// exp_sum(): the portable version and the choice between it and the AVX2 one. The portable version
// spells out each step of exp_sum_internal.h exactly as the AVX2 instructions compute it (fma for
// fma, min/max with the instructions' operand order), so the two agree bit for bit.
#include "sampling/exp_sum.h"

#include <bit>
#include <cmath>
#include <cstdint>

#include "sampling/exp_sum_internal.h"

namespace wb {

namespace {

float exp_term(float d) {
    const float lo = d > kExpMinArg ? d : kExpMinArg;  // _mm256_max_ps(d, lo): a NaN d gives lo
    const float c = lo < 0.0f ? lo : 0.0f;              // _mm256_min_ps(lo, 0)
    const float k = std::nearbyint(c * kLog2e);         // the default rounding: to nearest, ties to even
    float r = std::fma(k, -kLn2Hi, c);
    r = std::fma(k, -kLn2Lo, r);
    float q = kExpC[7];
    for (int i = 6; i >= 0; --i) q = std::fma(q, r, kExpC[i]);
    const uint32_t bits = uint32_t(int32_t(k) + 127) << 23;
    return d >= kExpMinArg ? q * std::bit_cast<float>(bits) : 0.0f;
}

}  // namespace

double exp_sum_portable(const float* x, size_t n, float m, float* terms) {
    double lane[8] = {};
    for (size_t j = 0; j < n; ++j) {
        const float t = exp_term(x[j] - m);
        if (terms) terms[j] = t;
        lane[j % 8] += double(t);
    }
    // The fixed tree of the AVX2 version: lanes l and l + 4, then l and l + 2, then the last two.
    const double s0 = lane[0] + lane[4], s1 = lane[1] + lane[5], s2 = lane[2] + lane[6], s3 = lane[3] + lane[7];
    return (s0 + s2) + (s1 + s3);
}

ExpSumFn exp_sum_avx2_if_supported() {
#if defined(WB_SAMPLING_AVX2)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return exp_sum_avx2;
#endif
    return nullptr;
}

double exp_sum(const float* x, size_t n, float m, float* terms) {
    // Decided once: the CPU does not change under a running process.
    static const ExpSumFn fn = [] {
        const ExpSumFn avx2 = exp_sum_avx2_if_supported();
        return avx2 ? avx2 : exp_sum_portable;
    }();
    return fn(x, n, m, terms);
}

}  // namespace wb
