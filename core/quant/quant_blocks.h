#pragma once
// ggml block layouts (FACTS.md section 2) and the math that turns one block back into floats. The
// dequantize functions are WB_HD so the CUDA backend runs exactly the formulas the CPU tests check.
//
// Blocks are read straight out of mmapped tensor data: every struct has only 1- and 2-byte fields
// (Q8_K, a runtime-only type, has a float), so any 2-byte aligned row start works.
#include <cstdint>

#include "util/fp16.h"
#include "util/hd.h"

namespace wb {

constexpr int kQK = 32;   // elements per legacy block (Q4_0 .. Q8_1)
constexpr int kQKK = 256; // elements per K-quant super-block

struct BlockQ4_0 {
    uint16_t d;           // fp16 scale
    uint8_t qs[kQK / 2];  // low nibbles: elements 0..15, high nibbles: 16..31
};
struct BlockQ4_1 {
    uint16_t d;  // fp16 scale
    uint16_t m;  // fp16 offset (block minimum)
    uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];  // bit i = fifth bit of element i (little-endian u32)
    uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {
    uint16_t d;
    uint16_t m;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[kQK];
};
// Activations for Q4_1/Q5_1 weights: s carries d*sum(qs) so the weight offset m costs one multiply
// per block instead of a second pass over the activations.
struct BlockQ8_1 {
    uint16_t d;
    uint16_t s;  // fp16 of d * sum(qs)
    int8_t qs[kQK];
};
struct BlockQ2_K {
    uint8_t scales[kQKK / 16];  // per 16 elements: low nibble scale, high nibble min
    uint8_t qs[kQKK / 4];       // 2-bit values, four per byte
    uint16_t d;
    uint16_t dmin;
};
struct BlockQ3_K {
    uint8_t hmask[kQKK / 8];  // third bit of each value (set = no -4 offset)
    uint8_t qs[kQKK / 4];     // low 2 bits
    uint8_t scales[12];       // 16 signed 6-bit scales
    uint16_t d;
};
struct BlockQ4_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];  // 8 scale + 8 min values, 6 bits each
    uint8_t qs[kQKK / 2];
};
struct BlockQ5_K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];
    uint8_t qh[kQKK / 8];
    uint8_t qs[kQKK / 2];
};
struct BlockQ6_K {
    uint8_t ql[kQKK / 2];  // low 4 bits
    uint8_t qh[kQKK / 4];  // high 2 bits
    int8_t scales[kQKK / 16];
    uint16_t d;
};
// Activations for K-quant weights: bsums lets the kernels apply per-sub-block minimums and the
// unsigned-value offsets of Q3_K/Q6_K without touching the values again.
struct BlockQ8_K {
    float d;
    int8_t qs[kQKK];
    int16_t bsums[kQKK / 16];  // sum of each run of 16 qs
};

// IQ4_NL / IQ4_XS: 4-bit codes index kvalues_iq4nl (iq4nl_value), a non-uniform grid fitted to
// weight distributions. IQ4_NL has llama.cpp's 32-element layout and dots with Q8_0; IQ4_XS puts 8
// groups of 32 under one fp16 d with 6-bit signed group scales and dots with Q8_K.
struct BlockIQ4_NL {
    uint16_t d;
    uint8_t qs[kQK / 2];  // low nibbles: elements 0..15, high nibbles: 16..31
};
struct BlockIQ4_XS {
    uint16_t d;
    uint16_t scales_h;        // bits 2g, 2g+1: high 2 bits of group g's scale
    uint8_t scales_l[4];      // nibble g % 2 of byte g / 2: low 4 bits of group g's scale
    uint8_t qs[kQKK / 2];     // group g: bytes 16g..16g+15, low nibbles first 16, high nibbles last 16
};
// Ternary types (values -d, 0, d). d comes last in both layouts.
struct BlockTQ1_0 {
    uint8_t qs[48];  // five base-3 digits per byte, as a fraction of 243 (see tq1_trit)
    uint8_t qh[4];   // four digits per byte (elements 240..255)
    uint16_t d;
};
struct BlockTQ2_0 {
    uint8_t qs[kQKK / 4];  // 2-bit codes 0..2 (value code - 1), four per byte
    uint16_t d;
};

static_assert(sizeof(BlockIQ4_NL) == 18 && sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockTQ1_0) == 54 && sizeof(BlockTQ2_0) == 66);
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

// ---- scale unpacking shared by dequantization and the dot kernels ----

// Q4_K/Q5_K: scale and min of sub-block j (0..7) from the 12-byte 6-bit packing.
WB_HD void k4_scale_min(int j, const uint8_t* scales, int& sc, int& mn) {
    if (j < 4) {
        sc = scales[j] & 63;
        mn = scales[j + 4] & 63;
    } else {
        sc = (scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4);
        mn = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
    }
}

// Q3_K: signed scale of sub-block k (0..15).
WB_HD int q3k_scale(int k, const uint8_t* scales) {
    const int lo4 = k < 8 ? scales[k] & 0xF : scales[k - 8] >> 4;
    const int hi2 = (scales[8 + k % 4] >> (2 * (k / 4))) & 3;
    return (lo4 | (hi2 << 4)) - 32;
}

// Q5_0/Q5_1: the 32 fifth bits as one little-endian word (bit i belongs to element i).
WB_HD uint32_t q5_high_bits(const uint8_t* qh) {
    return uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
}

// Q5_0/Q5_1: value of element i (0..31), in 0..31.
WB_HD int q5_value(const uint8_t* qs, uint32_t high_bits, int i) {
    const int nib = i < 16 ? qs[i] & 0xF : qs[i - 16] >> 4;
    return nib | int((high_bits >> i) & 1u) << 4;
}

// kvalues_iq4nl[code] (ggml-common.h): the value of a 4-bit IQ4_NL / IQ4_XS code.
WB_HD int iq4nl_value(int code) {
    constexpr int8_t kValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
    return kValues[code];
}

// IQ4_XS: the signed scale of group g (0..7), ls - 32 for the 6-bit ls.
WB_HD int iq4xs_scale(const BlockIQ4_XS& b, int g) {
    const int lo = (b.scales_l[g / 2] >> (4 * (g % 2))) & 0xF;
    const int hi = (b.scales_h >> (2 * g)) & 3;
    return (lo | hi << 4) - 32;
}

// TQ1_0: base-3 digit n (0 = most significant) of a byte holding a fraction of 243, in 0..2. The
// multiply by 3^n drops the digits before n (mod 256); the top of the remaining fraction times 3 is
// digit n.
WB_HD int tq1_trit(uint8_t byte, int n) {
    constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
    const uint8_t q = uint8_t(byte * kPow3[n]);
    return (int(q) * 3) >> 8;
}

// TQ1_0: the code (0..2, value code - 1) of element e (0..255).
WB_HD int tq1_code(const BlockTQ1_0& b, int e) {
    if (e < 160) return tq1_trit(b.qs[e % 32], e / 32);
    if (e < 240) return tq1_trit(b.qs[32 + (e - 160) % 16], (e - 160) / 16);
    return tq1_trit(b.qh[(e - 240) % 4], (e - 240) / 4);
}

// TQ2_0: the code (0..3; 3 is not produced by llama.cpp's quantizer) of element e (0..255).
WB_HD int tq2_code(const BlockTQ2_0& b, int e) { return (b.qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3; }

// ---- one block -> floats ----

WB_HD void dequantize_block(const BlockQ4_0& b, float* y) {
    const float d = fp16_to_f32(b.d);
    for (int j = 0; j < 16; ++j) {
        y[j] = d * float((b.qs[j] & 0xF) - 8);
        y[j + 16] = d * float((b.qs[j] >> 4) - 8);
    }
}

WB_HD void dequantize_block(const BlockQ4_1& b, float* y) {
    const float d = fp16_to_f32(b.d);
    const float m = fp16_to_f32(b.m);
    for (int j = 0; j < 16; ++j) {
        y[j] = d * float(b.qs[j] & 0xF) + m;
        y[j + 16] = d * float(b.qs[j] >> 4) + m;
    }
}

WB_HD void dequantize_block(const BlockQ5_0& b, float* y) {
    const float d = fp16_to_f32(b.d);
    const uint32_t h = q5_high_bits(b.qh);
    for (int i = 0; i < kQK; ++i) y[i] = d * float(q5_value(b.qs, h, i) - 16);
}

WB_HD void dequantize_block(const BlockQ5_1& b, float* y) {
    const float d = fp16_to_f32(b.d);
    const float m = fp16_to_f32(b.m);
    const uint32_t h = q5_high_bits(b.qh);
    for (int i = 0; i < kQK; ++i) y[i] = d * float(q5_value(b.qs, h, i)) + m;
}

WB_HD void dequantize_block(const BlockQ8_0& b, float* y) {
    const float d = fp16_to_f32(b.d);
    for (int i = 0; i < kQK; ++i) y[i] = d * float(b.qs[i]);
}

WB_HD void dequantize_block(const BlockQ8_1& b, float* y) {
    const float d = fp16_to_f32(b.d);
    for (int i = 0; i < kQK; ++i) y[i] = d * float(b.qs[i]);
}

WB_HD void dequantize_block(const BlockQ2_K& b, float* y) {
    const float d = fp16_to_f32(b.d);
    const float dmin = fp16_to_f32(b.dmin);
    for (int h = 0; h < 2; ++h) {
        for (int j = 0; j < 4; ++j) {
            for (int half16 = 0; half16 < 2; ++half16) {
                const int sc = b.scales[8 * h + 2 * j + half16];
                const float dl = d * float(sc & 0xF);
                const float ml = dmin * float(sc >> 4);
                const uint8_t* q = b.qs + 32 * h + 16 * half16;
                float* out = y + 128 * h + 32 * j + 16 * half16;
                for (int l = 0; l < 16; ++l) out[l] = dl * float((q[l] >> (2 * j)) & 3) - ml;
            }
        }
    }
}

WB_HD void dequantize_block(const BlockQ3_K& b, float* y) {
    const float d = fp16_to_f32(b.d);
    for (int h = 0; h < 2; ++h) {
        for (int j = 0; j < 4; ++j) {
            const int bit = 4 * h + j;
            for (int half16 = 0; half16 < 2; ++half16) {
                const float dl = d * float(q3k_scale(8 * h + 2 * j + half16, b.scales));
                const uint8_t* q = b.qs + 32 * h + 16 * half16;
                const uint8_t* hm = b.hmask + 16 * half16;
                float* out = y + 128 * h + 32 * j + 16 * half16;
                for (int l = 0; l < 16; ++l) {
                    const int v = ((q[l] >> (2 * j)) & 3) - (((hm[l] >> bit) & 1) ? 0 : 4);
                    out[l] = dl * float(v);
                }
            }
        }
    }
}

WB_HD void dequantize_block(const BlockQ4_K& b, float* y) {
    const float d = fp16_to_f32(b.d);
    const float dmin = fp16_to_f32(b.dmin);
    for (int c = 0; c < 4; ++c) {
        int sc0, mn0, sc1, mn1;
        k4_scale_min(2 * c, b.scales, sc0, mn0);
        k4_scale_min(2 * c + 1, b.scales, sc1, mn1);
        const uint8_t* q = b.qs + 32 * c;
        for (int l = 0; l < 32; ++l) {
            y[64 * c + l] = d * float(sc0) * float(q[l] & 0xF) - dmin * float(mn0);
            y[64 * c + 32 + l] = d * float(sc1) * float(q[l] >> 4) - dmin * float(mn1);
        }
    }
}

WB_HD void dequantize_block(const BlockQ5_K& b, float* y) {
    const float d = fp16_to_f32(b.d);
    const float dmin = fp16_to_f32(b.dmin);
    for (int c = 0; c < 4; ++c) {
        int sc0, mn0, sc1, mn1;
        k4_scale_min(2 * c, b.scales, sc0, mn0);
        k4_scale_min(2 * c + 1, b.scales, sc1, mn1);
        const uint8_t* q = b.qs + 32 * c;
        for (int l = 0; l < 32; ++l) {
            const int lo = (q[l] & 0xF) | (((b.qh[l] >> (2 * c)) & 1) << 4);
            const int hi = (q[l] >> 4) | (((b.qh[l] >> (2 * c + 1)) & 1) << 4);
            y[64 * c + l] = d * float(sc0) * float(lo) - dmin * float(mn0);
            y[64 * c + 32 + l] = d * float(sc1) * float(hi) - dmin * float(mn1);
        }
    }
}

// Q6_K's codes of a block in value order: 0..63, the values + 32, read as dequantize_block reads them
// (quarter q of each half: the low or high nibbles of ql's first or second 32 bytes, and bits 2q,
// 2q+1 of qh).
WB_HD void q6_k_codes(const BlockQ6_K& b, uint8_t* codes) {
    for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = b.ql + 64 * h;
        const uint8_t* qh = b.qh + 32 * h;
        uint8_t* c = codes + 128 * h;
        for (int l = 0; l < 32; ++l) {
            c[l] = uint8_t((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4);
            c[l + 32] = uint8_t((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4);
            c[l + 64] = uint8_t((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4);
            c[l + 96] = uint8_t((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4);
        }
    }
}

WB_HD void dequantize_block(const BlockQ6_K& b, float* y) {
    const float d = fp16_to_f32(b.d);
    for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = b.ql + 64 * h;
        const uint8_t* qh = b.qh + 32 * h;
        const int8_t* sc = b.scales + 8 * h;
        float* out = y + 128 * h;
        for (int l = 0; l < 32; ++l) {
            const int is = l / 16;
            const int q0 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q1 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            out[l] = d * float(sc[is + 0]) * float(q0);
            out[l + 32] = d * float(sc[is + 2]) * float(q1);
            out[l + 64] = d * float(sc[is + 4]) * float(q2);
            out[l + 96] = d * float(sc[is + 6]) * float(q3);
        }
    }
}

WB_HD void dequantize_block(const BlockIQ4_NL& b, float* y) {
    const float d = fp16_to_f32(b.d);
    for (int j = 0; j < 16; ++j) {
        y[j] = d * float(iq4nl_value(b.qs[j] & 0xF));
        y[j + 16] = d * float(iq4nl_value(b.qs[j] >> 4));
    }
}

WB_HD void dequantize_block(const BlockIQ4_XS& b, float* y) {
    const float d = fp16_to_f32(b.d);
    for (int g = 0; g < 8; ++g) {
        const float dl = d * float(iq4xs_scale(b, g));
        for (int j = 0; j < 16; ++j) {
            y[32 * g + j] = dl * float(iq4nl_value(b.qs[16 * g + j] & 0xF));
            y[32 * g + 16 + j] = dl * float(iq4nl_value(b.qs[16 * g + j] >> 4));
        }
    }
}

WB_HD void dequantize_block(const BlockTQ1_0& b, float* y) {
    const float d = fp16_to_f32(b.d);
    for (int e = 0; e < kQKK; ++e) y[e] = float(tq1_code(b, e) - 1) * d;
}

WB_HD void dequantize_block(const BlockTQ2_0& b, float* y) {
    const float d = fp16_to_f32(b.d);
    for (int e = 0; e < kQKK; ++e) y[e] = float(tq2_code(b, e) - 1) * d;
}

WB_HD void dequantize_block(const BlockQ8_K& b, float* y) {
    for (int i = 0; i < kQKK; ++i) y[i] = b.d * float(b.qs[i]);
}

}  // namespace wb
