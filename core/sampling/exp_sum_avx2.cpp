// exp_sum() over 8 lanes with AVX2 and FMA; the steps are exp_sum_internal.h's, as the portable
// version in exp_sum.cpp does them. Built with -mavx2 -mfma -ffp-contract=off and called only where
// the CPU has both (exp_sum_avx2_if_supported). Nothing here but the entry point has external
// linkage, and no standard-library inline function is used: the linker could otherwise keep this
// file's AVX2 copy of one for the whole program (tests/check_isa_symbols.cmake).
#include <immintrin.h>

#include "sampling/exp_sum_internal.h"

namespace wb {

namespace {

__m256 exp_terms8(__m256 d) {
    const __m256 lo = _mm256_set1_ps(kExpMinArg);
    const __m256 keep = _mm256_cmp_ps(d, lo, _CMP_GE_OQ);
    const __m256 c = _mm256_min_ps(_mm256_max_ps(d, lo), _mm256_setzero_ps());
    const __m256 k = _mm256_round_ps(_mm256_mul_ps(c, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fmadd_ps(k, _mm256_set1_ps(-kLn2Hi), c);
    r = _mm256_fmadd_ps(k, _mm256_set1_ps(-kLn2Lo), r);
    __m256 q = _mm256_set1_ps(kExpC[7]);
    for (int i = 6; i >= 0; --i) q = _mm256_fmadd_ps(q, r, _mm256_set1_ps(kExpC[i]));
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(keep, _mm256_mul_ps(q, _mm256_castsi256_ps(bits)));
}

// Lanes 0-3 into lo, 4-7 into hi, each term widened to double first.
void add_lanes(__m256 t, __m256d& lo, __m256d& hi) {
    lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(t)));
    hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(t, 1)));
}

}  // namespace

double exp_sum_avx2(const float* x, size_t n, float m, float* terms) {
    const __m256 mv = _mm256_set1_ps(m);
    __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
    size_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256 t = exp_terms8(_mm256_sub_ps(_mm256_loadu_ps(x + j), mv));
        if (terms) _mm256_storeu_ps(terms + j, t);
        add_lanes(t, lo, hi);
    }
    if (j < n) {
        // The tail padded with -inf, whose terms are 0: adding +0 leaves a lane's sum (>= +0) as it is,
        // as the portable version, which adds nothing there.
        alignas(32) float tail[8];
        for (size_t i = 0; i < 8; ++i) tail[i] = j + i < n ? x[j + i] : -__builtin_inff();
        alignas(32) float t_out[8];
        const __m256 t = exp_terms8(_mm256_sub_ps(_mm256_load_ps(tail), mv));
        _mm256_store_ps(t_out, t);
        if (terms)
            for (size_t i = 0; j + i < n; ++i) terms[j + i] = t_out[i];
        add_lanes(t, lo, hi);
    }
    // The fixed tree: lanes l and l + 4, then l and l + 2, then the last two.
    const __m256d s = _mm256_add_pd(lo, hi);
    const __m128d u = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return _mm_cvtsd_f64(_mm_add_sd(u, _mm_unpackhi_pd(u, u)));
}

}  // namespace wb
