#pragma once
// The integer arithmetic of the CUDA decode GEMV: activations quantized to 8 bits per 32-element part,
// weight parts unpacked to signed 8-bit integers with their scales, and the dot product of the two as
// 4-byte integer dot products (dp4a on the GPU).
//
// Why: a float GEMV reads every activation as 4 bytes once per weight row, and that L1/L2 traffic, not
// the weights, bounds it; 8-bit activations quarter it, and dp4a does four multiply-adds per
// instruction. The CPU backend quantizes activations too (llama.cpp's Q8_0/Q8_1 per 32 elements, the
// same rounding as here, and Q8_K per 256 for K-quants), so the two backends round similarly, not
// identically. Every function here is plain WB_HD code: the unit test test_q8_parts runs them on the
// CPU against dequantize_row and the CPU's Q8_1, and the GPU tests' reference
// (tests/gpu/gpu_reference_backend.h) runs them to emulate the GPU's GEMV.
//
// A weight part (kernels/dequant_parts.h: one legacy block, or one eighth of a K-quant super-block)
// becomes 32 signed bytes q with w[i] = d[i/16] * q[i] + m[i/16]: one scale and offset per 16-element
// half, equal halves for the types with one per part. Offsets that are really part of the value
// (Q4_0's -8, Q5_0's -16, Q3_K's -4, Q6_K's -32) are subtracted from the bytes, so only the true
// minimums of Q4_1/Q5_1/Q2_K/Q4_K/Q5_K need the activations' sums.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "dequant_parts.h"
#include "gguf/ggml_type.h"
#include "quant/quant_blocks.h"
#include "util/fp16.h"
#include "util/hd.h"

namespace wb::cuda {

// ---- activations ----

// Scale of one quantized activation part: x[i] ~ d * q[i]; s = d * sum(q), for the weight minimums.
struct alignas(8) Q8Scale {
    float d;
    float s;
};

// As the CPU's quantize_block_q8 (llama.cpp's): d = amax / 127, q = round-to-nearest-even(x * 127 / amax).
WB_HD float q8_inverse_scale(float amax) { return amax != 0.0f ? 127.0f / amax : 0.0f; }

WB_HD int q8_round(float x, float inverse_scale) {
#if defined(__CUDA_ARCH__)
    return __float2int_rn(x * inverse_scale);
#else
    return int(std::nearbyint(x * inverse_scale));
#endif
}

// One part x[0..32) -> q[0..32) and its scale. The GPU's quantize kernel computes the same with one
// lane per element (max and integer sum are exact in any order). A NaN or infinity in the part makes
// its scale NaN, so the products it enters are NaN as they would be in float.
WB_HD Q8Scale quantize_part_q8(const float* x, int8_t* q) {
    float amax = 0.0f;
    bool finite = true;
    for (int i = 0; i < kPart; ++i) {
        finite = finite && x[i] - x[i] == 0.0f;  // false for NaN and +-inf
        const float a = x[i] < 0.0f ? -x[i] : x[i];
        if (a > amax) amax = a;
    }
    if (!finite) {
        for (int i = 0; i < kPart; ++i) q[i] = 0;
        return {NAN, NAN};
    }
    const float id = q8_inverse_scale(amax);
    int sum = 0;
    for (int i = 0; i < kPart; ++i) {
        q[i] = int8_t(q8_round(x[i], id));
        sum += q[i];
    }
    const float d = amax / 127.0f;
    return {d, d * float(sum)};
}

// ---- packed bytes ----

// 4 bytes from a 2-byte aligned address (every quant field sits at an even offset of its block) as
// one little-endian word: two 16-bit loads on the GPU, where a 4-byte load would need 4-byte alignment.
WB_HD uint32_t load_u32_a2(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
    const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
    return uint32_t(h[0]) | uint32_t(h[1]) << 16;
#else
    uint32_t v;
    std::memcpy(&v, p, sizeof v);  // the targets are little-endian, as GGUF is
    return v;
#endif
}

// Byte-wise v - k for bytes of v below 128 and of k at most 128, results as signed bytes: setting each
// byte's top bit first means no byte borrows from its neighbour.
WB_HD uint32_t sub_bytes(uint32_t v, uint32_t k) { return ((v | 0x80808080u) - k) ^ 0x80808080u; }

// Bits 0..3 of b -> bit 4 of bytes 0..3 (the fifth bits of Q5_0/Q5_1 values).
WB_HD uint32_t bits_to_byte_bit4(uint32_t b) {
    return (b & 1u) << 4 | (b & 2u) << 11 | (b & 4u) << 18 | (b & 8u) << 25;
}

// c + the dot product of the four signed bytes of a and b.
WB_HD int dot4_i8(uint32_t a, uint32_t b, int c) {
#if defined(__CUDA_ARCH__)
    return __dp4a(int(a), int(b), c);
#else
    for (int k = 0; k < 4; ++k) c += int(int8_t(uint8_t(a >> (8 * k)))) * int(int8_t(uint8_t(b >> (8 * k))));
    return c;
#endif
}

// ---- weights ----

// A weight part as signed bytes: element i is byte i % 4 of q[i / 4]; w[i] = d[i/16] * q[i] + m[i/16].
struct IntPart {
    uint32_t q[8];
    float d[2];
    float m[2];
};

// How a type's offsets enter the dot product.
enum class MinKind { NONE, PER_PART, PER_HALF };

template <GgmlType T>
struct IntPartTraits {
    static constexpr bool kHalfScales =
        T == GgmlType::Q2_K || T == GgmlType::Q3_K || T == GgmlType::Q6_K || is_iq_grid_type(T);
    static constexpr MinKind kMin = T == GgmlType::Q2_K ? MinKind::PER_HALF
                                    : (T == GgmlType::Q4_1 || T == GgmlType::Q5_1 || T == GgmlType::Q4_K ||
                                       T == GgmlType::Q5_K)
                                        ? MinKind::PER_PART
                                        : MinKind::NONE;
};

// Types with an integer part form (all quantized weight types; the float types take the float GEMV).
constexpr bool has_int_part(GgmlType t) {
    return t == GgmlType::Q4_0 || t == GgmlType::Q4_1 || t == GgmlType::Q5_0 || t == GgmlType::Q5_1 ||
           t == GgmlType::Q8_0 || t == GgmlType::Q2_K || t == GgmlType::Q3_K || t == GgmlType::Q4_K ||
           t == GgmlType::Q5_K || t == GgmlType::Q6_K || t == GgmlType::IQ4_NL || t == GgmlType::IQ4_XS ||
           t == GgmlType::TQ1_0 || t == GgmlType::TQ2_0 || is_iq_grid_type(t);
}

WB_HD void set_scales(IntPart& w, float d0, float d1, float m0, float m1) {
    w.d[0] = d0;
    w.d[1] = d1;
    w.m[0] = m0;
    w.m[1] = m1;
}

// Legacy blocks: 16 bytes of nibbles, low nibbles elements 0..15, high nibbles 16..31.
WB_HD void unpack_nibbles(const uint8_t* qs, uint32_t high_bits, bool has_high, uint32_t offset, IntPart& w) {
    for (int i = 0; i < 4; ++i) {
        const uint32_t v = load_u32_a2(qs + 4 * i);
        uint32_t lo = v & 0x0F0F0F0Fu, hi = (v >> 4) & 0x0F0F0F0Fu;
        if (has_high) {
            lo |= bits_to_byte_bit4((high_bits >> (4 * i)) & 0xFu);
            hi |= bits_to_byte_bit4((high_bits >> (16 + 4 * i)) & 0xFu);
        }
        w.q[i] = sub_bytes(lo, offset);
        w.q[4 + i] = sub_bytes(hi, offset);
    }
}

WB_HD void unpack_part(const BlockQ4_0& b, IntPart& w) {
    unpack_nibbles(b.qs, 0, false, 0x08080808u, w);
    const float d = fp16_to_f32(b.d);
    set_scales(w, d, d, 0.0f, 0.0f);
}

WB_HD void unpack_part(const BlockQ4_1& b, IntPart& w) {
    unpack_nibbles(b.qs, 0, false, 0, w);
    const float d = fp16_to_f32(b.d), m = fp16_to_f32(b.m);
    set_scales(w, d, d, m, m);
}

WB_HD void unpack_part(const BlockQ5_0& b, IntPart& w) {
    unpack_nibbles(b.qs, q5_high_bits(b.qh), true, 0x10101010u, w);
    const float d = fp16_to_f32(b.d);
    set_scales(w, d, d, 0.0f, 0.0f);
}

WB_HD void unpack_part(const BlockQ5_1& b, IntPart& w) {
    unpack_nibbles(b.qs, q5_high_bits(b.qh), true, 0, w);
    const float d = fp16_to_f32(b.d), m = fp16_to_f32(b.m);
    set_scales(w, d, d, m, m);
}

WB_HD void unpack_part(const BlockQ8_0& b, IntPart& w) {
    for (int i = 0; i < 8; ++i) w.q[i] = load_u32_a2(reinterpret_cast<const uint8_t*>(b.qs) + 4 * i);
    const float d = fp16_to_f32(b.d);
    set_scales(w, d, d, 0.0f, 0.0f);
}

// K-quant parts: p (0..7) as in dequant_parts.h, whose formulas these restate in integer form.
WB_HD void unpack_part(const BlockQ2_K& b, int p, IntPart& w) {
    const int h = p / 4, j = p % 4;
    const float d = fp16_to_f32(b.d), dmin = fp16_to_f32(b.dmin);
    for (int i = 0; i < 8; ++i) w.q[i] = (load_u32_a2(b.qs + 32 * h + 4 * i) >> (2 * j)) & 0x03030303u;
    const int sc0 = b.scales[8 * h + 2 * j], sc1 = b.scales[8 * h + 2 * j + 1];
    set_scales(w, d * float(sc0 & 0xF), d * float(sc1 & 0xF), -(dmin * float(sc0 >> 4)), -(dmin * float(sc1 >> 4)));
}

WB_HD void unpack_part(const BlockQ3_K& b, int p, IntPart& w) {
    const int h = p / 4, j = p % 4;
    const float d = fp16_to_f32(b.d);
    for (int i = 0; i < 8; ++i) {
        const uint32_t low = (load_u32_a2(b.qs + 32 * h + 4 * i) >> (2 * j)) & 0x03030303u;
        const uint32_t high = ((load_u32_a2(b.hmask + 4 * i) >> p) & 0x01010101u) << 2;
        w.q[i] = sub_bytes(low | high, 0x04040404u);  // a clear hmask bit means -4
    }
    set_scales(w, d * float(q3k_scale(8 * h + 2 * j, b.scales)), d * float(q3k_scale(8 * h + 2 * j + 1, b.scales)),
               0.0f, 0.0f);
}

WB_HD void unpack_part(const BlockQ4_K& b, int p, IntPart& w) {
    const uint8_t* q = b.qs + 32 * (p / 2);
    const int shift = 4 * (p % 2);
    for (int i = 0; i < 8; ++i) w.q[i] = (load_u32_a2(q + 4 * i) >> shift) & 0x0F0F0F0Fu;
    int sc, mn;
    k4_scale_min(p, b.scales, sc, mn);
    const float d = fp16_to_f32(b.d) * float(sc), m = -(fp16_to_f32(b.dmin) * float(mn));
    set_scales(w, d, d, m, m);
}

WB_HD void unpack_part(const BlockQ5_K& b, int p, IntPart& w) {
    const uint8_t* q = b.qs + 32 * (p / 2);
    const int shift = 4 * (p % 2);
    for (int i = 0; i < 8; ++i) {
        const uint32_t low = (load_u32_a2(q + 4 * i) >> shift) & 0x0F0F0F0Fu;
        w.q[i] = low | ((load_u32_a2(b.qh + 4 * i) >> p) & 0x01010101u) << 4;
    }
    int sc, mn;
    k4_scale_min(p, b.scales, sc, mn);
    const float d = fp16_to_f32(b.d) * float(sc), m = -(fp16_to_f32(b.dmin) * float(mn));
    set_scales(w, d, d, m, m);
}

WB_HD void unpack_part(const BlockQ6_K& b, int p, IntPart& w) {
    const int h = p / 4, k = p % 4;
    const uint8_t* ql = b.ql + 64 * h + 32 * (k & 1);
    const uint8_t* qh = b.qh + 32 * h;
    const int nib_shift = k >= 2 ? 4 : 0;
    for (int i = 0; i < 8; ++i) {
        const uint32_t low = (load_u32_a2(ql + 4 * i) >> nib_shift) & 0x0F0F0F0Fu;
        const uint32_t high = ((load_u32_a2(qh + 4 * i) >> (2 * k)) & 0x03030303u) << 4;
        w.q[i] = sub_bytes(low | high, 0x20202020u);
    }
    const float d = fp16_to_f32(b.d);
    const int8_t* sc = b.scales + 8 * h + 2 * k;
    set_scales(w, d * float(sc[0]), d * float(sc[1]), 0.0f, 0.0f);
}

// IQ4_NL / IQ4_XS: the codes' grid values (-127 .. 113) are the signed bytes themselves.
WB_HD void unpack_iq4_codes(const uint8_t* qs, IntPart& w) {
    for (int i = 0; i < 4; ++i) {
        uint32_t lo = 0, hi = 0;
        for (int k = 0; k < 4; ++k) {
            lo |= uint32_t(uint8_t(iq4nl_value(qs[4 * i + k] & 0xF))) << (8 * k);
            hi |= uint32_t(uint8_t(iq4nl_value(qs[4 * i + k] >> 4))) << (8 * k);
        }
        w.q[i] = lo;
        w.q[4 + i] = hi;
    }
}

WB_HD void unpack_part(const BlockIQ4_NL& b, IntPart& w) {
    unpack_iq4_codes(b.qs, w);
    const float d = fp16_to_f32(b.d);
    set_scales(w, d, d, 0.0f, 0.0f);
}

WB_HD void unpack_part(const BlockIQ4_XS& b, int p, IntPart& w) {
    unpack_iq4_codes(b.qs + 16 * p, w);
    const float d = fp16_to_f32(b.d) * float(iq4xs_scale(b, p));
    set_scales(w, d, d, 0.0f, 0.0f);
}

// TQ1_0 / TQ2_0: code - 1 (-1, 0, 1; TQ2_0's unused code 3 gives 2, as its dequantization does).
template <typename B, int (*Code)(const B&, int)>
WB_HD void unpack_ternary_part(const B& b, int p, IntPart& w) {
    for (int i = 0; i < 8; ++i) {
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k) v |= uint32_t(uint8_t(int8_t(Code(b, 32 * p + 4 * i + k) - 1))) << (8 * k);
        w.q[i] = v;
    }
    const float d = fp16_to_f32(b.d);
    set_scales(w, d, d, 0.0f, 0.0f);
}

// Grid IQ types: the group's signed grid values, with the dequantization's factor of each half as its
// scale. IQ1's value +- 1/8 becomes the integer 8 * value +- 1 with an eighth of the factor, which
// gives the same float product (the factor's eighth is exact, as is the integer).
template <class B>
WB_HD void unpack_iq_grid_part(const B& b, int p, IntPart& w) {
    int8_t v[32], scale[2], delta[4] = {};
    iq_unpack_group(b, p, v, scale, delta);
    for (int i = 0; i < 8; ++i) {
        uint32_t word = 0;
        for (int k = 0; k < 4; ++k) {
            const int e = 4 * i + k;
            const int q = kIqIsIq1<B> ? 8 * v[e] + delta[e / 8] : v[e];
            word |= uint32_t(uint8_t(int8_t(q))) << (8 * k);
        }
        w.q[i] = word;
    }
    const float d = iq_block_d(b), c = kIqIsIq1<B> ? 0.125f : 1.0f;
    set_scales(w, iq_dequant_factor<B>(d, scale[0]) * c, iq_dequant_factor<B>(d, scale[1]) * c, 0.0f, 0.0f);
}

// Part `part` of a weight row of quantized type T -> w.
template <GgmlType T>
WB_HD void unpack_row_part(const uint8_t* row, int64_t part, IntPart& w) {
    if constexpr (T == GgmlType::Q4_0) {
        unpack_part(reinterpret_cast<const BlockQ4_0*>(row)[part], w);
    } else if constexpr (T == GgmlType::Q4_1) {
        unpack_part(reinterpret_cast<const BlockQ4_1*>(row)[part], w);
    } else if constexpr (T == GgmlType::Q5_0) {
        unpack_part(reinterpret_cast<const BlockQ5_0*>(row)[part], w);
    } else if constexpr (T == GgmlType::Q5_1) {
        unpack_part(reinterpret_cast<const BlockQ5_1*>(row)[part], w);
    } else if constexpr (T == GgmlType::Q8_0) {
        unpack_part(reinterpret_cast<const BlockQ8_0*>(row)[part], w);
    } else if constexpr (T == GgmlType::Q2_K) {
        unpack_part(reinterpret_cast<const BlockQ2_K*>(row)[part / 8], int(part % 8), w);
    } else if constexpr (T == GgmlType::Q3_K) {
        unpack_part(reinterpret_cast<const BlockQ3_K*>(row)[part / 8], int(part % 8), w);
    } else if constexpr (T == GgmlType::Q4_K) {
        unpack_part(reinterpret_cast<const BlockQ4_K*>(row)[part / 8], int(part % 8), w);
    } else if constexpr (T == GgmlType::Q5_K) {
        unpack_part(reinterpret_cast<const BlockQ5_K*>(row)[part / 8], int(part % 8), w);
    } else if constexpr (T == GgmlType::IQ4_NL) {
        unpack_part(reinterpret_cast<const BlockIQ4_NL*>(row)[part], w);
    } else if constexpr (T == GgmlType::IQ4_XS) {
        unpack_part(reinterpret_cast<const BlockIQ4_XS*>(row)[part / 8], int(part % 8), w);
    } else if constexpr (T == GgmlType::TQ1_0) {
        unpack_ternary_part<BlockTQ1_0, tq1_code>(reinterpret_cast<const BlockTQ1_0*>(row)[part / 8], int(part % 8), w);
    } else if constexpr (T == GgmlType::TQ2_0) {
        unpack_ternary_part<BlockTQ2_0, tq2_code>(reinterpret_cast<const BlockTQ2_0*>(row)[part / 8], int(part % 8), w);
    } else if constexpr (is_iq_grid_type(T)) {
        using B = typename IqGridBlock<T>::type;
        unpack_iq_grid_part(reinterpret_cast<const B*>(row)[part / 8], int(part % 8), w);
    } else {
        static_assert(T == GgmlType::Q6_K, "no integer part form for this type");
        unpack_part(reinterpret_cast<const BlockQ6_K*>(row)[part / 8], int(part % 8), w);
    }
}

// ---- the dot product ----

// sum_i w[i] * x[i] for a weight part and an activation part (xq: its 32 bytes as 8 words):
// sum_h d_w[h] * d_x * sum(q_w q_x over h) + the minimums' terms.
template <GgmlType T>
WB_HD float dot_part_q8(const IntPart& w, const uint32_t* xq, Q8Scale xs) {
    using Tr = IntPartTraits<T>;
    int s0 = 0, s1 = 0;
    for (int i = 0; i < 4; ++i) s0 = dot4_i8(w.q[i], xq[i], s0);
    for (int i = 4; i < 8; ++i) s1 = dot4_i8(w.q[i], xq[i], s1);
    float r;
    if constexpr (Tr::kHalfScales) {
        r = xs.d * (w.d[0] * float(s0) + w.d[1] * float(s1));
    } else {
        r = w.d[0] * xs.d * float(s0 + s1);
    }
    if constexpr (Tr::kMin == MinKind::PER_PART) {
        r += w.m[0] * xs.s;
    } else if constexpr (Tr::kMin == MinKind::PER_HALF) {
        int x0 = 0, x1 = 0;
        for (int i = 0; i < 4; ++i) x0 = dot4_i8(0x01010101u, xq[i], x0);
        for (int i = 4; i < 8; ++i) x1 = dot4_i8(0x01010101u, xq[i], x1);
        r += xs.d * (w.m[0] * float(x0) + w.m[1] * float(x1));
    }
    return r;
}

}  // namespace wb::cuda
