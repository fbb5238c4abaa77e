// AVX-512 (F, BW, VL, VNNI) prefill tiles over 16 weight rows unpacked together (DotKernels::unpack16_w
// / tile16_unpacked in quant.h), for Q4_K (gemm and tiled order), Q5_K, Q6_K and IQ4_XS (tiled order)
// and Q8_0, Q5_0, Q4_1, Q5_1 (row order), Q4_0 and IQ4_NL (llama.cpp's repacked order: the end of the file),
// built with those flags and handed out by quant.cpp only on a CPU that has them (the avx512 family).
//
// The tiles over packed activations (quant_avx2_packed.cpp, quant_avx512_k.cpp) decode a weight block
// again for every group of 8 tokens, and most of their instructions are that decoding, not products.
// Here a prefill task's rows are decoded once, 16 at a time, into unsigned byte codes laid out for
// vectors whose 16 32-bit lanes are the 16 rows: group g (4 values) of a block is 64 bytes, row r's 4
// codes at 4r. One _mm512_dpbusd_epi32 then meets one token's 4 activations (broadcast from its Q8_K
// row in place) with 16 rows at once, and each token's sums stay in registers of their own.
//
// Every type becomes the same integer arithmetic: per sub-block s (32 values, Q6_K's 16) the exact sum
// a_s of codes times activations, times the rows' scale sc_s (_mm512_mullo_epi32; every bound below
// 2^31), summed over the block; and a second exact sum over the block's pairs of Q8_K bsums (sums of
// 16 activations), one _mm512_dpwssd_epi32 per pair p with the rows' two 16-bit factors m_2p, m_2p+1:
//  - Q4_K / Q5_K: codes 0..15 / 0..31, m = the sub-block's minimum (twice: both bsums of its 32 values);
//    the second sum is the minimum term;
//  - Q6_K: codes 0..63 are the values + 32, so sum(sc * value * y) = sum(sc * code * y) - sum(32 * sc *
//    bsum): m = 32 * sc of each 16-value sub-block, the second sum the offset taken off;
//  - IQ4_XS: codes = value + 128 (values -127..113 from the IQ4_NL table), m = 128 * sc twice.
// The offset types' block sum is the first sum less the second, exactly the integer the row dot forms;
// every float operation is the one of the row dot in the order served, each output in its own lane, so
// each output is bit for bit the row dot's.
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "quant/quant_avx2_common.h"
#include "quant/quant_avx512_common.h"
#include "quant/quant_blocks.h"
#include "quant/quant_internal.h"
#include "quant/quant_isa_local.h"

namespace wb {

namespace {

WB_AVX512_WARNINGS_OFF

static_assert(kDotTileCols == 8, "two groups of 4 tokens");

// What decoding one block of one row gives: its codes in value order and the per-row fields.
template <int kSub>
struct RowBlock {
    alignas(64) uint8_t codes[kQKK];
    int8_t scales[kSub];
    int16_t m[16];  // the factor of each bsum (of 16 activations)
    float d = 0.0f, dmin = 0.0f;
};

// Q4_K, Q5_K: chunk_codes gives each chunk's two sub-blocks in value order.
template <class BW>
WB_INLINE void decode_k45(const BW& b, RowBlock<8>& out) {
    const __m512i qh = block_qh(b);
    for (int ch = 0; ch < 4; ++ch) _mm512_store_si512(out.codes + 64 * ch, chunk_codes(b, ch, qh));
    for (int s = 0; s < 8; ++s) {
        int sc = 0, mn = 0;
        k4_scale_min(s, b.scales, sc, mn);
        out.scales[s] = int8_t(sc);
        out.m[2 * s] = out.m[2 * s + 1] = int16_t(mn);
    }
    out.d = fp16(b.d);
    out.dmin = fp16(b.dmin);
}
void decode(const BlockQ4_K& b, RowBlock<8>& out) { decode_k45(b, out); }
void decode(const BlockQ5_K& b, RowBlock<8>& out) { decode_k45(b, out); }

// Q6_K: the 6-bit codes (dequantize_block's reading), its 16 scales.
void decode(const BlockQ6_K& b, RowBlock<16>& out) {
    q6_k_codes(b, out.codes);
    for (int k = 0; k < 16; ++k) {
        out.scales[k] = b.scales[k];
        out.m[k] = int16_t(32 * b.scales[k]);
    }
    out.d = fp16(b.d);
}

// IQ4_XS: the table's values + 128, its 8 group scales.
void decode(const BlockIQ4_XS& b, RowBlock<8>& out) {
    const __m128i table = iq4_nl_table(), m4 = _mm_set1_epi8(0x0F), bias = _mm_set1_epi8(char(0x80));
    for (int g = 0; g < 8; ++g) {
        const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * g));
        const __m128i lo = _mm_shuffle_epi8(table, _mm_and_si128(raw, m4));
        const __m128i hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(raw, 4), m4));
        _mm_store_si128(reinterpret_cast<__m128i*>(out.codes + 32 * g), _mm_xor_si128(lo, bias));  // v + 128
        _mm_store_si128(reinterpret_cast<__m128i*>(out.codes + 32 * g + 16), _mm_xor_si128(hi, bias));
        const int sc = iq4xs_scale(b, g);
        out.scales[g] = int8_t(sc);
        out.m[2 * g] = out.m[2 * g + 1] = int16_t(128 * sc);
    }
    out.d = fp16(b.d);
}

template <class BW, int kSub>
void unpack16(int64_t n, const void* w, size_t w_stride, void* unpacked) {
    auto* out = static_cast<Unpacked16<kSub>*>(unpacked);
    RowBlock<kSub> rb;
    for (int r = 0; r < kTile16Rows; ++r) {
        const auto* row = reinterpret_cast<const BW*>(static_cast<const uint8_t*>(w) + size_t(r) * w_stride);
        for (int64_t i = 0; i < n / kQKK; ++i) {
            decode(row[i], rb);
            Unpacked16<kSub>& u = out[i];
            for (int g = 0; g < kQKK / 4; ++g) std::memcpy(u.codes[g][r], rb.codes + 4 * g, 4);
            for (int s = 0; s < kSub; ++s) u.scales[s][r] = rb.scales[s];
            for (int p = 0; p < 8; ++p)
                u.m_pairs[p][r] = int32_t(uint32_t(uint16_t(rb.m[2 * p])) | uint32_t(uint16_t(rb.m[2 * p + 1])) << 16);
            u.d[r] = rb.d;
            u.dmin[r] = rb.dmin;
        }
    }
}

template <int kSub>
size_t unpacked16_bytes(int64_t n) {
    return size_t(n / kQKK) * sizeof(Unpacked16<kSub>);
}

// Sub-block s of block b for 4 tokens (x[t]: their Q8_K blocks): the products' exact sums, times the
// rows' scales, added to sum[t].
template <int kSub>
WB_INLINE void sub_block16(const Unpacked16<kSub>& b, const BlockQ8_K* const (&x)[4], int s, __m512i (&sum)[4]) {
    constexpr int kGroups = kQKK / 4 / kSub;
    __m512i a[4];
    for (__m512i& v : a) v = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int g = kGroups * s; g < kGroups * (s + 1); ++g) {
        const __m512i w = _mm512_loadu_si512(b.codes[g]);
        for (int t = 0; t < 4; ++t) a[t] = _mm512_dpbusd_epi32(a[t], w, broadcast4(x[t]->qs + 4 * g));
    }
    const __m512i scale = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales[s])));
    for (int t = 0; t < 4; ++t) sum[t] = _mm512_add_epi32(sum[t], _mm512_mullo_epi32(a[t], scale));
}

// Bsum pair p of the 4 tokens times the rows' factors, added to m[t].
template <int kSub>
WB_INLINE void bsum_pair16(const Unpacked16<kSub>& b, const BlockQ8_K* const (&x)[4], int p, __m512i (&m)[4]) {
    const __m512i pairs = _mm512_loadu_si512(b.m_pairs[p]);
    for (int t = 0; t < 4; ++t) m[t] = _mm512_dpwssd_epi32(m[t], pairs, broadcast4(x[t]->bsums + 2 * p));
}

// The float step of the tiled order per block (dot_k_tiled in quant_avx2.cpp): with minimums
// r = d_w * float(sum), r = fma(-dmin_w, float(min), r); with offsets r = d_w * float(sum - offset);
// then acc = fma(r, d_x, acc).
enum class Step { kMin, kOffset };

template <int kSub, Step kStep>
WB_INLINE void tiled_quad16(int64_t nb, const Unpacked16<kSub>* u, const BlockQ8_K* const (&rows)[4], __m512 (&acc)[4]) {
    for (__m512& v : acc) v = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        const Unpacked16<kSub>& b = u[i];
        const BlockQ8_K* const x[4] = {rows[0] + i, rows[1] + i, rows[2] + i, rows[3] + i};
        __m512i sum[4], m[4];
        for (int t = 0; t < 4; ++t) sum[t] = m[t] = _mm512_setzero_si512();
        for (int s = 0; s < kSub; ++s) sub_block16(b, x, s, sum);
        for (int p = 0; p < 8; ++p) bsum_pair16(b, x, p, m);
        const __m512 d = _mm512_loadu_ps(b.d);
        // -dmin exactly (the sign bit flipped, so +0 gives -0 as the scalar negation does)
        const __m512 neg_dmin =
            _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(_mm512_loadu_ps(b.dmin)), _mm512_set1_epi32(int(0x80000000u))));
        for (int t = 0; t < 4; ++t) {
            __m512 r;
            if constexpr (kStep == Step::kMin) {
                r = _mm512_mul_ps(d, _mm512_cvtepi32_ps(sum[t]));
                r = _mm512_fmadd_ps(neg_dmin, _mm512_cvtepi32_ps(m[t]), r);
            } else {
                r = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_sub_epi32(sum[t], m[t])));
            }
            acc[t] = _mm512_fmadd_ps(r, _mm512_set1_ps(x[t]->d), acc[t]);
        }
    }
}

// Q4_K in the order of llama.cpp's repacked gemm (dot_q4_k_gemm in quant_avx2.cpp): per chunk of two
// sub-blocks acc = fma(float(sum), d_w * d_x, acc), acc_min = fma(float(min), dmin_w * d_x, acc_min);
// acc - acc_min.
WB_INLINE void gemm_quad16(int64_t nb, const Unpacked16<8>* u, const BlockQ8_K* const (&rows)[4], __m512 (&out)[4]) {
    __m512 acc[4], acc_min[4];
    for (int t = 0; t < 4; ++t) acc[t] = acc_min[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        const Unpacked16<8>& b = u[i];
        const BlockQ8_K* const x[4] = {rows[0] + i, rows[1] + i, rows[2] + i, rows[3] + i};
        __m512 d[4], dmin[4];  // d_w * d_x and dmin_w * d_x, once per block (the same roundings)
        for (int t = 0; t < 4; ++t) {
            const __m512 dx = _mm512_set1_ps(x[t]->d);
            d[t] = _mm512_mul_ps(_mm512_loadu_ps(b.d), dx);
            dmin[t] = _mm512_mul_ps(_mm512_loadu_ps(b.dmin), dx);
        }
        for (int ch = 0; ch < 4; ++ch) {
            __m512i sum[4], min[4];
            for (int t = 0; t < 4; ++t) sum[t] = min[t] = _mm512_setzero_si512();
            sub_block16(b, x, 2 * ch, sum);
            sub_block16(b, x, 2 * ch + 1, sum);
            bsum_pair16(b, x, 2 * ch, min);
            bsum_pair16(b, x, 2 * ch + 1, min);
            for (int t = 0; t < 4; ++t) {
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[t]), d[t], acc[t]);
                acc_min[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(min[t]), dmin[t], acc_min[t]);
            }
        }
    }
    for (int t = 0; t < 4; ++t) out[t] = _mm512_sub_ps(acc[t], acc_min[t]);
}

// The 16 rows against the tile's 8 tokens, in two groups of 4 (their accumulators fill the registers).
template <int kSub, Step kStep, bool kGemm>
void tile16(int64_t n, const void* unpacked, const void* x, size_t x_stride, float* out, int64_t out_stride) {
    const auto* u = static_cast<const Unpacked16<kSub>*>(unpacked);
    for (int q = 0; q < 2; ++q) {
        const BlockQ8_K* rows[4];
        for (int t = 0; t < 4; ++t)
            rows[t] = reinterpret_cast<const BlockQ8_K*>(static_cast<const uint8_t*>(x) + size_t(4 * q + t) * x_stride);
        __m512 acc[4];
        if constexpr (kGemm)
            gemm_quad16(n / kQKK, u, rows, acc);
        else
            tiled_quad16<kSub, kStep>(n / kQKK, u, rows, acc);
        for (int t = 0; t < 4; ++t) _mm512_storeu_ps(out + (4 * q + t) * out_stride, acc[t]);
    }
}

template <class BW, int kSub, Step kStep, bool kGemm = false>
Rows16Tile rows16() {
    return {unpacked16_bytes<kSub>, unpack16<BW, kSub>, tile16<kSub, kStep, kGemm>};
}

// ---- The 32-element types in their row order (llamafile's, for batches): Q8_0, Q5_0, Q4_1, Q5_1 ----
//
// Each output keeps 8 float lanes (lane l: values 4l..4l+3 of every block), each block's 8 exact lane
// sums folded in with one FMA by d_w * d_x, Q4_1's and Q5_1's offset terms m_w * s_x summed apart, and
// the lanes summed at the end in hsum's tree, the offsets added after (quant_avx2.cpp's dot_blocks and
// block functions). Here lane l of the 16 rows is one vector: a token's 8 accumulators are 8 registers,
// so a pass takes 2 tokens. Unsigned codes (Q4_1, Q5_1) are vpdpbusd's unsigned operand as they are.
// Q8_0's (and Q5_0's, value - 16) are signed, so the activations go in as the unsigned operand, biased by 128, and each group's
// accumulator starts at -128 * (the sum of its 4 codes), stored with the codes: vpdpbusd then ends on
// exactly sum(code * y).
size_t unpacked16_q32_bytes(int64_t n) { return size_t(n / kQK) * sizeof(Unpacked16Q32); }

// One block's 32 codes in value order (bytes: int8 values for Q8_0, Q5_0, Q4_0 and IQ4_NL, the unsigned
// codes 0..15 / 0..31 for Q4_1 / Q5_1), d and m.
void decode32(const BlockQ8_0& b, uint8_t* codes, float& d, float&) {
    std::memcpy(codes, b.qs, kQK);
    d = fp16(b.d);
}
void decode32(const BlockQ4_0& b, uint8_t* codes, float& d, float&) {  // value - 8 as int8, as block_values
    for (int j = 0; j < kQK / 2; ++j) {
        codes[j] = uint8_t((b.qs[j] & 0xF) - 8);
        codes[j + kQK / 2] = uint8_t((b.qs[j] >> 4) - 8);
    }
    d = fp16(b.d);
}
void decode32(const BlockIQ4_NL& b, uint8_t* codes, float& d, float&) {  // the table's values as int8
    for (int j = 0; j < kQK / 2; ++j) {
        codes[j] = uint8_t(iq4nl_value(b.qs[j] & 0xF));
        codes[j + kQK / 2] = uint8_t(iq4nl_value(b.qs[j] >> 4));
    }
    d = fp16(b.d);
}
void decode32(const BlockQ5_0& b, uint8_t* codes, float& d, float&) {  // value - 16 as int8, as block_q5_0
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
        codes[j] = uint8_t(((b.qs[j] & 0xF) | ((qh >> j) & 1) << 4) - 16);
        codes[j + kQK / 2] = uint8_t(((b.qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) - 16);
    }
    d = fp16(b.d);
}
void decode32(const BlockQ4_1& b, uint8_t* codes, float& d, float& m) {
    for (int j = 0; j < kQK / 2; ++j) {
        codes[j] = uint8_t(b.qs[j] & 0xF);
        codes[j + kQK / 2] = uint8_t(b.qs[j] >> 4);
    }
    d = fp16(b.d);
    m = fp16(b.m);
}
void decode32(const BlockQ5_1& b, uint8_t* codes, float& d, float& m) {
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < kQK / 2; ++j) {
        codes[j] = uint8_t((b.qs[j] & 0xF) | ((qh >> j) & 1) << 4);
        codes[j + kQK / 2] = uint8_t((b.qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4);
    }
    d = fp16(b.d);
    m = fp16(b.m);
}

template <class BW, bool kSigned>
void unpack16_q32(int64_t n, const void* w, size_t w_stride, void* unpacked) {
    auto* out = static_cast<Unpacked16Q32*>(unpacked);
    uint8_t codes[kQK];
    for (int r = 0; r < kTile16Rows; ++r) {
        const auto* row = reinterpret_cast<const BW*>(static_cast<const uint8_t*>(w) + size_t(r) * w_stride);
        for (int64_t i = 0; i < n / kQK; ++i) {
            Unpacked16Q32& u = out[i];
            float m = 0.0f;
            decode32(row[i], codes, u.d[r], m);
            u.m[r] = m;
            for (int g = 0; g < 8; ++g) {
                std::memcpy(u.codes[g][r], codes + 4 * g, 4);
                int sum = 0;
                for (int k = 0; k < 4; ++k) sum += kSigned ? int(int8_t(codes[4 * g + k])) : int(codes[4 * g + k]);
                u.start[g][r] = kSigned ? -128 * sum : 0;
            }
        }
    }
}

// The 4 activations at p, each + 128 (as unsigned bytes), in all 16 lanes.
WB_INLINE __m512i broadcast4_biased(const int8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(int(v ^ 0x80808080u));
}

// BX: the activations' block (Q8_0 for Q8_0, Q8_1 for Q4_1 / Q5_1, whose s = d_x * sum(y)).
template <class BX, bool kSigned>
void tile16_q32(int64_t n, const void* unpacked, const void* x, size_t x_stride, float* out, int64_t out_stride) {
    constexpr bool kOffset = std::is_same_v<BX, BlockQ8_1>;
    const auto* u = static_cast<const Unpacked16Q32*>(unpacked);
    for (int pass = 0; pass < kDotTileCols / 2; ++pass) {
        const BX* rows[2];
        for (int t = 0; t < 2; ++t)
            rows[t] = reinterpret_cast<const BX*>(static_cast<const uint8_t*>(x) + size_t(2 * pass + t) * x_stride);
        __m512 acc[2][8], extra[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
        for (auto& a : acc)
            for (__m512& v : a) v = _mm512_setzero_ps();
        for (int64_t i = 0; i < n / kQK; ++i) {
            const Unpacked16Q32& b = u[i];
            const __m512 d = _mm512_loadu_ps(b.d);
            __m512 dd[2];
            for (int t = 0; t < 2; ++t) {
                // fp16(d_w) * fp16(d_x), one rounding, as scale_product / q8_1_scales
                dd[t] = _mm512_mul_ps(d, _mm512_set1_ps(fp16(rows[t][i].d)));
                // extra += m_w * s_x: a rounded product, then a rounded sum, as the block functions
                if constexpr (kOffset)
                    extra[t] = _mm512_add_ps(extra[t], _mm512_mul_ps(_mm512_loadu_ps(b.m), _mm512_set1_ps(fp16(rows[t][i].s))));
            }
#pragma GCC unroll 8
            for (int g = 0; g < 8; ++g) {
                const __m512i w = _mm512_loadu_si512(b.codes[g]);
                const __m512i start = kSigned ? _mm512_loadu_si512(b.start[g]) : _mm512_setzero_si512();
                for (int t = 0; t < 2; ++t) {
                    const int8_t* y = rows[t][i].qs + 4 * g;
                    const __m512i lanes = kSigned ? _mm512_dpbusd_epi32(start, broadcast4_biased(y), w)
                                                  : _mm512_dpbusd_epi32(start, w, broadcast4(y));
                    acc[t][g] = _mm512_fmadd_ps(dd[t], _mm512_cvtepi32_ps(lanes), acc[t][g]);
                }
            }
        }
        // + extra: dot_blocks adds the offset terms after the lanes' sum (+0 where none, which turns -0 into +0).
        for (int t = 0; t < 2; ++t) _mm512_storeu_ps(out + (2 * pass + t) * out_stride, _mm512_add_ps(lane_tree(acc[t]), extra[t]));
    }
}

// ---- Q4_0 and IQ4_NL in llama.cpp's repacked order (gemv and gemm alike), over the same layout ----
//
// As dot_block_sums in quant_avx2.cpp: per block the exact sum of the codes times the activations over
// all 8 groups, folded into one float by one FMA with fp16(d_w) * fp16(d_x). Four tokens at a time share
// each load of the codes.
void tile16_block_sums(int64_t n, const void* unpacked, const void* x, size_t x_stride, float* out, int64_t out_stride) {
    constexpr int kTokens = 4;
    const auto* u = static_cast<const Unpacked16Q32*>(unpacked);
    for (int pass = 0; pass < kDotTileCols / kTokens; ++pass) {
        const BlockQ8_0* rows[kTokens];
        for (int t = 0; t < kTokens; ++t)
            rows[t] = reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(x) + size_t(kTokens * pass + t) * x_stride);
        __m512 acc[kTokens];
        for (__m512& a : acc) a = _mm512_setzero_ps();
        for (int64_t i = 0; i < n / kQK; ++i) {
            const Unpacked16Q32& b = u[i];
            __m512i sum[kTokens];
            for (__m512i& v : sum) v = _mm512_setzero_si512();
#pragma GCC unroll 8
            for (int g = 0; g < 8; ++g) {
                const __m512i w = _mm512_loadu_si512(b.codes[g]);
                const __m512i start = _mm512_loadu_si512(b.start[g]);
                for (int t = 0; t < kTokens; ++t)
                    sum[t] = _mm512_dpbusd_epi32(_mm512_add_epi32(sum[t], start), broadcast4_biased(rows[t][i].qs + 4 * g), w);
            }
            const __m512 d = _mm512_loadu_ps(b.d);
            for (int t = 0; t < kTokens; ++t)  // fp16(d_w) * fp16(d_x), one rounding, then the FMA
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[t]), _mm512_mul_ps(d, _mm512_set1_ps(fp16(rows[t][i].d))), acc[t]);
        }
        for (int t = 0; t < kTokens; ++t) _mm512_storeu_ps(out + (kTokens * pass + t) * out_stride, acc[t]);
    }
}

template <class BW, class BX, bool kSigned>
Rows16Tile rows16_q32() {
    return {unpacked16_q32_bytes, unpack16_q32<BW, kSigned>, tile16_q32<BX, kSigned>};
}

WB_AVX512_WARNINGS_ON

}  // namespace

void add_rows16_avx512_kernels(KernelTable& t) {
    t.rows16_in(DotOrder::kGemm, GgmlType::Q4_K) = rows16<BlockQ4_K, 8, Step::kMin, true>();
    t.rows16_in(DotOrder::kTiled, GgmlType::Q4_K) = rows16<BlockQ4_K, 8, Step::kMin>();
    t.rows16_in(DotOrder::kTiled, GgmlType::Q5_K) = rows16<BlockQ5_K, 8, Step::kMin>();
    t.rows16_in(DotOrder::kTiled, GgmlType::Q6_K) = rows16<BlockQ6_K, 16, Step::kOffset>();
    t.rows16_in(DotOrder::kTiled, GgmlType::IQ4_XS) = rows16<BlockIQ4_XS, 8, Step::kOffset>();
    // llamafile's order for these types' batches is their row order, so the row order's entry serves it
    t.rows16_in(DotOrder::kRow, GgmlType::Q8_0) = rows16_q32<BlockQ8_0, BlockQ8_0, true>();
    t.rows16_in(DotOrder::kRow, GgmlType::Q5_0) = rows16_q32<BlockQ5_0, BlockQ8_0, true>();  // codes value - 16
    t.rows16_in(DotOrder::kRow, GgmlType::Q4_1) = rows16_q32<BlockQ4_1, BlockQ8_1, false>();
    t.rows16_in(DotOrder::kRow, GgmlType::Q5_1) = rows16_q32<BlockQ5_1, BlockQ8_1, false>();
    // a plain array: a std::initializer_list would instantiate its members in this ISA's object (check_isa_symbols)
    constexpr DotOrder kRepackedOrders[] = {DotOrder::kGemv, DotOrder::kGemm};
    for (DotOrder o : kRepackedOrders) {  // codes value - 8, resp. the table's values
        t.rows16_in(o, GgmlType::Q4_0) = {unpacked16_q32_bytes, unpack16_q32<BlockQ4_0, true>, tile16_block_sums};
        t.rows16_in(o, GgmlType::IQ4_NL) = {unpacked16_q32_bytes, unpack16_q32<BlockIQ4_NL, true>, tile16_block_sums};
    }
}

}  // namespace wb
