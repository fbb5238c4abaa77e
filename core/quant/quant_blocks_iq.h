#pragma once
// The grid-based IQ weight types (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S): block
// layouts (FACTS-2 section 3), their unpacking into signed grid values and integer scales, and
// dequantization. WB_HD like quant_blocks.h: the grids are read through iq_grids.h's accessors, so
// the CUDA kernels unpack with this very code.
//
// Every type stores runs of 8 values (IQ3: two halves of 4) as an index into its grid, which gives
// the magnitudes; signs (IQ2/IQ3) or a shift of +-1/8 (IQ1) and an odd scale 2s + 1 per run of 16 or
// 32 elements come from the other fields. The dot kernels of both families and dequantization share
// the unpacking below, so what the tests check for one holds for the others.
#include <cstdint>
#include <type_traits>

#include "quant/iq_grids.h"
#include "quant/quant_blocks.h"
#include "util/fp16.h"
#include "util/hd.h"

namespace wb {

struct BlockIQ2_XXS {
    uint16_t d;
    uint16_t qs[kQKK / 8];  // group g: bytes 8g..8g+3 grid indices, then a u32 of 4 x 7 sign bits and the scale (bits 28..31)
};
struct BlockIQ2_XS {
    uint16_t d;
    uint16_t qs[kQKK / 8];      // per run of 8: grid index in bits 0..8, 7-bit sign code in bits 9..15
    uint8_t scales[kQKK / 32];  // group g: low nibble for elements 0..15, high nibble for 16..31
};
struct BlockIQ2_S {
    uint16_t d;
    uint8_t qs[kQKK / 4];       // 32 low bytes of the grid indices, then 32 sign bytes
    uint8_t qh[kQKK / 32];      // group g: bits 2l, 2l+1 = index bits 8, 9 of run l
    uint8_t scales[kQKK / 32];  // as IQ2_XS
};
struct BlockIQ3_XXS {
    uint16_t d;
    uint8_t qs[3 * kQKK / 8];  // 64 grid indices (4 values each), then per group a u32 as in IQ2_XXS
};
struct BlockIQ3_S {
    uint16_t d;
    uint8_t qs[kQKK / 4];       // low bytes of the 64 grid indices
    uint8_t qh[kQKK / 32];      // group g: bit i = index bit 8 of index 8g + i
    uint8_t signs[kQKK / 8];    // bit j of byte 4g + l: sign of element 32g + 8l + j
    uint8_t scales[kQKK / 64];  // nibble g % 2 of byte g / 2: scale of group g
};
struct BlockIQ1_S {
    uint16_t d;
    uint8_t qs[kQKK / 8];    // low bytes of the grid indices
    uint16_t qh[kQKK / 32];  // group g: 3 index bits per run (bits 3l..3l+2), scale (12..14), shift sign (15)
};
struct BlockIQ1_M {
    uint8_t qs[kQKK / 8];       // low bytes of the grid indices
    uint8_t qh[kQKK / 16];      // per pair of runs: 3 index bits and the shift sign (bit 3) of each nibble
    uint8_t scales[kQKK / 32];  // 4 u16: four 3-bit scales each (one per 16 elements), the fp16 d in the top nibbles
};

static_assert(sizeof(BlockIQ2_XXS) == 66 && sizeof(BlockIQ2_XS) == 74 && sizeof(BlockIQ2_S) == 82);
static_assert(sizeof(BlockIQ3_XXS) == 98 && sizeof(BlockIQ3_S) == 110);
static_assert(sizeof(BlockIQ1_S) == 50 && sizeof(BlockIQ1_M) == 56);

// One block unpacked into integers. value * scale (* 1/8 for IQ1's shift) is exact in the kernels'
// integer lanes; the block's float factors are applied per type (iq_dequant_factor and the kernels).
struct IqValues {
    float d;            // the block's fp16 scale
    int8_t v[kQKK];     // signed grid value of each element (IQ1: -1, 0 or 1, before the shift)
    int8_t scale[16];   // the odd multiplier 2s + 1 of each run of 16 elements
    int8_t delta[32];   // IQ1 only: +1 or -1, the sign of the 1/8 shift of each run of 8 elements
};

// Bytes assembled rather than loaded: the fields sit at 2-byte offsets, which a device load of a
// u32 may not read (the host compiler folds this into one load).
WB_HD uint32_t iq_le32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// 8 values from a grid entry (one magnitude a byte) and a sign byte (bit j set: value j negative).
WB_HD void iq_put8(uint64_t entry, uint32_t signs, int8_t* v) {
    for (int j = 0; j < 8; ++j) {
        const int m = int((entry >> (8 * j)) & 0xFF);
        v[j] = int8_t((signs >> j) & 1 ? -m : m);
    }
}

WB_HD uint64_t iq3_pair(const uint32_t* grid, int lo, int hi) { return uint64_t(grid[hi]) << 32 | grid[lo]; }

// Group g of a block (elements 32g .. 32g + 31, four runs of 8) -> v[0..32), the multipliers 2s + 1 of
// its two halves in scale[0..2) and (IQ1) the shift signs of its runs in delta[0..4). The unit that
// the CPU's block unpacking loops over and a CUDA part (kernels/) takes as it is.
WB_HD void iq_unpack_group(const BlockIQ2_XXS& b, int g, int8_t* v, int8_t* scale, int8_t*) {
    const auto* q = reinterpret_cast<const uint8_t*>(b.qs);
    const uint32_t aux = iq_le32(q + 8 * g + 4);
    scale[0] = scale[1] = int8_t(2 * int(aux >> 28) + 1);
    for (int l = 0; l < 4; ++l) iq_put8(iq2xxs_grid()[q[8 * g + l]], iq_sign_byte(aux >> (7 * l)), v + 8 * l);
}

WB_HD void iq_unpack_group(const BlockIQ2_XS& b, int g, int8_t* v, int8_t* scale, int8_t*) {
    scale[0] = int8_t(2 * (b.scales[g] & 0xF) + 1);
    scale[1] = int8_t(2 * (b.scales[g] >> 4) + 1);
    for (int l = 0; l < 4; ++l) {
        const uint16_t q = b.qs[4 * g + l];
        iq_put8(iq2xs_grid()[q & 511], iq_sign_byte(q >> 9), v + 8 * l);
    }
}

WB_HD void iq_unpack_group(const BlockIQ2_S& b, int g, int8_t* v, int8_t* scale, int8_t*) {
    scale[0] = int8_t(2 * (b.scales[g] & 0xF) + 1);
    scale[1] = int8_t(2 * (b.scales[g] >> 4) + 1);
    for (int l = 0; l < 4; ++l) {
        const int idx = b.qs[4 * g + l] | ((b.qh[g] >> (2 * l)) & 3) << 8;
        iq_put8(iq2s_grid()[idx], b.qs[32 + 4 * g + l], v + 8 * l);
    }
}

WB_HD void iq_unpack_group(const BlockIQ3_XXS& b, int g, int8_t* v, int8_t* scale, int8_t*) {
    const uint32_t aux = iq_le32(b.qs + 64 + 4 * g);
    scale[0] = scale[1] = int8_t(2 * int(aux >> 28) + 1);
    for (int l = 0; l < 4; ++l) {
        const uint8_t* q = b.qs + 8 * g + 2 * l;
        iq_put8(iq3_pair(iq3xxs_grid(), q[0], q[1]), iq_sign_byte(aux >> (7 * l)), v + 8 * l);
    }
}

WB_HD void iq_unpack_group(const BlockIQ3_S& b, int g, int8_t* v, int8_t* scale, int8_t*) {
    const int s = (b.scales[g / 2] >> (4 * (g % 2))) & 0xF;
    scale[0] = scale[1] = int8_t(2 * s + 1);
    for (int l = 0; l < 4; ++l) {
        const int i0 = 8 * g + 2 * l;
        const int lo = b.qs[i0] | ((b.qh[g] >> (2 * l)) & 1) << 8;
        const int hi = b.qs[i0 + 1] | ((b.qh[g] >> (2 * l + 1)) & 1) << 8;
        iq_put8(iq3_pair(iq3s_grid(), lo, hi), b.signs[4 * g + l], v + 8 * l);
    }
}

// IQ1 grid entries hold int8 values -1, 0, 1 directly.
WB_HD void iq1_put8(int index, int8_t* v) {
    const uint64_t e = iq1s_grid()[index];
    for (int j = 0; j < 8; ++j) v[j] = int8_t(uint8_t(e >> (8 * j)));
}

WB_HD void iq_unpack_group(const BlockIQ1_S& b, int g, int8_t* v, int8_t* scale, int8_t* delta) {
    const uint16_t h = b.qh[g];
    scale[0] = scale[1] = int8_t(2 * ((h >> 12) & 7) + 1);
    for (int l = 0; l < 4; ++l) {
        delta[l] = int8_t(h & 0x8000 ? -1 : 1);
        iq1_put8(b.qs[4 * g + l] | ((h >> (3 * l)) & 7) << 8, v + 8 * l);
    }
}

// IQ1_M: scale word k (LE u16 of scale bytes 2k, 2k+1).
WB_HD uint16_t iq1m_scale_word(const BlockIQ1_M& b, int k) { return uint16_t(b.scales[2 * k] | b.scales[2 * k + 1] << 8); }

// IQ1_M's fp16 d, spread over the top nibbles of its four scale words.
WB_HD uint16_t iq1m_d_bits(const BlockIQ1_M& b) {
    return uint16_t(iq1m_scale_word(b, 0) >> 12 | (iq1m_scale_word(b, 1) >> 8 & 0xF0) |
                    (iq1m_scale_word(b, 2) >> 4 & 0xF00) | (iq1m_scale_word(b, 3) & 0xF000));
}

WB_HD void iq_unpack_group(const BlockIQ1_M& b, int g, int8_t* v, int8_t* scale, int8_t* delta) {
    const int sw = iq1m_scale_word(b, g / 2) >> (6 * (g % 2));
    scale[0] = int8_t(2 * (sw & 7) + 1);
    scale[1] = int8_t(2 * ((sw >> 3) & 7) + 1);
    for (int l = 0; l < 4; ++l) {
        const int h = b.qh[2 * g + l / 2] >> (4 * (l % 2));  // the nibble of run l
        delta[l] = int8_t(h & 0x08 ? -1 : 1);
        iq1_put8(b.qs[4 * g + l] | (h & 7) << 8, v + 8 * l);
    }
}

// The block's fp16 scale (IQ1_M spreads it over its scale words).
template <class B>
WB_HD float iq_block_d(const B& b) {
    if constexpr (std::is_same_v<B, BlockIQ1_M>)
        return fp16_to_f32(iq1m_d_bits(b));
    else
        return fp16_to_f32(b.d);
}

template <class B>
WB_HD void iq_unpack(const B& b, IqValues& u) {
    u.d = iq_block_d(b);
    for (int g = 0; g < 8; ++g) iq_unpack_group(b, g, u.v + 32 * g, u.scale + 2 * g, u.delta + 4 * g);
}

// The float each type makes of a scale multiplier m = 2s + 1, in llama.cpp's dequantize_row_*
// arithmetic: d * (0.5 + s) * 1/4 (IQ2), d * (0.5 + s) * 1/2 (IQ3_XXS), d * m (IQ3_S, IQ1).
template <class B>
WB_HD float iq_dequant_factor(float d, int m) {
    if constexpr (std::is_same_v<B, BlockIQ2_XXS> || std::is_same_v<B, BlockIQ2_XS> || std::is_same_v<B, BlockIQ2_S>)
        return d * (0.5f + float(m / 2)) * 0.25f;
    else if constexpr (std::is_same_v<B, BlockIQ3_XXS>)
        return d * (0.5f + float(m / 2)) * 0.5f;
    else
        return d * float(m);
}

template <class B>
constexpr bool kIqIsIq1 = std::is_same_v<B, BlockIQ1_S> || std::is_same_v<B, BlockIQ1_M>;

// Group g of a block -> y[0..32): factor * value (IQ2/IQ3), factor * (value +- 1/8) (IQ1).
template <class B>
WB_HD void dequantize_iq_group(const B& b, int g, float* y) {
    int8_t v[32], scale[2], delta[4] = {};
    iq_unpack_group(b, g, v, scale, delta);
    const float d = iq_block_d(b);
    for (int k = 0; k < 2; ++k) {
        const float dl = iq_dequant_factor<B>(d, scale[k]);
        for (int e = 16 * k; e < 16 * k + 16; ++e) {
            if constexpr (kIqIsIq1<B>)
                y[e] = dl * (float(v[e]) + (delta[e / 8] < 0 ? -0.125f : 0.125f));
            else
                y[e] = dl * float(v[e]);
        }
    }
}

template <class B>
WB_HD void dequantize_iq_block(const B& b, float* y) {
    for (int g = 0; g < 8; ++g) dequantize_iq_group(b, g, y + 32 * g);
}

}  // namespace wb
