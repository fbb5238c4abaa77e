// AVX2 activation quantizers (Q8_0, Q8_1, Q8_K): the same values as the scalar ones in
// quant_scalar.cpp, bit for bit, eight at a time. Every step is exact or rounds as its scalar
// counterpart does: the block maximum is a max (order-free), x * id is one float multiply, the
// rounding is to nearest even (nearbyint / lrint in the default mode), and the sums are integers.
// Built with -mavx2 -mfma -mf16c; handed out only after quant.cpp has checked the CPU.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/quant_blocks.h"
#include "quant/quant_internal.h"
#include "quant/quant_isa_local.h"
#include "util/fp16.h"

namespace wb {

namespace {

__m256 abs8(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

// max |x[j]| over n (a multiple of 8) values; a NaN is passed over, as std::max(amax, NaN) does.
float amax_of(const float* x, int n) {
    __m256 m = _mm256_setzero_ps();
    for (int j = 0; j < n; j += 8) m = _mm256_max_ps(abs8(_mm256_loadu_ps(x + j)), m);
    return hmax8(m);
}

// 32 int32 values (four registers, elements in order) -> 32 int8 in order. They are in [-127, 127].
void pack32(__m256i i0, __m256i i1, __m256i i2, __m256i i3, int8_t* out) {
    const __m256i a = _mm256_packs_epi32(i0, i1);  // 0-3 8-11 4-7 12-15 (16-bit)
    const __m256i b = _mm256_packs_epi32(i2, i3);
    const __m256i c = _mm256_packs_epi16(a, b);  // 0-3 8-11 16-19 24-27 4-7 12-15 20-23 28-31
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_permutevar8x32_epi32(c, perm));
}

__m256i round_to_int(__m256 v) { return _mm256_cvtps_epi32(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }

// One Q8_0 / Q8_1 block: qs = round(x * 127/amax); returns d = amax/127 and sum(qs) in sum.
float quantize_block_q8_avx2(const float* x, int8_t* qs, int& sum) {
    const float amax = amax_of(x, kQK);
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const __m256 mul = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) q[k] = round_to_int(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), mul));
    pack32(q[0], q[1], q[2], q[3], qs);
    __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4e));
    t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xb1));
    sum = _mm_cvtsi128_si32(t);
    return d;
}

// The scalar conversion, so that even a non-finite scale is stored as the scalar quantizers store it.
uint16_t to_f16(float f) { return f32_to_fp16(f); }

void quantize_q8_0_avx2(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_0*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i) {
        int sum;
        y[i].d = to_f16(quantize_block_q8_avx2(x + i * kQK, y[i].qs, sum));
    }
}

void quantize_q8_1_avx2(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_1*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i) {
        int sum;
        const float d = quantize_block_q8_avx2(x + i * kQK, y[i].qs, sum);
        y[i].d = to_f16(d);
        y[i].s = to_f16(d * float(sum));
    }
}

// Q8_K: the scale comes from the value of largest magnitude with its sign, the first such value as
// the scalar search (strictly greater replaces) finds it.
void quantize_q8_k_avx2(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_K*>(dst);
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const float* xb = x + i * kQKK;
        BlockQ8_K& b = y[i];
        const float amax = amax_of(xb, kQKK);
        float max = 0.0f;
        for (int j = 0; j < kQKK && amax > 0.0f; ++j)
            if (abs_f(xb[j]) == amax) {
                max = xb[j];
                break;
            }
        if (max == 0.0f) {
            std::memset(&b, 0, sizeof b);
            continue;
        }
        const float iscale = -127.0f / max;
        const __m256 mul = _mm256_set1_ps(iscale);
        const __m256i top = _mm256_set1_epi32(127);
        for (int j = 0; j < kQKK; j += 32) {
            __m256i q[4];
            for (int k = 0; k < 4; ++k)
                q[k] = _mm256_min_epi32(round_to_int(_mm256_mul_ps(_mm256_loadu_ps(xb + j + 8 * k), mul)), top);
            pack32(q[0], q[1], q[2], q[3], b.qs + j);
        }
        for (int k = 0; k < kQKK / 16; ++k) {
            int sum = 0;
            for (int l = 0; l < 16; ++l) sum += b.qs[16 * k + l];
            b.bsums[k] = int16_t(sum);
        }
        b.d = 1.0f / iscale;
    }
}

}  // namespace

void add_activation_avx2_kernels(KernelTable& t) {
    t.quantize_q8_0 = quantize_q8_0_avx2;
    t.quantize_q8_1 = quantize_q8_1_avx2;
    t.quantize_q8_k = quantize_q8_k_avx2;
}

}  // namespace wb
