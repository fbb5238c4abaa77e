// AVX2 tiles over activations packed for them (DotKernels::tile_packed in quant.h), built with
// -mavx2 -mfma -mf16c like quant_avx2.cpp.
//
// Q4_K in the order of llama.cpp's repacked gemm (dot_q4_k_gemm in quant_avx2.cpp: per 64-value chunk
// the exact integer sums of the scaled products and of the minimum term, each folded into its float
// accumulator with one FMA by d_w * d_x, resp. dmin_w * d_x). The tile reading the 8 tokens' Q8_K rows
// in place multiplied each run of 32 weights by one token's 32 activations, so every chunk left 8
// vectors of partial sums (one per token) to reduce across their lanes, and their minimum terms took a
// transpose per block: most of its time went to that, not to the products.
//
// Here the activations of a group of 8 tokens are interleaved once per matmul (pack_q8_k_x8), 4 values
// of each token side by side, so that one vector holds the same 4 positions of 4 tokens: a weight
// vector whose 32-bit groups are all one 4-value group (_mm256_shuffle_epi32) meets 4 tokens at once
// and each token's sums stay in its own 32-bit lane. Per sub-block of 32 values, the four groups'
// _mm256_maddubs_epi16 pair sums are added in 16 bits (at most 4 * 2 * 15 * 128 = 15360, exact), then
// multiplied by the sub-block's scale once (_mm256_madd_epi16), where the in-place tile did it per run
// and token. The sums are exact integers either way, and every float operation is the one
// dot_q4_k_gemm does, in its order: the outputs are bit for bit those of the row kernel.
//
// The same integer sums, over whole blocks, serve llama.cpp's tiled order of Q4_K and Q5_K (whose fifth
// bit is or-ed into the codes), where the in-place tile decoded the scales and reduced the lanes for each
// token of each block.
#include <immintrin.h>

#include <cstring>

#include "quant/quant_avx2_common.h"
#include "quant/quant_blocks.h"
#include "quant/quant_internal.h"
#include "quant/quant_isa_local.h"

namespace wb {

namespace {

static_assert(kDotTileRows == 1 && kDotTileCols == 8, "one weight row, the tile's 8 tokens in the lanes of a vector");

// One Q8_K block (256 values) of a group of 8 tokens, interleaved.
struct PackedQ8Kx8 {
    float d[kDotTileCols];  // token c's scale in lane c
    // Per 64-value chunk ch, token c's sums of sub-blocks 2ch and 2ch+1 (32 values each) at 2c and
    // 2c+1: one _mm256_madd_epi16 by the (mn[2ch], mn[2ch+1]) pair gives the 8 tokens' minimum terms.
    int16_t pair_sums[4][2 * kDotTileCols];
    // qs[s][j][h]: of sub-block s, tokens 4h..4h+3's values 4j..4j+3 (bytes 0-15, 4 per token) and
    // values 4j+16..4j+19 (bytes 16-31): the two 128-bit halves match _mm256_shuffle_epi32's group j
    // in each half of a weight vector, whose bytes are the sub-block's values 0-15 and 16-31.
    int8_t qs[8][4][2][32];
};

size_t packed_q8_k_x8_bytes(int64_t n) { return size_t(n / kQKK) * sizeof(PackedQ8Kx8); }

void pack_q8_k_x8(int64_t n, const void* x, size_t x_stride, void* packed) {
    auto* out = static_cast<PackedQ8Kx8*>(packed);
    for (int64_t i = 0; i < n / kQKK; ++i) {
        PackedQ8Kx8& p = out[i];
        for (int c = 0; c < kDotTileCols; ++c) {
            const BlockQ8_K& b = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(x) + size_t(c) * x_stride)[i];
            p.d[c] = b.d;
            // bsums are sums of 16 values, two to a sub-block: |sum| <= 32 * 128, within int16.
            for (int ch = 0; ch < 4; ++ch)
                for (int k = 0; k < 2; ++k)
                    p.pair_sums[ch][2 * c + k] = int16_t(b.bsums[4 * ch + 2 * k] + b.bsums[4 * ch + 2 * k + 1]);
            for (int s = 0; s < 8; ++s)
                for (int j = 0; j < 4; ++j) {
                    std::memcpy(&p.qs[s][j][c / 4][4 * (c % 4)], b.qs + 32 * s + 4 * j, 4);
                    std::memcpy(&p.qs[s][j][c / 4][16 + 4 * (c % 4)], b.qs + 32 * s + 16 + 4 * j, 4);
                }
        }
    }
}

// Group j of sub-blocks 2ch (lo) and 2ch+1 (hi) for the 8 tokens, added to the 16-bit sums.
template <int J>
WB_INLINE void q4_k_group(__m256i lo, __m256i hi, const PackedQ8Kx8& x, int ch, __m256i (&sums)[4]) {
    const __m256i wl = _mm256_shuffle_epi32(lo, J * 0x55), wh = _mm256_shuffle_epi32(hi, J * 0x55);
    sums[0] = _mm256_add_epi16(sums[0], _mm256_maddubs_epi16(wl, load32(x.qs[2 * ch][J][0])));
    sums[1] = _mm256_add_epi16(sums[1], _mm256_maddubs_epi16(wl, load32(x.qs[2 * ch][J][1])));
    sums[2] = _mm256_add_epi16(sums[2], _mm256_maddubs_epi16(wh, load32(x.qs[2 * ch + 1][J][0])));
    sums[3] = _mm256_add_epi16(sums[3], _mm256_maddubs_epi16(wh, load32(x.qs[2 * ch + 1][J][1])));
}

// Chunk ch's codes (values 2ch * 32 .. 2ch * 32 + 63) as bytes: lo holds sub-block 2ch's 32 values,
// hi sub-block 2ch+1's. Q4_K: the two nibbles of each of 32 bytes; Q5_K: with the fifth bit from qh
// (bit 2ch, resp. 2ch+1, of byte b for value b), as q5_k_lanes reads it.
WB_INLINE void k_chunk_codes(const BlockQ4_K& w, int ch, __m256i& lo, __m256i& hi) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i raw = load32(w.qs + 32 * ch);
    lo = _mm256_and_si256(raw, m4);
    hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
}

WB_INLINE void k_chunk_codes(const BlockQ5_K& w, int ch, __m256i& lo, __m256i& hi) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    const __m256i raw = load32(w.qs + 32 * ch), qh = load32(w.qh);
    const __m256i bit_lo = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * ch), one);
    const __m256i bit_hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * ch + 1), one);
    lo = _mm256_or_si256(_mm256_and_si256(raw, m4), _mm256_slli_epi16(bit_lo, 4));
    hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4), _mm256_slli_epi16(bit_hi, 4));
}

// The exact integer sum of the scaled products of chunk ch (64 values) for the 8 tokens, token c in
// lane c. The 16-bit sums of four groups stay exact for codes up to 31: 4 * 2 * 31 * 128 = 31744.
template <class BW>
WB_INLINE __m256i k_chunk(const BW& w, const PackedQ8Kx8& x, __m256i scales_mins, int ch) {
    __m256i lo, hi;
    k_chunk_codes(w, ch, lo, hi);
    // [0] sub-block lo, tokens 0-3; [1] lo, tokens 4-7; [2] hi, 0-3; [3] hi, 4-7. Token c (mod 4) owns the 16-bit
    // lanes 2c and 2c+1 of each half (low half: values 0-15, high half: 16-31), summed over the four groups.
    __m256i sums[4] = {};
    q4_k_group<0>(lo, hi, x, ch, sums);
    q4_k_group<1>(lo, hi, x, ch, sums);
    q4_k_group<2>(lo, hi, x, ch, sums);
    q4_k_group<3>(lo, hi, x, ch, sums);
    // The sub-blocks' scales as 16-bit multipliers (byte 2ch, resp. 2ch+1, zero-extended).
    const __m256i s_lo = _mm256_shuffle_epi8(scales_mins, _mm256_set1_epi16(short(0x8000 | (2 * ch))));
    const __m256i s_hi = _mm256_shuffle_epi8(scales_mins, _mm256_set1_epi16(short(0x8000 | (2 * ch + 1))));
    // Lane c (c < 4) of each: token c's values 0-15 in the low half, 16-31 in the high half.
    const __m256i t03 = _mm256_add_epi32(_mm256_madd_epi16(sums[0], s_lo), _mm256_madd_epi16(sums[2], s_hi));
    const __m256i t47 = _mm256_add_epi32(_mm256_madd_epi16(sums[1], s_lo), _mm256_madd_epi16(sums[3], s_hi));
    return _mm256_add_epi32(_mm256_permute2x128_si256(t03, t47, 0x20), _mm256_permute2x128_si256(t03, t47, 0x31));
}

// The minimum term of chunk ch for the 8 tokens: mn[2ch] * (sub-block sum) + mn[2ch+1] * (the next).
WB_INLINE __m256i q4_k_chunk_min(const PackedQ8Kx8& x, __m256i scales_mins, int ch) {
    const __m256i pair = _mm256_shuffle_epi8(scales_mins, _mm256_set1_epi32(int(0x80008000u | uint32_t(8 + 2 * ch) |
                                                                                 uint32_t(9 + 2 * ch) << 16)));
    return _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.pair_sums[ch])), pair);
}

void dot_q4_k_gemm_tile_packed(int64_t n, const void* w, const void* packed, float* out, int64_t out_stride) {
    const auto* bw = static_cast<const BlockQ4_K*>(w);
    const auto* bx = static_cast<const PackedQ8Kx8*>(packed);
    __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const BlockQ4_K& wb = bw[i];
        const __m256i scales_mins = q4_k_scales_mins(wb.scales);
        const __m256 dx = _mm256_loadu_ps(bx[i].d);
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(fp16(wb.d)), dx);
        const __m256 dmin = _mm256_mul_ps(_mm256_set1_ps(fp16(wb.dmin)), dx);
        for (int ch = 0; ch < 4; ++ch) {
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(k_chunk(wb, bx[i], scales_mins, ch)), d, acc);
            acc_min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q4_k_chunk_min(bx[i], scales_mins, ch)), dmin, acc_min);
        }
    }
    store_tile_lanes(_mm256_sub_ps(acc, acc_min), out, out_stride);
}

// Q4_K and Q5_K in llama.cpp's tiled order (dot_k_tiled in quant_avx2.cpp): per block the exact sums
// over all four chunks, then r = d_w * float(sum), r = fma(-dmin_w, float(min), r), acc = fma(r, d_x,
// acc), each a vector operation with token c in lane c. The in-place tile decoded the scales and
// reduced the lanes once per token and block; here both are once per block.
template <class BW>
void dot_k45_tiled_tile_packed(int64_t n, const void* w, const void* packed, float* out, int64_t out_stride) {
    const auto* bw = static_cast<const BW*>(w);
    const auto* bx = static_cast<const PackedQ8Kx8*>(packed);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const BW& wb = bw[i];
        const __m256i scales_mins = q4_k_scales_mins(wb.scales);
        __m256i sum = _mm256_setzero_si256(), min = _mm256_setzero_si256();
        for (int ch = 0; ch < 4; ++ch) {
            sum = _mm256_add_epi32(sum, k_chunk(wb, bx[i], scales_mins, ch));
            min = _mm256_add_epi32(min, q4_k_chunk_min(bx[i], scales_mins, ch));
        }
        __m256 r = _mm256_mul_ps(_mm256_set1_ps(fp16(wb.d)), _mm256_cvtepi32_ps(sum));
        r = _mm256_fmadd_ps(_mm256_set1_ps(-fp16(wb.dmin)), _mm256_cvtepi32_ps(min), r);
        acc = _mm256_fmadd_ps(r, _mm256_loadu_ps(bx[i].d), acc);
    }
    store_tile_lanes(acc, out, out_stride);
}

// A tile over activation rows in place (vec_dot_tile, DotKernels::tile) through its packed form: the
// rows packed into a per-thread buffer first, so one kernel serves both.
template <void (*Packed)(int64_t, const void*, const void*, float*, int64_t)>
void tile_via_packed(int64_t n, const void* w, size_t, const void* x, size_t x_stride, float* out, int64_t out_stride) {
    thread_local FloatBuffer buffer;
    static_assert(sizeof(PackedQ8Kx8) % sizeof(float) == 0, "the packed blocks fill whole floats");
    float* packed = buffer.get(packed_q8_k_x8_bytes(n) / sizeof(float));
    pack_q8_k_x8(n, x, x_stride, packed);
    Packed(n, w, packed, out, out_stride);
}

template <void (*Packed)(int64_t, const void*, const void*, float*, int64_t)>
void add_packed(KernelTable& t, DotOrder o, GgmlType type) {
    t.tile_in(o, type) = tile_via_packed<Packed>;
    t.packed_in(o, type) = {packed_q8_k_x8_bytes, pack_q8_k_x8, Packed};
}

}  // namespace

void add_packed_avx2_kernels(KernelTable& t) {
    add_packed<dot_q4_k_gemm_tile_packed>(t, DotOrder::kGemm, GgmlType::Q4_K);
    add_packed<dot_k45_tiled_tile_packed<BlockQ4_K>>(t, DotOrder::kTiled, GgmlType::Q4_K);
    add_packed<dot_k45_tiled_tile_packed<BlockQ5_K>>(t, DotOrder::kTiled, GgmlType::Q5_K);
}

}  // namespace wb
