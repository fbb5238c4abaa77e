// AVX-512 (F, BW, VL, VNNI) forms of the Q4_K / Q5_K tiles over packed activations (quant_avx2_packed.cpp),
// built with those flags and handed out by quant.cpp only on a CPU that has them (the avx512 family).
//
// Same results as the AVX2 tiles, bit for bit: the integer sums they compute are exact (any way of
// adding them gives the same numbers), and every float operation is the AVX2 tile's, in its lanes and
// order. What changes is how the integer sums are made. The AVX2 tile multiplies a run of 32 weights
// with _mm256_maddubs_epi16, adds four of those in 16 bits and scales them with _mm256_madd_epi16;
// here one _mm512_dpbusd_epi32 multiplies 64 weights by 64 activations and adds each group of four
// products into a 32-bit lane (no saturation: codes <= 31, activations <= 128 in magnitude), and a
// 512-bit register holds both sub-blocks of a 64-value chunk, the first in its low 256 bits and the
// second in its high ones, so the codes of a chunk are unpacked once, without splitting them.
//
// The activations of the tile's 8 tokens are interleaved once per matmul (pack_q8_k_x8_512) in the
// order the weight vector meets them: for chunk ch, 4-value group j and token half h, 64 bytes hold
// tokens 4h..4h+3's values 4j..4j+3 and 16+4j..16+4j+3 of sub-block 2ch, then the same of sub-block
// 2ch+1. A weight vector whose 32-bit groups are all group j of their 128-bit lane
// (_mm512_shuffle_epi32) then meets 4 tokens at once, and each token's sums stay in its own lanes.
#include <immintrin.h>

#include <cstring>

#include "quant/quant_avx2_common.h"
#include "quant/quant_avx512_common.h"
#include "quant/quant_blocks.h"
#include "quant/quant_internal.h"
#include "quant/quant_isa_local.h"

namespace wb {

namespace {

WB_AVX512_WARNINGS_OFF

static_assert(kDotTileRows == 1 && kDotTileCols == 8, "one weight row, the tile's 8 tokens in the lanes of a vector");

// One Q8_K block (256 values) of a group of 8 tokens, interleaved for the 512-bit tiles.
struct PackedQ8Kx8w {
    float d[kDotTileCols];  // token c's scale in lane c
    // Per chunk ch, token c's sums of sub-blocks 2ch and 2ch+1 at 2c and 2c+1 (as the AVX2 packing):
    // one _mm512_madd_epi16 over two chunks gives the 8 tokens' minimum terms of both.
    int16_t pair_sums[4][2 * kDotTileCols];
    // qs[ch][j][h]: see the top of the file.
    int8_t qs[4][4][2][64];
};

size_t packed_q8_k_x8w_bytes(int64_t n) { return size_t(n / kQKK) * sizeof(PackedQ8Kx8w); }

void pack_q8_k_x8w(int64_t n, const void* x, size_t x_stride, void* packed) {
    auto* out = static_cast<PackedQ8Kx8w*>(packed);
    for (int64_t i = 0; i < n / kQKK; ++i) {
        PackedQ8Kx8w& p = out[i];
        for (int c = 0; c < kDotTileCols; ++c) {
            const BlockQ8_K& b = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(x) + size_t(c) * x_stride)[i];
            p.d[c] = b.d;
            // bsums are sums of 16 values, two to a sub-block: |sum| <= 32 * 128, within int16.
            for (int ch = 0; ch < 4; ++ch)
                for (int k = 0; k < 2; ++k)
                    p.pair_sums[ch][2 * c + k] = int16_t(b.bsums[4 * ch + 2 * k] + b.bsums[4 * ch + 2 * k + 1]);
            const int h = c / 4, slot = 4 * (c % 4);
            for (int ch = 0; ch < 4; ++ch)
                for (int j = 0; j < 4; ++j)
                    for (int half = 0; half < 2; ++half) {  // sub-block 2ch + half
                        const int8_t* sub = b.qs + 32 * (2 * ch + half);
                        std::memcpy(&p.qs[ch][j][h][32 * half + slot], sub + 4 * j, 4);
                        std::memcpy(&p.qs[ch][j][h][32 * half + 16 + slot], sub + 16 + 4 * j, 4);
                    }
        }
    }
}

// A block's scales as 32-bit lanes (0-7) and minimums (8-15), zero-extended.
WB_INLINE __m512i scales_mins_32(const uint8_t* scales) {
    return _mm512_cvtepu8_epi32(_mm256_castsi256_si128(q4_k_scales_mins(scales)));
}

// Chunk ch's scaled sums for tokens 4h..4h+3 (h = 0, 1): 32-bit lane 4L + t of sums[h] holds token
// 4h+t's part in 128-bit lane L (L = 0, 1: sub-block 2ch's values 0-15, 16-31; 2, 3: sub-block 2ch+1's).
WB_INLINE void chunk_sums(__m512i codes, const PackedQ8Kx8w& x, __m512i sc32, int ch, __m512i (&sums)[2]) {
    const __m512i w0 = _mm512_shuffle_epi32(codes, _MM_PERM_AAAA), w1 = _mm512_shuffle_epi32(codes, _MM_PERM_BBBB);
    const __m512i w2 = _mm512_shuffle_epi32(codes, _MM_PERM_CCCC), w3 = _mm512_shuffle_epi32(codes, _MM_PERM_DDDD);
    // lanes 0-7: scale 2ch, 8-15: scale 2ch+1
    const __m512i idx = _mm512_inserti64x4(_mm512_set1_epi32(2 * ch), _mm256_set1_epi32(2 * ch + 1), 1);
    const __m512i scale = _mm512_permutexvar_epi32(idx, sc32);
    for (int h = 0; h < 2; ++h) {
        __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), w0, _mm512_loadu_si512(x.qs[ch][0][h]));
        s = _mm512_dpbusd_epi32(s, w1, _mm512_loadu_si512(x.qs[ch][1][h]));
        s = _mm512_dpbusd_epi32(s, w2, _mm512_loadu_si512(x.qs[ch][2][h]));
        s = _mm512_dpbusd_epi32(s, w3, _mm512_loadu_si512(x.qs[ch][3][h]));
        sums[h] = _mm512_mullo_epi32(s, scale);  // |s| <= 16 * 31 * 128 (a lane: 4 groups of 4), times 63: exact
    }
}

// sums[0], sums[1] as chunk_sums lays them out -> token c's total in lane c.
WB_INLINE __m256i token_totals(const __m512i (&sums)[2]) {
    // [s0.L0 s0.L1 s1.L0 s1.L1] + [s0.L2 s0.L3 s1.L2 s1.L3]
    const __m512i a = _mm512_add_epi32(_mm512_shuffle_i64x2(sums[0], sums[1], 0x44), _mm512_shuffle_i64x2(sums[0], sums[1], 0xEE));
    // lanes (0, 2) + (1, 3): tokens 0-3, then 4-7
    const __m512i b = _mm512_add_epi32(_mm512_shuffle_i64x2(a, a, 0x08), _mm512_shuffle_i64x2(a, a, 0x0D));
    return _mm512_castsi512_si256(b);
}

// The minimum terms of chunks (0, 1) in lanes 0-7 / 8-15 of mins[0], chunks (2, 3) of mins[1], token c
// in lane c of each half: mn[2ch] * (sub-block 2ch's sum) + mn[2ch+1] * (the next's).
WB_INLINE void chunk_mins(const PackedQ8Kx8w& x, __m512i sc32, __m512i (&mins)[2]) {
    // 16-bit pairs (mn[2ch], mn[2ch+1]) as 32-bit lane ch
    const __m512i mn16 = _mm512_castsi256_si512(_mm512_cvtepi32_epi16(_mm512_alignr_epi32(sc32, sc32, 8)));
    const __m512i m01 = _mm512_permutexvar_epi32(_mm512_inserti64x4(_mm512_set1_epi32(0), _mm256_set1_epi32(1), 1), mn16);
    const __m512i m23 = _mm512_permutexvar_epi32(_mm512_inserti64x4(_mm512_set1_epi32(2), _mm256_set1_epi32(3), 1), mn16);
    mins[0] = _mm512_madd_epi16(_mm512_loadu_si512(x.pair_sums[0]), m01);
    mins[1] = _mm512_madd_epi16(_mm512_loadu_si512(x.pair_sums[2]), m23);
}

// Q4_K in the order of llama.cpp's repacked gemm (quant_avx2_packed.cpp's dot_q4_k_gemm_tile_packed):
// per chunk acc = fma(float(sum), d_w * d_x, acc), acc_min = fma(float(min), dmin_w * d_x, acc_min).
void dot_q4_k_gemm_tile_packed_512(int64_t n, const void* w, const void* packed, float* out, int64_t out_stride) {
    const auto* bw = static_cast<const BlockQ4_K*>(w);
    const auto* bx = static_cast<const PackedQ8Kx8w*>(packed);
    __m256 acc = _mm256_setzero_ps(), acc_min = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const BlockQ4_K& wb = bw[i];
        const __m512i sc32 = scales_mins_32(wb.scales);
        const __m256 dx = _mm256_loadu_ps(bx[i].d);
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(fp16(wb.d)), dx);
        const __m256 dmin = _mm256_mul_ps(_mm256_set1_ps(fp16(wb.dmin)), dx);
        __m512i mins[2];
        chunk_mins(bx[i], sc32, mins);
        for (int ch = 0; ch < 4; ++ch) {
            __m512i sums[2];
            chunk_sums(chunk_codes(wb, ch, __m512i{}), bx[i], sc32, ch, sums);
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(token_totals(sums)), d, acc);
            const __m512i m = mins[ch / 2];
            const __m256i min = ch % 2 ? _mm512_extracti64x4_epi64(m, 1) : _mm512_castsi512_si256(m);
            acc_min = _mm256_fmadd_ps(_mm256_cvtepi32_ps(min), dmin, acc_min);
        }
    }
    store_tile_lanes(_mm256_sub_ps(acc, acc_min), out, out_stride);
}

// Q4_K and Q5_K in llama.cpp's tiled order (quant_avx2_packed.cpp's dot_k45_tiled_tile_packed): per
// block r = d_w * float(sum), r = fma(-dmin_w, float(min), r), acc = fma(r, d_x, acc).
template <class BW>
void dot_k45_tiled_tile_packed_512(int64_t n, const void* w, const void* packed, float* out, int64_t out_stride) {
    const auto* bw = static_cast<const BW*>(w);
    const auto* bx = static_cast<const PackedQ8Kx8w*>(packed);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const BW& wb = bw[i];
        const __m512i sc32 = scales_mins_32(wb.scales);
        const __m512i qh = block_qh(wb);
        __m512i total[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
        for (int ch = 0; ch < 4; ++ch) {
            __m512i sums[2];
            chunk_sums(chunk_codes(wb, ch, qh), bx[i], sc32, ch, sums);
            total[0] = _mm512_add_epi32(total[0], sums[0]);
            total[1] = _mm512_add_epi32(total[1], sums[1]);
        }
        __m512i mins[2];
        chunk_mins(bx[i], sc32, mins);
        const __m512i m = _mm512_add_epi32(mins[0], mins[1]);
        const __m256i min = _mm256_add_epi32(_mm512_castsi512_si256(m), _mm512_extracti64x4_epi64(m, 1));
        __m256 r = _mm256_mul_ps(_mm256_set1_ps(fp16(wb.d)), _mm256_cvtepi32_ps(token_totals(total)));
        r = _mm256_fmadd_ps(_mm256_set1_ps(-fp16(wb.dmin)), _mm256_cvtepi32_ps(min), r);
        acc = _mm256_fmadd_ps(r, _mm256_loadu_ps(bx[i].d), acc);
    }
    store_tile_lanes(acc, out, out_stride);
}

// A tile over activation rows in place (DotKernels::tile) through its packed form, as the AVX2 file's.
template <void (*Packed)(int64_t, const void*, const void*, float*, int64_t)>
void tile_via_packed_512(int64_t n, const void* w, size_t, const void* x, size_t x_stride, float* out, int64_t out_stride) {
    thread_local FloatBuffer buffer;
    static_assert(sizeof(PackedQ8Kx8w) % sizeof(float) == 0, "the packed blocks fill whole floats");
    float* packed = buffer.get(packed_q8_k_x8w_bytes(n) / sizeof(float));
    pack_q8_k_x8w(n, x, x_stride, packed);
    Packed(n, w, packed, out, out_stride);
}

template <void (*Packed)(int64_t, const void*, const void*, float*, int64_t)>
void add_packed_512(KernelTable& t, DotOrder o, GgmlType type) {
    t.tile_in(o, type) = tile_via_packed_512<Packed>;
    t.packed_in(o, type) = {packed_q8_k_x8w_bytes, pack_q8_k_x8w, Packed};
}

WB_AVX512_WARNINGS_ON

}  // namespace

void add_packed_avx512_kernels(KernelTable& t) {
    add_packed_512<dot_q4_k_gemm_tile_packed_512>(t, DotOrder::kGemm, GgmlType::Q4_K);
    add_packed_512<dot_k45_tiled_tile_packed_512<BlockQ4_K>>(t, DotOrder::kTiled, GgmlType::Q4_K);
    add_packed_512<dot_k45_tiled_tile_packed_512<BlockQ5_K>>(t, DotOrder::kTiled, GgmlType::Q5_K);
}

}  // namespace wb
