// AVX2 kernels over 8 weight rows and one token (DotKernels::rows8 in quant.h): decode, where each
// matmul is one activation row against every weight row. Built with -mavx2 -mfma -mf16c like
// quant_avx2.cpp.
//
// Q4_K in the order of llama.cpp's gemv (dot_q4_k_gemv in quant_avx2.cpp): per block, the exact
// integer sums of the scaled products and of the minimum term, folded into two float accumulators
// with one FMA each (by d_w * d_x, resp. dmin_w * d_x), the result their difference. One row at a time
// that is a horizontal sum of 8 lanes, a scalar decode of 16 six-bit values and two scalar FMAs per
// block, more work than the products; here the scales are decoded in a vector, the 8 rows' sums are
// reduced together so that row r sits in lane r, and their float operations are one vector FMA each:
// per lane exactly the operations of the row kernel, so the outputs are its bits.
//
// Q8_0 in its row order (dot_blocks<BlockQ8_0, ...> in quant_avx2.cpp): a block is too little work to
// share, but one row at a time read memory at 11-12 GB/s on the development VM where 8 rows read
// together, the next 8 prefetched as one run, read it at 14 (a decode of a tied-embedding model spends
// half its time in that matrix). Each row keeps its own 8-lane accumulator and its own horizontal sum.
//
// Both prefetch the next 8 rows as the contiguous run they are, a block's worth of each row per
// block: 8 short row streams restart every few kilobytes, too often for the hardware prefetcher.
#include <immintrin.h>

#include "quant/quant_avx2_common.h"
#include "quant/quant_blocks.h"
#include "quant/quant_internal.h"
#include "quant/quant_isa_local.h"

namespace wb {

namespace {

constexpr int kRows = 8;

// Row r's block sums of the scaled products in 8 int32 lanes (lane l: values 4l..4l+3 of each run of 32).
WB_INLINE __m256i q4_k_row_lanes(const BlockQ4_K& w, const BlockQ8_K& x, __m256i scales_mins) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i lanes = _mm256_setzero_si256();
    for (int ch = 0; ch < 4; ++ch) {
        const __m256i raw = load32(w.qs + 32 * ch);
        const __m256i lo = _mm256_and_si256(raw, m4), hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
        const __m256i s_lo = _mm256_shuffle_epi8(scales_mins, _mm256_set1_epi16(short(0x8000 | (2 * ch))));
        const __m256i s_hi = _mm256_shuffle_epi8(scales_mins, _mm256_set1_epi16(short(0x8000 | (2 * ch + 1))));
        lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(_mm256_maddubs_epi16(lo, load32(x.qs + 64 * ch)), s_lo));
        lanes = _mm256_add_epi32(lanes, _mm256_madd_epi16(_mm256_maddubs_epi16(hi, load32(x.qs + 64 * ch + 32)), s_hi));
    }
    return lanes;
}

// Row r's minimum term in 4 int32 lanes (lane m: sub-blocks 2m and 2m+1): the 8 minimums (bytes 8-15
// of scales_mins) times the activation sums of the 8 sub-blocks (sub_sums, int16).
WB_INLINE __m128i q4_k_row_min(__m256i scales_mins, __m128i sub_sums) {
    return _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_srli_si128(_mm256_castsi256_si128(scales_mins), 8)), sub_sums);
}

// Four 4-lane vectors per pair of rows -> one vector of the 8 rows' lane sums, row r in lane r (exact).
WB_INLINE __m256i hsum_i32x4_x8(const __m128i (&m)[kRows]) {
    // [r0 | r1], [r2 | r3], ...: hadd works within 128-bit halves
    const __m256i m01 = _mm256_set_m128i(m[1], m[0]), m23 = _mm256_set_m128i(m[3], m[2]);
    const __m256i m45 = _mm256_set_m128i(m[5], m[4]), m67 = _mm256_set_m128i(m[7], m[6]);
    // lanes r0 r2 r4 r6 | r1 r3 r5 r7
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(m01, m23), _mm256_hadd_epi32(m45, m67));
    return _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

void dot_q4_k_gemv_rows8(int64_t n, const void* w, size_t w_stride, const void* x, float* out) {
    const auto* rows = static_cast<const uint8_t*>(w);
    const auto* bx = static_cast<const BlockQ8_K*>(x);
    __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const BlockQ8_K& xb = bx[i];
        prefetch_next_rows<BlockQ4_K>(rows, w_stride, i);
        const __m256i bsums = load32(xb.bsums);
        // sub-block k's activation sum: bsums 2k + 2k+1 (|sum| <= 32 * 128, within int16)
        const __m128i sub_sums = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
        __m256i lanes[kRows];
        __m128i mins[kRows];
        for (int r = 0; r < kRows; ++r) {
            const BlockQ4_K& wb = reinterpret_cast<const BlockQ4_K*>(rows + size_t(r) * w_stride)[i];
            const __m256i scales_mins = q4_k_scales_mins(wb.scales);
            lanes[r] = q4_k_row_lanes(wb, xb, scales_mins);
            mins[r] = q4_k_row_min(scales_mins, sub_sums);
        }
        const __m256 dx = _mm256_set1_ps(xb.d);
        const __m256 d = _mm256_mul_ps(row_scales<BlockQ4_K>(rows, w_stride, i, offsetof(BlockQ4_K, d)), dx);
        const __m256 dmin = _mm256_mul_ps(row_scales<BlockQ4_K>(rows, w_stride, i, offsetof(BlockQ4_K, dmin)), dx);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum_i32_x8(lanes)), d, acc);
        acc_min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hsum_i32x4_x8(mins)), dmin, acc_min);
    }
    _mm256_storeu_ps(out, _mm256_sub_ps(acc, acc_min));
}

void dot_q8_0_rows8(int64_t n, const void* w, size_t w_stride, const void* x, float* out) {
    const auto* rows = static_cast<const uint8_t*>(w);
    const auto* bx = static_cast<const BlockQ8_0*>(x);
    __m256 acc[kRows];
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQK; ++i) {
        prefetch_next_rows<BlockQ8_0>(rows, w_stride, i);
        const __m256i y = load32(bx[i].qs);
        const float dx = fp16(bx[i].d);
#pragma GCC unroll 8
        for (int r = 0; r < kRows; ++r) {
            const BlockQ8_0& wb = reinterpret_cast<const BlockQ8_0*>(rows + size_t(r) * w_stride)[i];
            const __m256i q = load32(wb.qs);
            // |q| times y with q's sign (maddubs wants unsigned), pairs then quads summed exactly
            const __m256i lanes = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(y, q)),
                                                    _mm256_set1_epi16(1));
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(fp16(wb.d) * dx), _mm256_cvtepi32_ps(lanes), acc[r]);
        }
    }
    // + 0.0f: the row kernel adds its (here empty) scalar terms after the sum, which turns -0 into +0.
    for (int r = 0; r < kRows; ++r) out[r] = hsum(acc[r]) + 0.0f;
}

}  // namespace

void add_rows_avx2_kernels(KernelTable& t) {
    t.rows8_in(DotOrder::kGemv, GgmlType::Q4_K) = dot_q4_k_gemv_rows8;
    t.rows8_in(DotOrder::kRow, GgmlType::Q8_0) = dot_q8_0_rows8;
}

}  // namespace wb
