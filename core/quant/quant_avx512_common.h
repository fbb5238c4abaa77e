#pragma once
// AVX-512 pieces shared by the files built with AVX-512 flags (quant_avx512_k.cpp,
// quant_avx512_rows16.cpp, quant_avx512_repack.cpp): the 16-row layouts, Q4_K / Q5_K chunks, a
// 4-byte broadcast and hsum's tree over 8 vectors, with internal linkage for the
// reason quant_isa_local.h gives.
#include <immintrin.h>

#include <cstring>

#include "quant/quant.h"
#include "quant/quant_avx2_common.h"
#include "quant/quant_blocks.h"
#include "quant/quant_isa_local.h"

namespace wb {
namespace {

WB_AVX512_WARNINGS_OFF

// The 16-row tile's unpacked layout (DotKernels::unpack16_w; quant_avx512_rows16.cpp says how the tile
// reads it): one block (256 values) of 16 rows. kSub sub-blocks: 8 of 32 values, or Q6_K's 16 of 16.
template <int kSub>
struct Unpacked16 {
    uint8_t codes[kQKK / 4][kTile16Rows][4];  // [group of 4 values][row]
    int8_t scales[kSub][kTile16Rows];         // [sub-block][row]
    int32_t m_pairs[8][kTile16Rows];          // [bsum pair][row]: m_2p | m_2p+1 << 16
    float d[kTile16Rows], dmin[kTile16Rows];
};
static_assert(sizeof(Unpacked16<8>) % 64 == 0 && sizeof(Unpacked16<16>) % 64 == 0,
              "whole cache lines: in a 64-byte aligned buffer every block's codes are");

// The 16-row tile's layout for the 32-element types (quant_avx512_rows16.cpp's Q8_0, Q5_0, Q4_1, Q5_1,
// Q4_0 and IQ4_NL tiles):
// one block (32 values) of 16 rows.
struct Unpacked16Q32 {
    uint8_t codes[8][kTile16Rows][4];  // [group of 4 values][row]
    int32_t start[8][kTile16Rows];     // signed codes: -128 * the group's code sum
    float d[kTile16Rows], m[kTile16Rows];
};
static_assert(sizeof(Unpacked16Q32) % 64 == 0, "whole cache lines");

// Chunk ch's codes: sub-block 2ch's 32 values in the low 256 bits, sub-block 2ch+1's in the high
// ones. Q4_K: the low and high nibbles of the chunk's 32 bytes.
WB_INLINE __m512i chunk_codes(const BlockQ4_K& w, int ch, __m512i) {
    const __m512i raw = _mm512_broadcast_i64x4(load32(w.qs + 32 * ch));
    return _mm512_and_si512(_mm512_mask_srli_epi16(raw, 0xFFFF0000u, raw, 4), _mm512_set1_epi8(0x0F));
}

// Q5_K: with the fifth bit (bit 2ch of qh byte b for value b of the low sub-block, bit 2ch+1 for the
// high one) as 16 added where it is set. qh: the block's 32 qh bytes in both halves.
WB_INLINE __m512i chunk_codes(const BlockQ5_K& w, int ch, __m512i qh) {
    const __m512i raw = _mm512_broadcast_i64x4(load32(w.qs + 32 * ch));
    const __m512i codes = _mm512_and_si512(_mm512_mask_srli_epi16(raw, 0xFFFF0000u, raw, 4), _mm512_set1_epi8(0x0F));
    const __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8(char(1 << (2 * ch))), _mm256_set1_epi8(char(2 << (2 * ch))), 1);
    return _mm512_mask_add_epi8(codes, _mm512_test_epi8_mask(qh, bit), codes, _mm512_set1_epi8(16));
}

template <class BW>
WB_INLINE __m512i block_qh(const BW& w) {
    if constexpr (requires { w.qh; })
        return _mm512_broadcast_i64x4(load32(w.qh));
    else
        return _mm512_setzero_si512();
}

// 4 bytes at p as a 32-bit lane in all 16 lanes.
WB_INLINE __m512i broadcast4(const void* p) {
    int v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

// hsum's tree over lanes held in 8 vectors: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
WB_INLINE __m512 lane_tree(const __m512 (&l)[8]) {
    const __m512 a = _mm512_add_ps(_mm512_add_ps(l[0], l[4]), _mm512_add_ps(l[2], l[6]));
    const __m512 b = _mm512_add_ps(_mm512_add_ps(l[1], l[5]), _mm512_add_ps(l[3], l[7]));
    return _mm512_add_ps(a, b);
}

WB_AVX512_WARNINGS_ON

}  // namespace
}  // namespace wb
