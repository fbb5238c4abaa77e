// AVX2 kernels of the grid IQ types (quant_blocks_iq.h), built with -mavx2 -mfma -mf16c like
// quant_avx2.cpp. The float orders are those of quant_scalar_iq.cpp (see there), which computes
// the same bits.
//
// Per run of 32 elements: the grid magnitudes as unsigned bytes (four 8-byte grid entries, or eight
// 4-byte IQ3 entries), the signs moved onto the activations (negated where the sign bit is set),
// _mm256_maddubs_epi16 to 16 bits (no saturation: magnitudes <= 62, |y| <= 127), then
// _mm256_madd_epi16 by the odd scales of the run's two halves into the block's 8 int32 lanes.
// IQ1 grid values are -1, 0, 1 and take the sign trick instead; their 1/8 shifts are a second set
// of lanes, of the scaled activations with the shift's sign.
//
// The tiles of the tiled order (dot_iq_tile, also IQ4_XS's) unpack each run once for the tile's 8
// tokens; see there.
#include <immintrin.h>

#include <cmath>
#include <type_traits>

#include "quant/quant_blocks_iq.h"
#include "quant/quant_internal.h"
#include "quant/quant_avx2_common.h"
#include "quant/quant_isa_local.h"

namespace wb {

namespace {

// 32 bits -> 32 bytes, 0xFF where bit i (element i of the run) is set.
WB_INLINE __m256i bits_to_bytes(uint32_t bits) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int(bits)), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                        0x0101010101010101, 0x0000000000000000));
    const __m256i bit_of_byte = _mm256_set1_epi64x(int64_t(0x8040201008040201));
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit_of_byte), bit_of_byte);
}

// The odd scales of a run's two halves as madd multipliers (low 128 bits: elements 0..15).
WB_INLINE __m256i scale_pair(int lo, int hi) { return _mm256_set_m128i(_mm_set1_epi16(short(hi)), _mm_set1_epi16(short(lo))); }

WB_INLINE __m256i grid4(uint64_t e0, uint64_t e1, uint64_t e2, uint64_t e3) {
    return _mm256_set_epi64x(int64_t(e3), int64_t(e2), int64_t(e1), int64_t(e0));
}

// A run of 32 weights as the activations meet it: the magnitudes (u8), a byte per element whose sign
// moves onto the activation (_mm256_sign_epi8: +1 or -1, never 0 where a magnitude is not), and the
// madd multipliers of its two halves. Unpacked once, a run serves every token of a tile.
struct Run {
    __m256i mags, sgn, scales;
};

// A run times the activations y: 8 int32 lanes, lane l holding elements 4l..4l+3 (no saturation:
// magnitudes <= 127, |y| <= 127, pair sums within int16).
WB_INLINE __m256i run_lanes(const Run& r, const int8_t* y) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(r.mags, _mm256_sign_epi8(load32(y), r.sgn)), r.scales);
}

// Sign bits (bit i: element i negative) as +1 / -1 bytes.
WB_INLINE __m256i signs_pm1(uint32_t bits) { return _mm256_or_si256(bits_to_bytes(bits), _mm256_set1_epi8(1)); }

WB_INLINE uint32_t sign_word(uint32_t aux) {
    return uint32_t(iq_sign_byte(aux)) | uint32_t(iq_sign_byte(aux >> 7)) << 8 | uint32_t(iq_sign_byte(aux >> 14)) << 16 |
           uint32_t(iq_sign_byte(aux >> 21)) << 24;
}

WB_INLINE Run grid_run(const BlockIQ2_XXS& w, int g) {
    const uint8_t* idx = reinterpret_cast<const uint8_t*>(w.qs) + 8 * g;
    const uint32_t aux = iq_le32(idx + 4);
    const int m = int(2 * (aux >> 28) + 1);
    return {grid4(kIq2xxsGrid[idx[0]], kIq2xxsGrid[idx[1]], kIq2xxsGrid[idx[2]], kIq2xxsGrid[idx[3]]),
            signs_pm1(sign_word(aux)), scale_pair(m, m)};
}

WB_INLINE Run grid_run(const BlockIQ2_XS& w, int g) {
    const uint16_t* q = w.qs + 4 * g;
    const uint32_t signs = uint32_t(iq_sign_byte(q[0] >> 9)) | uint32_t(iq_sign_byte(q[1] >> 9)) << 8 |
                           uint32_t(iq_sign_byte(q[2] >> 9)) << 16 | uint32_t(iq_sign_byte(q[3] >> 9)) << 24;
    return {grid4(kIq2xsGrid[q[0] & 511], kIq2xsGrid[q[1] & 511], kIq2xsGrid[q[2] & 511], kIq2xsGrid[q[3] & 511]),
            signs_pm1(signs), scale_pair(2 * (w.scales[g] & 0xF) + 1, 2 * (w.scales[g] >> 4) + 1)};
}

WB_INLINE Run grid_run(const BlockIQ2_S& w, int g) {
    const uint8_t* q = w.qs + 4 * g;
    const int h = w.qh[g];
    return {grid4(kIq2sGrid[q[0] | (h & 3) << 8], kIq2sGrid[q[1] | (h >> 2 & 3) << 8], kIq2sGrid[q[2] | (h >> 4 & 3) << 8],
                  kIq2sGrid[q[3] | (h >> 6 & 3) << 8]),
            signs_pm1(iq_le32(w.qs + 32 + 4 * g)), scale_pair(2 * (w.scales[g] & 0xF) + 1, 2 * (w.scales[g] >> 4) + 1)};
}

WB_INLINE Run grid_run(const BlockIQ3_XXS& w, int g) {
    const uint8_t* q = w.qs + 8 * g;
    const uint32_t aux = iq_le32(w.qs + 64 + 4 * g);
    const int m = int(2 * (aux >> 28) + 1);
    const __m256i mags = _mm256_set_epi32(int(kIq3xxsGrid[q[7]]), int(kIq3xxsGrid[q[6]]), int(kIq3xxsGrid[q[5]]),
                                          int(kIq3xxsGrid[q[4]]), int(kIq3xxsGrid[q[3]]), int(kIq3xxsGrid[q[2]]),
                                          int(kIq3xxsGrid[q[1]]), int(kIq3xxsGrid[q[0]]));
    return {mags, signs_pm1(sign_word(aux)), scale_pair(m, m)};
}

WB_INLINE Run grid_run(const BlockIQ3_S& w, int g) {
    const uint8_t* q = w.qs + 8 * g;
    const int h = w.qh[g];
    int e[8];
    for (int i = 0; i < 8; ++i) e[i] = int(kIq3sGrid[q[i] | ((h >> i) & 1) << 8]);
    const int m = 2 * ((w.scales[g / 2] >> (4 * (g % 2))) & 0xF) + 1;
    return {_mm256_set_epi32(e[7], e[6], e[5], e[4], e[3], e[2], e[1], e[0]), signs_pm1(iq_le32(w.signs + 4 * g)),
            scale_pair(m, m)};
}

// The row dot's lanes of the IQ2/IQ3 types: scale * value * y summed over the block's runs.
template <class B>
WB_INLINE __m256i grid_lanes(const B& w, const BlockQ8_K& x) {
    __m256i sumi = _mm256_setzero_si256();
    for (int g = 0; g < 8; ++g) sumi = _mm256_add_epi32(sumi, run_lanes(grid_run(w, g), x.qs + 32 * g));
    return sumi;
}

// IQ1: a run's grid values (-1, 0, 1) and the shift signs of its four runs of 8 as +-1 bytes.
struct Iq1Run {
    __m256i values;
    __m256i shifts;
    int s_lo, s_hi;
};

WB_INLINE __m256i shift_bytes(int n0, int n1, int n2, int n3) {
    constexpr int64_t kPlus = 0x0101010101010101, kMinus = -1;
    return _mm256_set_epi64x(n3 ? kMinus : kPlus, n2 ? kMinus : kPlus, n1 ? kMinus : kPlus, n0 ? kMinus : kPlus);
}

WB_INLINE Iq1Run iq1_run(const BlockIQ1_S& w, int g) {
    const uint8_t* q = w.qs + 4 * g;
    const int h = w.qh[g];
    const int s = 2 * ((h >> 12) & 7) + 1;
    const bool neg = h & 0x8000;
    return {grid4(kIq1sGrid[q[0] | (h & 7) << 8], kIq1sGrid[q[1] | (h >> 3 & 7) << 8], kIq1sGrid[q[2] | (h >> 6 & 7) << 8],
                  kIq1sGrid[q[3] | (h >> 9 & 7) << 8]),
            shift_bytes(neg, neg, neg, neg), s, s};
}

WB_INLINE Iq1Run iq1_run(const BlockIQ1_M& w, int g) {
    const uint8_t* q = w.qs + 4 * g;
    const int h0 = w.qh[2 * g], h1 = w.qh[2 * g + 1];
    const int sw = iq1m_scale_word(w, g / 2) >> (6 * (g % 2));
    return {grid4(kIq1sGrid[q[0] | (h0 & 7) << 8], kIq1sGrid[q[1] | (h0 >> 4 & 7) << 8], kIq1sGrid[q[2] | (h1 & 7) << 8],
                  kIq1sGrid[q[3] | (h1 >> 4 & 7) << 8]),
            shift_bytes(h0 & 0x08, h0 & 0x80, h1 & 0x08, h1 & 0x80), 2 * (sw & 7) + 1, 2 * ((sw >> 3) & 7) + 1};
}

// Lanes of scale * grid value * y and of scale * shift sign * y.
template <class B>
WB_INLINE void iq1_lanes(const B& w, const BlockQ8_K& x, __m256i& grid, __m256i& shift) {
    grid = _mm256_setzero_si256();
    shift = _mm256_setzero_si256();
    for (int g = 0; g < 8; ++g) {
        const Iq1Run r = iq1_run(w, g);
        const __m256i y = load32(x.qs + 32 * g);
        const __m256i sc = scale_pair(r.s_lo, r.s_hi);
        const __m256i gv = _mm256_maddubs_epi16(_mm256_sign_epi8(r.values, r.values), _mm256_sign_epi8(y, r.values));
        const __m256i sv = _mm256_maddubs_epi16(_mm256_set1_epi8(1), _mm256_sign_epi8(y, r.shifts));
        grid = _mm256_add_epi32(grid, _mm256_madd_epi16(gv, sc));
        shift = _mm256_add_epi32(shift, _mm256_madd_epi16(sv, sc));
    }
}

WB_INLINE float block_d(const BlockIQ1_M& w) { return fp16(iq1m_d_bits(w)); }
template <class B>
WB_INLINE float block_d(const B& w) { return fp16(w.d); }

template <class B>
constexpr float kRowFactor = std::is_same_v<B, BlockIQ3_S> ? 1.0f : std::is_same_v<B, BlockIQ3_XXS> ? 0.25f : 0.125f;

template <class B>
float dot_iq_row(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const B*>(w);
    const auto* bx = static_cast<const BlockQ8_K*>(x);
    __m256 acc = _mm256_setzero_ps(), acc_shift = _mm256_setzero_ps();
    float accum1 = 0.0f;  // IQ1_S's scalar shift accumulator
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const float d = block_d(bw[i]) * bx[i].d;
        if constexpr (kIqIsIq1<B>) {
            __m256i grid, shift;
            iq1_lanes(bw[i], bx[i], grid, shift);
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(grid), acc);
            if constexpr (std::is_same_v<B, BlockIQ1_S>)
                accum1 = fma_f(d, float(hsum_i32(shift)), accum1);
            else
                acc_shift = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(shift), acc_shift);
        } else {
            acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(grid_lanes(bw[i], bx[i])), acc);
        }
    }
    if constexpr (std::is_same_v<B, BlockIQ1_S>) return hsum(acc) + 0.125f * accum1;
    if constexpr (std::is_same_v<B, BlockIQ1_M>) return hsum(acc) + 0.125f * hsum(acc_shift);
    return kRowFactor<B> * hsum(acc);
}

// The tiled order's exact block sum: IQ1 values count as 8 * grid + shift.
template <class B>
WB_INLINE int tiled_sum(const B& w, const BlockQ8_K& x) {
    if constexpr (kIqIsIq1<B>) {
        __m256i grid, shift;
        iq1_lanes(w, x, grid, shift);
        return 8 * hsum_i32(grid) + hsum_i32(shift);
    } else {
        return hsum_i32(grid_lanes(w, x));
    }
}

template <class B>
float dot_iq_tiled(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const B*>(w);
    const auto* bx = static_cast<const BlockQ8_K*>(x);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const float r = block_d(bw[i]) * (kIqIsIq1<B> ? 0.125f : kRowFactor<B>) * float(tiled_sum(bw[i], bx[i]));
        acc = fma_f(r, bx[i].d, acc);
    }
    return acc;
}

// ---- Tiles of the tiled order ----
//
// One weight row against 8 tokens (vec_dot_tile), where the per-token path unpacks every run again for
// each token (for the grid types, 4-8 table look-ups a run) and folds each block in with scalar
// operations. Here each run is unpacked once and met by the 8 tokens' activations; only a block's
// exact integer sum enters the tiled order, so the 8 sums are reduced together (hsum_i32_x8) and
// token c's float operations, r = f_w * float(sum) then acc = fma(r, d_x, acc) (dot_iq_tiled, and
// quant_avx2.cpp's dot_k_tiled for IQ4_XS), run in lane c of one vector multiply and one vector FMA.

// What a tile decodes once per weight block, before its runs: nothing for the grid types (each run's
// scale bits sit beside its grid indices), IQ4_XS's 8 group scales in one vector (a scalar decode per
// run was a fifth of the tile's loop), each as a pair of equal int16 for _mm256_madd_epi16.
template <class B>
struct BlockScales {
    explicit BlockScales(const B&) {}
};

template <>
struct BlockScales<BlockIQ4_XS> {
    alignas(32) int32_t pairs[8];
    explicit BlockScales(const BlockIQ4_XS& w) {
        // Group g: nibble g of scales_l (bits 4g..4g+3 of the little-endian word) and bits 2g, 2g+1 of
        // scales_h, minus 32: iq4xs_scale's reading, for the 8 groups at once.
        const __m256i g = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i lo = _mm256_and_si256(
            _mm256_srlv_epi32(_mm256_set1_epi32(int(iq_le32(w.scales_l))), _mm256_slli_epi32(g, 2)), _mm256_set1_epi32(0xF));
        const __m256i hi =
            _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(w.scales_h), _mm256_add_epi32(g, g)), _mm256_set1_epi32(3));
        const __m256i s = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
        _mm256_store_si256(reinterpret_cast<__m256i*>(pairs),
                           _mm256_or_si256(_mm256_and_si256(s, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(s, 16)));
    }
};

// A run of the tiled order. IQ1: 8 * grid value + shift sign (-9..9, never 0) as one signed byte, so a
// run is one product like the others and its integer sum is 8 * grid + shift, what tiled_sum
// computes. IQ4_XS: the signed values (|value| <= 127) take the sign trick, the group scale both halves.
template <class B>
WB_INLINE Run tiled_run(const B& w, const BlockScales<B>& scales, int g) {
    if constexpr (std::is_same_v<B, BlockIQ4_XS>) {
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs + 16 * g));
        const __m256i codes = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0F));
        const __m256i values = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(iq4_nl_table()), codes);
        return {_mm256_sign_epi8(values, values), values, _mm256_set1_epi32(scales.pairs[g])};
    } else if constexpr (kIqIsIq1<B>) {
        const Iq1Run r = iq1_run(w, g);
        const __m256i v8 = _mm256_add_epi8(_mm256_sign_epi8(_mm256_set1_epi8(8), r.values), r.shifts);
        return {_mm256_sign_epi8(v8, v8), v8, scale_pair(r.s_lo, r.s_hi)};
    } else {
        return grid_run(w, g);
    }
}

// f_w of the tiled order: d_w times the factor left out of the integer scales (none for IQ4_XS).
template <class B>
WB_INLINE float tiled_factor(const B& w) {
    if constexpr (std::is_same_v<B, BlockIQ4_XS>)
        return fp16(w.d);
    else
        return block_d(w) * (kIqIsIq1<B> ? 0.125f : kRowFactor<B>);
}

static_assert(kDotTileRows == 1 && kDotTileCols == 8, "one weight row, the tile's 8 tokens in the lanes of a vector");
template <class B>
void dot_iq_tile(int64_t n, const void* w, size_t, const void* x, size_t x_stride, float* out, int64_t out_stride) {
    const auto* bw = static_cast<const B*>(w);
    const BlockQ8_K* bx[kDotTileCols];
    for (int c = 0; c < kDotTileCols; ++c)
        bx[c] = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(x) + size_t(c) * x_stride);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const BlockScales<B> scales(bw[i]);
        __m256i lanes[kDotTileCols];
        for (__m256i& l : lanes) l = _mm256_setzero_si256();
        for (int g = 0; g < 8; ++g) {
            const Run r = tiled_run(bw[i], scales, g);
#pragma GCC unroll 8
            for (int c = 0; c < kDotTileCols; ++c) lanes[c] = _mm256_add_epi32(lanes[c], run_lanes(r, bx[c][i].qs + 32 * g));
        }
        const __m256 dx = tile_row_scales(bx, i);
        const __m256 r = _mm256_mul_ps(_mm256_set1_ps(tiled_factor(bw[i])), _mm256_cvtepi32_ps(hsum_i32_x8(lanes)));
        acc = _mm256_fmadd_ps(r, dx, acc);
    }
    store_tile_lanes(acc, out, out_stride);
}

// ---- Tiles over unpacked weight rows ----
//
// A prefill task meets the same few weight rows with every group of 8 tokens (CpuBackend::matmul_rows),
// and dot_iq_tile decodes each run again for every group: for IQ4_XS the nibbles, the table look-up and
// the block's scales, for the grid types 4-8 grid look-ups and the sign bits. Here a row is decoded once
// per task into what run_lanes consumes: each run's 32 values with their signs (|value| <= 127, so
// _mm256_sign_epi8(v, v) gives back the magnitudes and _mm256_sign_epi8(y, v) moves the sign onto the
// activations; where v is 0 the magnitude is 0 too, so the product is 0 either way), the multipliers
// of its two halves, and the block's f_w. The integer sums are the same exact integers and the float
// operations dot_iq_tile's, so the outputs are its bits.
struct UnpackedIqBlock {
    int8_t v[8][32];
    int32_t scales[8];  // run g's multipliers: bits 0-15 the first half's (elements 0-15), 16-31 the second's
    float f;
    float pad[7];  // whole 32-byte vectors, so the next block's values stay aligned
};
static_assert(sizeof(UnpackedIqBlock) % 32 == 0, "blocks of whole vectors");

size_t unpacked_iq_bytes(int64_t n) { return size_t(n / kQKK) * sizeof(UnpackedIqBlock); }

template <class B>
void unpack_iq_row(int64_t n, const void* w, void* unpacked) {
    const auto* bw = static_cast<const B*>(w);
    auto* out = static_cast<UnpackedIqBlock*>(unpacked);
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const BlockScales<B> scales(bw[i]);
        for (int g = 0; g < 8; ++g) {
            const Run r = tiled_run(bw[i], scales, g);
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[i].v[g]), _mm256_sign_epi8(r.mags, r.sgn));
            const auto lo = uint32_t(uint16_t(_mm256_extract_epi16(r.scales, 0)));
            const auto hi = uint32_t(uint16_t(_mm256_extract_epi16(r.scales, 8)));
            out[i].scales[g] = int32_t(lo | hi << 16);
        }
        out[i].f = tiled_factor(bw[i]);
        for (float& p : out[i].pad) p = 0.0f;
    }
}

void dot_iq_tile_unpacked(int64_t n, const void* unpacked, const void* x, size_t x_stride, float* out,
                          int64_t out_stride) {
    const auto* bu = static_cast<const UnpackedIqBlock*>(unpacked);
    const BlockQ8_K* bx[kDotTileCols];
    for (int c = 0; c < kDotTileCols; ++c)
        bx[c] = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(x) + size_t(c) * x_stride);
    // bytes 0-1 of each 32-bit group in the low 128 bits, bytes 2-3 in the high: a run's two multipliers
    const __m256i halves = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,  //
                                            2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i) {
        __m256i lanes[kDotTileCols];
        for (__m256i& l : lanes) l = _mm256_setzero_si256();
        for (int g = 0; g < 8; ++g) {
            const __m256i v = load32(bu[i].v[g]);
            const Run r{_mm256_sign_epi8(v, v), v, _mm256_shuffle_epi8(_mm256_set1_epi32(bu[i].scales[g]), halves)};
#pragma GCC unroll 8
            for (int c = 0; c < kDotTileCols; ++c) lanes[c] = _mm256_add_epi32(lanes[c], run_lanes(r, bx[c][i].qs + 32 * g));
        }
        const __m256 dx = tile_row_scales(bx, i);
        const __m256 r = _mm256_mul_ps(_mm256_set1_ps(bu[i].f), _mm256_cvtepi32_ps(hsum_i32_x8(lanes)));
        acc = _mm256_fmadd_ps(r, dx, acc);
    }
    store_tile_lanes(acc, out, out_stride);
}

template <class B>
void add_unpacked(KernelTable& t, GgmlType type) {
    t.unpacked_in(DotOrder::kTiled, type) = {unpacked_iq_bytes, unpack_iq_row<B>, dot_iq_tile_unpacked};
}

template <class B>
void add_iq_type(KernelTable& t, GgmlType type) {
    t.dot[slot(type)] = dot_iq_row<B>;
    t.dot_in(DotOrder::kTiled, type) = dot_iq_tiled<B>;
    t.tile_in(DotOrder::kTiled, type) = dot_iq_tile<B>;
    add_unpacked<B>(t, type);
}

}  // namespace

void add_iq_grid_avx2_kernels(KernelTable& t) {
    add_iq_type<BlockIQ2_XXS>(t, GgmlType::IQ2_XXS);
    add_iq_type<BlockIQ2_XS>(t, GgmlType::IQ2_XS);
    add_iq_type<BlockIQ2_S>(t, GgmlType::IQ2_S);
    add_iq_type<BlockIQ3_XXS>(t, GgmlType::IQ3_XXS);
    add_iq_type<BlockIQ3_S>(t, GgmlType::IQ3_S);
    add_iq_type<BlockIQ1_S>(t, GgmlType::IQ1_S);
    add_iq_type<BlockIQ1_M>(t, GgmlType::IQ1_M);
    // IQ4_XS's row dots are quant_avx2.cpp's; its tile is this file's.
    t.tile_in(DotOrder::kTiled, GgmlType::IQ4_XS) = dot_iq_tile<BlockIQ4_XS>;
    add_unpacked<BlockIQ4_XS>(t, GgmlType::IQ4_XS);
}

}  // namespace wb
