#pragma once
// AVX2 pieces shared by the files built with AVX2 flags (quant_avx2*.cpp, and the AVX-512 ones,
// quant_avx512_*.cpp, which build on them), with internal linkage (the unnamed namespace) for the reason
// quant_isa_local.h gives: each object keeps its own copy, compiled with its own flags.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quant/quant_blocks.h"
#include "quant/quant_internal.h"

namespace wb {
namespace {

// An fp16 scale as a float (F16C).
[[gnu::always_inline]] inline float fp16(uint16_t h) { return _cvtsh_ss(h); }

// 32 bytes, unaligned.
[[gnu::always_inline]] inline __m256i load32(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// ((v0+v4)+(v2+v6)) + ((v1+v5)+(v3+v7)), llama.cpp's hsum_float_8.
[[gnu::always_inline]] inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// A vector's 8 int32 lanes summed (exact).
[[gnu::always_inline]] inline int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

// The next 8 rows' share of block step i of an 8-row kernel (DotKernels::rows8): a block's bytes of
// each, as one run (rows are contiguous). The address is formed as an integer: past the last rows it
// points at nothing (a prefetch never faults), which pointer arithmetic may not.
template <class B>
[[gnu::always_inline]] inline void prefetch_next_rows(const uint8_t* rows, size_t w_stride, int64_t i) {
    const uintptr_t next = reinterpret_cast<uintptr_t>(rows) + 8 * w_stride + size_t(i) * 8 * sizeof(B);
    for (size_t b = 0; b < 8 * sizeof(B); b += 64) _mm_prefetch(reinterpret_cast<const char*>(next + b), _MM_HINT_T0);
}

// Eight vectors of int32 lanes -> one vector whose lane c is the sum of v[c]'s lanes (exact).
[[gnu::always_inline]] inline __m256i hsum_i32_x8(const __m256i (&v)[8]) {
    const __m256i a = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    const __m256i b = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
}

// A Q4_K / Q5_K block's 8 scales (bytes 0-7) and 8 minimums (bytes 8-15), 6 bits each, in both 128-bit halves:
// k4_scale_min's reading of the 12 scale bytes, four values at a time.
[[gnu::always_inline]] inline __m256i q4_k_scales_mins(const uint8_t* scales) {
    uint32_t w[3];
    std::memcpy(w, scales, sizeof w);
    constexpr uint32_t k6 = 0x3F3F3F3F, k4 = 0x0F0F0F0F, k2 = 0x03030303;
    const uint32_t sc_lo = w[0] & k6, mn_lo = w[1] & k6;               // j < 4: the low 6 bits
    const uint32_t sc_hi = (w[2] & k4) | ((w[0] >> 6) & k2) << 4;      // j >= 4: a nibble of bytes 8-11,
    const uint32_t mn_hi = ((w[2] >> 4) & k4) | ((w[1] >> 6) & k2) << 4;  // the top 2 bits of bytes j-4, j
    return _mm256_broadcastsi128_si256(_mm_setr_epi32(int(sc_lo), int(sc_hi), int(mn_lo), int(mn_hi)));
}

// kvalues_iq4nl as a byte shuffle table (one 128-bit lane; the files broadcast it to their widths).
[[gnu::always_inline]] inline __m128i iq4_nl_table() {
    alignas(16) int8_t v[16];
    for (int i = 0; i < 16; ++i) v[i] = int8_t(iq4nl_value(i));
    return _mm_load_si128(reinterpret_cast<const __m128i*>(v));
}

// The float scales d of block i of a tile's 8 activation rows (bx[c]), token c in lane c.
template <class Rows>
[[gnu::always_inline]] inline __m256 tile_row_scales(const Rows& bx, int64_t i) {
    static_assert(kDotTileCols == 8, "the tile's 8 tokens in the lanes of a vector");
    return _mm256_setr_ps(bx[0][i].d, bx[1][i].d, bx[2][i].d, bx[3][i].d, bx[4][i].d, bx[5][i].d, bx[6][i].d,
                          bx[7][i].d);
}

// For the 8-row decode kernels (quant_avx2_rows.cpp, quant_avx512_rows8.cpp).
// 8 fp16 scales, one per row (at byte offset `field` of each row's block i of type B), as floats in lanes 0-7.
template <class B>
[[gnu::always_inline]] inline __m256 row_scales(const uint8_t* w, size_t w_stride, int64_t i, size_t field) {
    uint16_t h[8];
    for (int r = 0; r < 8; ++r)
        __builtin_memcpy(&h[r], w + size_t(r) * w_stride + size_t(i) * sizeof(B) + field, sizeof(uint16_t));
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

// Lane c of v to out[c * out_stride]: a tile's 8 outputs of one weight row.
[[gnu::always_inline]] inline void store_tile_lanes(__m256 v, float* out, int64_t out_stride) {
    alignas(32) float res[kDotTileCols];
    _mm256_store_ps(res, v);
    for (int c = 0; c < kDotTileCols; ++c) out[c * out_stride] = res[c];
}

}  // namespace
}  // namespace wb
