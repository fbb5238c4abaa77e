// The AVX-512 (F, BW, VL, VNNI) form of the Q8_0 decode kernel over 8 weight rows (DotKernels::rows8;
// quant_avx2_rows.cpp's dot_q8_0_rows8), built with those flags and handed out by quant.cpp only on a
// CPU that has them (the avx512 family). Q8_0 in its row order: two rows' blocks in one register; the
// 8 int32 lanes of each are the AVX2 kernel's (lane l: values 4l..4l+3), made by one
// _mm512_dpbusd_epi32 on |q| and the activations with q's sign, and each row keeps its 8-lane float
// accumulator in its half, with the AVX2 kernel's operations in each lane: the same bits. 10 % more
// weight bytes per CPU second than the AVX2 kernel in tests/bench_tiles (matrix in cache).
//
// Q4_K's gemv is not here: neither a 512-bit form (a chunk's two sub-blocks in one register, scales by
// permutes) nor the AVX2 kernel with vpdpwssd took less time per block on Zen 4, which runs 512-bit
// operations as two halves. What the Q4_K decode spends beside the products (each block's scales
// decoded again, 8 rows' sums reduced) would go with a layout repacked at load time, as llama.cpp does.
#include <immintrin.h>

#include "quant/quant_avx2_common.h"
#include "quant/quant_blocks.h"
#include "quant/quant_internal.h"
#include "quant/quant_isa_local.h"

namespace wb {

namespace {

WB_AVX512_WARNINGS_OFF

constexpr int kRows = 8;

void dot_q8_0_rows8_512(int64_t n, const void* w, size_t w_stride, const void* x, float* out) {
    const auto* rows = static_cast<const uint8_t*>(w);
    const auto* bx = static_cast<const BlockQ8_0*>(x);
    __m512 acc[kRows / 2];  // rows 2p (low half) and 2p+1 (high half)
    for (__m512& a : acc) a = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / kQK; ++i) {
        prefetch_next_rows<BlockQ8_0>(rows, w_stride, i);
        const __m512i y = _mm512_broadcast_i64x4(load32(bx[i].qs));
        // fp16(d_w) * d_x per row, as the AVX2 kernel's scalar product (one rounding either way)
        const __m256 dd = _mm256_mul_ps(row_scales<BlockQ8_0>(rows, w_stride, i, offsetof(BlockQ8_0, d)),
                                        _mm256_set1_ps(fp16(bx[i].d)));
#pragma GCC unroll 4
        for (int p = 0; p < kRows / 2; ++p) {
            const auto* b0 = reinterpret_cast<const BlockQ8_0*>(rows + size_t(2 * p) * w_stride) + i;
            const auto* b1 = reinterpret_cast<const BlockQ8_0*>(rows + size_t(2 * p + 1) * w_stride) + i;
            const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(load32(b0->qs)), load32(b1->qs), 1);
            // |q| (-128 as 128, unsigned) times y with q's sign: the AVX2 kernel's products, exactly
            const __m512i sy = _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(q), _mm512_setzero_si512(), y);
            const __m512i lanes = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(q), sy);
            const __m512i idx = _mm512_inserti64x4(_mm512_set1_epi32(2 * p), _mm256_set1_epi32(2 * p + 1), 1);
            const __m512 scale = _mm512_permutexvar_ps(idx, _mm512_castps256_ps512(dd));
            acc[p] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(lanes), acc[p]);
        }
    }
    // + 0.0f: the row kernel adds its (here empty) scalar terms after the sum, which turns -0 into +0.
    for (int p = 0; p < kRows / 2; ++p) {
        out[2 * p] = hsum(_mm512_castps512_ps256(acc[p])) + 0.0f;
        out[2 * p + 1] = hsum(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[p]), 1))) + 0.0f;
    }
}

WB_AVX512_WARNINGS_ON

}  // namespace

void add_rows8_avx512_kernels(KernelTable& t) {
    t.rows8_in(DotOrder::kRow, GgmlType::Q8_0) = dot_q8_0_rows8_512;
}

}  // namespace wb
