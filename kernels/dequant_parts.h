#pragma once
// Weight rows dequantized in parts of 32 elements: the unit of work of the CUDA matmul, embedding and
// f16-conversion kernels. A part is one block of the legacy types and one eighth of a K-quant
// super-block, so a warp's lanes take 32 consecutive parts and every type is handled by one kernel
// template. Legacy blocks (and IQ4_NL's) use dequantize_block from core/quant/quant_blocks.h as it is;
// the part functions below restate its formulas for one slice of a 256-element block (K-quants,
// IQ4_XS, TQ1_0, TQ2_0). The grid IQ types (IQ1_S .. IQ3_S) need no restating: a part is one group of
// core/quant/quant_blocks_iq.h, whose group functions the CPU's dequantization is made of. Plain
// WB_HD code: the unit test test_dequant_parts checks every part against dequantize_row on the CPU.
#include <cstdint>

#include "gguf/ggml_type.h"
#include "quant/quant_blocks.h"
#include "quant/quant_blocks_iq.h"
#include "util/fp16.h"
#include "util/hd.h"

namespace wb::cuda {

constexpr int kPart = 32;  // elements per part; every supported row length is a multiple of it

// Part p (0..7) of a Q2_K super-block: its two 16-element sub-blocks 2p and 2p+1.
WB_HD void dequantize_part(const BlockQ2_K& b, int p, float* y) {
    const int h = p / 4, j = p % 4;
    const float d = fp16_to_f32(b.d);
    const float dmin = fp16_to_f32(b.dmin);
    for (int half16 = 0; half16 < 2; ++half16) {
        const int sc = b.scales[8 * h + 2 * j + half16];
        const float dl = d * float(sc & 0xF);
        const float ml = dmin * float(sc >> 4);
        const uint8_t* q = b.qs + 32 * h + 16 * half16;
        for (int l = 0; l < 16; ++l) y[16 * half16 + l] = dl * float((q[l] >> (2 * j)) & 3) - ml;
    }
}

WB_HD void dequantize_part(const BlockQ3_K& b, int p, float* y) {
    const int h = p / 4, j = p % 4;
    const float d = fp16_to_f32(b.d);
    for (int half16 = 0; half16 < 2; ++half16) {
        const float dl = d * float(q3k_scale(8 * h + 2 * j + half16, b.scales));
        const uint8_t* q = b.qs + 32 * h + 16 * half16;
        const uint8_t* hm = b.hmask + 16 * half16;
        for (int l = 0; l < 16; ++l) {
            // hmask bit p of the element set means "no -4 offset" (the value's third bit).
            const int v = ((q[l] >> (2 * j)) & 3) - (((hm[l] >> p) & 1) ? 0 : 4);
            y[16 * half16 + l] = dl * float(v);
        }
    }
}

// Q4_K: part p is sub-block p; even parts are the low nibbles of qs[32*(p/2) ..], odd the high.
WB_HD void dequantize_part(const BlockQ4_K& b, int p, float* y) {
    const float d = fp16_to_f32(b.d);
    const float dmin = fp16_to_f32(b.dmin);
    int sc, mn;
    k4_scale_min(p, b.scales, sc, mn);
    const uint8_t* q = b.qs + 32 * (p / 2);
    const int shift = 4 * (p % 2);
    for (int l = 0; l < 32; ++l) y[l] = d * float(sc) * float((q[l] >> shift) & 0xF) - dmin * float(mn);
}

// Q5_K: as Q4_K, with the fifth bit of element l of part p in bit p of qh[l].
WB_HD void dequantize_part(const BlockQ5_K& b, int p, float* y) {
    const float d = fp16_to_f32(b.d);
    const float dmin = fp16_to_f32(b.dmin);
    int sc, mn;
    k4_scale_min(p, b.scales, sc, mn);
    const uint8_t* q = b.qs + 32 * (p / 2);
    const int shift = 4 * (p % 2);
    for (int l = 0; l < 32; ++l) {
        const int v = ((q[l] >> shift) & 0xF) | (((b.qh[l] >> p) & 1) << 4);
        y[l] = d * float(sc) * float(v) - dmin * float(mn);
    }
}

// Q6_K: part p = 4h + k covers elements 128h + 32k ..; k selects the ql half (k odd: +32), the nibble
// (k >= 2: high) and the 2-bit field of qh (bits 2k, 2k+1).
WB_HD void dequantize_part(const BlockQ6_K& b, int p, float* y) {
    const int h = p / 4, k = p % 4;
    const float d = fp16_to_f32(b.d);
    const uint8_t* ql = b.ql + 64 * h + 32 * (k & 1);
    const uint8_t* qh = b.qh + 32 * h;
    const int8_t* sc = b.scales + 8 * h + 2 * k;
    const int nib_shift = k >= 2 ? 4 : 0;
    for (int l = 0; l < 32; ++l) {
        const int q = (((ql[l] >> nib_shift) & 0xF) | (((qh[l] >> (2 * k)) & 3) << 4)) - 32;
        y[l] = d * float(sc[l / 16]) * float(q);
    }
}

// IQ4_XS: part p is group p, its 16 bytes of codes (low nibbles elements 0..15, high 16..31).
WB_HD void dequantize_part(const BlockIQ4_XS& b, int p, float* y) {
    const float dl = fp16_to_f32(b.d) * float(iq4xs_scale(b, p));
    for (int j = 0; j < 16; ++j) {
        y[j] = dl * float(iq4nl_value(b.qs[16 * p + j] & 0xF));
        y[16 + j] = dl * float(iq4nl_value(b.qs[16 * p + j] >> 4));
    }
}

// TQ1_0 / TQ2_0: part p is elements 32p .. 32p + 31 of the block, value (code - 1) * d.
WB_HD void dequantize_part(const BlockTQ1_0& b, int p, float* y) {
    const float d = fp16_to_f32(b.d);
    for (int l = 0; l < 32; ++l) y[l] = float(tq1_code(b, 32 * p + l) - 1) * d;
}

WB_HD void dequantize_part(const BlockTQ2_0& b, int p, float* y) {
    const float d = fp16_to_f32(b.d);
    for (int l = 0; l < 32; ++l) y[l] = float(tq2_code(b, 32 * p + l) - 1) * d;
}

// The block of each grid IQ type.
template <GgmlType T>
struct IqGridBlock;
template <> struct IqGridBlock<GgmlType::IQ2_XXS> { using type = BlockIQ2_XXS; };
template <> struct IqGridBlock<GgmlType::IQ2_XS> { using type = BlockIQ2_XS; };
template <> struct IqGridBlock<GgmlType::IQ2_S> { using type = BlockIQ2_S; };
template <> struct IqGridBlock<GgmlType::IQ3_XXS> { using type = BlockIQ3_XXS; };
template <> struct IqGridBlock<GgmlType::IQ3_S> { using type = BlockIQ3_S; };
template <> struct IqGridBlock<GgmlType::IQ1_S> { using type = BlockIQ1_S; };
template <> struct IqGridBlock<GgmlType::IQ1_M> { using type = BlockIQ1_M; };

WB_HD constexpr bool is_iq_grid_type(GgmlType t) {
    return t == GgmlType::IQ2_XXS || t == GgmlType::IQ2_XS || t == GgmlType::IQ2_S || t == GgmlType::IQ3_XXS ||
           t == GgmlType::IQ3_S || t == GgmlType::IQ1_S || t == GgmlType::IQ1_M;
}

// Part `part` of a weight row of type T (row points at the row's first byte) -> y[0..32).
template <GgmlType T>
WB_HD void dequantize_row_part(const uint8_t* row, int64_t part, float* y) {
    if constexpr (T == GgmlType::F32) {
        const float* x = reinterpret_cast<const float*>(row) + part * kPart;
        for (int i = 0; i < kPart; ++i) y[i] = x[i];
    } else if constexpr (T == GgmlType::F16) {
        const uint16_t* x = reinterpret_cast<const uint16_t*>(row) + part * kPart;
        for (int i = 0; i < kPart; ++i) y[i] = fp16_to_f32(x[i]);
    } else if constexpr (T == GgmlType::BF16) {
        const uint16_t* x = reinterpret_cast<const uint16_t*>(row) + part * kPart;
        for (int i = 0; i < kPart; ++i) y[i] = bf16_to_f32(x[i]);
    } else if constexpr (T == GgmlType::Q4_0) {
        dequantize_block(reinterpret_cast<const BlockQ4_0*>(row)[part], y);
    } else if constexpr (T == GgmlType::Q4_1) {
        dequantize_block(reinterpret_cast<const BlockQ4_1*>(row)[part], y);
    } else if constexpr (T == GgmlType::Q5_0) {
        dequantize_block(reinterpret_cast<const BlockQ5_0*>(row)[part], y);
    } else if constexpr (T == GgmlType::Q5_1) {
        dequantize_block(reinterpret_cast<const BlockQ5_1*>(row)[part], y);
    } else if constexpr (T == GgmlType::Q8_0) {
        dequantize_block(reinterpret_cast<const BlockQ8_0*>(row)[part], y);
    } else if constexpr (T == GgmlType::Q2_K) {
        dequantize_part(reinterpret_cast<const BlockQ2_K*>(row)[part / 8], int(part % 8), y);
    } else if constexpr (T == GgmlType::Q3_K) {
        dequantize_part(reinterpret_cast<const BlockQ3_K*>(row)[part / 8], int(part % 8), y);
    } else if constexpr (T == GgmlType::Q4_K) {
        dequantize_part(reinterpret_cast<const BlockQ4_K*>(row)[part / 8], int(part % 8), y);
    } else if constexpr (T == GgmlType::Q5_K) {
        dequantize_part(reinterpret_cast<const BlockQ5_K*>(row)[part / 8], int(part % 8), y);
    } else if constexpr (T == GgmlType::IQ4_NL) {
        dequantize_block(reinterpret_cast<const BlockIQ4_NL*>(row)[part], y);
    } else if constexpr (T == GgmlType::IQ4_XS) {
        dequantize_part(reinterpret_cast<const BlockIQ4_XS*>(row)[part / 8], int(part % 8), y);
    } else if constexpr (T == GgmlType::TQ1_0) {
        dequantize_part(reinterpret_cast<const BlockTQ1_0*>(row)[part / 8], int(part % 8), y);
    } else if constexpr (T == GgmlType::TQ2_0) {
        dequantize_part(reinterpret_cast<const BlockTQ2_0*>(row)[part / 8], int(part % 8), y);
    } else if constexpr (is_iq_grid_type(T)) {
        using B = typename IqGridBlock<T>::type;
        dequantize_iq_group(reinterpret_cast<const B*>(row)[part / 8], int(part % 8), y);
    } else {
        static_assert(T == GgmlType::Q6_K, "no part dequantization for this type");
        dequantize_part(reinterpret_cast<const BlockQ6_K*>(row)[part / 8], int(part % 8), y);
    }
}

}  // namespace wb::cuda
