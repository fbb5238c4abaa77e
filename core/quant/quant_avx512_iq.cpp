// AVX-512 (F, BW, VL, VNNI) forms of the IQ4_XS tile of the tiled order, built with those flags on top
// of quant_avx2_iq.cpp's and handed out by quant.cpp only on a CPU that has them (the "avx512" family:
// the AVX2 table with these entries replaced).
//
// Same results as quant_avx2_iq.cpp's dot_iq_tile, bit for bit: only a block's exact integer sum enters
// the tiled order, and its float operations are the same ones in the same lanes. What changes is the
// integer part, twice as wide: a 512-bit register holds two groups of 32 (64 elements); the signs of the
// values move onto the activations with a byte mask (AVX-512 has no vpsignb), _mm512_maddubs_epi16 makes
// the exact 16-bit pair sums (|value| <= 127, |y| <= 127), and _mm512_dpwssd_epi32 multiplies them by the
// group scales and adds them to the token's lanes in one instruction (no saturation in 32 bits).
#include <immintrin.h>

#include "quant/quant_avx2_common.h"
#include "quant/quant_blocks.h"
#include "quant/quant_internal.h"
#include "quant/quant_isa_local.h"

namespace wb {

namespace {

WB_AVX512_WARNINGS_OFF

// kvalues_iq4nl as a byte shuffle table in all four 128-bit lanes.
WB_INLINE __m512i iq4_nl_table512() {
    return _mm512_broadcast_i32x4(iq4_nl_table());
}

// Groups 2p and 2p+1 of a block: the values in element order (128-bit lanes: group 2p's low nibbles,
// its high nibbles, then group 2p+1's), their magnitudes, the mask of the negative ones, and the scales
// (group 2p's in the low 256 bits).
struct Pair {
    __m512i mags;
    __mmask64 neg;
    __m512i scales;
};

WB_INLINE Pair iq4_xs_pair(const BlockIQ4_XS& w, int p, __m512i table) {
    const __m512i packed = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs + 32 * p)));
    // lanes [q0 q0 q1 q1] (q0 = group 2p's 16 bytes), then the high nibbles into lanes 1 and 3
    const __m512i dup = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3), packed);
    const __m512i codes =
        _mm512_and_si512(_mm512_mask_blend_epi64(0xCC, dup, _mm512_srli_epi16(dup, 4)), _mm512_set1_epi8(0x0F));
    const __m512i values = _mm512_shuffle_epi8(table, codes);
    const __m512i scales = _mm512_inserti64x4(_mm512_set1_epi16(short(iq4xs_scale(w, 2 * p))),
                                              _mm256_set1_epi16(short(iq4xs_scale(w, 2 * p + 1))), 1);
    return {_mm512_abs_epi8(values), _mm512_movepi8_mask(values), scales};
}

static_assert(kDotTileRows == 1 && kDotTileCols == 8, "one weight row, the tile's 8 tokens in the lanes of a vector");
// Per block: r = fp16(d_w) * float(sum), acc = fma(r, d_x, acc) in token c's lane (quant_avx2.cpp's
// dot_k_tiled, the order of llama.cpp's tiled matmul).
void dot_iq4_xs_tile(int64_t n, const void* w, size_t, const void* x, size_t x_stride, float* out, int64_t out_stride) {
    const auto* bw = static_cast<const BlockIQ4_XS*>(w);
    const BlockQ8_K* bx[kDotTileCols];
    for (int c = 0; c < kDotTileCols; ++c)
        bx[c] = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(x) + size_t(c) * x_stride);
    const __m512i table = iq4_nl_table512();
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i) {
        __m512i lanes[kDotTileCols];
        for (__m512i& l : lanes) l = _mm512_setzero_si512();
        for (int p = 0; p < 4; ++p) {
            const Pair q = iq4_xs_pair(bw[i], p, table);
#pragma GCC unroll 8
            for (int c = 0; c < kDotTileCols; ++c) {
                const __m512i y = _mm512_loadu_si512(bx[c][i].qs + 64 * p);
                const __m512i sy = _mm512_mask_sub_epi8(y, q.neg, _mm512_setzero_si512(), y);
                lanes[c] = _mm512_dpwssd_epi32(lanes[c], _mm512_maddubs_epi16(q.mags, sy), q.scales);
            }
        }
        __m256i half[kDotTileCols];
        for (int c = 0; c < kDotTileCols; ++c)
            half[c] = _mm256_add_epi32(_mm512_castsi512_si256(lanes[c]), _mm512_extracti64x4_epi64(lanes[c], 1));
        const __m256 dx = tile_row_scales(bx, i);
        const __m256 r = _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(bw[i].d)), _mm256_cvtepi32_ps(hsum_i32_x8(half)));
        acc = _mm256_fmadd_ps(r, dx, acc);
    }
    store_tile_lanes(acc, out, out_stride);
}

WB_AVX512_WARNINGS_ON

}  // namespace

KernelTable avx512_kernels() {
    KernelTable t = avx2_kernels();
    t.name = "avx512";
    t.tile_in(DotOrder::kTiled, GgmlType::IQ4_XS) = dot_iq4_xs_tile;
    // Its 512-bit tile is what this family is for; the AVX2 tile over unpacked rows is not measured
    // against it, so it does not replace it here.
    t.unpacked_in(DotOrder::kTiled, GgmlType::IQ4_XS) = {};
    if (!t.vnni) add_vnni_tiles_evex(t);  // the AVX-VNNI tiles' instructions in their AVX-512 encoding
    add_packed_avx512_kernels(t);  // quant_avx512_k.cpp: the Q4_K / Q5_K tiles
    add_rows16_avx512_kernels(t);  // quant_avx512_rows16.cpp: Q4_K, Q5_K, Q6_K, IQ4_XS, Q8_0, Q4_1, Q5_1 over 16 rows
    add_rows8_avx512_kernels(t);   // quant_avx512_rows8.cpp: Q8_0's decode
    add_repack_avx512_kernels(t);  // quant_avx512_repack.cpp: Q4_K repacked for the decode
    add_attention_avx512_kernels(t);  // quant_avx512_attn.cpp: the decode attention's f16 products
    return t;
}

}  // namespace wb
