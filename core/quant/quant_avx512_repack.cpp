// Q4_K, Q5_K, Q8_0, Q6_K, Q5_0, Q4_0, IQ4_NL and Q4_1 repacked at load for the decode (DotKernels::repack16 / row16_repacked /
// unpack16_repacked / unrepack_row in quant.h), AVX-512 (F, BW, VL, VNNI), built with those flags and
// handed out by quant.cpp only on a CPU that has them (the avx512 family). Q5_K's, Q8_0's, Q6_K's,
// Q5_0's, Q4_0's, IQ4_NL's and Q4_1's parts follow Q4_K's.
//
// Why: a decode matmul is one token against every row, so it is paced by how fast the weights stream
// in. Read in the file's layout (quant_avx2_rows.cpp's dot_q4_k_gemv_rows8) each row's blocks are
// unpacked, their 12 scale bytes decoded and their 8 lanes summed horizontally on every token: about
// 23 GB/s on the Zen 4 VM, where llama.cpp, which repacks Q4_K at load, reads 35. Here the CPU backend
// repacks each Q4_K matrix once (CpuBackend::prepare_weights) so that 16 rows sit in the 16 32-bit
// lanes of a vector, their nibbles interleaved and their scales already decoded:
//  - group g of 8 values of a block is 64 bytes: lane r holds row r's codes of values 8g..8g+3 in its
//    4 low nibbles and of values 8g+4..8g+7 in its 4 high ones, so one load and two masks give two
//    operands of _mm512_dpbusd_epi32, each against 4 activations broadcast from the Q8_K row;
//  - the 6-bit scales and minimums are bytes, [sub-block][row] (the minimums of sub-blocks 2q, 2q+1
//    side by side, for one _mm512_dpwssd_epi32 per pair against the activations' sub-block sums);
//  - d and dmin stay f16, 16 rows in 32 bytes each;
//  - these fields come first, in front of the nibbles, so that a block is read in order: after them (a
//    second stream inside each block) the decode of phi3 and llama 3.2 1B Q4_K files was 6-8 % slower
//    (6 alternating pairs each).
// 2368 bytes per block of 16 rows against the file's 2304: the stream is 3 % longer, but no lane sum
// and no scale decoding is left, and the 16 outputs come out in the lanes where they are stored.
//
// The integers are the exact sums the row kernels form (every bound below 2^31: at most 256 products
// of 15 * 127 times a scale of 63), and the float operations per output are those of the order served,
// each in its own lane, so every output is bit for bit the row kernel's:
//  - gemv (llama.cpp's repacked gemv): per block acc = fma(float(sum), d_w * d_x, acc) and acc_min =
//    fma(float(min), dmin_w * d_x, acc_min); the result acc - acc_min;
//  - gemm (the batched order, here for a token of a batch that meets no tile): the same per chunk of
//    two sub-blocks.
// A prefill's 16-row tile (quant_avx512_rows16.cpp) reads the same repacked rows through
// unpack16_repacked, so once a matrix is repacked the file's copy of it is not read again.
#include <immintrin.h>

#include <cstddef>
#include <cstring>

#include "quant/quant_avx2_common.h"
#include "quant/quant_avx512_common.h"
#include "quant/quant_blocks.h"
#include "quant/quant_internal.h"
#include "quant/quant_isa_local.h"

namespace wb {

namespace {

WB_AVX512_WARNINGS_OFF

constexpr int kRows = kTile16Rows;

// Every layout below is read in address order, a block's per-row fields in front of its codes: a
// second stream inside a group (fields in an array after the codes, or after each block's codes) left
// the hardware prefetchers behind, which software prefetches 1 KiB ahead only partly made up for (see
// PairedD). In order, the prefetches measured no gain and are gone.

// 64 bytes of packed nibbles (16 rows x 4 bytes, 64-byte aligned) as two vectors of codes 0..15: the low
// nibbles and the high ones (Q4_K's groups 2g and 2g + 1; Q5_0's and Q4_1's groups g and g + 4).
WB_INLINE void split_nibbles(const void* nib, __m512i& low, __m512i& high) {
    const __m512i raw = _mm512_load_si512(nib);
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    low = _mm512_and_si512(raw, nibble);
    high = _mm512_and_si512(_mm512_srli_epi16(raw, 4), nibble);
}

// One block (256 values) of 16 Q4_K rows, repacked.
struct Q4KRepacked16 {
    uint8_t scales[8][kRows];         // [sub-block][row], 0..63
    uint8_t mins[4][kRows][2];        // [pair of sub-blocks][row][sub-block 2q, 2q+1], 0..63
    uint16_t d[kRows], dmin[kRows];   // f16, as in the file
    uint8_t nib[kQKK / 8][kRows][4];  // [group of 8 values][row]: byte k = code 8g+k | code 8g+4+k << 4
};
static_assert(sizeof(Q4KRepacked16) % 64 == 0, "whole cache lines: a 64-byte aligned group's blocks stay aligned");
static_assert(offsetof(Q4KRepacked16, nib) % 64 == 0, "the nibbles' aligned loads");

size_t q4_k_repacked_bytes(int64_t n) { return size_t(n / kQKK) * sizeof(Q4KRepacked16); }

// Row r's codes of a block in value order: chunk ch (64 values) is the low nibbles of its 32 bytes,
// then the high ones (k4 sub-blocks 2ch and 2ch+1).
void q4_k_codes(const BlockQ4_K& b, uint8_t (&codes)[kQKK]) {
    for (int ch = 0; ch < 4; ++ch)
        for (int l = 0; l < 32; ++l) {
            codes[64 * ch + l] = uint8_t(b.qs[32 * ch + l] & 0x0F);
            codes[64 * ch + 32 + l] = uint8_t(b.qs[32 * ch + l] >> 4);
        }
}

// Row r's 6-bit scales and minimums (decoded), d and dmin of a Q4_K or Q5_K block into a repacked block.
template <class Block, class Repacked>
void repack_k4_fields(const Block& b, int r, Repacked& p) {
    for (int s = 0; s < 8; ++s) {
        int sc = 0, mn = 0;
        k4_scale_min(s, b.scales, sc, mn);
        p.scales[s][r] = uint8_t(sc);
        p.mins[s / 2][r][s % 2] = uint8_t(mn);
    }
    p.d[r] = b.d;
    p.dmin[r] = b.dmin;
}

// The inverse: row r's fields packed again as k4_scale_min reads them (scales and minimums 0-3 in the
// low 6 bits of bytes 0-3 and 4-7, 4-7 in the nibbles of bytes 8-11 with their top 2 bits in the top
// bits of bytes 0-7).
template <class Repacked, class Block>
void unrepack_k4_fields(const Repacked& p, int r, Block& b) {
    const auto sc = [&](int s) { return p.scales[s][r]; };
    const auto mn = [&](int s) { return p.mins[s / 2][r][s % 2]; };
    for (int j = 0; j < 4; ++j) {
        b.scales[j] = uint8_t(sc(j) | (sc(j + 4) >> 4) << 6);
        b.scales[j + 4] = uint8_t(mn(j) | (mn(j + 4) >> 4) << 6);
        b.scales[j + 8] = uint8_t((sc(j + 4) & 0x0F) | (mn(j + 4) & 0x0F) << 4);
    }
    b.d = p.d[r];
    b.dmin = p.dmin[r];
}

// The 16-row tile's per-row fields (Unpacked16<8>) of a repacked Q4_K or Q5_K block: m of each bsum pair
// is its sub-block's minimum, twice.
template <class Repacked>
void unpack16_k4_fields(const Repacked& b, Unpacked16<8>& u) {
    for (int s = 0; s < 8; ++s)
        for (int r = 0; r < kRows; ++r) {
            u.scales[s][r] = int8_t(b.scales[s][r]);
            const auto m = uint32_t(b.mins[s / 2][r][s % 2]);  // both bsums of sub-block s
            u.m_pairs[s][r] = int32_t(m | m << 16);
        }
    _mm512_storeu_ps(u.d, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(b.d))));
    _mm512_storeu_ps(u.dmin, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(b.dmin))));
}

// Load-time work, a few milliseconds per matrix: plain code.
void repack_q4_k(int64_t n, const void* w, size_t w_stride, void* out) {
    auto* blocks = static_cast<Q4KRepacked16*>(out);
    uint8_t codes[kQKK];
    for (int r = 0; r < kRows; ++r) {
        const auto* row = reinterpret_cast<const BlockQ4_K*>(static_cast<const uint8_t*>(w) + size_t(r) * w_stride);
        for (int64_t i = 0; i < n / kQKK; ++i) {
            Q4KRepacked16& p = blocks[i];
            q4_k_codes(row[i], codes);
            for (int g = 0; g < kQKK / 8; ++g)
                for (int k = 0; k < 4; ++k) p.nib[g][r][k] = uint8_t(codes[8 * g + k] | codes[8 * g + 4 + k] << 4);
            repack_k4_fields(row[i], r, p);
        }
    }
}

// Sub-block s of the 16 rows against the token: the products' exact sums times the rows' scales.
WB_INLINE __m512i sub_block(const Q4KRepacked16& b, const BlockQ8_K& x, int s) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512i lo = _mm512_setzero_si512(), hi = _mm512_setzero_si512();  // two chains of dependent dpbusd
#pragma GCC unroll 4
    for (int g = 4 * s; g < 4 * s + 4; ++g) {
        const __m512i w = _mm512_load_si512(b.nib[g]);
        lo = _mm512_dpbusd_epi32(lo, _mm512_and_si512(w, m4), broadcast4(x.qs + 8 * g));
        hi = _mm512_dpbusd_epi32(hi, _mm512_and_si512(_mm512_srli_epi16(w, 4), m4), broadcast4(x.qs + 8 * g + 4));
    }
    const __m512i scale = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(b.scales[s])));
    return _mm512_mullo_epi32(_mm512_add_epi32(lo, hi), scale);
}

// Pair q of sub-blocks (2q, 2q+1) of the rows' minimums times the token's sub-block sums, added to m.
// sub_sums: the 8 sums of 32 activations as int16, pair q in 32-bit lane q.
template <class Repacked>
WB_INLINE __m512i min_pair(const Repacked& b, __m128i sub_sums, int q, __m512i m) {
    const __m512i mins = _mm512_cvtepu8_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(b.mins[q])));
    int pair;
    std::memcpy(&pair, reinterpret_cast<const char*>(&sub_sums) + 4 * q, 4);
    return _mm512_dpwssd_epi32(m, mins, _mm512_set1_epi32(pair));
}

// The 16 rows against one token in the gemv order (kPerChunk false) or the gemm order (true).
template <bool kPerChunk>
void row16_q4_k(int64_t n, const void* repacked, const void* x, float* out) {
    const auto* blocks = static_cast<const Q4KRepacked16*>(repacked);
    const auto* bx = static_cast<const BlockQ8_K*>(x);
    __m512 acc = _mm512_setzero_ps(), acc_min = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const Q4KRepacked16& b = blocks[i];
        const BlockQ8_K& xb = bx[i];
        const __m256i bsums = load32(xb.bsums);
        // sub-block k's activation sum: bsums 2k + 2k+1 (|sum| <= 32 * 128, within int16)
        const __m128i sub_sums = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
        const __m512 dx = _mm512_set1_ps(xb.d);
        const __m512 d = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(b.d))), dx);
        const __m512 dmin = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(b.dmin))), dx);
        if constexpr (kPerChunk) {
            for (int ch = 0; ch < 4; ++ch) {
                const __m512i sum = _mm512_add_epi32(sub_block(b, xb, 2 * ch), sub_block(b, xb, 2 * ch + 1));
                const __m512i min = min_pair(b, sub_sums, ch, _mm512_setzero_si512());
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), d, acc);
                acc_min = _mm512_fmadd_ps(_mm512_cvtepi32_ps(min), dmin, acc_min);
            }
        } else {
            __m512i sum = sub_block(b, xb, 0), min = _mm512_setzero_si512();
            for (int s = 1; s < 8; ++s) sum = _mm512_add_epi32(sum, sub_block(b, xb, s));
            for (int q = 0; q < 4; ++q) min = min_pair(b, sub_sums, q, min);
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), d, acc);
            acc_min = _mm512_fmadd_ps(_mm512_cvtepi32_ps(min), dmin, acc_min);
        }
    }
    _mm512_storeu_ps(out, _mm512_sub_ps(acc, acc_min));
}

// The 16-row tile's layout (Unpacked16<8>, what unpack16 of the file's rows gives), from the repacked
// rows: group g8's low nibbles are the tile's group 2 * g8, its high nibbles group 2 * g8 + 1.
void unpack16_q4_k(int64_t n, const void* repacked, void* unpacked) {
    const auto* blocks = static_cast<const Q4KRepacked16*>(repacked);
    auto* out = static_cast<Unpacked16<8>*>(unpacked);
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const Q4KRepacked16& b = blocks[i];
        Unpacked16<8>& u = out[i];
        for (int g = 0; g < kQKK / 8; ++g) {
            const __m512i w = _mm512_load_si512(b.nib[g]);
            _mm512_store_si512(u.codes[2 * g], _mm512_and_si512(w, m4));
            _mm512_store_si512(u.codes[2 * g + 1], _mm512_and_si512(_mm512_srli_epi16(w, 4), m4));
        }
        unpack16_k4_fields(b, u);
    }
}

// Row r's blocks back in the file's layout: the codes from the nibbles, the fields (unrepack_k4_fields).
void unrepack_q4_k(int64_t n, const void* repacked, int r, void* row) {
    const auto* blocks = static_cast<const Q4KRepacked16*>(repacked);
    auto* out = static_cast<BlockQ4_K*>(row);
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const Q4KRepacked16& p = blocks[i];
        BlockQ4_K& b = out[i];
        uint8_t codes[kQKK];
        for (int g = 0; g < kQKK / 8; ++g)
            for (int k = 0; k < 4; ++k) {
                codes[8 * g + k] = uint8_t(p.nib[g][r][k] & 0x0F);
                codes[8 * g + 4 + k] = uint8_t(p.nib[g][r][k] >> 4);
            }
        for (int ch = 0; ch < 4; ++ch)
            for (int l = 0; l < 32; ++l) b.qs[32 * ch + l] = uint8_t(codes[64 * ch + l] | codes[64 * ch + 32 + l] << 4);
        unrepack_k4_fields(p, r, b);
    }
}

// ---- Q5_K (the decode's row order, and the batches' tiled order with its 16-row tile) ----
//
// Read in the file's layout (dot_blocks<BlockQ5_K> in quant_avx2.cpp, one row at a time) a Q5_K_M
// file's decode spent half its time there, below the memory's speed. The row dot keeps 8 int32 lanes
// per block: lane l holds, for each sub-block j (32 values, one scale sc_j), sc_j * (the products of
// values 32j+4l..32j+4l+3), each lane folded into its own float lane by one FMA with d_w * d_x and the
// 8 lanes summed in hsum's tree; the minimum term (sum_j mn_j * the activation sum of sub-block j) is
// folded into a scalar by an FMA with -(dmin_w * d_x) and added last. Here, as for Q6_K, group g of 4
// values (lane g % 8) is one vector of the 16 rows' codes, and vpmaddubsw with one vpdpwssd against the
// rows' scales adds it to lane g % 8 of all 16 rows at once: integers, so exactly the row dot's lanes.
//
// Per sub-block j (Q5KUnit): the low 4 bits of its codes as Q4_K's nibbles, then its fifth bits in one
// vector, bit i of row r's byte k being that of value 32j+4i+k (group 8j+i). Scales, minimums, d and
// dmin as Q4_K's, in front: 2880 bytes per block of 16 rows against the file's 2816, read in order.
// (With the fifth bits as a plane after all the nibbles, a second stream inside each block, the
// decode was slower than the file's layout: see PairedD below.)
struct Q5KUnit {
    uint8_t nib[4][kRows][4];  // as Q4KRepacked16's nib[4j + h]: groups 8j+2h (low nibbles) and 8j+2h+1 (high)
    uint8_t high[kRows][4];    // [row]: bit i of byte k = the fifth bit of value 32j+4i+k
};
struct Q5KRepacked16 {
    uint8_t scales[8][kRows];         // [sub-block][row], 0..63
    uint8_t mins[4][kRows][2];        // [pair of sub-blocks][row][sub-block 2q, 2q+1], 0..63
    uint16_t d[kRows], dmin[kRows];   // f16, as in the file
    Q5KUnit units[8];                 // [sub-block j]
};
static_assert(sizeof(Q5KRepacked16) == 2880, "whole cache lines: a 64-byte aligned group's blocks stay aligned");
static_assert(offsetof(Q5KRepacked16, units) % 64 == 0 && sizeof(Q5KUnit) % 64 == 0, "the units' aligned loads");

size_t q5_k_repacked_bytes(int64_t n) { return size_t(n / kQKK) * sizeof(Q5KRepacked16); }

// Row r's codes (0..31) of a block in value order, as dequantize_block reads them: chunk ch (64
// values) is the low nibbles of its 32 bytes with bit 2ch of qh, then the high ones with bit 2ch + 1.
void q5_k_codes(const BlockQ5_K& b, uint8_t (&codes)[kQKK]) {
    for (int ch = 0; ch < 4; ++ch)
        for (int l = 0; l < 32; ++l) {
            codes[64 * ch + l] = uint8_t((b.qs[32 * ch + l] & 0x0F) | (b.qh[l] >> (2 * ch) & 1) << 4);
            codes[64 * ch + 32 + l] = uint8_t((b.qs[32 * ch + l] >> 4) | (b.qh[l] >> (2 * ch + 1) & 1) << 4);
        }
}

void repack_q5_k(int64_t n, const void* w, size_t w_stride, void* out) {
    auto* blocks = static_cast<Q5KRepacked16*>(out);
    std::memset(out, 0, q5_k_repacked_bytes(n));
    uint8_t codes[kQKK];
    for (int r = 0; r < kRows; ++r) {
        const auto* row = reinterpret_cast<const BlockQ5_K*>(static_cast<const uint8_t*>(w) + size_t(r) * w_stride);
        for (int64_t i = 0; i < n / kQKK; ++i) {
            Q5KRepacked16& p = blocks[i];
            q5_k_codes(row[i], codes);
            for (int g = 0; g < kQKK / 8; ++g)
                for (int k = 0; k < 4; ++k)
                    p.units[g / 4].nib[g % 4][r][k] = uint8_t((codes[8 * g + k] & 0x0F) | (codes[8 * g + 4 + k] & 0x0F) << 4);
            for (int v = 0; v < kQKK; ++v) p.units[v / 32].high[r][v % 4] |= uint8_t((codes[v] >> 4) << (v % 32 / 4));
            repack_k4_fields(row[i], r, p);
        }
    }
}

// Sub-block j's 8 groups of codes (0..31), 16 rows x 4 values each: the nibbles with 16 added where
// the fifth bit is set.
WB_INLINE void q5_k_sub_block_codes(const Q5KUnit& u, __m512i (&q)[8]) {
    const __m512i high = _mm512_load_si512(u.high);
    const __m512i sixteen = _mm512_set1_epi8(16);
#pragma GCC unroll 4
    for (int h = 0; h < 4; ++h) {
        __m512i low, up;
        split_nibbles(u.nib[h], low, up);
        q[2 * h] = _mm512_mask_add_epi8(low, _mm512_test_epi8_mask(high, _mm512_set1_epi8(char(1 << (2 * h)))), low, sixteen);
        q[2 * h + 1] = _mm512_mask_add_epi8(up, _mm512_test_epi8_mask(high, _mm512_set1_epi8(char(2 << (2 * h)))), up, sixteen);
    }
}

// The row dot's 8 integer lanes of one block for the 16 rows (lane[l], row r in 32-bit lane r) and the
// minimum term.
WB_INLINE void q5_k_block_lanes(const Q5KRepacked16& b, const BlockQ8_K& x, __m512i (&lane)[8], __m512i& min) {
    for (__m512i& l : lane) l = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
        // sub-block j's scale in both 16-bit halves of each row's lane
        const __m512i s32 = _mm512_cvtepu8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(b.scales[j])));
        const __m512i sc = _mm512_or_si512(s32, _mm512_slli_epi32(s32, 16));
        __m512i q[8];
        q5_k_sub_block_codes(b.units[j], q);
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i)  // |pair sums| <= 2 * 31 * 128: vpmaddubsw does not saturate
            lane[i] = _mm512_dpwssd_epi32(lane[i], _mm512_maddubs_epi16(q[i], broadcast4(x.qs + 32 * j + 4 * i)), sc);
    }
    const __m256i bsums = load32(x.bsums);
    // sub-block k's activation sum: bsums 2k + 2k+1 (|sum| <= 32 * 128, within int16)
    const __m128i sub_sums = _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
    min = _mm512_setzero_si512();
    for (int q = 0; q < 4; ++q) min = min_pair(b, sub_sums, q, min);
}

// The 16 rows against one token: the row dot's order (kTiled false) or the tiled order (true: per
// block r = fma(-dmin_w, float(min), d_w * float(the lanes' sum)), acc = fma(r, d_x, acc); dot_k_tiled).
template <bool kTiled>
void row16_q5_k(int64_t n, const void* repacked, const void* x, float* out) {
    const auto* blocks = static_cast<const Q5KRepacked16*>(repacked);
    const auto* bx = static_cast<const BlockQ8_K*>(x);
    __m512 acc[8], extra = _mm512_setzero_ps();
    for (__m512& a : acc) a = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i) {
        __m512i lane[8], min;
        q5_k_block_lanes(blocks[i], bx[i], lane, min);
        const __m512 d = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(blocks[i].d)));
        const __m512 dmin = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(blocks[i].dmin)));
        const __m512 dx = _mm512_set1_ps(bx[i].d);
        if constexpr (kTiled) {
            const __m512i sum = _mm512_add_epi32(
                _mm512_add_epi32(_mm512_add_epi32(lane[0], lane[1]), _mm512_add_epi32(lane[2], lane[3])),
                _mm512_add_epi32(_mm512_add_epi32(lane[4], lane[5]), _mm512_add_epi32(lane[6], lane[7])));
            const __m512 r = _mm512_fnmadd_ps(dmin, _mm512_cvtepi32_ps(min), _mm512_mul_ps(d, _mm512_cvtepi32_ps(sum)));
            acc[0] = _mm512_fmadd_ps(r, dx, acc[0]);
        } else {
            const __m512 dd = _mm512_mul_ps(d, dx);
            // fma(-(dmin_w * d_x), min, extra): the negation is exact, so this is the row dot's FMA
            extra = _mm512_fnmadd_ps(_mm512_mul_ps(dmin, dx), _mm512_cvtepi32_ps(min), extra);
#pragma GCC unroll 8
            for (int l = 0; l < 8; ++l) acc[l] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(lane[l]), dd, acc[l]);
        }
    }
    if constexpr (kTiled)
        _mm512_storeu_ps(out, acc[0]);
    else
        _mm512_storeu_ps(out, _mm512_add_ps(lane_tree(acc), extra));
}

// The 16-row tile's layout (Unpacked16<8>, what unpack16 of the file's rows gives): the codes by group,
// the fields as Q4_K's.
void unpack16_q5_k(int64_t n, const void* repacked, void* unpacked) {
    const auto* blocks = static_cast<const Q5KRepacked16*>(repacked);
    auto* out = static_cast<Unpacked16<8>*>(unpacked);
    for (int64_t i = 0; i < n / kQKK; ++i) {
        Unpacked16<8>& u = out[i];
        for (int j = 0; j < 8; ++j) {
            __m512i q[8];
            q5_k_sub_block_codes(blocks[i].units[j], q);
            for (int g = 0; g < 8; ++g) _mm512_store_si512(u.codes[8 * j + g], q[g]);
        }
        unpack16_k4_fields(blocks[i], u);
    }
}

// Row r's blocks back in the file's layout (the inverse of q5_k_codes' reading).
void unrepack_q5_k(int64_t n, const void* repacked, int r, void* row) {
    const auto* blocks = static_cast<const Q5KRepacked16*>(repacked);
    auto* out = static_cast<BlockQ5_K*>(row);
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const Q5KRepacked16& p = blocks[i];
        BlockQ5_K& b = out[i];
        std::memset(&b, 0, sizeof b);
        for (int v = 0; v < kQKK; ++v) {
            const Q5KUnit& u = p.units[v / 32];
            const int nibble = u.nib[v % 32 / 8][r][v % 4] >> (4 * (v % 8 / 4)) & 0x0F;
            const int fifth = u.high[r][v % 4] >> (v % 32 / 4) & 1;
            const int ch = v / 64, l = v % 32, upper = v % 64 / 32;
            b.qs[32 * ch + l] |= uint8_t(nibble << (4 * upper));
            b.qh[l] |= uint8_t(fifth << (2 * ch + upper));
        }
        unrepack_k4_fields(p, r, b);
    }
}

// The 32-value types' group of 16 rows (Q8_0, Q5_0, Q4_0, IQ4_NL): per pair of blocks, the 16 rows' d of both
// ([block][row], f16: one cache line, half of it padding after an odd last block) and then the two
// blocks' kBlockBytes each (a multiple of 64, so every block stays 64-byte aligned). The d sit beside
// their blocks, not in an array after them, because a second stream inside the group leaves the
// hardware prefetchers behind: bench_tiles' decode from memory (one thread, kernel / plain read) gave
// Q8_0 0.64 with the array and 0.92-0.93 with the d in line, Q5_0 0.48 and 0.78-0.81.
template <size_t kBlockBytes>
struct PairedD {
    static_assert(kBlockBytes % 64 == 0, "whole cache lines");
    static constexpr size_t kPair = 64 + 2 * kBlockBytes;
    static size_t bytes(int64_t nb) { return size_t(nb / 2) * kPair + size_t(nb % 2) * (64 + kBlockBytes); }
    static uint8_t* block(void* group, int64_t i) {
        return static_cast<uint8_t*>(group) + size_t(i / 2) * kPair + 64 + size_t(i % 2) * kBlockBytes;
    }
    static const uint8_t* block(const void* group, int64_t i) { return block(const_cast<void*>(group), i); }
    static uint16_t* d(void* group, int64_t i) {
        return reinterpret_cast<uint16_t*>(static_cast<uint8_t*>(group) + size_t(i / 2) * kPair) + (i % 2) * kRows;
    }
    static const uint16_t* d(const void* group, int64_t i) { return d(const_cast<void*>(group), i); }
};

// Group g of a 16-row tile block (Unpacked16Q32) from its signed codes q: the codes, and the start
// -128 times their sum that the tile's biased activations need.
WB_INLINE void store_signed_group(Unpacked16Q32& u, int g, __m512i q) {
    _mm512_store_si512(u.codes[g], q);
    const __m512i sum = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), q);  // the group's 4 codes, signed
    _mm512_store_si512(u.start[g], _mm512_mullo_epi32(sum, _mm512_set1_epi32(-128)));
}

// A 16-row tile block's d (from the 16 rows' f16) and m (0: the signed types have none).
WB_INLINE void store_d_no_m(Unpacked16Q32& u, const uint16_t* d) {
    _mm512_store_ps(u.d, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(d))));
    _mm512_store_ps(u.m, _mm512_setzero_ps());
}

// ---- Q8_0 in its row order (the decode of a Q8_0 matrix, often a model's tied output) ----
//
// A group of 16 rows is PairedD's, a block's codes [group of 4 values][row][4] (512 bytes): the same
// bytes as the file's, read as one stream instead of 16. The row kernel (dot_blocks<BlockQ8_0> in
// quant_avx2.cpp) keeps 8 float lanes, lane l the exact sums of values 4l..4l+3 of each block folded in
// by one FMA with fp16(d_w) * fp16(d_x), and sums them in hsum's tree; here lane l of the 16 rows is
// one vector.
constexpr size_t kQ80Codes = kQK * kRows;  // bytes of one block's codes for the 16 rows
using Q80Group = PairedD<kQ80Codes>;

size_t q8_0_repacked_bytes(int64_t n) { return Q80Group::bytes(n / kQK); }

WB_INLINE int8_t* q8_0_codes_at(void* group, int64_t i) { return reinterpret_cast<int8_t*>(Q80Group::block(group, i)); }
WB_INLINE const int8_t* q8_0_codes_at(const void* group, int64_t i) {
    return reinterpret_cast<const int8_t*>(Q80Group::block(group, i));
}

void repack_q8_0(int64_t n, const void* w, size_t w_stride, void* out) {
    const int64_t nb = n / kQK;
    std::memset(out, 0, q8_0_repacked_bytes(n));  // the padding after an odd last block's d
    for (int r = 0; r < kRows; ++r) {
        const auto* row = reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(w) + size_t(r) * w_stride);
        for (int64_t i = 0; i < nb; ++i) {
            for (int g = 0; g < kQK / 4; ++g) std::memcpy(q8_0_codes_at(out, i) + 64 * g + 4 * r, row[i].qs + 4 * g, 4);
            Q80Group::d(out, i)[r] = row[i].d;
        }
    }
}

void unrepack_q8_0(int64_t n, const void* repacked, int r, void* row) {
    const int64_t nb = n / kQK;
    auto* out = static_cast<BlockQ8_0*>(row);
    for (int64_t i = 0; i < nb; ++i) {
        for (int g = 0; g < kQK / 4; ++g) std::memcpy(out[i].qs + 4 * g, q8_0_codes_at(repacked, i) + 64 * g + 4 * r, 4);
        out[i].d = Q80Group::d(repacked, i)[r];
    }
}

void row16_q8_0(int64_t n, const void* repacked, const void* x, float* out) {
    const int64_t nb = n / kQK;
    const auto* bx = static_cast<const BlockQ8_0*>(x);
    __m512 acc[8];
    for (__m512& a : acc) a = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        // fp16(d_w) * fp16(d_x) per row, one rounding as the row kernel's scalar product
        const __m512 dd = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(Q80Group::d(repacked, i)))),
                                        _mm512_set1_ps(fp16(bx[i].d)));
        const int8_t* c = q8_0_codes_at(repacked, i);
#pragma GCC unroll 8
        for (int g = 0; g < kQK / 4; ++g) {
            const __m512i q = _mm512_load_si512(c + 64 * g);
            const __m512i y = broadcast4(bx[i].qs + 4 * g);
            // |q| (-128 as 128, unsigned) times y with q's sign: the row kernel's exact lane sums
            const __m512i sy = _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(q), _mm512_setzero_si512(), y);
            const __m512i lanes = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(q), sy);
            acc[g] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(lanes), acc[g]);
        }
    }
    // + 0.0f: the row kernel adds its (here empty) scalar terms after the sum, which turns -0 into +0.
    _mm512_storeu_ps(out, _mm512_add_ps(lane_tree(acc), _mm512_setzero_ps()));
}

// The 16-row tile's layout for Q8_0 (Unpacked16Q32: the same codes, each group's start -128 times
// its code sum, d as float).
void unpack16_q8_0(int64_t n, const void* repacked, void* unpacked) {
    auto* out = static_cast<Unpacked16Q32*>(unpacked);
    for (int64_t i = 0; i < n / kQK; ++i) {
        for (int g = 0; g < kQK / 4; ++g) store_signed_group(out[i], g, _mm512_load_si512(q8_0_codes_at(repacked, i) + 64 * g));
        store_d_no_m(out[i], Q80Group::d(repacked, i));
    }
}

// ---- Q6_K (the decode's row order, and the batches' tiled order with its 16-row tile) ----
//
// Read in the file's layout (dot_blocks<BlockQ6_K> in quant_avx2.cpp) a Q6_K row takes 18.9 GB/s per
// CPU second in cache on the Zen 4 VM, the slowest decode kernel of a Q4_K_M file (its output head and
// half of its attn_v and ffn_down are Q6_K). The row dot keeps 8 int32 lanes per block: lane l holds,
// for each run R of 32 values, sc * (the products of values 32R+4l..32R+4l+3) with sc the scale of the
// run's first 16 values for l < 4 and of its last 16 for l >= 4, less the offset 32 * (sc_2l bsum_2l +
// sc_2l+1 bsum_2l+1); each lane is folded into its own float lane by one FMA with d_x * d_w, and the 8
// lanes are summed in hsum's tree. Here group g of 4 values (values 4g..4g+3, lane g % 8) is one vector
// of the 16 rows' codes, so vpmaddubsw and one vpdpwssd against the rows' scales (16-bit, twice in a
// lane) add it to lane g % 8 of all 16 rows at once: integers, so exactly the row dot's lanes.
//
// Unit u is sub-block u (values 16u..16u+15, groups 4u..4u+3, one scale): the groups' low nibbles in two
// vectors (groups 4u and 4u+2 in the low nibbles, 4u+1 and 4u+3 in the high ones) and their top 2 bits
// in a third (group 4u+j's at bits 2j of each byte): 192 bytes for 16 rows x 16 values, the file's 6
// bits a value. With the scales as bytes and d as f16, in front, a block of 16 rows is the file's 3360
// bytes, padded to whole cache lines (3392). (The fields in front rather than after the units, so that a
// block is read in order, measured +5 % on a Q6_K file's decode: 12 alternating pairs.)
struct Q6KUnit {
    uint8_t nib[2][kRows][4];  // [pair p][row]: byte k = code k of group 4u+2p & 15 | code k of group 4u+2p+1 << 4
    uint8_t high[kRows][4];    // [row]: byte k = the top 2 bits of code k of group 4u+j at bits 2j
};
struct Q6KRepacked16 {
    int8_t scales[16][kRows];  // [sub-block][row]
    uint16_t d[kRows];         // f16, as in the file
    uint8_t pad[32];
    Q6KUnit units[16];
};
static_assert(sizeof(Q6KRepacked16) == 3392, "the file's 3360 bytes in whole cache lines");
static_assert(offsetof(Q6KRepacked16, units) % 64 == 0 && sizeof(Q6KUnit) % 64 == 0, "the units' aligned loads");

size_t q6_k_repacked_bytes(int64_t n) { return size_t(n / kQKK) * sizeof(Q6KRepacked16); }

void repack_q6_k(int64_t n, const void* w, size_t w_stride, void* out) {
    auto* blocks = static_cast<Q6KRepacked16*>(out);
    std::memset(out, 0, q6_k_repacked_bytes(n));
    for (int r = 0; r < kRows; ++r) {
        const auto* row = reinterpret_cast<const BlockQ6_K*>(static_cast<const uint8_t*>(w) + size_t(r) * w_stride);
        uint8_t codes[kQKK];
        for (int64_t i = 0; i < n / kQKK; ++i) {
            Q6KRepacked16& p = blocks[i];
            q6_k_codes(row[i], codes);
            for (int v = 0; v < kQKK; ++v) {
                const int c = codes[v], u = v / 16, j = v % 16 / 4, k = v % 4;
                p.units[u].nib[j / 2][r][k] |= uint8_t((c & 0xF) << (4 * (j % 2)));
                p.units[u].high[r][k] |= uint8_t((c >> 4) << (2 * j));
            }
            for (int s = 0; s < 16; ++s) p.scales[s][r] = row[i].scales[s];
            p.d[r] = row[i].d;
        }
    }
}

// Unit u's four groups of codes (0..63), 16 rows x 4 values each.
WB_INLINE void q6_k_unit_codes(const Q6KUnit& u, __m512i (&q)[4]) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    const __m512i n0 = _mm512_load_si512(u.nib[0]), n1 = _mm512_load_si512(u.nib[1]), h = _mm512_load_si512(u.high);
    // 0xEA: (a & b) | c. The top bits moved to bits 4-5 of each byte; 16-bit shifts do not carry
    // between the bytes' fields that the masks keep.
    q[0] = _mm512_ternarylogic_epi32(n0, m4, _mm512_and_si512(_mm512_slli_epi16(h, 4), m30), 0xEA);
    q[1] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(n0, 4), m4, _mm512_and_si512(_mm512_slli_epi16(h, 2), m30), 0xEA);
    q[2] = _mm512_ternarylogic_epi32(n1, m4, _mm512_and_si512(h, m30), 0xEA);
    q[3] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(n1, 4), m4, _mm512_and_si512(_mm512_srli_epi16(h, 2), m30), 0xEA);
}

// The row dot's 8 integer lanes of one block for the 16 rows (lane[l], row r in 32-bit lane r).
WB_INLINE void q6_k_block_lanes(const Q6KRepacked16& b, const BlockQ8_K& x, __m512i (&lane)[8]) {
    for (__m512i& l : lane) l = _mm512_setzero_si512();
    __m512i sc_even = _mm512_setzero_si512();
#pragma GCC unroll 16
    for (int u = 0; u < 16; ++u) {
        // sub-block u's scale in both 16-bit halves of each row's lane
        const __m512i s32 = _mm512_cvtepi8_epi32(_mm_load_si128(reinterpret_cast<const __m128i*>(b.scales[u])));
        const __m512i sc = _mm512_mask_blend_epi16(0xAAAAAAAAu, s32, _mm512_slli_epi32(s32, 16));
        __m512i q[4];
        q6_k_unit_codes(b.units[u], q);
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
            const int g = 4 * u + j;  // |pair sums| <= 2 * 63 * 128: vpmaddubsw does not saturate
            lane[g % 8] = _mm512_dpwssd_epi32(lane[g % 8], _mm512_maddubs_epi16(q[j], broadcast4(x.qs + 4 * g)), sc);
        }
        if (u % 2 == 0) {
            sc_even = sc;
        } else {  // lane u / 2's offset: 32 * (sc_u-1 * bsum_u-1 + sc_u * bsum_u)
            const __m512i pair = _mm512_mask_blend_epi16(0xAAAAAAAAu, sc_even, sc);
            const __m512i off = _mm512_dpwssd_epi32(_mm512_setzero_si512(), pair, broadcast4(x.bsums + u - 1));
            lane[u / 2] = _mm512_sub_epi32(lane[u / 2], _mm512_slli_epi32(off, 5));
        }
    }
}

// The 16 rows against one token: the row dot's order (kTiled false: each lane folded by an FMA with
// d_x * d_w, hsum's tree, + 0 as dot_blocks adds its empty scalar part) or the tiled order (true:
// per block r = d_w * float(the lanes' sum), acc = fma(r, d_x, acc); dot_k_tiled).
template <bool kTiled>
void row16_q6_k(int64_t n, const void* repacked, const void* x, float* out) {
    const auto* blocks = static_cast<const Q6KRepacked16*>(repacked);
    const auto* bx = static_cast<const BlockQ8_K*>(x);
    __m512 acc[8];
    for (__m512& a : acc) a = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / kQKK; ++i) {
        __m512i lane[8];
        q6_k_block_lanes(blocks[i], bx[i], lane);
        const __m512 d = _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(blocks[i].d)));
        if constexpr (kTiled) {
            const __m512i sum = _mm512_add_epi32(
                _mm512_add_epi32(_mm512_add_epi32(lane[0], lane[1]), _mm512_add_epi32(lane[2], lane[3])),
                _mm512_add_epi32(_mm512_add_epi32(lane[4], lane[5]), _mm512_add_epi32(lane[6], lane[7])));
            acc[0] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(sum)), _mm512_set1_ps(bx[i].d), acc[0]);
        } else {
            const __m512 dd = _mm512_mul_ps(d, _mm512_set1_ps(bx[i].d));
#pragma GCC unroll 8
            for (int l = 0; l < 8; ++l) acc[l] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(lane[l]), dd, acc[l]);
        }
    }
    if constexpr (kTiled)
        _mm512_storeu_ps(out, acc[0]);
    else
        _mm512_storeu_ps(out, _mm512_add_ps(lane_tree(acc), _mm512_setzero_ps()));
}

// The 16-row tile's layout for Q6_K (Unpacked16<16>, what unpack16 of the file's rows gives): the codes
// by group, the scales as they are, m = 32 * sc per 16-value sub-block in pairs, d as float.
void unpack16_q6_k(int64_t n, const void* repacked, void* unpacked) {
    const auto* blocks = static_cast<const Q6KRepacked16*>(repacked);
    auto* out = static_cast<Unpacked16<16>*>(unpacked);
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const Q6KRepacked16& b = blocks[i];
        Unpacked16<16>& u = out[i];
        for (int un = 0; un < 16; ++un) {
            __m512i q[4];
            q6_k_unit_codes(b.units[un], q);
            for (int j = 0; j < 4; ++j) _mm512_store_si512(u.codes[4 * un + j], q[j]);
        }
        std::memcpy(u.scales, b.scales, sizeof u.scales);
        for (int p = 0; p < 8; ++p)
            for (int r = 0; r < kRows; ++r)
                u.m_pairs[p][r] = int32_t(uint32_t(uint16_t(32 * b.scales[2 * p][r])) | uint32_t(uint16_t(32 * b.scales[2 * p + 1][r])) << 16);
        _mm512_store_ps(u.d, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(b.d))));
        _mm512_store_ps(u.dmin, _mm512_setzero_ps());
    }
}

// Row r's blocks back in the file's layout (the inverse of q6_k_codes' reading).
void unrepack_q6_k(int64_t n, const void* repacked, int r, void* row) {
    const auto* blocks = static_cast<const Q6KRepacked16*>(repacked);
    auto* out = static_cast<BlockQ6_K*>(row);
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const Q6KRepacked16& p = blocks[i];
        BlockQ6_K& b = out[i];
        std::memset(&b, 0, sizeof b);
        for (int v = 0; v < kQKK; ++v) {
            const int u = v / 16, j = v % 16 / 4, k = v % 4;
            const int c = (p.units[u].nib[j / 2][r][k] >> (4 * (j % 2)) & 0xF) | (p.units[u].high[r][k] >> (2 * j) & 3) << 4;
            const int h = v / 128, quarter = v % 128 / 32, l = v % 32;
            b.ql[64 * h + 32 * (quarter & 1) + l] |= uint8_t((c & 0xF) << (quarter < 2 ? 0 : 4));
            b.qh[32 * h + l] |= uint8_t((c >> 4) << (2 * quarter));
        }
        for (int s = 0; s < 16; ++s) b.scales[s] = p.scales[s][r];
        b.d = p.d[r];
    }
}

// ---- Q5_0 in its row order (the decode of most matrices of a Q4_K_M file whose width is no multiple
// of 256, e.g. Gemma 3 270M's q, k, gate and up) ----
//
// A group of 16 rows is PairedD's, a block Q50Repacked16 (the same nibbles as the file's, the fifth
// bits regrouped): 352 bytes a block of 16 rows, as in the file.
// The row kernel (dot_blocks<BlockQ5_0> in quant_avx2.cpp) is Q8_0's with the codes value - 16: 8 float
// lanes, lane l the exact sum of values 4l..4l+3 times the activations, folded in by one FMA with
// fp16(d_w) * fp16(d_x). Here the codes stay unsigned (the value, 0..31) as vpdpbusd's unsigned operand
// and each group's sum starts at -16 times the sum of its 4 activations: the same exact integer,
// sum((value - 16) * y), with no sign juggling per group.
struct Q50Repacked16 {
    uint8_t nib[4][kRows][4];  // [g][row]: byte k = value 4g+k in the low nibble, value 16+4g+k in the high one
    uint64_t high[8];          // group g (values 4g..4g+3): bit 4r+k = the fifth bit of row r's value 4g+k
};
static_assert(sizeof(Q50Repacked16) == 320, "five cache lines a block");

using Q50Group = PairedD<sizeof(Q50Repacked16)>;

size_t q5_0_repacked_bytes(int64_t n) { return Q50Group::bytes(n / kQK); }

WB_INLINE Q50Repacked16& q5_0_block(void* group, int64_t i) { return *reinterpret_cast<Q50Repacked16*>(Q50Group::block(group, i)); }
WB_INLINE const Q50Repacked16& q5_0_block(const void* group, int64_t i) {
    return *reinterpret_cast<const Q50Repacked16*>(Q50Group::block(group, i));
}

void repack_q5_0(int64_t n, const void* w, size_t w_stride, void* out) {
    const int64_t nb = n / kQK;
    std::memset(out, 0, q5_0_repacked_bytes(n));  // the high-bit masks are OR-ed in; the padding stays 0
    for (int r = 0; r < kRows; ++r) {
        const auto* row = reinterpret_cast<const BlockQ5_0*>(static_cast<const uint8_t*>(w) + size_t(r) * w_stride);
        for (int64_t i = 0; i < nb; ++i) {
            for (int g = 0; g < 4; ++g) std::memcpy(q5_0_block(out, i).nib[g][r], row[i].qs + 4 * g, 4);
            uint32_t qh;
            std::memcpy(&qh, row[i].qh, 4);
            for (int v = 0; v < kQK; ++v) q5_0_block(out, i).high[v / 4] |= uint64_t(qh >> v & 1) << (4 * r + v % 4);
            Q50Group::d(out, i)[r] = row[i].d;
        }
    }
}

void unrepack_q5_0(int64_t n, const void* repacked, int r, void* row) {
    const int64_t nb = n / kQK;
    auto* out = static_cast<BlockQ5_0*>(row);
    for (int64_t i = 0; i < nb; ++i) {
        for (int g = 0; g < 4; ++g) std::memcpy(out[i].qs + 4 * g, q5_0_block(repacked, i).nib[g][r], 4);
        uint32_t qh = 0;
        for (int v = 0; v < kQK; ++v) qh |= uint32_t(q5_0_block(repacked, i).high[v / 4] >> (4 * r + v % 4) & 1) << v;
        std::memcpy(out[i].qh, &qh, 4);
        out[i].d = Q50Group::d(repacked, i)[r];
    }
}

// Block b's unsigned codes (0..31) of groups g and g + 4 for the 16 rows, 4 bytes a row.
WB_INLINE void q5_0_codes(const Q50Repacked16& b, int g, __m512i& low, __m512i& high) {
    const __m512i fifth = _mm512_set1_epi8(0x10);
    split_nibbles(b.nib[g], low, high);
    low = _mm512_mask_add_epi8(low, _cvtu64_mask64(b.high[g]), low, fifth);  // + 16: the nibble is below 16
    high = _mm512_mask_add_epi8(high, _cvtu64_mask64(b.high[g + 4]), high, fifth);
}

void row16_q5_0(int64_t n, const void* repacked, const void* x, float* out) {
    const int64_t nb = n / kQK;
    const auto* bx = static_cast<const BlockQ8_0*>(x);
    __m512 acc[8];
    for (__m512& a : acc) a = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; ++i) {
        // fp16(d_w) * fp16(d_x) per row, one rounding as the row kernel's scalar product
        const __m512 dd = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(Q50Group::d(repacked, i)))),
                                        _mm512_set1_ps(fp16(bx[i].d)));
        // -16 * the sum of each group's 4 activations (exact: at most 16 * 4 * 128)
        const __m256i sums = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), load32(bx[i].qs));
        alignas(32) int32_t start[8];
        _mm256_store_si256(reinterpret_cast<__m256i*>(start), _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sums, 4)));
#pragma GCC unroll 4
        for (int g = 0; g < 4; ++g) {
            __m512i low, high;
            q5_0_codes(q5_0_block(repacked, i), g, low, high);
            const __m512i lanes_low = _mm512_dpbusd_epi32(_mm512_set1_epi32(start[g]), low, broadcast4(bx[i].qs + 4 * g));
            const __m512i lanes_high =
                _mm512_dpbusd_epi32(_mm512_set1_epi32(start[g + 4]), high, broadcast4(bx[i].qs + 4 * (g + 4)));
            acc[g] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(lanes_low), acc[g]);
            acc[g + 4] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(lanes_high), acc[g + 4]);
        }
    }
    // + 0.0f: the row kernel adds its (here empty) scalar terms after the sum, which turns -0 into +0.
    _mm512_storeu_ps(out, _mm512_add_ps(lane_tree(acc), _mm512_setzero_ps()));
}

// The 16-row tile's layout (Unpacked16Q32, as quant_avx512_rows16.cpp's unpack16_q32 writes it from
// the file: the codes value - 16 as int8, each group's start -128 times its code sum, d as float).
void unpack16_q5_0(int64_t n, const void* repacked, void* unpacked) {
    auto* out = static_cast<Unpacked16Q32*>(unpacked);
    const __m512i sixteen = _mm512_set1_epi8(16);
    for (int64_t i = 0; i < n / kQK; ++i) {
        for (int g = 0; g < 4; ++g) {
            __m512i codes[2];
            q5_0_codes(q5_0_block(repacked, i), g, codes[0], codes[1]);
            for (int h = 0; h < 2; ++h) store_signed_group(out[i], g + 4 * h, _mm512_sub_epi8(codes[h], sixteen));
        }
        store_d_no_m(out[i], Q50Group::d(repacked, i));
    }
}

// ---- Q4_0 and IQ4_NL in llama.cpp's repacked order (gemv and gemm alike: the decode and the batches) ----
//
// llama.cpp's x86 build repacks Q4_0 and IQ4_NL matrices whose row count is a multiple of 8 and folds
// each block's exact sum into one float by one FMA with fp16(d_w) * fp16(d_x) (dot_block_sums in
// quant_avx2.cpp). The two types share a block layout (d, 16 bytes of nibbles) and so a repacked one: a
// group of 16 rows is PairedD's, a block Nib4Repacked16 (the nibbles as Q4_1's: value 4g+k low, 16+4g+k
// high), the file's bytes. The row kernel takes each code as vpdpbusd's unsigned operand, biased (Q4_0:
// the nibble, value + 8; IQ4_NL: its table value + 128), and starts each block's sum at -bias times the
// sum of its 32 activations: the same exact integer, sum(value * y).
struct Nib4Repacked16 {
    uint8_t nib[4][kRows][4];  // [g][row]: byte k = value 4g+k in the low nibble, value 16+4g+k in the high one
};
using Nib4Group = PairedD<sizeof(Nib4Repacked16)>;

// A type's biased codes (0..255) from its nibbles, and the bias.
template <class BW>
struct Nib4Codes;
template <>
struct Nib4Codes<BlockQ4_0> {
    static constexpr int kBias = 8;
    static __m512i table() { return _mm512_setzero_si512(); }
    static __m512i biased(__m512i nibbles, __m512i) { return nibbles; }
};
template <>
struct Nib4Codes<BlockIQ4_NL> {
    static constexpr int kBias = 128;
    static __m512i table() { return _mm512_broadcast_i32x4(_mm_xor_si128(iq4_nl_table(), _mm_set1_epi8(char(0x80)))); }
    static __m512i biased(__m512i nibbles, __m512i table) { return _mm512_shuffle_epi8(table, nibbles); }
};

size_t nib4_repacked_bytes(int64_t n) { return Nib4Group::bytes(n / kQK); }

WB_INLINE Nib4Repacked16& nib4_block(void* group, int64_t i) { return *reinterpret_cast<Nib4Repacked16*>(Nib4Group::block(group, i)); }
WB_INLINE const Nib4Repacked16& nib4_block(const void* group, int64_t i) {
    return *reinterpret_cast<const Nib4Repacked16*>(Nib4Group::block(group, i));
}

template <class BW>
void repack_nib4(int64_t n, const void* w, size_t w_stride, void* out) {
    std::memset(out, 0, nib4_repacked_bytes(n));  // the padding after an odd last block's d
    for (int r = 0; r < kRows; ++r) {
        const auto* row = reinterpret_cast<const BW*>(static_cast<const uint8_t*>(w) + size_t(r) * w_stride);
        for (int64_t i = 0; i < n / kQK; ++i) {
            for (int g = 0; g < 4; ++g) std::memcpy(nib4_block(out, i).nib[g][r], row[i].qs + 4 * g, 4);
            Nib4Group::d(out, i)[r] = row[i].d;
        }
    }
}

template <class BW>
void unrepack_nib4(int64_t n, const void* repacked, int r, void* row) {
    auto* out = static_cast<BW*>(row);
    for (int64_t i = 0; i < n / kQK; ++i) {
        for (int g = 0; g < 4; ++g) std::memcpy(out[i].qs + 4 * g, nib4_block(repacked, i).nib[g][r], 4);
        out[i].d = Nib4Group::d(repacked, i)[r];
    }
}

// The sum of a block's 32 activations (|sum| <= 32 * 127).
WB_INLINE int activation_sum(const int8_t* qs) {
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), load32(qs));
    return hsum_i32(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

template <class BW>
void row16_nib4(int64_t n, const void* repacked, const void* x, float* out) {
    using C = Nib4Codes<BW>;
    const auto* bx = static_cast<const BlockQ8_0*>(x);
    const __m512i table = C::table();
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / kQK; ++i) {
        const Nib4Repacked16& b = nib4_block(repacked, i);
        __m512i sum = _mm512_set1_epi32(-C::kBias * activation_sum(bx[i].qs));  // |sum| < 2^31 throughout
#pragma GCC unroll 4
        for (int g = 0; g < 4; ++g) {
            __m512i low, high;
            split_nibbles(b.nib[g], low, high);
            sum = _mm512_dpbusd_epi32(sum, C::biased(low, table), broadcast4(bx[i].qs + 4 * g));
            sum = _mm512_dpbusd_epi32(sum, C::biased(high, table), broadcast4(bx[i].qs + 16 + 4 * g));
        }
        // fp16(d_w) * fp16(d_x), one rounding, then the block's FMA
        const __m512 dd = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(Nib4Group::d(repacked, i)))),
                                        _mm512_set1_ps(fp16(bx[i].d)));
        acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), dd, acc);
    }
    _mm512_storeu_ps(out, acc);
}

// The 16-row tile's layout (Unpacked16Q32, as quant_avx512_rows16.cpp's unpack16_q32 writes it from
// the file: the values as int8, each group's start -128 times its code sum, d as float).
template <class BW>
void unpack16_nib4(int64_t n, const void* repacked, void* unpacked) {
    using C = Nib4Codes<BW>;
    auto* out = static_cast<Unpacked16Q32*>(unpacked);
    const __m512i table = C::table(), bias = _mm512_set1_epi8(char(C::kBias));
    for (int64_t i = 0; i < n / kQK; ++i) {
        for (int g = 0; g < 4; ++g) {
            __m512i nibbles[2];
            split_nibbles(nib4_block(repacked, i).nib[g], nibbles[0], nibbles[1]);
            for (int h = 0; h < 2; ++h)  // the value, wrapping to int8
                store_signed_group(out[i], g + 4 * h, _mm512_sub_epi8(C::biased(nibbles[h], table), bias));
        }
        store_d_no_m(out[i], Nib4Group::d(repacked, i));
    }
}

// ---- Q4_1 in its row order (the decode of a Q4_1 file's matrices, e.g. SmolLM2's) ----
//
// A group of 16 rows is, per block, Q41Repacked16: d and m of the 16 rows (f16), then the nibbles as
// Q5_0's (value 4g+k low, 16+4g+k high): 320 bytes, as the file's 16 x 20 (every 16 rows of a block one
// stream; d and m in front: SmolLM2's decode +8 %, 6 alternating pairs). The row kernel (dot_blocks<BlockQ4_1> in quant_avx2.cpp): 8 float lanes, lane l the
// exact sum of values 4l..4l+3 (unsigned codes) times the activations folded in by one FMA with
// fp16(d_w) * fp16(d_x), the offsets fp16(m_w) * fp16(s_x) summed apart in block order and added after
// the lanes' tree: here each in its own lane of the 16 rows.
struct Q41Repacked16 {
    uint16_t d[kRows], m[kRows];
    uint8_t nib[4][kRows][4];
};
static_assert(sizeof(Q41Repacked16) == 320, "five cache lines a block");
static_assert(offsetof(Q41Repacked16, nib) % 64 == 0, "the nibbles' aligned loads");

size_t q4_1_repacked_bytes(int64_t n) { return size_t(n / kQK) * sizeof(Q41Repacked16); }

void repack_q4_1(int64_t n, const void* w, size_t w_stride, void* out) {
    auto* blocks = static_cast<Q41Repacked16*>(out);
    for (int r = 0; r < kRows; ++r) {
        const auto* row = reinterpret_cast<const BlockQ4_1*>(static_cast<const uint8_t*>(w) + size_t(r) * w_stride);
        for (int64_t i = 0; i < n / kQK; ++i) {
            for (int g = 0; g < 4; ++g) std::memcpy(blocks[i].nib[g][r], row[i].qs + 4 * g, 4);
            blocks[i].d[r] = row[i].d;
            blocks[i].m[r] = row[i].m;
        }
    }
}

void unrepack_q4_1(int64_t n, const void* repacked, int r, void* row) {
    const auto* blocks = static_cast<const Q41Repacked16*>(repacked);
    auto* out = static_cast<BlockQ4_1*>(row);
    for (int64_t i = 0; i < n / kQK; ++i) {
        for (int g = 0; g < 4; ++g) std::memcpy(out[i].qs + 4 * g, blocks[i].nib[g][r], 4);
        out[i].d = blocks[i].d[r];
        out[i].m = blocks[i].m[r];
    }
}

void row16_q4_1(int64_t n, const void* repacked, const void* x, float* out) {
    const auto* blocks = static_cast<const Q41Repacked16*>(repacked);
    const auto* bx = static_cast<const BlockQ8_1*>(x);
    __m512 acc[8], extra = _mm512_setzero_ps();
    for (__m512& a : acc) a = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / kQK; ++i) {
        const Q41Repacked16& b = blocks[i];
        // fp16(d_w) * fp16(d_x) and fp16(m_w) * fp16(s_x), one rounding each, as q8_1_scales
        const __m512 dd = _mm512_mul_ps(_mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(b.d))),
                                        _mm512_set1_ps(fp16(bx[i].d)));
        extra = _mm512_add_ps(extra, _mm512_mul_ps(_mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(b.m))),
                                                   _mm512_set1_ps(fp16(bx[i].s))));
#pragma GCC unroll 4
        for (int g = 0; g < 4; ++g) {
            __m512i low, high;
            split_nibbles(b.nib[g], low, high);
            const __m512i lanes_low = _mm512_dpbusd_epi32(_mm512_setzero_si512(), low, broadcast4(bx[i].qs + 4 * g));
            const __m512i lanes_high = _mm512_dpbusd_epi32(_mm512_setzero_si512(), high, broadcast4(bx[i].qs + 4 * (g + 4)));
            acc[g] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(lanes_low), acc[g]);
            acc[g + 4] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(lanes_high), acc[g + 4]);
        }
    }
    _mm512_storeu_ps(out, _mm512_add_ps(lane_tree(acc), extra));
}

// The 16-row tile's layout (Unpacked16Q32, as unpack16_q32 writes it from the file: the unsigned codes,
// start 0, d and m as floats).
void unpack16_q4_1(int64_t n, const void* repacked, void* unpacked) {
    const auto* blocks = static_cast<const Q41Repacked16*>(repacked);
    auto* out = static_cast<Unpacked16Q32*>(unpacked);
    for (int64_t i = 0; i < n / kQK; ++i) {
        Unpacked16Q32& u = out[i];
        for (int g = 0; g < 4; ++g) {
            __m512i low, high;
            split_nibbles(blocks[i].nib[g], low, high);
            _mm512_store_si512(u.codes[g], low);
            _mm512_store_si512(u.codes[g + 4], high);
            _mm512_store_si512(u.start[g], _mm512_setzero_si512());
            _mm512_store_si512(u.start[g + 4], _mm512_setzero_si512());
        }
        _mm512_store_ps(u.d, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(blocks[i].d))));
        _mm512_store_ps(u.m, _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(blocks[i].m))));
    }
}

WB_AVX512_WARNINGS_ON

}  // namespace

void add_repack_avx512_kernels(KernelTable& t) {
    t.repacked16_in(DotOrder::kGemv, GgmlType::Q4_K) = {q4_k_repacked_bytes, repack_q4_k, row16_q4_k<false>, unpack16_q4_k,
                                                          unrepack_q4_k};
    t.repacked16_in(DotOrder::kGemm, GgmlType::Q4_K) = {q4_k_repacked_bytes, repack_q4_k, row16_q4_k<true>, unpack16_q4_k,
                                                          unrepack_q4_k};
    // the batches' llamafile order is served by the row order's kernels (quant.cpp's served_order)
    t.repacked16_in(DotOrder::kRow, GgmlType::Q8_0) = {q8_0_repacked_bytes, repack_q8_0, row16_q8_0, unpack16_q8_0, unrepack_q8_0};
    t.repacked16_in(DotOrder::kRow, GgmlType::Q5_0) = {q5_0_repacked_bytes, repack_q5_0, row16_q5_0, unpack16_q5_0, unrepack_q5_0};
    // a plain array: a std::initializer_list would instantiate its members in this ISA's object (check_isa_symbols)
    constexpr DotOrder kRepackedOrders[] = {DotOrder::kGemv, DotOrder::kGemm};
    for (DotOrder o : kRepackedOrders) {
        t.repacked16_in(o, GgmlType::Q4_0) = {nib4_repacked_bytes, repack_nib4<BlockQ4_0>, row16_nib4<BlockQ4_0>,
                                              unpack16_nib4<BlockQ4_0>, unrepack_nib4<BlockQ4_0>};
        t.repacked16_in(o, GgmlType::IQ4_NL) = {nib4_repacked_bytes, repack_nib4<BlockIQ4_NL>, row16_nib4<BlockIQ4_NL>,
                                                unpack16_nib4<BlockIQ4_NL>, unrepack_nib4<BlockIQ4_NL>};
    }
    t.repacked16_in(DotOrder::kRow, GgmlType::Q4_1) = {q4_1_repacked_bytes, repack_q4_1, row16_q4_1, unpack16_q4_1, unrepack_q4_1};
    // the decode (row order, no 16-row tile) and the batches (tiled order) read one layout
    t.repacked16_in(DotOrder::kRow, GgmlType::Q5_K) = {q5_k_repacked_bytes, repack_q5_k, row16_q5_k<false>, nullptr, unrepack_q5_k};
    t.repacked16_in(DotOrder::kTiled, GgmlType::Q5_K) = {q5_k_repacked_bytes, repack_q5_k, row16_q5_k<true>, unpack16_q5_k,
                                                          unrepack_q5_k};
    t.repacked16_in(DotOrder::kRow, GgmlType::Q6_K) = {q6_k_repacked_bytes, repack_q6_k, row16_q6_k<false>, nullptr, unrepack_q6_k};
    t.repacked16_in(DotOrder::kTiled, GgmlType::Q6_K) = {q6_k_repacked_bytes, repack_q6_k, row16_q6_k<true>, unpack16_q6_k,
                                                          unrepack_q6_k};
}

}  // namespace wb
