#pragma once
// AVX-512 pieces shared by the files built with AVX-512 flags that decode Q4_K / Q5_K chunks
// (quant_avx512_k.cpp, quant_avx512_rows16.cpp), with internal linkage for the reason quant_isa_local.h gives.
#include <immintrin.h>

#include "quant/quant_avx2_common.h"
#include "quant/quant_blocks.h"

namespace wb {
namespace {

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// Chunk ch's codes: sub-block 2ch's 32 values in the low 256 bits, sub-block 2ch+1's in the high
// ones. Q4_K: the low and high nibbles of the chunk's 32 bytes.
[[gnu::always_inline]] inline __m512i chunk_codes(const BlockQ4_K& w, int ch, __m512i) {
    const __m512i raw = _mm512_broadcast_i64x4(load32(w.qs + 32 * ch));
    return _mm512_and_si512(_mm512_mask_srli_epi16(raw, 0xFFFF0000u, raw, 4), _mm512_set1_epi8(0x0F));
}

// Q5_K: with the fifth bit (bit 2ch of qh byte b for value b of the low sub-block, bit 2ch+1 for the
// high one) as 16 added where it is set. qh: the block's 32 qh bytes in both halves.
[[gnu::always_inline]] inline __m512i chunk_codes(const BlockQ5_K& w, int ch, __m512i qh) {
    const __m512i raw = _mm512_broadcast_i64x4(load32(w.qs + 32 * ch));
    const __m512i codes = _mm512_and_si512(_mm512_mask_srli_epi16(raw, 0xFFFF0000u, raw, 4), _mm512_set1_epi8(0x0F));
    const __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8(char(1 << (2 * ch))), _mm256_set1_epi8(char(2 << (2 * ch))), 1);
    return _mm512_mask_add_epi8(codes, _mm512_test_epi8_mask(qh, bit), codes, _mm512_set1_epi8(16));
}

template <class BW>
[[gnu::always_inline]] inline __m512i block_qh(const BW& w) {
    if constexpr (requires { w.qh; })
        return _mm512_broadcast_i64x4(load32(w.qh));
    else
        return _mm512_setzero_si512();
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace
}  // namespace wb
