// AVX2 + FMA + F16C kernels. The only file built with -mavx2 -mfma -mf16c: nothing here may run before
// quant.cpp has checked the CPU, so it only hands out function pointers.
//
// Integer blocks all follow one pattern: bring the weights to 32 bytes holding one value each, as
// unsigned bytes where possible (_mm256_maddubs_epi16 multiplies unsigned by signed), pair-sum to
// 16 bits, then to 32 bits with _mm256_madd_epi16 (by ones, or by the sub-block scales for K-quants),
// convert to float and accumulate with one FMA per block, scaled by d_w*d_x. Per-block offset terms
// (Q4_1/Q5_1 m*s, K-quant minimums and value offsets) come from the activation block sums (Q8_K
// bsums, Q8_1 s), each applied where llama.cpp's x86 kernel applies it (see the K-quant section).
#include <cpuid.h>
#include <immintrin.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "quant/quant_blocks.h"
#include "quant/quant_internal.h"
#include "quant/quant_avx2_common.h"
#include "quant/quant_isa_local.h"

namespace wb {

namespace {

// 16 bytes of packed nibbles -> 32 values in element order (low nibbles are elements 0..15).
WB_INLINE __m256i unpack_nibbles(const uint8_t* qs) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(v, 4), v), _mm256_set1_epi8(0x0F));
}

// 32 little-endian bits -> 32 bytes, 0xFF where the bit is set.
WB_INLINE __m256i bits_to_bytes(const uint8_t* p) {
    uint32_t bits;
    std::memcpy(&bits, p, sizeof bits);
    // byte i takes source byte i/8 (shuffles stay within 128-bit lanes, so each lane asks for its pair)
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int(bits)), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                                        0x0101010101010101, 0x0000000000000000));
    const __m256i bit_of_byte = _mm256_set1_epi64x(int64_t(0x8040201008040201));
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit_of_byte), bit_of_byte);
}

// Unsigned bytes (< 128) times signed bytes, 8 int32 partial sums. The pair sums cannot saturate:
// weights are < 64 and activations in [-127, 127].
WB_INLINE __m256i dot_u8_i8(__m256i u, __m256i s) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// Signed times signed: move a's sign onto b so maddubs sees |a| (|-128| = 128 as unsigned is fine;
// b never holds -128 because activations are quantized to [-127, 127]).
WB_INLINE __m256i dot_i8_i8(__m256i a, __m256i b) {
    return dot_u8_i8(_mm256_sign_epi8(a, a), _mm256_sign_epi8(b, a));
}

// ---- legacy 32-blocks ----

// d_a*d_b broadcast, both fp16, with one conversion.
WB_INLINE __m256 scale_product(uint16_t a, uint16_t b) {
    const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128(int(uint32_t(b) << 16 | a)));
    return _mm256_broadcastss_ps(_mm_mul_ss(f, _mm_movehdup_ps(f)));
}

// Q4_1/Q5_1 blocks start with (d, m) and Q8_1 blocks with (d, s): one F16C conversion of those four
// halves gives [d_w, m, d_x, s], and one multiply gives [d_w*d_x, m*s] (the hot path for Q4_1 models).
WB_INLINE __m128 q8_1_scales(const void* w_block, const BlockQ8_1& x) {
    uint32_t dm, ds;
    std::memcpy(&dm, w_block, sizeof dm);
    std::memcpy(&ds, &x, sizeof ds);
    const __m128 f = _mm_cvtph_ps(_mm_cvtsi64_si128(int64_t(uint64_t(ds) << 32 | dm)));
    return _mm_mul_ps(f, _mm_movehl_ps(f, f));
}

// Each block function adds d_w*d_x*dot to v and its per-block offset terms (m*s, K-quant minimums,
// value offsets) to extra.
struct Acc {
    __m256 v = _mm256_setzero_ps();
    float extra = 0.0f;
};

WB_INLINE void block_q4_0(const BlockQ4_0& w, const BlockQ8_0& x, Acc& acc) {
    const __m256i q = _mm256_sub_epi8(unpack_nibbles(w.qs), _mm256_set1_epi8(8));
    const __m256 d = scale_product(w.d, x.d);
    acc.v = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_i8(q, load32(x.qs))), acc.v);
}

WB_INLINE void block_q4_1(const BlockQ4_1& w, const BlockQ8_1& x, Acc& acc) {
    const __m128 scales = q8_1_scales(&w, x);
    acc.extra += _mm_cvtss_f32(_mm_movehdup_ps(scales));
    const __m256 prod = _mm256_cvtepi32_ps(dot_u8_i8(unpack_nibbles(w.qs), load32(x.qs)));
    acc.v = _mm256_fmadd_ps(_mm256_broadcastss_ps(scales), prod, acc.v);
}

WB_INLINE void block_q5_0(const BlockQ5_0& w, const BlockQ8_0& x, Acc& acc) {
    // value - 16 as int8: the nibble when the fifth bit is set, nibble | 0xF0 (= nibble - 16) when not
    const __m256i high = _mm256_andnot_si256(bits_to_bytes(w.qh), _mm256_set1_epi8(char(0xF0)));
    const __m256i q = _mm256_or_si256(unpack_nibbles(w.qs), high);
    const __m256 d = scale_product(w.d, x.d);
    acc.v = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_i8(q, load32(x.qs))), acc.v);
}

WB_INLINE void block_q5_1(const BlockQ5_1& w, const BlockQ8_1& x, Acc& acc) {
    const __m256i high = _mm256_and_si256(bits_to_bytes(w.qh), _mm256_set1_epi8(0x10));
    const __m256i q = _mm256_or_si256(unpack_nibbles(w.qs), high);
    const __m128 scales = q8_1_scales(&w, x);
    acc.extra += _mm_cvtss_f32(_mm_movehdup_ps(scales));
    acc.v = _mm256_fmadd_ps(_mm256_broadcastss_ps(scales), _mm256_cvtepi32_ps(dot_u8_i8(q, load32(x.qs))), acc.v);
}

WB_INLINE void block_q8_0(const BlockQ8_0& w, const BlockQ8_0& x, Acc& acc) {
    const __m256 d = scale_product(w.d, x.d);
    acc.v = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_i8(load32(w.qs), load32(x.qs))), acc.v);
}

// One accumulator, blocks in order, per-block offset terms (Q4_1/Q5_1 m*s) summed separately as
// scalars and added after the horizontal sum. For the 32-element block types this is the order of
// float operations of llama.cpp's AVX2 dots (and of its batched Q8_0 kernel), so results agree bit
// for bit: with activations in the hundreds (SmolLM2 and others), the Q8 quantization of the next
// matmul's activations turns any last-bit difference into a visibly different logit. Two
// interleaved accumulators would round differently and measured no faster (the loop is throughput
// bound, not FMA-latency bound).
template <class BW, class BX, void (*Block)(const BW&, const BX&, Acc&)>
float dot_blocks(int64_t n, const void* w, const void* x) {
    constexpr int64_t elems = std::is_same_v<BX, BlockQ8_K> ? kQKK : kQK;
    const auto* bw = static_cast<const BW*>(w);
    const auto* bx = static_cast<const BX*>(x);
    const int64_t nb = n / elems;
    Acc acc;
    for (int64_t i = 0; i < nb; ++i) Block(bw[i], bx[i], acc);
    return hsum(acc.v) + acc.extra;
}

// The 32-element types' weight codes for dot_tile32: signed (value = d * code) for Q4_0, Q5_0 and
// Q8_0, unsigned (value = d * code + m) for Q4_1 and Q5_1, as the block functions above unpack them.
WB_INLINE __m256i q4_0_codes(const BlockQ4_0& w) { return _mm256_sub_epi8(unpack_nibbles(w.qs), _mm256_set1_epi8(8)); }
WB_INLINE __m256i q5_0_codes(const BlockQ5_0& w) {
    return _mm256_or_si256(unpack_nibbles(w.qs), _mm256_andnot_si256(bits_to_bytes(w.qh), _mm256_set1_epi8(char(0xF0))));
}
WB_INLINE __m256i q8_0_codes(const BlockQ8_0& w) { return load32(w.qs); }
WB_INLINE __m256i q4_1_codes(const BlockQ4_1& w) { return unpack_nibbles(w.qs); }
WB_INLINE __m256i q5_1_codes(const BlockQ5_1& w) {
    return _mm256_or_si256(unpack_nibbles(w.qs), _mm256_and_si256(bits_to_bytes(w.qh), _mm256_set1_epi8(0x10)));
}

// The fp16 field at byte offset off of block i of each of the tile's activation rows, as 8 floats.
template <class BX>
WB_INLINE __m256 tile_halves(const BX* const (&bx)[kDotTileCols], int64_t i, size_t off) {
    const auto half = [&](int c) {
        uint16_t h;
        std::memcpy(&h, reinterpret_cast<const uint8_t*>(&bx[c][i]) + off, 2);
        return short(h);
    };
    return _mm256_cvtph_ps(_mm_setr_epi16(half(0), half(1), half(2), half(3), half(4), half(5), half(6), half(7)));
}

// AVX-VNNI's vpdpbusd (acc + four u8 * s8 products per int32 lane) and vpdpwssd (acc + two s16 * s16
// products per lane) give exactly the integers of maddubs + madd by ones (whose 16-bit pair sums never
// saturate here, see dot_u8_i8), resp. of madd + add, in one instruction instead of two. The kernels
// below that use them take kVnni as a template parameter; their kVex forms are installed only where
// CPUID reports AVX-VNNI (avx2_kernels), their kEvex forms only in the avx512 family. The instructions are written as inline assembly because GCC
// and clang refuse to inline a function of a wider target (the intrinsics) into one built for this
// file's AVX2, so a template could not otherwise hold both forms.
// A CPU with AVX-512 VNNI and VL but not AVX-VNNI (Zen 4, Cascade Lake, Ice Lake, Tiger Lake)
// has the same two instructions on 256-bit registers in their EVEX encoding: kEvex, installed by the
// avx512 family (add_vnni_tiles_evex).
enum class Vnni { kNone, kVex, kEvex };

template <Vnni kVnni>
WB_INLINE __m256i dot_u8_i8_x(__m256i u, __m256i s) {
    __m256i acc = _mm256_setzero_si256();
    if constexpr (kVnni == Vnni::kVex) {
        asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
    } else if constexpr (kVnni == Vnni::kEvex) {
        asm("%{evex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
    } else {
        acc = dot_u8_i8(u, s);
    }
    return acc;
}

// acc + _mm256_madd_epi16(a, b)
template <Vnni kVnni>
WB_INLINE __m256i add_madd_x(__m256i acc, __m256i a, __m256i b) {
    if constexpr (kVnni == Vnni::kVex) {
        asm("%{vex%} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
    } else if constexpr (kVnni == Vnni::kEvex) {
        asm("%{evex%} vpdpwssd %2, %1, %0" : "+x"(acc) : "x"(a), "x"(b));
    } else {
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
    }
    return acc;
}

// One weight row of dot_tile32_rows: the tile's 8 tokens against the row's blocks, with the tokens'
// activation scales already converted (dx, and sx for Q8_1: block i, token c at [8 * i + c]). Per
// block, d_w * d_x of the 8 tokens is one vector multiply (and m_w * s_x for Q4_1/Q5_1), each token's
// product then broadcast from memory; every accumulator gets exactly the operations of the block
// functions above in block order: acc = fma(d_w * d_x, float(lanes), acc), extra += m_w * s_x, out =
// hsum(acc) + extra, so each output is bit-identical to dot_blocks. For signed codes |q| is taken once
// per block and q's sign moved onto each token's activations, as dot_i8_i8 does.
template <class BW, class BX, __m256i (*Codes)(const BW&), bool kSigned, Vnni kVnni>
WB_INLINE void tile32_row(int64_t nb, const BW* bw, const BX* const (&bx)[kDotTileCols], const float* dx,
                          const float* sx, float* out, int64_t out_stride) {
    constexpr bool kOffset = std::is_same_v<BX, BlockQ8_1>;
    __m256 acc[kDotTileCols];
    for (int c = 0; c < kDotTileCols; ++c) acc[c] = _mm256_setzero_ps();
    __m256 extra = _mm256_setzero_ps();  // token c's offset terms in lane c
    alignas(32) float d[kDotTileCols];   // d_w * d_x of the block, token c at d[c]
    for (int64_t i = 0; i < nb; ++i) {
        const __m256i q = Codes(bw[i]);
        const __m256i u = kSigned ? _mm256_sign_epi8(q, q) : q;
        _mm256_store_ps(d, _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(bw[i].d)), _mm256_loadu_ps(dx + 8 * i)));
        if constexpr (kOffset)
            extra = _mm256_add_ps(extra, _mm256_mul_ps(_mm256_set1_ps(_cvtsh_ss(bw[i].m)), _mm256_loadu_ps(sx + 8 * i)));
#pragma GCC unroll 8
        for (int c = 0; c < kDotTileCols; ++c) {
            const __m256i y = load32(bx[c][i].qs);
            const __m256i lanes = dot_u8_i8_x<kVnni>(u, kSigned ? _mm256_sign_epi8(y, q) : y);
            acc[c] = _mm256_fmadd_ps(_mm256_broadcast_ss(d + c), _mm256_cvtepi32_ps(lanes), acc[c]);
        }
    }
    alignas(32) float e[kDotTileCols];
    _mm256_store_ps(e, extra);
    for (int c = 0; c < kDotTileCols; ++c) out[c * out_stride] = hsum(acc[c]) + e[c];
}

// dot_tile for the 32-element types over n_rows weight rows at once (DotTileRowsFn): the 8 tokens'
// fp16 activation scales of every block are converted once for all the rows (where one row at a time
// converted them again for each row: about a third of the work per block).
template <class BW, class BX, __m256i (*Codes)(const BW&), bool kSigned, Vnni kVnni>
void dot_tile32_rows(int64_t n, const void* w, size_t w_stride, int64_t n_rows, const void* x, size_t x_stride,
                     float* out, int64_t out_stride) {
    static_assert(kDotTileRows == 1 && kDotTileCols == 8, "one weight row at a time, the 8 tokens in the lanes of a vector");
    constexpr bool kOffset = std::is_same_v<BX, BlockQ8_1>;
    constexpr int64_t kStackBlocks = 128;  // rows of up to 4096 values keep the scales on the stack
    const int64_t nb = n / kQK;
    const BX* bx[kDotTileCols];
    for (int c = 0; c < kDotTileCols; ++c)
        bx[c] = reinterpret_cast<const BX*>(static_cast<const uint8_t*>(x) + size_t(c) * x_stride);
    alignas(32) float stack[(kOffset ? 2 : 1) * kDotTileCols * kStackBlocks];
    thread_local FloatBuffer heap;  // longer rows: grown once per thread, not allocated per call
    float* dx = nb > kStackBlocks ? heap.get(size_t((kOffset ? 2 : 1) * kDotTileCols * nb)) : stack;
    float* sx = dx + kDotTileCols * nb;
    for (int64_t i = 0; i < nb; ++i) {
        _mm256_storeu_ps(dx + 8 * i, tile_halves(bx, i, offsetof(BX, d)));
        if constexpr (kOffset) _mm256_storeu_ps(sx + 8 * i, tile_halves(bx, i, offsetof(BX, s)));
    }
    for (int64_t r = 0; r < n_rows; ++r)
        tile32_row<BW, BX, Codes, kSigned, kVnni>(
            nb, reinterpret_cast<const BW*>(static_cast<const uint8_t*>(w) + size_t(r) * w_stride), bx, dx, sx, out + r,
            out_stride);
}

template <class BW, class BX, __m256i (*Codes)(const BW&), bool kSigned, Vnni kVnni>
void dot_tile32(int64_t n, const void* w, size_t w_stride, const void* x, size_t x_stride, float* out, int64_t out_stride) {
    dot_tile32_rows<BW, BX, Codes, kSigned, kVnni>(n, w, w_stride, 1, x, x_stride, out, out_stride);
}

// ---- K-quants against Q8_K ----
//
// llama.cpp's x86 build multiplies K-quant weights along three paths, and this file reproduces the
// float order of each (the integer part, codes times activations times sub-block scales, is exact
// and therefore the same everywhere; only how it is folded into floats differs):
//  - its row dot products (ggml_vec_dot_*_q8_K): batches of fewer than 8 tokens, for every K-quant
//    matrix it does not repack (all but Q4_K). 8 int32 lanes per block (lane l holds elements
//    4l..4l+3 of every run of 32), converted to float and folded into one 8-lane accumulator with
//    an FMA by d_x*d_w; the minimums and value offsets as described at each block function;
//  - its tiled matmul: batches of 8 tokens or more, every K-quant it does not repack (all but
//    Q4_K): per block the exact integer sums, d_w times their sum (minus dmin_w times the minimum
//    term, fused), folded into one float with an FMA by d_x (dot_k_tiled);
//  - its repacked Q4_K gemv and gemm (dot_q4_k_gemv, dot_q4_k_gemm).

// 16-bit multipliers for one run of 32 values: the first 16 get a, the last 16 get b (the low and
// high 128-bit lanes of the maddubs result).
WB_INLINE __m256i scale_pair(int a, int b) { return _mm256_set_m128i(_mm_set1_epi16(short(b)), _mm_set1_epi16(short(a))); }

// sum over a run of 32: scale * q * y, q unsigned bytes, 8 int32 partial sums.
WB_INLINE __m256i scaled_run(__m256i q, const int8_t* y, __m256i scales) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, load32(y)), scales);
}

// sum_k v[k] * bsums[k] over the 16 sub-blocks (v = scales or mins, as int8).
WB_INLINE int weighted_bsums(const int8_t* v, const int16_t* bsums) {
    const __m256i prod = _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v))),
                                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums)));
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(prod), _mm256_extracti128_si256(prod, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

// A block's exact integer part: sum = sum_k scale_k * sum(value * y) over its sub-blocks (values
// with their offsets: Q3_K's -4, Q6_K's -32), min = sum_k min_k * (activation sum of sub-block k).
struct KInts {
    int sum;
    int min;
};

// Q2_K: lanes of scale * q * y, q in 0..3.
WB_INLINE __m256i q2_k_lanes(const BlockQ2_K& w, const BlockQ8_K& x) {
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
        const __m256i raw = load32(w.qs + 32 * h);
        for (int j = 0; j < 4; ++j) {
            const __m256i q = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * j), m3);
            const int k = 8 * h + 2 * j;
            sumi = _mm256_add_epi32(sumi, scaled_run(q, x.qs + 128 * h + 32 * j,
                                                     scale_pair(w.scales[k] & 0xF, w.scales[k + 1] & 0xF)));
        }
    }
    return sumi;
}

WB_INLINE __m128i q2_k_mins(const BlockQ2_K& w) {
    return _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales)), 4),
                         _mm_set1_epi8(0x0F));
}

// The minimums as llama.cpp's row dot applies them: lane k = min[2k]*bsums[2k] + min[2k+1]*bsums[2k+1],
// folded into the accumulator (scale -d_x*dmin_w) before the block's scaled products.
WB_INLINE void block_q2_k(const BlockQ2_K& w, const BlockQ8_K& x, Acc& acc) {
    const __m256i prod = _mm256_madd_epi16(_mm256_cvtepi8_epi16(q2_k_mins(w)),
                                           _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums)));
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(-x.d * fp16(w.dmin)), _mm256_cvtepi32_ps(prod), acc.v);
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(x.d * fp16(w.d)), _mm256_cvtepi32_ps(q2_k_lanes(w, x)), acc.v);
}

WB_INLINE KInts q2_k_ints(const BlockQ2_K& w, const BlockQ8_K& x) {
    int8_t mins[16];
    _mm_storeu_si128(reinterpret_cast<__m128i*>(mins), q2_k_mins(w));
    return {hsum_i32(q2_k_lanes(w, x)), weighted_bsums(mins, x.bsums)};
}

// Q3_K: lanes of scale * v * y with the signed value v = q - 4 (q = low bits | high-mask bit << 2),
// the offset applied per element inside the lanes, as llama.cpp's row dot does.
WB_INLINE __m256i q3_k_lanes(const BlockQ3_K& w, const BlockQ8_K& x) {
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m256i one = _mm256_set1_epi8(1);
    const __m256i four = _mm256_set1_epi8(4);
    const __m256i hmask = load32(w.hmask);
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
        const __m256i raw = load32(w.qs + 32 * h);
        for (int j = 0; j < 4; ++j) {
            const __m256i low = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * j), m3);
            const __m256i high = _mm256_and_si256(_mm256_srli_epi16(hmask, 4 * h + j), one);
            const __m256i v = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 2)), four);
            const int k = 8 * h + 2 * j;
            // |v| times y with v's sign: pair sums of at most 2*4*127, exact in 16 bits
            const __m256i prod = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(load32(x.qs + 128 * h + 32 * j), v));
            sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(prod, scale_pair(q3k_scale(k, w.scales), q3k_scale(k + 1, w.scales))));
        }
    }
    return sumi;
}

WB_INLINE void block_q3_k(const BlockQ3_K& w, const BlockQ8_K& x, Acc& acc) {
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(x.d * fp16(w.d)), _mm256_cvtepi32_ps(q3_k_lanes(w, x)), acc.v);
}

WB_INLINE KInts q3_k_ints(const BlockQ3_K& w, const BlockQ8_K& x) { return {hsum_i32(q3_k_lanes(w, x)), 0}; }

// A Q4_K/Q5_K block's 6-bit scales and minimums read with vector instructions (the scalar reading,
// k4_scale_min, costs about as much as the block's products): `scales` is q4_k_scales_mins' vector
// (scale k in byte k of both halves), `min_term` is sum_j mn[j] * (activation sum of sub-block j's 32
// values), an exact integer either way.
struct K4Scales {
    __m256i scales;
    int min_term;
};

WB_INLINE K4Scales k4_scales(const uint8_t* packed, const int16_t* bsums) {
    const __m256i sm = q4_k_scales_mins(packed);
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums));
    // pair j = bsums[2j] + bsums[2j+1] (16 values of at most 128 each: |pair| <= 4096, no int16 overflow)
    const __m128i pairs = _mm_hadd_epi16(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
    const __m128i mins = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(_mm256_castsi256_si128(sm), _mm256_castsi256_si128(sm)));
    __m128i prod = _mm_madd_epi16(mins, pairs);
    prod = _mm_add_epi32(prod, _mm_shuffle_epi32(prod, 0x4E));
    prod = _mm_add_epi32(prod, _mm_shuffle_epi32(prod, 0xB1));
    return {sm, _mm_cvtsi128_si32(prod)};
}

// Scale k of k4_scales' vector in every int16 lane (the shuffle's 0x80 bytes give the high zeros).
WB_INLINE __m256i k4_scale(__m256i scales, int k) { return _mm256_shuffle_epi8(scales, _mm256_set1_epi16(short(0x8000 | k))); }

// Q4_K: lanes of scale * q * y, q in 0..15.
WB_INLINE __m256i q4_k_lanes(const BlockQ4_K& w, const BlockQ8_K& x, __m256i scales) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i sumi = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
        const __m256i raw = load32(w.qs + 32 * c);
        const __m256i lo = _mm256_and_si256(raw, m4);
        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
        sumi = _mm256_add_epi32(sumi, scaled_run(lo, x.qs + 64 * c, k4_scale(scales, 2 * c)));
        sumi = _mm256_add_epi32(sumi, scaled_run(hi, x.qs + 64 * c + 32, k4_scale(scales, 2 * c + 1)));
    }
    return sumi;
}

WB_INLINE KInts q4_k_ints(const BlockQ4_K& w, const BlockQ8_K& x) {
    const K4Scales k = k4_scales(w.scales, x.bsums);
    return {hsum_i32(q4_k_lanes(w, x, k.scales)), k.min_term};
}

// Q4_K in the order of llama.cpp's row dot product (only reached by a matrix it does not repack, see
// dot_q4_k_gemv): the scaled products in 8 lanes as for the other types, the minimums in 4 lanes
// (lane m: sub-blocks 2m and 2m+1) folded in with their own FMA (scale -d_x*dmin_w), summed
// ((m0+m2)+(m1+m3)) and added after the horizontal sum of the 8.
float dot_q4_k_row(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const BlockQ4_K*>(w);
    const auto* bx = static_cast<const BlockQ8_K*>(x);
    const int64_t nb = n / kQKK;
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_m = _mm_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        const BlockQ4_K& wb = bw[i];
        const BlockQ8_K& xb = bx[i];
        const __m256i sm = q4_k_scales_mins(wb.scales);
        const __m128i sm128 = _mm256_castsi256_si128(sm);
        const __m128i mins = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(sm128, sm128));
        const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb.bsums));
        const __m128i pair_sums = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
        acc_m = _mm_fmadd_ps(_mm_set1_ps(-xb.d * fp16(wb.dmin)), _mm_cvtepi32_ps(_mm_madd_epi16(mins, pair_sums)), acc_m);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(xb.d * fp16(wb.d)), _mm256_cvtepi32_ps(q4_k_lanes(wb, xb, sm)), acc);
    }
    acc_m = _mm_add_ps(acc_m, _mm_movehl_ps(acc_m, acc_m));
    acc_m = _mm_add_ss(acc_m, _mm_movehdup_ps(acc_m));
    return hsum(acc) + _mm_cvtss_f32(acc_m);
}

// Q4_K in the order of llama.cpp's x86 gemv: its x86 build repacks Q4_K matrices whose row count is a
// multiple of 8 (8 rows interleaved) and multiplies them with its gemv/gemm kernels rather than the
// row dot product. Per block the scaled products and the minimum term are each summed exactly in
// integers, then folded into two float accumulators with one fused multiply-add each (scale
// d_w*d_x, resp. dmin_w*d_x); the result is their difference.
float dot_q4_k_gemv(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const BlockQ4_K*>(w);
    const auto* bx = static_cast<const BlockQ8_K*>(x);
    const int64_t nb = n / kQKK;
    float acc = 0.0f, acc_min = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
        const KInts k = q4_k_ints(bw[i], bx[i]);
        acc = fma_f(float(k.sum), fp16(bw[i].d) * bx[i].d, acc);
        acc_min = fma_f(float(k.min), fp16(bw[i].dmin) * bx[i].d, acc_min);
    }
    return acc - acc_min;
}

// Q4_K in the order of llama.cpp's x86 gemm (the repacked kernel it uses for each group of 4
// tokens of a batch): the same exact integer sums as dot_q4_k_gemv, but folded into the two float
// accumulators once per 64-value chunk (two sub-blocks) instead of once per block, i.e. four FMAs
// per block for the scaled products (scale d_w*d_x) and four for the minimum term (dmin_w*d_x).
float dot_q4_k_gemm(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const BlockQ4_K*>(w);
    const auto* bx = static_cast<const BlockQ8_K*>(x);
    const int64_t nb = n / kQKK;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    float acc = 0.0f, acc_min = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
        const BlockQ4_K& wb = bw[i];
        const BlockQ8_K& xb = bx[i];
        int sc[8], mn[8];
        for (int j = 0; j < 8; ++j) k4_scale_min(j, wb.scales, sc[j], mn[j]);
        const float d = fp16(wb.d) * xb.d;
        const float dmin = fp16(wb.dmin) * xb.d;
        for (int c = 0; c < 4; ++c) {
            const __m256i raw = load32(wb.qs + 32 * c);
            const __m256i lo = _mm256_and_si256(raw, m4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), m4);
            const int isum =
                hsum_i32(_mm256_add_epi32(scaled_run(lo, xb.qs + 64 * c, _mm256_set1_epi16(short(sc[2 * c]))),
                                          scaled_run(hi, xb.qs + 64 * c + 32, _mm256_set1_epi16(short(sc[2 * c + 1])))));
            const int imin = mn[2 * c] * (xb.bsums[4 * c] + xb.bsums[4 * c + 1]) +
                             mn[2 * c + 1] * (xb.bsums[4 * c + 2] + xb.bsums[4 * c + 3]);
            acc = fma_f(float(isum), d, acc);
            acc_min = fma_f(float(imin), dmin, acc_min);
        }
    }
    return acc - acc_min;
}

// Q5_K: lanes of scale * q * y, q in 0..31.
WB_INLINE __m256i q5_k_lanes(const BlockQ5_K& w, const BlockQ8_K& x, __m256i scales) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i one = _mm256_set1_epi8(1);
    const __m256i qh = load32(w.qh);
    __m256i sumi = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
        const __m256i raw = load32(w.qs + 32 * c);
        const __m256i hbit_lo = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), one);
        const __m256i hbit_hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c + 1), one);
        const __m256i lo = _mm256_or_si256(_mm256_and_si256(raw, m4), _mm256_slli_epi16(hbit_lo, 4));
        const __m256i hi =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), m4), _mm256_slli_epi16(hbit_hi, 4));
        sumi = _mm256_add_epi32(sumi, scaled_run(lo, x.qs + 64 * c, k4_scale(scales, 2 * c)));
        sumi = _mm256_add_epi32(sumi, scaled_run(hi, x.qs + 64 * c + 32, k4_scale(scales, 2 * c + 1)));
    }
    return sumi;
}

// The minimum term folded into a scalar with an FMA (scale -d_x*dmin_w: llama.cpp's build contracts
// its multiply-add), added after the horizontal sum.
WB_INLINE void block_q5_k(const BlockQ5_K& w, const BlockQ8_K& x, Acc& acc) {
    const K4Scales k = k4_scales(w.scales, x.bsums);
    acc.extra = fma_f(-(fp16(w.dmin) * x.d), float(k.min_term), acc.extra);
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(fp16(w.d) * x.d), _mm256_cvtepi32_ps(q5_k_lanes(w, x, k.scales)), acc.v);
}

WB_INLINE KInts q5_k_ints(const BlockQ5_K& w, const BlockQ8_K& x) {
    const K4Scales k = k4_scales(w.scales, x.bsums);
    return {hsum_i32(q5_k_lanes(w, x, k.scales)), k.min_term};
}

// Q6_K: lanes of scale * q * y with the values taken unsigned (q in 0..63); the -32 comes off via
// bsums.
WB_INLINE __m256i q6_k_lanes(const BlockQ6_K& w, const BlockQ8_K& x) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
        const __m256i l0 = load32(w.ql + 64 * h);
        const __m256i l1 = load32(w.ql + 64 * h + 32);
        const __m256i qh = load32(w.qh + 32 * h);
        const __m256i q[4] = {
            _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m3), 4)),
            _mm256_or_si256(_mm256_and_si256(l1, m4),
                            _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m3), 4)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                            _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m3), 4)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                            _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m3), 4)),
        };
        for (int t = 0; t < 4; ++t) {
            const int k = 8 * h + 2 * t;
            sumi = _mm256_add_epi32(sumi, scaled_run(q[t], x.qs + 128 * h + 32 * t, scale_pair(w.scales[k], w.scales[k + 1])));
        }
    }
    return sumi;
}

// The -32 offset as llama.cpp's row dot applies it: in integers, lane k losing
// 32 * (scale[2k]*bsums[2k] + scale[2k+1]*bsums[2k+1]) before the lanes are converted to float.
WB_INLINE void block_q6_k(const BlockQ6_K& w, const BlockQ8_K& x, Acc& acc) {
    const __m256i offset = _mm256_slli_epi32(
        _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums)),
                          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales)))),
        5);
    const __m256i sumi = _mm256_sub_epi32(q6_k_lanes(w, x), offset);
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(x.d * fp16(w.d)), _mm256_cvtepi32_ps(sumi), acc.v);
}

WB_INLINE KInts q6_k_ints(const BlockQ6_K& w, const BlockQ8_K& x) {
    return {hsum_i32(q6_k_lanes(w, x)) - 32 * weighted_bsums(w.scales, x.bsums), 0};
}

// llama.cpp's tiled K-quant matmul order (see above): per block
//   r = d_w * float(sum)   [ r = fma(-dmin_w, float(min), r) for the types with minimums ]
//   acc = fma(r, d_x, acc)
template <class BW, KInts (*Ints)(const BW&, const BlockQ8_K&), bool kHasMin>
float dot_k_tiled(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const BW*>(w);
    const auto* bx = static_cast<const BlockQ8_K*>(x);
    const int64_t nb = n / kQKK;
    float acc = 0.0f;
    for (int64_t i = 0; i < nb; ++i) {
        const KInts k = Ints(bw[i], bx[i]);
        float r = fp16(bw[i].d) * float(k.sum);
        if constexpr (kHasMin) r = fma_f(-fp16(bw[i].dmin), float(k.min), r);
        acc = fma_f(r, bx[i].d, acc);
    }
    return acc;
}

// Tiles of dot_k_tiled's order (vec_dot_tile): per output its operations in its order; the weight
// block's unpacking is shared by the tile's tokens.
static_assert(kDotTileRows == 1, "the K-quant tiles are written for one weight row");

// The tile's kDotTileCols activation rows, x_stride bytes apart.
WB_INLINE void tile_activation_rows(const void* x, size_t x_stride, const BlockQ8_K* (&rows)[kDotTileCols]) {
    for (int c = 0; c < kDotTileCols; ++c)
        rows[c] = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(x) + size_t(c) * x_stride);
}

template <class BW, KInts (*Ints)(const BW&, const BlockQ8_K&), bool kHasMin>
void dot_k_tiled_tile(int64_t n, const void* w, size_t, const void* x, size_t x_stride, float* out, int64_t out_stride) {
    const auto* bw = static_cast<const BW*>(w);
    const BlockQ8_K* bx[kDotTileCols];
    tile_activation_rows(x, x_stride, bx);
    const int64_t nb = n / kQKK;
    float acc[kDotTileCols] = {};
    for (int64_t i = 0; i < nb; ++i) {
        const float d = fp16(bw[i].d);
        float dmin = 0.0f;
        if constexpr (kHasMin) dmin = fp16(bw[i].dmin);
#pragma GCC unroll 8
        for (int c = 0; c < kDotTileCols; ++c) {
            const KInts k = Ints(bw[i], bx[c][i]);
            float r = d * float(k.sum);
            if constexpr (kHasMin) r = fma_f(-dmin, float(k.min), r);
            acc[c] = fma_f(r, bx[c][i].d, acc[c]);
        }
    }
    for (int c = 0; c < kDotTileCols; ++c) out[c * out_stride] = acc[c];
}

// dot_q4_k_gemm's tile is quant_avx2_packed.cpp's: over activations packed for it.

static_assert(kDotTileCols == 8, "the tile's tokens are the 8 lanes of a vector");
// Q6_K's tiled order (dot_k_tiled<BlockQ6_K, q6_k_ints>) for a tile of 8 tokens in the lanes of one
// float accumulator. Per block, token c's exact integer sum (q6_k_ints: the scaled products of the
// unsigned codes less 32 times the scaled activation sums) is built in 8 int32 lanes, the -32 offset
// subtracted lane by lane as block_q6_k does, and the 8 tokens reduced together (hsum_i32_x8); then
// r = d_w * float(sum) is one vector multiply and acc = fma(r, d_x, acc) one vector FMA: per lane the
// operands and order of dot_k_tiled. The codes of each run of 32 are unpacked once for the 8 tokens.
template <Vnni kVnni>
void dot_q6_k_tiled_tile(int64_t n, const void* w, size_t, const void* x, size_t x_stride, float* out,
                         int64_t out_stride) {
    const auto* bw = static_cast<const BlockQ6_K*>(w);
    const BlockQ8_K* bx[kDotTileCols];
    tile_activation_rows(x, x_stride, bx);
    const int64_t nb = n / kQKK;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        const BlockQ6_K& wb = bw[i];
        const __m256i scales = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb.scales)));
        __m256i part[kDotTileCols];
        for (int c = 0; c < kDotTileCols; ++c) {
            const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bx[c][i].bsums));
            part[c] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(bsums, scales), 5));
        }
        for (int h = 0; h < 2; ++h) {
            const __m256i l0 = load32(wb.ql + 64 * h);
            const __m256i l1 = load32(wb.ql + 64 * h + 32);
            const __m256i qh = load32(wb.qh + 32 * h);
            for (int t = 0; t < 4; ++t) {
                // run t of this half: q6_k_lanes' q[t]
                const __m256i low = _mm256_and_si256(t < 2 ? (t == 0 ? l0 : l1) : _mm256_srli_epi16(t == 2 ? l0 : l1, 4), m4);
                const __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * t), m3), 4);
                const __m256i q = _mm256_or_si256(low, high);
                const int k = 8 * h + 2 * t;
                const __m256i s = scale_pair(wb.scales[k], wb.scales[k + 1]);
#pragma GCC unroll 8
                for (int c = 0; c < kDotTileCols; ++c)
                    part[c] = add_madd_x<kVnni>(part[c], _mm256_maddubs_epi16(q, load32(bx[c][i].qs + 128 * h + 32 * t)), s);
            }
        }
        const __m256 dx = tile_row_scales(bx, i);
        const __m256 r = _mm256_mul_ps(_mm256_set1_ps(fp16(wb.d)), _mm256_cvtepi32_ps(hsum_i32_x8(part)));
        acc = _mm256_fmadd_ps(r, dx, acc);
    }
    store_tile_lanes(acc, out, out_stride);
}

// ---- IQ4_NL, IQ4_XS, TQ1_0, TQ2_0, and the repacked order of Q4_0 ----
//
// The float orders of llama.cpp's x86 kernels for these types (DotOrder in quant.h; the scalar
// family computes the same floats, see quant_scalar.cpp):
//  - IQ4_NL's row dot: even blocks into one 8-lane accumulator, odd blocks into a second, an odd
//    last block added after the horizontal sum (dot_iq4_nl_row); llamafile's tinyBLAS, its batched
//    path: one accumulator, as dot_blocks (kLlamafile);
//  - Q4_0 and IQ4_NL repacked (its gemv and gemm alike): each block's exact sum folded into one
//    float with one FMA by d_w*d_x (dot_block_sums, kGemv/kGemm);
//  - IQ4_XS: as the K-quants, 8 lanes with the group scales inside (row) and the tiled order;
//  - TQ1_0/TQ2_0: lanes of the codes 0..2 times the activations minus the activation sums, one FMA
//    per block by d_x*d_w.

// 16 bytes of packed codes -> the 32 values they index, in element order.
WB_INLINE __m256i iq4_nl_values(const uint8_t* qs) {
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(iq4_nl_table()), unpack_nibbles(qs));
}

WB_INLINE __m256i block_values(const BlockQ4_0& w) { return _mm256_sub_epi8(unpack_nibbles(w.qs), _mm256_set1_epi8(8)); }
WB_INLINE __m256i block_values(const BlockIQ4_NL& w) { return iq4_nl_values(w.qs); }

WB_INLINE void block_iq4_nl(const BlockIQ4_NL& w, const BlockQ8_0& x, Acc& acc) {
    const __m256 d = scale_product(w.d, x.d);
    acc.v = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_i8_i8(block_values(w), load32(x.qs))), acc.v);
}

float dot_iq4_nl_row(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const BlockIQ4_NL*>(w);
    const auto* bx = static_cast<const BlockQ8_0*>(x);
    const int64_t nb = n / kQK;
    Acc even, odd;
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        block_iq4_nl(bw[i], bx[i], even);
        block_iq4_nl(bw[i + 1], bx[i + 1], odd);
    }
    float sum = hsum(_mm256_add_ps(even.v, odd.v));
    if (i < nb) {
        // llama.cpp's build does not fuse this scalar tail; _mm_mul_ss/_mm_add_ss keep this file's
        // -mfma from fusing it here (a plain d * s + sum would become one FMA).
        const int s = hsum_i32(dot_i8_i8(block_values(bw[i]), load32(bx[i].qs)));
        const __m128 term = _mm_mul_ss(_mm_set_ss(fp16(bx[i].d) * fp16(bw[i].d)), _mm_set_ss(float(s)));
        sum = _mm_cvtss_f32(_mm_add_ss(_mm_set_ss(sum), term));
    }
    return sum;
}

template <class BW>
float dot_block_sums(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const BW*>(w);
    const auto* bx = static_cast<const BlockQ8_0*>(x);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        const int s = hsum_i32(dot_i8_i8(block_values(bw[i]), load32(bx[i].qs)));
        acc = fma_f(float(s), fp16(bw[i].d) * fp16(bx[i].d), acc);
    }
    return acc;
}

// A tile of dot_block_sums: per token the same operations in the same order; each weight block is
// unpacked once for the tile's tokens.
template <class BW>
void dot_block_sums_tile(int64_t n, const void* w, size_t, const void* x, size_t x_stride, float* out,
                         int64_t out_stride) {
    const auto* bw = static_cast<const BW*>(w);
    const BlockQ8_0* bx[kDotTileCols];
    for (int c = 0; c < kDotTileCols; ++c)
        bx[c] = reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(x) + size_t(c) * x_stride);
    float acc[kDotTileCols] = {};
    for (int64_t i = 0; i < n / kQK; ++i) {
        const __m256i q = block_values(bw[i]);
        const float dw = fp16(bw[i].d);
#pragma GCC unroll 8
        for (int c = 0; c < kDotTileCols; ++c) {
            const int s = hsum_i32(dot_i8_i8(q, load32(bx[c][i].qs)));
            acc[c] = fma_f(float(s), dw * fp16(bx[c][i].d), acc[c]);
        }
    }
    for (int c = 0; c < kDotTileCols; ++c) out[c * out_stride] = acc[c];
}

// IQ4_XS: lanes of scale * value * y, the signed values through the sign trick (|value| <= 127,
// so the pair sums stay exact in 16 bits).
WB_INLINE __m256i iq4_xs_lanes(const BlockIQ4_XS& w, const BlockQ8_K& x) {
    __m256i sumi = _mm256_setzero_si256();
    for (int g = 0; g < 8; ++g) {
        const __m256i q = iq4_nl_values(w.qs + 16 * g);
        const __m256i prod = _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(load32(x.qs + 32 * g), q));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(prod, _mm256_set1_epi16(short(iq4xs_scale(w, g)))));
    }
    return sumi;
}

WB_INLINE void block_iq4_xs(const BlockIQ4_XS& w, const BlockQ8_K& x, Acc& acc) {
    acc.v = _mm256_fmadd_ps(_mm256_set1_ps(fp16(w.d) * x.d), _mm256_cvtepi32_ps(iq4_xs_lanes(w, x)), acc.v);
}

WB_INLINE KInts iq4_xs_ints(const BlockIQ4_XS& w, const BlockQ8_K& x) { return {hsum_i32(iq4_xs_lanes(w, x)), 0}; }

// Lane k: the activation sums of elements 32k..32k+31 (bsums 2k and 2k+1), which the ternary
// kernels take off their lanes for the -1 of every value.
WB_INLINE __m256i bsum_pairs(const BlockQ8_K& x) {
    return _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums)), _mm256_set1_epi16(1));
}

WB_INLINE __m256i tq2_0_lanes(const BlockTQ2_0& w, const BlockQ8_K& x) {
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256i sumi = _mm256_setzero_si256();
    for (int c = 0; c < 2; ++c) {
        const __m256i raw = load32(w.qs + 32 * c);
        for (int l = 0; l < 4; ++l) {
            const __m256i code = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * l), m3);
            sumi = _mm256_add_epi32(sumi, dot_u8_i8(code, load32(x.qs + 128 * c + 32 * l)));
        }
    }
    return _mm256_sub_epi32(sumi, bsum_pairs(x));
}

// Bytes times 3 (mod 256): moves every byte on to its next base-3 digit (tq1_trit).
WB_INLINE __m256i times3(__m256i q) { return _mm256_add_epi8(q, _mm256_add_epi8(q, q)); }
WB_INLINE __m128i times3(__m128i q) { return _mm_add_epi8(q, _mm_add_epi8(q, q)); }

// The leading digit of each byte, (3q) >> 8, as [q >= 86] + [q >= 171] (AVX2 has no byte multiply).
WB_INLINE __m256i leading_trits(__m256i q) {
    const __m256i ge86 = _mm256_cmpeq_epi8(_mm256_max_epu8(q, _mm256_set1_epi8(86)), q);
    const __m256i ge171 = _mm256_cmpeq_epi8(_mm256_max_epu8(q, _mm256_set1_epi8(char(171))), q);
    return _mm256_sub_epi8(_mm256_setzero_si256(), _mm256_add_epi8(ge86, ge171));
}

WB_INLINE __m256i tq1_0_lanes(const BlockTQ1_0& w, const BlockQ8_K& x) {
    __m256i sumi = _mm256_setzero_si256();
    // qs[0..31]: digit n of byte m is element 32n + m
    __m256i q = load32(w.qs);
    for (int n = 0; n < 5; ++n, q = times3(q))
        sumi = _mm256_add_epi32(sumi, dot_u8_i8(leading_trits(q), load32(x.qs + 32 * n)));
    // qs[32..47]: digit n of byte m is element 160 + 16n + m, so digits (0,1), (2,3) fill two runs
    // of 32; qh: digit n of byte j is element 240 + 4n + j, the second half of the last run.
    const __m256i d0 = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs + 32)));
    const __m256i d1 = times3(d0), d2 = times3(d1), d3 = times3(d2), d4 = times3(d3);
    uint32_t qh;
    std::memcpy(&qh, w.qh, sizeof qh);
    const __m128i h0 = _mm_set1_epi32(int(qh)), h1 = times3(h0), h2 = times3(h1), h3 = times3(h2);
    const __m128i h = _mm_blend_epi32(_mm_blend_epi32(h0, h1, 0x2), _mm_blend_epi32(h2, h3, 0x8), 0xC);
    const __m256i runs[3] = {_mm256_permute2x128_si256(d0, d1, 0x30), _mm256_permute2x128_si256(d2, d3, 0x30),
                             _mm256_set_m128i(h, _mm256_castsi256_si128(d4))};
    for (int r = 0; r < 3; ++r) sumi = _mm256_add_epi32(sumi, dot_u8_i8(leading_trits(runs[r]), load32(x.qs + 160 + 32 * r)));
    return _mm256_sub_epi32(sumi, bsum_pairs(x));
}

template <class BW, __m256i (*Lanes)(const BW&, const BlockQ8_K&)>
WB_INLINE void block_ternary(const BW& w, const BlockQ8_K& x, Acc& acc) {
    acc.v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Lanes(w, x)), _mm256_set1_ps(x.d * fp16(w.d)), acc.v);
}

// The two tiled paths of llama.cpp's matmul (a plain array: no std::initializer_list in this file).
constexpr DotOrder kTiledPaths[] = {DotOrder::kGemv, DotOrder::kGemm};

void add_iq_tq_kernels(KernelTable& t) {
    t.dot[slot(GgmlType::IQ4_NL)] = dot_iq4_nl_row;
    t.dot_in(DotOrder::kLlamafile, GgmlType::IQ4_NL) = dot_blocks<BlockIQ4_NL, BlockQ8_0, block_iq4_nl>;
    t.tile_in(DotOrder::kLlamafile, GgmlType::IQ4_NL) = dot_tile32<BlockIQ4_NL, BlockQ8_0, block_values, true, Vnni::kNone>;
    for (const DotOrder o : kTiledPaths) {
        t.dot_in(o, GgmlType::Q4_0) = dot_block_sums<BlockQ4_0>;
        t.tile_in(o, GgmlType::Q4_0) = dot_block_sums_tile<BlockQ4_0>;
        t.dot_in(o, GgmlType::IQ4_NL) = dot_block_sums<BlockIQ4_NL>;
        t.tile_in(o, GgmlType::IQ4_NL) = dot_block_sums_tile<BlockIQ4_NL>;
    }
    t.dot[slot(GgmlType::IQ4_XS)] = dot_blocks<BlockIQ4_XS, BlockQ8_K, block_iq4_xs>;
    t.dot_in(DotOrder::kTiled, GgmlType::IQ4_XS) = dot_k_tiled<BlockIQ4_XS, iq4_xs_ints, false>;
    // its tile: dot_iq_tile (quant_avx2_iq.cpp)
    t.dot[slot(GgmlType::TQ1_0)] = dot_blocks<BlockTQ1_0, BlockQ8_K, block_ternary<BlockTQ1_0, tq1_0_lanes>>;
    t.dot[slot(GgmlType::TQ2_0)] = dot_blocks<BlockTQ2_0, BlockQ8_K, block_ternary<BlockTQ2_0, tq2_0_lanes>>;
}

// ---- F16 weights and attention's F16 products ----

WB_INLINE __m256 load8(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }

// Attention's F16 products (see F16DotOrder in quant.h). Lane l of an accumulator register is lane l
// of the order, so the vector FMAs are exactly the per-lane FMAs of the definition.
float dot_f16_lanes8(int64_t n, const uint16_t* x, const uint16_t* y) {
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(load8(x + i), load8(y + i), acc);
    float sum = hsum(acc);  // the kLanes8 tree
    for (; i < n; ++i) sum += fp16(x[i]) * fp16(y[i]);
    return sum;
}

float dot_f16_step32(int64_t n, const uint16_t* x, const uint16_t* y) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int u = 0; u < 4; ++u) acc[u] = _mm256_fmadd_ps(load8(x + i + 8 * u), load8(y + i + 8 * u), acc[u]);
    const __m256 a = _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3]));
    __m128 t = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    t = _mm_hadd_ps(t, t);
    t = _mm_hadd_ps(t, t);
    double sum = _mm_cvtss_f32(t);
    for (; i < n; ++i) sum += double(fp16(x[i]) * fp16(y[i]));
    return float(sum);
}

// F16 weights against activations rounded to F16 (quant.h): ggml_vec_dot_f16's order for a row;
// tinyBLAS's one 8-lane accumulator per output for the kLlamafile order, whose tile converts each
// 8-value slice of the weight row once for the tile's 8 tokens.
float dot_f16_weights_step32(int64_t n, const void* w, const void* x) {
    return dot_f16_step32(n, static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(x));
}
float dot_f16_weights_lanes8(int64_t n, const void* w, const void* x) {
    return dot_f16_lanes8(n, static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(x));
}

void dot_f16_weights_lanes8_tile(int64_t n, const void* w, size_t, const void* x, size_t x_stride, float* out,
                                 int64_t out_stride) {
    static_assert(kDotTileRows == 1, "one weight row a tile");
    const auto* a = static_cast<const uint16_t*>(w);
    const uint16_t* b[kDotTileCols];
    for (int c = 0; c < kDotTileCols; ++c)
        b[c] = reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(x) + size_t(c) * x_stride);
    __m256 acc[kDotTileCols];
    for (__m256& v : acc) v = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 wv = load8(a + i);
        for (int c = 0; c < kDotTileCols; ++c) acc[c] = _mm256_fmadd_ps(wv, load8(b[c] + i), acc[c]);
    }
    for (int c = 0; c < kDotTileCols; ++c) {
        float sum = hsum(acc[c]);  // the kLanes8 tree, then the tail as dot_f16_lanes8 adds it
        for (int64_t j = i; j < n; ++j) sum += fp16(a[j]) * fp16(b[c][j]);
        out[c * out_stride] = sum;
    }
}

void fma_f16_row_avx2(float a, const uint16_t* x, float* y, int64_t n) {
    const __m256 av = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, load8(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; ++i) y[i] = fma_f(a, fp16(x[i]), y[i]);
}

// Decode attention's runs of keys (quant.h). The key row is converted once into kf and then dotted
// with every query head of its group; per head the accumulators and their reduction are those of
// dot_f16_lanes8 / dot_f16_step32 above, so each score is bit-identical to one dot_f16_f16 call.
// kStep32 for rows of whole runs of 32, four keys at a time: the four keys' 8-lane sums are reduced
// together (three hadds for four keys instead of two per key), in the association of the one-key
// reduction below, so every score is bit-identical to it. Returns the keys done (a multiple of 4).
constexpr int64_t kBy4MaxDim = 256;  // rows up to this long (every known head dim) take it
int64_t dot_f16_keys_step32_by4(int64_t n, const uint16_t* k, int64_t k_stride, int64_t n_keys, const float* q,
                                int64_t q_stride, int g, float* out, int64_t out_stride) {
    alignas(32) float kf[4][kBy4MaxDim];
    const int64_t n4 = n_keys / 4 * 4;
    for (int64_t j0 = 0; j0 < n4; j0 += 4) {
        for (int r = 0; r < 4; ++r) {
            const uint16_t* kj = k + (j0 + r) * k_stride;
            for (int64_t e = 0; e < n; e += 8) _mm256_store_ps(kf[r] + e, load8(kj + e));
        }
        for (int i = 0; i < g; ++i) {
            const float* qi = q + i * q_stride;
            __m128 t[4];
            for (int r = 0; r < 4; ++r) {
                __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
                for (int64_t b = 0; b < n; b += 32)
                    for (int u = 0; u < 4; ++u)
                        acc[u] = _mm256_fmadd_ps(_mm256_load_ps(kf[r] + b + 8 * u), _mm256_loadu_ps(qi + b + 8 * u), acc[u]);
                const __m256 a = _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3]));
                t[r] = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
            }
            // hadd(hadd(t0, t1), hadd(t2, t3)) = ((t_r0 + t_r1) + (t_r2 + t_r3)) for r = 0..3.
            const __m128 sums = _mm_hadd_ps(_mm_hadd_ps(t[0], t[1]), _mm_hadd_ps(t[2], t[3]));
            alignas(16) float s4[4];
            _mm_store_ps(s4, sums);
            for (int r = 0; r < 4; ++r) out[i * out_stride + j0 + r] = s4[r];
        }
    }
    return n4;
}

// kLanes8 for rows of whole runs of 8, eight keys at a time: each score is still one 8-lane
// accumulator fed the row's runs in order and summed in the kLanes8 tree (hsum), exactly as one key
// at a time; eight independent accumulators keep the FMA units busy where one waited on its own
// latency (the batched attention's kq is this loop). Returns the keys done (a multiple of 8).
int64_t dot_f16_keys_lanes8_by8(int64_t n, const uint16_t* k, int64_t k_stride, int64_t n_keys, const float* q,
                                int64_t q_stride, int g, float* out, int64_t out_stride) {
    alignas(32) float kf[8][kBy4MaxDim];
    const int64_t n8 = n_keys / 8 * 8;
    for (int64_t j0 = 0; j0 < n8; j0 += 8) {
        for (int r = 0; r < 8; ++r) {
            const uint16_t* kj = k + (j0 + r) * k_stride;
            for (int64_t e = 0; e < n; e += 8) _mm256_store_ps(kf[r] + e, load8(kj + e));
        }
        for (int i = 0; i < g; ++i) {
            const float* qi = q + i * q_stride;
            __m256 acc[8];
            for (__m256& a : acc) a = _mm256_setzero_ps();
            for (int64_t b = 0; b < n; b += 8) {
                const __m256 qv = _mm256_loadu_ps(qi + b);
                for (int r = 0; r < 8; ++r) acc[r] = _mm256_fmadd_ps(_mm256_load_ps(kf[r] + b), qv, acc[r]);
            }
            for (int r = 0; r < 8; ++r) out[i * out_stride + j0 + r] = hsum(acc[r]);
        }
    }
    return n8;
}

void dot_f16_keys_avx2(F16DotOrder order, int64_t n, const uint16_t* k, int64_t k_stride, int64_t n_keys, const float* q,
                  int64_t q_stride, int g, float* out, int64_t out_stride) {
    constexpr int64_t kMaxDim = 1024;  // head dims beyond it (none known) take the scalar loop
    if (n > kMaxDim) {
        static const KernelTable scalar = scalar_kernels();
        return scalar.dot_f16_keys(order, n, k, k_stride, n_keys, q, q_stride, g, out, out_stride);
    }
    alignas(32) float kf[kMaxDim];
    const bool step32 = order == F16DotOrder::kStep32;
    const int64_t whole = step32 ? n / 32 * 32 : n / 8 * 8;
    int64_t j = 0;
    if (step32 && whole == n && n <= kBy4MaxDim)
        j = dot_f16_keys_step32_by4(n, k, k_stride, n_keys, q, q_stride, g, out, out_stride);
    else if (!step32 && whole == n && n <= kBy4MaxDim)
        j = dot_f16_keys_lanes8_by8(n, k, k_stride, n_keys, q, q_stride, g, out, out_stride);
    for (; j < n_keys; ++j) {
        const uint16_t* kj = k + j * k_stride;
        int64_t e = 0;
        for (; e + 8 <= n; e += 8) _mm256_store_ps(kf + e, load8(kj + e));
        for (; e < n; ++e) kf[e] = fp16(kj[e]);
        for (int i = 0; i < g; ++i) {
            const float* qi = q + i * q_stride;
            float& o = out[i * out_stride + j];
            if (step32) {
                __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
                for (int64_t b = 0; b < whole; b += 32)
                    for (int u = 0; u < 4; ++u)
                        acc[u] = _mm256_fmadd_ps(_mm256_load_ps(kf + b + 8 * u), _mm256_loadu_ps(qi + b + 8 * u), acc[u]);
                const __m256 a = _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3]));
                __m128 t = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
                t = _mm_hadd_ps(t, t);
                t = _mm_hadd_ps(t, t);
                double sum = _mm_cvtss_f32(t);
                for (int64_t x = whole; x < n; ++x) sum += double(kf[x] * qi[x]);
                o = float(sum);
            } else {
                __m256 acc = _mm256_setzero_ps();
                for (int64_t b = 0; b < whole; b += 8) acc = _mm256_fmadd_ps(_mm256_load_ps(kf + b), _mm256_loadu_ps(qi + b), acc);
                float sum = hsum(acc);
                for (int64_t x = whole; x < n; ++x) sum += kf[x] * qi[x];
                o = sum;
            }
        }
    }
}

// Rows of whole runs of 8 with a multiple of 8 lanes: per 8-dim slice, the slice of every key is
// converted from f16 once (for all heads), then per head eight lanes at a time are held in registers
// while the keys that feed them stream by (the keys of a block of 8 lanes are runs of 8 consecutive
// keys, one per lane, every n_lanes keys). Each lane still receives its keys' fused multiply-adds in
// ascending key order, exactly as the one-key-at-a-time loop below, but the lanes are loaded and
// stored once per slice instead of once per key.
void fma_f16_keys_in_registers(int64_t n, const uint16_t* v, int64_t v_stride, int64_t n_keys, int64_t lane0,
                               int n_lanes, const float* p, int64_t p_stride, int g, float* lanes,
                               int64_t lanes_stride) {
    constexpr int64_t kChunk = 256;  // keys converted at a time (8 KiB of floats)
    alignas(32) float vf[kChunk][8];
    for (int64_t c0 = 0; c0 < n_keys; c0 += kChunk) {
        const int64_t nk = min_of(kChunk, n_keys - c0);
        const int64_t l0 = lane0 + c0;
        for (int64_t d = 0; d < n; d += 8) {
            for (int64_t j = 0; j < nk; ++j) _mm256_store_ps(vf[j], load8(v + (c0 + j) * v_stride + d));
            for (int i = 0; i < g; ++i) {
                const float* pi = p + i * p_stride + c0;
                for (int lb = 0; lb < n_lanes; lb += 8) {
                    float* lane = lanes + i * lanes_stride + int64_t(lb) * n + d;  // lane lb + l at lane + l * n
                    __m256 acc[8];
                    for (int l = 0; l < 8; ++l) acc[l] = _mm256_loadu_ps(lane + l * n);
                    // Key j + l feeds lane lb + l for j = base + m * n_lanes, base = the key of lane lb
                    // ((l0 + base) % n_lanes == lb, possibly before key 0: the run may start mid-block).
                    int64_t j = ((lb - l0) % n_lanes + n_lanes) % n_lanes - n_lanes;
                    const auto partial = [&](int64_t j0) {  // fully unrolled, so acc stays in registers
#pragma GCC unroll 8
                        for (int l = 0; l < 8; ++l)
                            if (j0 + l >= 0 && j0 + l < nk)
                                acc[l] = _mm256_fmadd_ps(_mm256_set1_ps(pi[j0 + l]), _mm256_load_ps(vf[j0 + l]), acc[l]);
                    };
                    if (j + 7 >= 0) partial(j);
                    for (j += n_lanes; j + 8 <= nk; j += n_lanes)
#pragma GCC unroll 8
                        for (int l = 0; l < 8; ++l)
                            acc[l] = _mm256_fmadd_ps(_mm256_set1_ps(pi[j + l]), _mm256_load_ps(vf[j + l]), acc[l]);
                    if (j < nk) partial(j);
                    for (int l = 0; l < 8; ++l) _mm256_storeu_ps(lane + l * n, acc[l]);
                }
            }
        }
    }
}

// Each 8-value slice of a value row is converted once and added to the lanes of every head.
void fma_f16_keys_avx2(int64_t n, const uint16_t* v, int64_t v_stride, int64_t n_keys, int64_t lane0, int n_lanes,
                  const float* p, int64_t p_stride, int g, float* lanes, int64_t lanes_stride) {
    if (n % 8 == 0 && n_lanes % 8 == 0 && n_keys >= n_lanes)
        return fma_f16_keys_in_registers(n, v, v_stride, n_keys, lane0, n_lanes, p, p_stride, g, lanes, lanes_stride);
    for (int64_t j = 0; j < n_keys; ++j) {
        const uint16_t* vj = v + j * v_stride;
        float* lane = lanes + ((lane0 + j) % n_lanes) * n;
        int64_t d = 0;
        for (; d + 8 <= n; d += 8) {
            const __m256 x = load8(vj + d);
            for (int i = 0; i < g; ++i) {
                float* y = lane + i * lanes_stride + d;
                _mm256_storeu_ps(y, _mm256_fmadd_ps(_mm256_set1_ps(p[i * p_stride + j]), x, _mm256_loadu_ps(y)));
            }
        }
        for (; d < n; ++d)
            for (int i = 0; i < g; ++i) {
                float* y = lane + i * lanes_stride + d;
                *y = fma_f(p[i * p_stride + j], fp16(vj[d]), *y);
            }
    }
}

void f16_to_f32_row(const uint16_t* x, float* y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, load8(x + i));
    for (; i < n; ++i) y[i] = fp16(x[i]);
}

void f32_to_f16_row(const float* x, uint16_t* y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
    }
    for (; i < n; ++i) y[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

// AVX-VNNI (CPUID leaf 7, sub-leaf 1, EAX bit 4). The OS's saving of the YMM state is already
// established: this table is only built where AVX2 is usable.
bool cpu_has_avx_vnni() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
}

// The 32-element types' tiles, in a VNNI form where kVnni says (same outputs, fewer instructions).
template <Vnni kVnni>
void add_tile32_kernels(KernelTable& t) {
    t.dot_tile[slot(GgmlType::Q4_0)] = dot_tile32<BlockQ4_0, BlockQ8_0, q4_0_codes, true, kVnni>;
    t.dot_tile_rows[slot(GgmlType::Q4_0)] = dot_tile32_rows<BlockQ4_0, BlockQ8_0, q4_0_codes, true, kVnni>;
    t.dot_tile[slot(GgmlType::Q4_1)] = dot_tile32<BlockQ4_1, BlockQ8_1, q4_1_codes, false, kVnni>;
    t.dot_tile_rows[slot(GgmlType::Q4_1)] = dot_tile32_rows<BlockQ4_1, BlockQ8_1, q4_1_codes, false, kVnni>;
    t.dot_tile[slot(GgmlType::Q5_0)] = dot_tile32<BlockQ5_0, BlockQ8_0, q5_0_codes, true, kVnni>;
    t.dot_tile_rows[slot(GgmlType::Q5_0)] = dot_tile32_rows<BlockQ5_0, BlockQ8_0, q5_0_codes, true, kVnni>;
    t.dot_tile[slot(GgmlType::Q5_1)] = dot_tile32<BlockQ5_1, BlockQ8_1, q5_1_codes, false, kVnni>;
    t.dot_tile_rows[slot(GgmlType::Q5_1)] = dot_tile32_rows<BlockQ5_1, BlockQ8_1, q5_1_codes, false, kVnni>;
    t.dot_tile[slot(GgmlType::Q8_0)] = dot_tile32<BlockQ8_0, BlockQ8_0, q8_0_codes, true, kVnni>;
    t.dot_tile_rows[slot(GgmlType::Q8_0)] = dot_tile32_rows<BlockQ8_0, BlockQ8_0, q8_0_codes, true, kVnni>;
}

// The tiles in their AVX-VNNI form (same outputs, fewer instructions).
void add_vnni_tiles(KernelTable& t) {
    t.vnni = true;
    t.tile_in(DotOrder::kTiled, GgmlType::Q6_K) = dot_q6_k_tiled_tile<Vnni::kVex>;
    add_tile32_kernels<Vnni::kVex>(t);
}

}  // namespace

void add_vnni_tiles_evex(KernelTable& t) {
    t.tile_in(DotOrder::kTiled, GgmlType::Q6_K) = dot_q6_k_tiled_tile<Vnni::kEvex>;
    add_tile32_kernels<Vnni::kEvex>(t);
}

KernelTable avx2_kernels(bool allow_vnni) {
    KernelTable t = scalar_kernels();
    t.name = "avx2";
    t.dot[slot(GgmlType::F16)] = dot_f16_weights_step32;
    t.dot_in(DotOrder::kLlamafile, GgmlType::F16) = dot_f16_weights_lanes8;
    t.tile_in(DotOrder::kLlamafile, GgmlType::F16) = dot_f16_weights_lanes8_tile;
    t.dot[slot(GgmlType::Q4_0)] = dot_blocks<BlockQ4_0, BlockQ8_0, block_q4_0>;
    t.dot[slot(GgmlType::Q4_1)] = dot_blocks<BlockQ4_1, BlockQ8_1, block_q4_1>;
    t.dot[slot(GgmlType::Q5_0)] = dot_blocks<BlockQ5_0, BlockQ8_0, block_q5_0>;
    t.dot[slot(GgmlType::Q5_1)] = dot_blocks<BlockQ5_1, BlockQ8_1, block_q5_1>;
    t.dot[slot(GgmlType::Q8_0)] = dot_blocks<BlockQ8_0, BlockQ8_0, block_q8_0>;
    add_tile32_kernels<Vnni::kNone>(t);
    t.dot[slot(GgmlType::Q2_K)] = dot_blocks<BlockQ2_K, BlockQ8_K, block_q2_k>;
    t.dot[slot(GgmlType::Q3_K)] = dot_blocks<BlockQ3_K, BlockQ8_K, block_q3_k>;
    t.dot[slot(GgmlType::Q4_K)] = dot_q4_k_row;
    t.dot_in(DotOrder::kGemv, GgmlType::Q4_K) = dot_q4_k_gemv;
    t.dot_in(DotOrder::kGemm, GgmlType::Q4_K) = dot_q4_k_gemm;
    t.dot[slot(GgmlType::Q5_K)] = dot_blocks<BlockQ5_K, BlockQ8_K, block_q5_k>;
    t.dot[slot(GgmlType::Q6_K)] = dot_blocks<BlockQ6_K, BlockQ8_K, block_q6_k>;
    t.dot_in(DotOrder::kTiled, GgmlType::Q2_K) = dot_k_tiled<BlockQ2_K, q2_k_ints, true>;
    t.dot_in(DotOrder::kTiled, GgmlType::Q3_K) = dot_k_tiled<BlockQ3_K, q3_k_ints, false>;
    t.dot_in(DotOrder::kTiled, GgmlType::Q4_K) = dot_k_tiled<BlockQ4_K, q4_k_ints, true>;
    t.dot_in(DotOrder::kTiled, GgmlType::Q5_K) = dot_k_tiled<BlockQ5_K, q5_k_ints, true>;
    t.dot_in(DotOrder::kTiled, GgmlType::Q6_K) = dot_k_tiled<BlockQ6_K, q6_k_ints, false>;
    t.tile_in(DotOrder::kTiled, GgmlType::Q2_K) = dot_k_tiled_tile<BlockQ2_K, q2_k_ints, true>;
    t.tile_in(DotOrder::kTiled, GgmlType::Q3_K) = dot_k_tiled_tile<BlockQ3_K, q3_k_ints, false>;
    t.tile_in(DotOrder::kTiled, GgmlType::Q6_K) = dot_q6_k_tiled_tile<Vnni::kNone>;
    add_iq_tq_kernels(t);
    add_iq_grid_avx2_kernels(t);
    add_activation_avx2_kernels(t);
    add_float_avx2_kernels(t);
    add_packed_avx2_kernels(t);  // Q4_K's and Q5_K's tiles
    add_rows_avx2_kernels(t);
    t.f16_to_f32 = f16_to_f32_row;
    t.dot_f16_lanes8 = dot_f16_lanes8;
    t.dot_f16_step32 = dot_f16_step32;
    t.fma_f16_row = fma_f16_row_avx2;
    t.dot_f16_keys = dot_f16_keys_avx2;
    t.fma_f16_keys = fma_f16_keys_avx2;
    t.f32_to_f16 = f32_to_f16_row;
    if (allow_vnni && cpu_has_avx_vnni()) add_vnni_tiles(t);
    return t;
}

}  // namespace wb
