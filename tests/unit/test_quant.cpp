// CPU quant kernels: hand-built blocks decode to values worked out by hand from FACTS.md section 2;
// quantizers follow llama.cpp's rules and round-trip within each type's error bound; every dot kernel,
// in both the AVX2 and the scalar family, equals plain float math on the dequantized operands.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "quant/quant.h"
#include "quant_order_reference.h"
#include "quant/quant_blocks.h"
#include "quant/quant_internal.h"
#include "util/error.h"
#include "util/fp16.h"

using wb::GgmlType;

namespace {

// fp16 bit patterns used below
constexpr uint16_t kHalf = 0x3800;     // 0.5
constexpr uint16_t kQuarter = 0x3400;  // 0.25
constexpr uint16_t kOne = 0x3C00;      // 1.0
constexpr uint16_t kTwo = 0x4000;      // 2.0
constexpr uint16_t kMinusOne = 0xBC00; // -1.0

struct KnownBlock {
    std::vector<uint8_t> bytes;
    std::vector<std::pair<int, float>> expected;  // (element, value worked out by hand)
};

template <class T>
std::vector<uint8_t> bytes_of(const T& v) {
    std::vector<uint8_t> out(sizeof v);
    std::memcpy(out.data(), &v, sizeof v);
    return out;
}

template <class T>
std::vector<uint8_t> bytes_of(const std::vector<T>& v) {
    std::vector<uint8_t> out(v.size() * sizeof(T));
    std::memcpy(out.data(), v.data(), out.size());
    return out;
}

KnownBlock known_float_block(GgmlType t) {
    if (t == GgmlType::F32) return {bytes_of(std::vector<float>{1.5f, -2.25f, 1e-3f}), {{0, 1.5f}, {1, -2.25f}, {2, 1e-3f}}};
    if (t == GgmlType::F16)
        // 0x3555: 2^(13-15) * (1 + 341/1024); 0x0001: smallest subnormal 2^-24
        return {bytes_of(std::vector<uint16_t>{0x3C00, 0xC000, 0x3555, 0x0001}),
                {{0, 1.0f}, {1, -2.0f}, {2, 0.333251953125f}, {3, 5.9604644775390625e-08f}}};
    // BF16: top halves of the floats 1.0, -3.0, 0.15625
    return {bytes_of(std::vector<uint16_t>{0x3F80, 0xC040, 0x3E20}), {{0, 1.0f}, {1, -3.0f}, {2, 0.15625f}}};
}

KnownBlock known_legacy_block(GgmlType t) {
    switch (t) {
        case GgmlType::Q4_0: {
            wb::BlockQ4_0 b{kHalf, {}};
            std::memset(b.qs, 0x88, sizeof b.qs);  // nibbles 8 -> 0
            b.qs[0] = 0x9A;                        // low 10 is element 0, high 9 is element 16
            b.qs[15] = 0x0F;                       // low 15 is element 15, high 0 is element 31
            // 0.5*(10-8), 0.5*(9-8), 0.5*(15-8), 0.5*(0-8), 0.5*(8-8)
            return {bytes_of(b), {{0, 1.0f}, {16, 0.5f}, {15, 3.5f}, {31, -4.0f}, {1, 0.0f}}};
        }
        case GgmlType::Q4_1: {
            wb::BlockQ4_1 b{kQuarter, kMinusOne, {}};
            std::memset(b.qs, 0x44, sizeof b.qs);  // 0.25*4 - 1 = 0
            b.qs[0] = 0x3C;
            b.qs[7] = 0xF0;
            // 0.25*12-1, 0.25*3-1, 0.25*0-1, 0.25*15-1
            return {bytes_of(b), {{0, 2.0f}, {16, -0.25f}, {7, -1.0f}, {23, 2.75f}, {1, 0.0f}}};
        }
        case GgmlType::Q5_0:
        case GgmlType::Q5_1: {
            // qs all 0 and every fifth bit set (value 16), except: qs[0] = 0x21 with bit 16 clear and
            // qs[3] = 0xF5 with bit 3 clear. Values: e0 = 1|16 = 17, e16 = 2, e3 = 5, e19 = 15|16 = 31,
            // e1 = 16. qh = 0xFFFFFFFF & ~(1<<16) & ~(1<<3) = 0xFFFEFFF7, little-endian.
            uint8_t qs[16] = {};
            qs[0] = 0x21;
            qs[3] = 0xF5;
            const uint8_t qh[4] = {0xF7, 0xFF, 0xFE, 0xFF};
            if (t == GgmlType::Q5_0) {
                wb::BlockQ5_0 b{kOne, {}, {}};
                std::memcpy(b.qh, qh, 4);
                std::memcpy(b.qs, qs, 16);
                // 1*(value-16)
                return {bytes_of(b), {{0, 1.0f}, {16, -14.0f}, {3, -11.0f}, {19, 15.0f}, {1, 0.0f}}};
            }
            wb::BlockQ5_1 b{kHalf, kTwo, {}, {}};
            std::memcpy(b.qh, qh, 4);
            std::memcpy(b.qs, qs, 16);
            // 0.5*value + 2
            return {bytes_of(b), {{0, 10.5f}, {16, 3.0f}, {3, 4.5f}, {19, 17.5f}, {1, 10.0f}}};
        }
        case GgmlType::Q8_0: {
            wb::BlockQ8_0 b{kQuarter, {}};
            b.qs[0] = -128;
            b.qs[5] = -3;
            b.qs[31] = 127;
            return {bytes_of(b), {{0, -32.0f}, {5, -0.75f}, {31, 31.75f}, {1, 0.0f}}};
        }
        case GgmlType::Q8_1: {
            wb::BlockQ8_1 b{kTwo, 0, {}};  // s plays no part in the values
            b.qs[2] = -7;
            return {bytes_of(b), {{2, -14.0f}, {0, 0.0f}}};
        }
        default: {
            wb::BlockQ8_K b{};
            b.d = 0.125f;
            b.qs[0] = -1;
            b.qs[255] = 100;
            return {bytes_of(b), {{0, -0.125f}, {255, 12.5f}, {1, 0.0f}}};
        }
    }
}

KnownBlock known_q2_k() {
    wb::BlockQ2_K b{};
    b.d = kHalf;
    b.dmin = kQuarter;
    b.scales[0] = 0x21;  // sub-block 0: scale 1, min 2
    b.scales[1] = 0x0F;  // sub-block 1: scale 15, min 0
    b.scales[2] = 0x12;  // sub-block 2: scale 2, min 1
    b.scales[6] = 0x34;  // sub-block 6: scale 4, min 3
    b.scales[9] = 0xA5;  // sub-block 9: scale 5, min 10
    b.qs[0] = 0xE4;      // 2-bit fields 0,1,2,3 for shifts 0,2,4,6 (elements 0, 32, 64, 96)
    b.qs[19] = 0x02;     // element 19 (half 0, shift 0, second 16)
    b.qs[48] = 0x03;     // element 144 (half 1, shift 0, second 16)
    return {bytes_of(b),
            {
                {0, -0.5f},    // 0.5*1*0 - 0.25*2
                {32, 0.75f},   // 0.5*2*1 - 0.25*1
                {64, 0.0f},    // sub-block 4 has scale 0, min 0
                {96, 5.25f},   // 0.5*4*3 - 0.25*3
                {19, 15.0f},   // 0.5*15*2 - 0
                {144, 5.0f},   // 0.5*5*3 - 0.25*10
                {51, 0.0f},    // qs[19]>>2 = 0, sub-block 3 all zero
            }};
}

KnownBlock known_q3_k() {
    wb::BlockQ3_K b{};
    b.d = kHalf;
    // Every 6-bit scale starts at 32 (scale 0): low nibbles 0, high pairs 2 (0xAA = 2,2,2,2).
    std::memset(b.scales + 8, 0xAA, 4);
    b.scales[0] = 0x03;  // scale 0: low 3 | high (scales[8]&3 = 2)<<4 = 35 -> 3
    b.scales[1] = 0xB0;  // scale 9: low = scales[1]>>4 = 11
    b.scales[9] = 0x9A;  // scale 9: high = (scales[9]>>4)&3 = 1 -> 11|16 = 27 -> -5; scale 1 keeps 0x9A&3 = 2
    b.qs[0] = 0x02;
    b.hmask[0] = 0x01;  // element 0: 2, bit set -> no -4
    b.qs[5] = 0x01;     // element 5: 1, bit clear -> 1-4 = -3
    b.qs[50] = 0x03;    // element 146 (half 1, second 16, l=2): 3, hmask[18] bit 4 set
    b.hmask[18] = 0x10;
    // element 147: qs[51] = 0, hmask[19] bit 4 clear -> -4
    return {bytes_of(b),
            {
                {0, 3.0f},     // 0.5*3*2
                {5, -4.5f},    // 0.5*3*(-3)
                {146, -7.5f},  // 0.5*(-5)*3
                {147, 10.0f},  // 0.5*(-5)*(-4)
                {32, 0.0f},    // scale 2 is 0
            }};
}

// Shared by Q4_K and Q5_K: scale/min pairs 0 = (10, 4) and 5 = (37, 50), all others 0.
void set_k4_scales(uint8_t* scales) {
    scales[0] = 10;    // sc0
    scales[4] = 4;     // mn0
    scales[1] = 0x80;  // top bits 2 = high bits of sc5 (sc1 = 0)
    scales[5] = 0xC0;  // top bits 3 = high bits of mn5 (mn1 = 0)
    scales[9] = 0x25;  // low nibble 5 = low bits of sc5: 5|2<<4 = 37; high nibble 2: 2|3<<4 = 50
}

KnownBlock known_q4_k() {
    wb::BlockQ4_K b{};
    b.d = kHalf;
    b.dmin = kQuarter;
    set_k4_scales(b.scales);
    b.qs[0] = 0x73;   // element 0 = 3 (sub-block 0), element 32 = 7 (sub-block 1)
    b.qs[65] = 0xC0;  // element 161 = 12 (chunk 2 high nibble = sub-block 5), element 129 = 0
    return {bytes_of(b),
            {
                {0, 14.0f},     // 0.5*10*3 - 0.25*4
                {1, -1.0f},     // 0.5*10*0 - 0.25*4
                {32, 0.0f},     // sub-block 1 is all zero
                {161, 209.5f},  // 0.5*37*12 - 0.25*50
                {129, 0.0f},    // sub-block 4 is all zero
            }};
}

KnownBlock known_q5_k() {
    wb::BlockQ5_K b{};
    b.d = kHalf;
    b.dmin = kQuarter;
    set_k4_scales(b.scales);
    b.qs[0] = 0x73;
    b.qs[65] = 0xC0;
    b.qh[1] = 0x20;  // bit 2c+1 for c=2: element 161 gains 16
    b.qh[3] = 0x01;  // bit 2c for c=0: element 3 gains 16
    return {bytes_of(b),
            {
                {0, 14.0f},     // 0.5*10*3 - 0.25*4
                {3, 79.0f},     // 0.5*10*16 - 0.25*4
                {35, 0.0f},     // qh[3] bit 1 clear, sub-block 1 zero
                {161, 505.5f},  // 0.5*37*28 - 0.25*50
            }};
}

KnownBlock known_q6_k() {
    wb::BlockQ6_K b{};
    b.d = kHalf;
    std::memset(b.qh, 0xAA, sizeof b.qh);  // high pairs 2: with low nibble 0 every value is 32-32 = 0
    b.scales[0] = 2;
    b.scales[13] = -3;
    b.ql[0] = 0x05;   // element 0: 5 | 2<<4 = 37
    b.ql[1] = 0x0F;   // element 1: 15 | 3<<4 = 63 with qh[1] = 0xAB
    b.qh[1] = 0xAB;
    b.ql[84] = 0x30;  // element 212 (half 1, l=20, third quarter): high nibble 3
    b.qh[52] = 0x8A;  // ... its high pair (bits 4-5) 0 -> 3
    return {bytes_of(b),
            {
                {0, 5.0f},      // 0.5*2*(37-32)
                {1, 31.0f},     // 0.5*2*(63-32)
                {17, 0.0f},     // scale 1 is 0
                {212, 43.5f},   // 0.5*(-3)*(3-32), scale index 8 + 20/16 + 2*2 = 13
                {148, 0.0f},    // ql[84] low nibble 0, high pair 2 -> 0
            }};
}

using wb_test::kIq4nl;

KnownBlock known_iq4_nl() {
    wb::BlockIQ4_NL b{kHalf, {}};
    std::memset(b.qs, 0x88, sizeof b.qs);  // code 8 = value 1
    b.qs[0] = 0xF0;                        // element 0 code 0, element 16 code 15
    b.qs[15] = 0x7A;                       // element 15 code 10, element 31 code 7
    // 0.5 * kvalue: -127, 113, 25, -10, 1
    return {bytes_of(b), {{0, -63.5f}, {16, 56.5f}, {15, 12.5f}, {31, -5.0f}, {1, 0.5f}}};
}

KnownBlock known_iq4_xs() {
    wb::BlockIQ4_XS b{};
    b.d = kQuarter;
    // Group scales ls - 32: every ls 32 (low nibbles 0, high pairs 2 = 0xAAAA) except group 0 ls 33
    // (low 1), group 3 ls 0 (high pair 0: bits 6-7 clear) and group 6 ls 63 (low 15, high pair 3 at
    // bits 12-13).
    b.scales_h = 0xBA2A;
    b.scales_l[0] = 0x01;
    b.scales_l[3] = 0x0F;
    std::memset(b.qs, 0x88, sizeof b.qs);  // value 1
    b.qs[0] = 0x0F;                        // group 0: element 0 code 15, element 16 code 0
    b.qs[6 * 16 + 5] = 0xD0;               // group 6: element 197 code 0, element 213 code 13
    return {bytes_of(b),
            {
                {0, 28.25f},     // 0.25*1*113
                {16, -31.75f},   // 0.25*1*(-127)
                {1, 0.25f},      // 0.25*1*1
                {40, 0.0f},      // group 1: scale 0
                {96, -8.0f},     // 0.25*(-32)*1
                {197, -984.25f}, // 0.25*31*(-127)
                {213, 534.75f},  // 0.25*31*69
            }};
}

KnownBlock known_tq1_0() {
    // Bytes as llama.cpp's quantizer writes them: digits t0..t4 (t0 most significant) as
    // ceil(256 * v / 243), v = sum t_n 3^(4-n); qh bytes hold 4 digits (v times 3).
    wb::BlockTQ1_0 b{};
    b.d = kHalf;
    std::memset(b.qs, 128, sizeof b.qs);  // digits 1,1,1,1,1 (v = 121): every value 0
    std::memset(b.qh, 127, sizeof b.qh);  // digits 1,1,1,1 (v = 120)
    b.qs[0] = 187;   // digits 2,0,1,2,0 (v = 177): elements 0, 32, 64, 96, 128
    b.qs[40] = 3;    // digits 0,0,0,0,2 (v = 2): elements 168, 184, 200, 216, 232
    b.qh[2] = 231;   // digits 2,2,0,1 (v = 219): elements 242, 246, 250, 254
    return {bytes_of(b),
            {{0, 0.5f}, {32, -0.5f}, {64, 0.0f}, {96, 0.5f}, {128, -0.5f}, {168, -0.5f}, {216, -0.5f},
             {232, 0.5f}, {242, 0.5f}, {246, 0.5f}, {250, -0.5f}, {254, 0.0f}, {1, 0.0f}}};
}

KnownBlock known_tq2_0() {
    wb::BlockTQ2_0 b{};
    b.d = kTwo;
    std::memset(b.qs, 0x55, sizeof b.qs);  // code 1 = value 0 everywhere
    b.qs[0] = 0x18;   // codes 0, 2, 1, 0 at shifts 0, 2, 4, 6: elements 0, 32, 64, 96
    b.qs[33] = 0x56;  // code 2 at shift 0 of byte 32 + 1: element 128 + 1
    return {bytes_of(b), {{0, -2.0f}, {32, 2.0f}, {64, 0.0f}, {96, -2.0f}, {129, 2.0f}, {1, 0.0f}, {161, 0.0f}}};
}

KnownBlock known_block(GgmlType t) {
    switch (t) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16: return known_float_block(t);
        case GgmlType::Q2_K: return known_q2_k();
        case GgmlType::Q3_K: return known_q3_k();
        case GgmlType::Q4_K: return known_q4_k();
        case GgmlType::Q5_K: return known_q5_k();
        case GgmlType::Q6_K: return known_q6_k();
        case GgmlType::IQ4_NL: return known_iq4_nl();
        case GgmlType::IQ4_XS: return known_iq4_xs();
        case GgmlType::TQ1_0: return known_tq1_0();
        case GgmlType::TQ2_0: return known_tq2_0();
        default: return known_legacy_block(t);
    }
}

int64_t block_elems(GgmlType t) { return wb::ggml_type_traits(t).block_elems; }

// ---- random data ----

std::vector<float> random_floats(std::mt19937& rng, int64_t n, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = dist(rng);
    return v;
}

uint16_t random_scale(std::mt19937& rng) {
    std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
    return wb::f32_to_fp16(dist(rng));
}

// Random payload bytes with sane fp16 scales written over the scale fields.
template <class Block>
void randomize_blocks(std::mt19937& rng, uint8_t* row, int64_t n_blocks) {
    for (int64_t i = 0; i < n_blocks; ++i) {
        Block b;
        auto* raw = reinterpret_cast<uint8_t*>(&b);
        for (size_t k = 0; k < sizeof b; ++k) raw[k] = uint8_t(rng());
        b.d = random_scale(rng);
        if constexpr (requires { b.m; }) b.m = random_scale(rng);
        if constexpr (requires { b.dmin; }) b.dmin = random_scale(rng);
        std::memcpy(row + size_t(i) * sizeof b, &b, sizeof b);
    }
}

std::vector<uint8_t> random_weights(std::mt19937& rng, GgmlType t, int64_t n) {
    std::vector<uint8_t> row(wb::ggml_row_bytes(t, n));
    const int64_t nb = n / block_elems(t);
    switch (t) {
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16: wb::quantize_row(t, random_floats(rng, n, -1.0f, 1.0f).data(), row.data(), n); break;
        case GgmlType::Q4_0: randomize_blocks<wb::BlockQ4_0>(rng, row.data(), nb); break;
        case GgmlType::Q4_1: randomize_blocks<wb::BlockQ4_1>(rng, row.data(), nb); break;
        case GgmlType::Q5_0: randomize_blocks<wb::BlockQ5_0>(rng, row.data(), nb); break;
        case GgmlType::Q5_1: randomize_blocks<wb::BlockQ5_1>(rng, row.data(), nb); break;
        case GgmlType::Q8_0: randomize_blocks<wb::BlockQ8_0>(rng, row.data(), nb); break;
        case GgmlType::Q2_K: randomize_blocks<wb::BlockQ2_K>(rng, row.data(), nb); break;
        case GgmlType::Q3_K: randomize_blocks<wb::BlockQ3_K>(rng, row.data(), nb); break;
        case GgmlType::Q4_K: randomize_blocks<wb::BlockQ4_K>(rng, row.data(), nb); break;
        case GgmlType::Q5_K: randomize_blocks<wb::BlockQ5_K>(rng, row.data(), nb); break;
        case GgmlType::Q6_K: randomize_blocks<wb::BlockQ6_K>(rng, row.data(), nb); break;
        // Random ternary bytes include TQ2_0's unused code 3 and TQ1_0 bytes no quantizer writes:
        // the kernels must still agree on them, as llama.cpp's kernels decode every byte.
        case GgmlType::IQ4_NL: randomize_blocks<wb::BlockIQ4_NL>(rng, row.data(), nb); break;
        case GgmlType::IQ4_XS: randomize_blocks<wb::BlockIQ4_XS>(rng, row.data(), nb); break;
        case GgmlType::TQ1_0: randomize_blocks<wb::BlockTQ1_0>(rng, row.data(), nb); break;
        case GgmlType::TQ2_0: randomize_blocks<wb::BlockTQ2_0>(rng, row.data(), nb); break;
        default: break;
    }
    return row;
}

// The Q8_1 s field is fp16, so m*s in the Q4_1/Q5_1 kernels carries up to one fp16 rounding of
// d*sum(q) per block that dequantized math does not see: returns sum |m| * |s - d*sum(q)|.
double q8_1_offset_error(GgmlType t, const uint8_t* w, const uint8_t* x, int64_t n) {
    if (t != GgmlType::Q4_1 && t != GgmlType::Q5_1) return 0.0;
    const auto* xb = reinterpret_cast<const wb::BlockQ8_1*>(x);
    double err = 0.0;
    for (int64_t i = 0; i < n / 32; ++i) {
        const uint16_t m = t == GgmlType::Q4_1 ? reinterpret_cast<const wb::BlockQ4_1*>(w)[i].m
                                               : reinterpret_cast<const wb::BlockQ5_1*>(w)[i].m;
        int sum = 0;
        for (int8_t q : xb[i].qs) sum += q;
        const double exact = double(wb::fp16_to_f32(xb[i].d)) * sum;
        err += std::fabs(wb::fp16_to_f32(m)) * std::fabs(wb::fp16_to_f32(xb[i].s) - exact);
    }
    return err;
}

// The F16DotOrder definitions (quant.h), written out plainly: lane FMAs, the order's tree, the tail.
float f16_lane_tree_by_definition(wb::F16DotOrder order, const float* l) {
    if (order == wb::F16DotOrder::kLanes8) return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
    float a[8], t[4];
    for (int i = 0; i < 8; ++i) a[i] = (l[i] + l[16 + i]) + (l[8 + i] + l[24 + i]);
    for (int i = 0; i < 4; ++i) t[i] = a[i] + a[i + 4];
    return (t[0] + t[1]) + (t[2] + t[3]);
}

float f16_dot_by_definition(wb::F16DotOrder order, int64_t n, const uint16_t* x, const uint16_t* y) {
    const int n_lanes = wb::f16_dot_lanes(order);
    const int64_t whole = n / n_lanes * n_lanes;
    float l[32] = {};
    for (int64_t i = 0; i < whole; ++i) l[i % n_lanes] = std::fma(wb::fp16_to_f32(x[i]), wb::fp16_to_f32(y[i]), l[i % n_lanes]);
    if (order == wb::F16DotOrder::kLanes8) {
        float sum = f16_lane_tree_by_definition(order, l);
        for (int64_t i = whole; i < n; ++i) sum += wb::fp16_to_f32(x[i]) * wb::fp16_to_f32(y[i]);
        return sum;
    }
    double sum = f16_lane_tree_by_definition(order, l);
    for (int64_t i = whole; i < n; ++i) sum += double(wb::fp16_to_f32(x[i]) * wb::fp16_to_f32(y[i]));
    return float(sum);
}

// Scoped switch to the scalar family.
struct ScalarKernels {
    ScalarKernels() { wb::quant_force_scalar(true); }
    ~ScalarKernels() { wb::quant_force_scalar(false); }
};

// The AVX2 family where the best one is wider (avx512 is AVX2's with some kernels replaced).
struct Avx2Kernels {
    Avx2Kernels() { wb::quant_force_avx2(true); }
    ~Avx2Kernels() { wb::quant_force_avx2(false); }
};

// A SIMD family (avx2, or avx512 on top of it) rather than the scalar one.
bool simd_kernels() { return std::string(wb::quant_kernel_name()) != "scalar"; }

// Largest round-trip error allowed per element, as a fraction of the block's largest |x|.
double round_trip_bound(GgmlType t) {
    switch (t) {
        case GgmlType::F32: return 0.0;
        case GgmlType::F16: return 1.0 / 2048;  // half an ulp of 11 significant bits (no subnormals here)
        case GgmlType::BF16: return 1.0 / 256;
        case GgmlType::Q4_0: return 1.01 / 8;   // the clamp at 15 costs one full step d = amax/8
        case GgmlType::Q5_0: return 1.01 / 16;
        case GgmlType::Q4_1: return 1.0 / 15 + 2e-3;  // half a step of (max-min)/15 <= 2*amax/15, plus fp16 d, m
        case GgmlType::Q5_1: return 1.0 / 31 + 2e-3;
        case GgmlType::Q8_0:
        case GgmlType::Q8_1: return 0.5 / 127 + 1e-3;  // half a step plus the fp16 rounding of d
        default: return 0.501 / 127;                  // Q8_K keeps d as a float
    }
}

}  // namespace

class TestQuant : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void dequantize_gives_hand_computed_values_data();
    void dequantize_gives_hand_computed_values();
    void quantizers_follow_llama_cpp_rules();
    void quantize_round_trip_stays_within_the_type_error_data();
    void quantize_round_trip_stays_within_the_type_error();
    void vec_dot_matches_dequantized_float_math_data();
    void vec_dot_matches_dequantized_float_math();
    void vec_dot_rows_equals_vec_dot_per_row_data();
    void vec_dot_rows_equals_vec_dot_per_row();
    void vec_dot_tile_equals_vec_dot_per_pair_data();
    void vec_dot_tile_equals_vec_dot_per_pair();
    void k_quant_dots_follow_llama_cpp_orders_data();
    void k_quant_dots_follow_llama_cpp_orders();
    void iq4_tq_and_repacked_q4_0_dots_follow_llama_cpp_orders_data();
    void iq4_tq_and_repacked_q4_0_dots_follow_llama_cpp_orders();
    void f16_weight_dots_follow_llama_cpp_orders_data();
    void f16_weight_dots_follow_llama_cpp_orders();
    void f32_and_bf16_weight_dots_follow_llama_cpp_orders_data();
    void f32_and_bf16_weight_dots_follow_llama_cpp_orders();
    void dot_orders_follow_llama_cpp_paths();
    void f16_row_conversion_is_identical_in_both_families();
    void activation_quantizers_are_identical_in_both_families();
    void f16_attention_products_follow_their_orders_data();
    void f16_attention_products_follow_their_orders();
    void vec_dot_types_follow_llama_cpp();
    void unsupported_type_throws_naming_it_data();
    void unsupported_type_throws_naming_it();
    void partial_block_row_throws();
};

void TestQuant::initTestCase() { qInfo("best kernel family on this CPU: %s", wb::quant_kernel_name()); }

void TestQuant::dequantize_gives_hand_computed_values_data() {
    QTest::addColumn<uint32_t>("type");
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                       GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q2_K,
                       GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::Q8_K,
                       GgmlType::IQ4_NL, GgmlType::IQ4_XS, GgmlType::TQ1_0, GgmlType::TQ2_0})
        QTest::newRow(wb::ggml_type_name(t).c_str()) << uint32_t(t);
}

void TestQuant::dequantize_gives_hand_computed_values() {
    QFETCH(uint32_t, type);
    const auto t = GgmlType(type);
    const KnownBlock kb = known_block(t);
    const int64_t n = int64_t(kb.bytes.size() / wb::ggml_type_traits(t).block_bytes) * block_elems(t);
    std::vector<float> y(size_t(n), -999.0f);
    wb::dequantize_row(t, kb.bytes.data(), y.data(), n);
    for (const auto& [i, want] : kb.expected) {
        QVERIFY2(y[size_t(i)] == want, qPrintable(QString("element %1: got %2, want %3").arg(i).arg(y[size_t(i)]).arg(want)));
    }
}

void TestQuant::quantizers_follow_llama_cpp_rules() {
    // Q4_0: the value of largest magnitude (-8, negative) sets d = max / -8 = 1, so x = q - 8 exactly.
    std::vector<float> x(32);
    for (int j = 0; j < 32; ++j) x[size_t(j)] = float(j % 16 - 8);
    wb::BlockQ4_0 q4{};
    wb::quantize_row(GgmlType::Q4_0, x.data(), &q4, 32);
    QCOMPARE(q4.d, kOne);
    QCOMPARE(q4.qs[3], uint8_t(0x33));  // elements 3 and 19 are both 3 - 8

    // Q8_K: the largest-magnitude value maps to -127 (iscale = -127/max), its negation to +127.
    std::vector<float> xk(256, 0.0f);
    xk[0] = 2.0f;
    xk[1] = -2.0f;
    xk[17] = 1.0f;  // -127/2 * 1 = -63.5 rounds to even: -64
    wb::BlockQ8_K q8k{};
    wb::quantize_row(GgmlType::Q8_K, xk.data(), &q8k, 256);
    QCOMPARE(q8k.d, 1.0f / (-127.0f / 2.0f));
    QCOMPARE(int(q8k.qs[0]), -127);
    QCOMPARE(int(q8k.qs[1]), 127);
    QCOMPARE(int(q8k.qs[17]), -64);
    QCOMPARE(int(q8k.bsums[0]), 0);
    QCOMPARE(int(q8k.bsums[1]), -64);

    // Q8_1: s = d * sum(q).
    std::vector<float> x1(32, 0.0f);
    x1[0] = 1.27f;
    x1[1] = 0.5f;  // 0.5 / 0.01 = 50
    wb::BlockQ8_1 q81{};
    wb::quantize_row(GgmlType::Q8_1, x1.data(), &q81, 32);
    QCOMPARE(int(q81.qs[0]), 127);
    QCOMPARE(int(q81.qs[1]), 50);
    QCOMPARE(q81.s, wb::f32_to_fp16(1.27f / 127.0f * 177.0f));

    // An all-zero block quantizes to d = 0 and zeros everywhere.
    wb::BlockQ8_K zero{};
    std::memset(&zero, 0x5A, sizeof zero);
    wb::quantize_row(GgmlType::Q8_K, std::vector<float>(256, 0.0f).data(), &zero, 256);
    QCOMPARE(zero.d, 0.0f);
    QCOMPARE(int(zero.qs[100]), 0);
    QCOMPARE(int(zero.bsums[3]), 0);
}

void TestQuant::quantize_round_trip_stays_within_the_type_error_data() {
    QTest::addColumn<uint32_t>("type");
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                       GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K})
        QTest::newRow(wb::ggml_type_name(t).c_str()) << uint32_t(t);
}

void TestQuant::quantize_round_trip_stays_within_the_type_error() {
    QFETCH(uint32_t, type);
    const auto t = GgmlType(type);
    std::mt19937 rng(1234);
    const int64_t n = 1024;
    std::vector<float> x = random_floats(rng, n, -2.0f, 2.0f);
    std::fill(x.begin() + 256, x.begin() + 512, 0.0f);  // an all-zero stretch exercises d = 0
    for (int j = 512; j < 544; ++j) x[size_t(j)] = 0.75f;  // a constant block (max == min)
    std::vector<uint8_t> q(wb::ggml_row_bytes(t, n));
    wb::quantize_row(t, x.data(), q.data(), n);
    std::vector<float> y(static_cast<size_t>(n));
    wb::dequantize_row(t, q.data(), y.data(), n);

    const int64_t block = t == GgmlType::Q8_K ? 256 : 32;
    for (int64_t b = 0; b < n / block; ++b) {
        double amax = 0.0;
        for (int64_t j = b * block; j < (b + 1) * block; ++j) amax = std::max(amax, double(std::fabs(x[size_t(j)])));
        const double bound = round_trip_bound(t) * amax;
        for (int64_t j = b * block; j < (b + 1) * block; ++j) {
            const double err = std::fabs(double(y[size_t(j)]) - double(x[size_t(j)]));
            QVERIFY2(err <= bound, qPrintable(QString("element %1: %2 -> %3, error %4 > %5")
                                                  .arg(j).arg(x[size_t(j)]).arg(y[size_t(j)]).arg(err).arg(bound)));
        }
    }
}

void TestQuant::vec_dot_matches_dequantized_float_math_data() {
    QTest::addColumn<uint32_t>("type");
    QTest::addColumn<int>("n");
    const auto add = [](GgmlType t, std::initializer_list<int> lengths) {
        for (int n : lengths)
            QTest::addRow("%s/%d", wb::ggml_type_name(t).c_str(), n) << uint32_t(t) << n;
    };
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) add(t, {1, 7, 33, 64, 576, 1000});
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0})
        add(t, {32, 96, 576, 1536});
    for (GgmlType t : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                       GgmlType::IQ4_XS, GgmlType::TQ1_0, GgmlType::TQ2_0})
        add(t, {256, 768, 1536});
    add(GgmlType::IQ4_NL, {32, 96, 576, 1536});
}

void TestQuant::vec_dot_matches_dequantized_float_math() {
    QFETCH(uint32_t, type);
    QFETCH(int, n);
    const auto t = GgmlType(type);
    std::mt19937 rng(uint32_t(type) * 7919u + uint32_t(n));
    for (int trial = 0; trial < 4; ++trial) {
        const std::vector<uint8_t> w = random_weights(rng, t, n);
        const std::vector<float> x = random_floats(rng, n, -1.0f, 1.0f);
        std::vector<uint8_t> xq(wb::activation_row_bytes(t, n));
        wb::quantize_activations(t, x.data(), xq.data(), n);

        // reference: double-precision dot of the two dequantized rows
        std::vector<float> wf(static_cast<size_t>(n)), xf(static_cast<size_t>(n));
        wb::dequantize_row(t, w.data(), wf.data(), n);
        wb::dequantize_row(wb::vec_dot_type(t), xq.data(), xf.data(), n);
        double ref = 0.0, magnitude = 0.0;
        for (int i = 0; i < n; ++i) {
            ref += double(wf[size_t(i)]) * xf[size_t(i)];
            magnitude += std::fabs(double(wf[size_t(i)]) * xf[size_t(i)]);
        }
        const double tol = 1e-4 * magnitude + q8_1_offset_error(t, w.data(), xq.data(), n) + 1e-6;

        const float best = wb::vec_dot(t, n, w.data(), xq.data());
        float scalar;
        {
            ScalarKernels force;
            scalar = wb::vec_dot(t, n, w.data(), xq.data());
        }
        QVERIFY2(std::fabs(scalar - ref) <= tol, qPrintable(QString("scalar %1 vs %2 (tol %3)").arg(scalar).arg(ref).arg(tol)));
        QVERIFY2(std::fabs(best - ref) <= tol, qPrintable(QString("%1 %2 vs %3 (tol %4)")
                                                              .arg(wb::quant_kernel_name()).arg(best).arg(ref).arg(tol)));
        QVERIFY2(std::fabs(best - scalar) <= tol, qPrintable(QString("%1 %2 vs scalar %3").arg(wb::quant_kernel_name()).arg(best).arg(scalar)));
    }
}

void TestQuant::vec_dot_rows_equals_vec_dot_per_row_data() {
    QTest::addColumn<uint32_t>("type");
    QTest::addColumn<int>("n");
    QTest::newRow("Q4_1/576") << uint32_t(GgmlType::Q4_1) << 576;
    QTest::newRow("Q8_0/576") << uint32_t(GgmlType::Q8_0) << 576;
    QTest::newRow("Q6_K/512") << uint32_t(GgmlType::Q6_K) << 512;
    QTest::newRow("F16/64") << uint32_t(GgmlType::F16) << 64;
}

void TestQuant::vec_dot_rows_equals_vec_dot_per_row() {
    QFETCH(uint32_t, type);
    QFETCH(int, n);
    const auto t = GgmlType(type);
    std::mt19937 rng(99);
    const int rows = 5;
    const size_t stride = wb::ggml_row_bytes(t, n);
    std::vector<uint8_t> w;
    for (int r = 0; r < rows; ++r) {
        const std::vector<uint8_t> row = random_weights(rng, t, n);
        w.insert(w.end(), row.begin(), row.end());
    }
    const std::vector<float> x = random_floats(rng, n, -1.0f, 1.0f);
    std::vector<uint8_t> xq(wb::activation_row_bytes(t, n));
    wb::quantize_activations(t, x.data(), xq.data(), n);
    std::vector<float> out(rows, 0.0f);
    wb::vec_dot_rows(t, n, w.data(), stride, rows, xq.data(), out.data());
    for (int r = 0; r < rows; ++r) QCOMPARE(out[size_t(r)], wb::vec_dot(t, n, w.data() + size_t(r) * stride, xq.data()));
}

void TestQuant::vec_dot_tile_equals_vec_dot_per_pair_data() {
    QTest::addColumn<uint32_t>("type");
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("order");
    const int row = int(wb::DotOrder::kRow);
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::F16})
        for (int n : {64, 576}) QTest::addRow("%s/%d/row", wb::ggml_type_name(t).c_str(), n) << uint32_t(t) << n << row;
    for (GgmlType t : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
        QTest::addRow("%s/512/row", wb::ggml_type_name(t).c_str()) << uint32_t(t) << 512 << row;
        QTest::addRow("%s/768/tiled", wb::ggml_type_name(t).c_str()) << uint32_t(t) << 768 << int(wb::DotOrder::kTiled);
    }
    QTest::addRow("Q4_K/768/gemm") << uint32_t(GgmlType::Q4_K) << 768 << int(wb::DotOrder::kGemm);
    QTest::addRow("Q4_K/768/gemv") << uint32_t(GgmlType::Q4_K) << 768 << int(wb::DotOrder::kGemv);
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::IQ4_NL})
        for (wb::DotOrder o : {wb::DotOrder::kGemv, wb::DotOrder::kGemm})
            QTest::addRow("%s/576/%s", wb::ggml_type_name(t).c_str(), wb_test::dot_order_name(o)) << uint32_t(t) << 576 << int(o);
    QTest::addRow("IQ4_NL/576/llamafile") << uint32_t(GgmlType::IQ4_NL) << 576 << int(wb::DotOrder::kLlamafile);
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16})
        for (int n : {576, 100})
            QTest::addRow("%s/%d/llamafile", wb::ggml_type_name(t).c_str(), n) << uint32_t(t) << n << int(wb::DotOrder::kLlamafile);
    QTest::addRow("IQ4_NL/288/row") << uint32_t(GgmlType::IQ4_NL) << 288 << row;
    QTest::addRow("IQ4_XS/512/row") << uint32_t(GgmlType::IQ4_XS) << 512 << row;
    QTest::addRow("IQ4_XS/768/tiled") << uint32_t(GgmlType::IQ4_XS) << 768 << int(wb::DotOrder::kTiled);
    QTest::addRow("TQ1_0/512/row") << uint32_t(GgmlType::TQ1_0) << 512 << row;
    QTest::addRow("TQ2_0/512/row") << uint32_t(GgmlType::TQ2_0) << 512 << row;
}

// The prefill tile (rows x tokens) gives each output exactly what vec_dot_rows gives in the same order,
// in both kernel families, with and without a tile kernel; and on AVX2 the tiles exist where the
// backend uses them (the 32-element types in row order, the K-quants' and IQ4_XS's tiled order, the
// repacked orders of Q4_K's gemm and of Q4_0 / IQ4_NL, IQ4_NL's and the float types' llamafile orders).
void TestQuant::vec_dot_tile_equals_vec_dot_per_pair() {
    QFETCH(uint32_t, type);
    QFETCH(int, n);
    QFETCH(int, order);
    const auto t = GgmlType(type);
    const auto o = wb::DotOrder(order);
    std::mt19937 rng(uint32_t(7 + n + type + 100 * order));
    const size_t w_stride = wb::ggml_row_bytes(t, n) + 16;  // rows with a gap, as a strided view would have
    std::vector<uint8_t> w(w_stride * wb::kDotTileRows);
    for (int r = 0; r < wb::kDotTileRows; ++r) {
        const std::vector<uint8_t> row = random_weights(rng, t, n);
        std::copy(row.begin(), row.end(), w.begin() + long(size_t(r) * w_stride));
    }
    const size_t x_stride = wb::activation_row_bytes(t, n) + 8;
    std::vector<uint8_t> xq(x_stride * wb::kDotTileCols);
    for (int c = 0; c < wb::kDotTileCols; ++c)
        wb::quantize_activations(t, random_floats(rng, n, -2.0f, 2.0f).data(), xq.data() + size_t(c) * x_stride, n);
    const bool avx2 = simd_kernels();
    const bool q32 = t == GgmlType::Q4_0 || t == GgmlType::Q4_1 || t == GgmlType::Q5_0 || t == GgmlType::Q5_1 || t == GgmlType::Q8_0;
    const bool k_quant = t == GgmlType::Q2_K || t == GgmlType::Q3_K || t == GgmlType::Q4_K || t == GgmlType::Q5_K || t == GgmlType::Q6_K;
    const bool repacked_32 = (t == GgmlType::Q4_0 || t == GgmlType::IQ4_NL) &&
                             (o == wb::DotOrder::kGemv || o == wb::DotOrder::kGemm);
    const bool tiled = (k_quant || t == GgmlType::IQ4_XS) && o == wb::DotOrder::kTiled;
    const bool expect_tile = avx2 && ((q32 && o == wb::DotOrder::kRow) || tiled || repacked_32 ||
                                      (t == GgmlType::Q4_K && o == wb::DotOrder::kGemm) ||
                                      ((t == GgmlType::IQ4_NL || t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16) &&
                                       o == wb::DotOrder::kLlamafile));
    QCOMPARE(wb::has_dot_tile(t, o), expect_tile);
    // the best family, AVX2 under it (the same where there is no wider one), scalar
    for (int family : {0, 1, 2}) {
        std::unique_ptr<ScalarKernels> force;
        std::unique_ptr<Avx2Kernels> force_avx2;
        if (family == 1) force_avx2 = std::make_unique<Avx2Kernels>();
        if (family == 2) force = std::make_unique<ScalarKernels>();
        const int64_t out_stride = wb::kDotTileRows + 3;
        std::vector<float> out(size_t(out_stride * wb::kDotTileCols), -1.0f);
        wb::vec_dot_tile(t, n, w.data(), w_stride, xq.data(), x_stride, out.data(), out_stride, o);
        for (int c = 0; c < wb::kDotTileCols; ++c)
            for (int r = 0; r < wb::kDotTileRows; ++r) {
                float want = 0.0f;
                wb::vec_dot_rows(t, n, w.data() + size_t(r) * w_stride, w_stride, 1, xq.data() + size_t(c) * x_stride, &want, o);
                const float got = out[size_t(c * out_stride + r)];
                QVERIFY2(std::memcmp(&got, &want, sizeof got) == 0,  // bit for bit, not QCOMPARE's fuzzy float compare
                         qPrintable(QString("token %1: tile %2, row dot %3").arg(c).arg(double(got), 0, 'g', 9)
                                        .arg(double(want), 0, 'g', 9)));
            }
    }
}

// Every K-quant order the kernels offer (wb::DotOrder) gives, bit for bit, the float operations of
// the llama.cpp kernel it stands for, recomputed above from the block format: the CPU backend's
// bit-exactness with llama.cpp rests on these orders (activations in the hundreds turn a last-bit
// difference into a different token a few layers on). The AVX2 family implements all of them; the
// scalar family the tiled order (its other dots are plain reference math).
void TestQuant::k_quant_dots_follow_llama_cpp_orders_data() {
    QTest::addColumn<uint32_t>("type");
    QTest::addColumn<int>("order");
    const auto add = [](GgmlType t, wb::DotOrder o) {
        QTest::addRow("%s/%s", wb::ggml_type_name(t).c_str(), wb_test::dot_order_name(o)) << uint32_t(t) << int(o);
    };
    for (GgmlType t : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
        add(t, wb::DotOrder::kRow);
        add(t, wb::DotOrder::kTiled);
    }
    add(GgmlType::Q4_K, wb::DotOrder::kGemv);
    add(GgmlType::Q4_K, wb::DotOrder::kGemm);
}

void TestQuant::k_quant_dots_follow_llama_cpp_orders() {
    QFETCH(uint32_t, type);
    QFETCH(int, order);
    const auto t = GgmlType(type);
    const auto o = wb::DotOrder(order);
    const bool avx2 = simd_kernels();
    if (!avx2 && o != wb::DotOrder::kTiled) QSKIP("only the AVX2 family implements this order");

    const int64_t n = 2048;  // 8 blocks
    const int rows = 48;
    std::mt19937 rng(uint32_t(type) * 31u + uint32_t(order));
    std::vector<uint8_t> w;
    for (int r = 0; r < rows; ++r) {
        const std::vector<uint8_t> row = random_weights(rng, t, n);
        w.insert(w.end(), row.begin(), row.end());
    }
    const size_t stride = wb::ggml_row_bytes(t, n);
    // activations of mixed magnitudes, as in a real model (a few large values per block)
    std::vector<float> x = random_floats(rng, n, -1.0f, 1.0f);
    for (int64_t i = 0; i < n; i += 37) x[size_t(i)] *= 150.0f;
    std::vector<uint8_t> xq(wb::activation_row_bytes(t, n));
    wb::quantize_activations(t, x.data(), xq.data(), n);
    const auto* y = reinterpret_cast<const wb::BlockQ8_K*>(xq.data());

    std::vector<float> want(rows);
    for (int r = 0; r < rows; ++r) want[size_t(r)] = wb_test::k_dot_ref(t, o, w.data() + size_t(r) * stride, y, n);

    const auto check = [&](const char* family) {
        std::vector<float> got(rows, 0.0f);
        wb::vec_dot_rows(t, n, w.data(), stride, rows, xq.data(), got.data(), o);
        for (int r = 0; r < rows; ++r) {
            uint32_t g, e;
            std::memcpy(&g, &got[size_t(r)], 4);
            std::memcpy(&e, &want[size_t(r)], 4);
            QVERIFY2(g == e, qPrintable(QString("%1 row %2: %3 (0x%4), llama.cpp's order gives %5 (0x%6)")
                                            .arg(family).arg(r).arg(double(got[size_t(r)]), 0, 'g', 9).arg(g, 8, 16, QChar('0'))
                                            .arg(double(want[size_t(r)]), 0, 'g', 9).arg(e, 8, 16, QChar('0'))));
        }
    };
    if (avx2) {
        check(wb::quant_kernel_name());
        Avx2Kernels force;
        check(wb::quant_kernel_name());
    }
    if (o == wb::DotOrder::kTiled) {
        ScalarKernels force;
        check("scalar");
    }
}

// The orders of the IQ4 / TQ kernels and of Q4_0's repacked matrices, recomputed from the block
// format, bit for bit, in both kernel families (both implement every one of them). Rows of an odd
// number of 32-blocks cover IQ4_NL's odd last block; random bytes cover every TQ byte.
void TestQuant::iq4_tq_and_repacked_q4_0_dots_follow_llama_cpp_orders_data() {
    QTest::addColumn<uint32_t>("type");
    QTest::addColumn<int>("order");
    QTest::addColumn<int>("n");
    const auto add = [](GgmlType t, wb::DotOrder o, int n) {
        QTest::addRow("%s/%s/%d", wb::ggml_type_name(t).c_str(), wb_test::dot_order_name(o), n) << uint32_t(t) << int(o) << n;
    };
    for (wb::DotOrder o : {wb::DotOrder::kRow, wb::DotOrder::kLlamafile, wb::DotOrder::kGemv, wb::DotOrder::kGemm})
        for (int n : {32, 1056, 2048}) add(GgmlType::IQ4_NL, o, n);
    for (wb::DotOrder o : {wb::DotOrder::kGemv, wb::DotOrder::kGemm}) add(GgmlType::Q4_0, o, 1056);
    add(GgmlType::IQ4_XS, wb::DotOrder::kRow, 2048);
    add(GgmlType::IQ4_XS, wb::DotOrder::kTiled, 2048);
    add(GgmlType::TQ1_0, wb::DotOrder::kRow, 2048);
    add(GgmlType::TQ2_0, wb::DotOrder::kRow, 2048);
}

void TestQuant::iq4_tq_and_repacked_q4_0_dots_follow_llama_cpp_orders() {
    QFETCH(uint32_t, type);
    QFETCH(int, order);
    QFETCH(int, n);
    const auto t = GgmlType(type);
    const auto o = wb::DotOrder(order);
    const int rows = 48;
    std::mt19937 rng(uint32_t(type) * 131u + uint32_t(order) * 7u + uint32_t(n));
    std::vector<uint8_t> w;
    for (int r = 0; r < rows; ++r) {
        const std::vector<uint8_t> row = random_weights(rng, t, n);
        w.insert(w.end(), row.begin(), row.end());
    }
    const size_t stride = wb::ggml_row_bytes(t, n);
    std::vector<float> x = random_floats(rng, n, -1.0f, 1.0f);
    for (int64_t i = 0; i < n; i += 37) x[size_t(i)] *= 150.0f;
    std::vector<uint8_t> xq(wb::activation_row_bytes(t, n));
    wb::quantize_activations(t, x.data(), xq.data(), n);

    std::vector<float> want(rows);
    for (int r = 0; r < rows; ++r) {
        const uint8_t* wr = w.data() + size_t(r) * stride;
        want[size_t(r)] = wb::vec_dot_type(t) == GgmlType::Q8_0
                              ? wb_test::q8_0_order_ref(t, o, wr, reinterpret_cast<const wb::BlockQ8_0*>(xq.data()), n)
                              : wb_test::q8_k_order_ref(t, o, wr, reinterpret_cast<const wb::BlockQ8_K*>(xq.data()), n);
    }
    for (bool scalar : {false, true}) {
        std::unique_ptr<ScalarKernels> force;
        if (scalar) force = std::make_unique<ScalarKernels>();
        std::vector<float> got(rows, 0.0f);
        wb::vec_dot_rows(t, n, w.data(), stride, rows, xq.data(), got.data(), o);
        for (int r = 0; r < rows; ++r) {
            uint32_t g, e;
            std::memcpy(&g, &got[size_t(r)], 4);
            std::memcpy(&e, &want[size_t(r)], 4);
            QVERIFY2(g == e, qPrintable(QString("%1 row %2: %3 (0x%4), llama.cpp's order gives %5 (0x%6)")
                                            .arg(wb::quant_kernel_name()).arg(r).arg(double(got[size_t(r)]), 0, 'g', 9)
                                            .arg(g, 8, 16, QChar('0')).arg(double(want[size_t(r)]), 0, 'g', 9)
                                            .arg(e, 8, 16, QChar('0'))));
        }
    }
}

void TestQuant::f16_weight_dots_follow_llama_cpp_orders_data() {
    QTest::addColumn<int>("order");
    QTest::addColumn<int>("n");
    for (wb::DotOrder o : {wb::DotOrder::kRow, wb::DotOrder::kLlamafile})
        for (int n : {40, 100, 576, 2048}) QTest::addRow("%s/%d", wb_test::dot_order_name(o), n) << int(o) << n;
}

// F16 weights: the activations are rounded to f16 (llama.cpp's vec_dot_type of F16 is F16), and a row
// dot is ggml_vec_dot_f16 (kStep32's lanes, tree and double tail) while tinyBLAS's kLlamafile path has
// one 8-lane accumulator per output (kLanes8): each recomputed from the definitions, bit for bit, in
// both kernel families. Activations of mixed magnitudes, as in a real model.
void TestQuant::f16_weight_dots_follow_llama_cpp_orders() {
    QFETCH(int, order);
    QFETCH(int, n);
    const auto o = wb::DotOrder(order);
    const int rows = 24;
    std::mt19937 rng(uint32_t(order * 17 + n));
    std::vector<uint16_t> w(size_t(rows * n));
    wb::quantize_row(GgmlType::F16, random_floats(rng, rows * n, -0.2f, 0.2f).data(), w.data(), rows * n);
    std::vector<float> x = random_floats(rng, n, -1.0f, 1.0f);
    for (int64_t i = 0; i < n; i += 37) x[size_t(i)] *= 150.0f;
    std::vector<uint16_t> xq(wb::activation_row_bytes(GgmlType::F16, n) / 2);
    QCOMPARE(xq.size(), size_t(n));
    wb::quantize_activations(GgmlType::F16, x.data(), xq.data(), n);
    for (int i = 0; i < n; ++i) QCOMPARE(xq[size_t(i)], wb::f32_to_fp16(x[size_t(i)]));
    const wb::F16DotOrder def = o == wb::DotOrder::kRow ? wb::F16DotOrder::kStep32 : wb::F16DotOrder::kLanes8;
    for (bool scalar : {false, true}) {
        std::unique_ptr<ScalarKernels> force;
        if (scalar) force = std::make_unique<ScalarKernels>();
        std::vector<float> got(rows, 0.0f);
        wb::vec_dot_rows(GgmlType::F16, n, w.data(), size_t(n) * 2, rows, xq.data(), got.data(), o);
        for (int r = 0; r < rows; ++r) {
            const float want = f16_dot_by_definition(def, n, w.data() + size_t(r * n), xq.data());
            uint32_t g, e;
            std::memcpy(&g, &got[size_t(r)], 4);
            std::memcpy(&e, &want, 4);
            QVERIFY2(g == e, qPrintable(QString("%1 row %2: 0x%3, llama.cpp's order gives 0x%4")
                                            .arg(wb::quant_kernel_name()).arg(r).arg(g, 8, 16, QChar('0'))
                                            .arg(e, 8, 16, QChar('0'))));
        }
    }
}

// ---- F32 and BF16 weights: llama.cpp's orders, written out from its AVX2 build ----

namespace {

float f32_value(float v) { return v; }
float bf16_value(uint16_t b) { return wb::bf16_to_f32(b); }

// llama.cpp's kLlamafile (tinyBLAS) order of one output: 8 lanes of FMAs, ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)).
template <class T, float (*V)(T)>
float lanes8_by_definition(int64_t n, const T* x, const T* y) {
    float l[8] = {};
    for (int64_t i = 0; i < n; ++i) l[i % 8] = std::fma(V(x[i]), V(y[i]), l[i % 8]);
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

// ggml_vec_dot_f32 as its AVX2 build computes it: four 8-wide FMA accumulators over runs of 32, added
// (a0+a2)+(a1+a3), then lo+hi and two hadds (t0+t1)+(t2+t3), in float; the compiler's vectorized tail
// adds the rounded products of groups of 8, then of one group of 4, one by one; the last 0-3 elements
// are fused multiply-adds.
float f32_row_by_definition(int64_t n, const float* x, const float* y) {
    float l[32] = {};
    const int64_t whole = n / 32 * 32;
    for (int64_t i = 0; i < whole; ++i) l[i % 32] = std::fma(x[i], y[i], l[i % 32]);
    float a[8], t[4];
    for (int i = 0; i < 8; ++i) a[i] = (l[i] + l[16 + i]) + (l[8 + i] + l[24 + i]);
    for (int i = 0; i < 4; ++i) t[i] = a[i] + a[i + 4];
    float sum = (t[0] + t[1]) + (t[2] + t[3]);
    int64_t i = whole;
    for (const int64_t by8 = whole + (n - whole) / 8 * 8; i < by8; ++i) sum += x[i] * y[i];
    if (n - i >= 4)
        for (const int64_t e = i + 4; i < e; ++i) sum += x[i] * y[i];
    for (; i < n; ++i) sum = std::fma(x[i], y[i], sum);
    return sum;
}

// ggml_vec_dot_bf16 (AVX2): the same accumulators with FMAs (its mul/add pairs are contracted), added
// (c1+c3)+(c2+c4), then lo+hi, movehl and movehdup: the kLanes8 tree; the tail's rounded products in
// double.
double bf16_row_by_definition(int64_t n, const uint16_t* x, const uint16_t* y) {
    float l[32] = {};
    const int64_t whole = n / 32 * 32;
    for (int64_t i = 0; i < whole; ++i) l[i % 32] = std::fma(bf16_value(x[i]), bf16_value(y[i]), l[i % 32]);
    float c[8];
    for (int i = 0; i < 8; ++i) c[i] = (l[i] + l[16 + i]) + (l[8 + i] + l[24 + i]);
    double sum = ((c[0] + c[4]) + (c[2] + c[6])) + ((c[1] + c[5]) + (c[3] + c[7]));
    for (int64_t i = whole; i < n; ++i) sum += double(bf16_value(x[i]) * bf16_value(y[i]));
    return float(sum);
}

}  // namespace

void TestQuant::f32_and_bf16_weight_dots_follow_llama_cpp_orders_data() {
    QTest::addColumn<uint32_t>("type");
    QTest::addColumn<int>("order");
    QTest::addColumn<int>("n");
    for (GgmlType t : {GgmlType::F32, GgmlType::BF16}) {
        // Row tails of 3 (fused only), 7 (4 + 3 fused), 13 (8 + 4 + 1), 4, 30 (3 x 8 + 4 + 2) and none.
        for (int n : {3, 7, 45, 100, 542, 2048})
            QTest::addRow("%s/row/%d", wb::ggml_type_name(t).c_str(), n) << uint32_t(t) << int(wb::DotOrder::kRow) << n;
        for (int n : {40, 576, 2048})
            QTest::addRow("%s/llamafile/%d", wb::ggml_type_name(t).c_str(), n)
                << uint32_t(t) << int(wb::DotOrder::kLlamafile) << n;
    }
}

// F32 weights dot with the F32 activations, BF16 weights with activations rounded to BF16 (llama.cpp's
// vec_dot_type of BF16 is BF16, rounded to nearest even); every output is its order's definition
// above, bit for bit, in both kernel families, through vec_dot_rows and the 1 x 8 tile.
void TestQuant::f32_and_bf16_weight_dots_follow_llama_cpp_orders() {
    QFETCH(uint32_t, type);
    QFETCH(int, order);
    QFETCH(int, n);
    const auto t = GgmlType(type);
    const auto o = wb::DotOrder(order);
    const bool bf16 = t == GgmlType::BF16;
    const int rows = 24;
    std::mt19937 rng(uint32_t(type * 31 + order * 17 + n));
    const size_t w_row = wb::ggml_row_bytes(t, n);
    std::vector<uint8_t> w(w_row * rows);
    wb::quantize_row(t, random_floats(rng, rows * n, -0.2f, 0.2f).data(), w.data(), rows * n);
    const int cols = wb::kDotTileCols;
    const size_t x_row = wb::activation_row_bytes(t, n);
    QCOMPARE(x_row, size_t(n) * (bf16 ? 2 : 4));
    std::vector<uint8_t> xq(x_row * cols);
    std::vector<std::vector<float>> x(cols);
    for (int c = 0; c < cols; ++c) {
        x[size_t(c)] = random_floats(rng, n, -1.0f, 1.0f);
        for (int64_t i = c; i < n; i += 37) x[size_t(c)][size_t(i)] *= 150.0f;  // mixed magnitudes
        wb::quantize_activations(t, x[size_t(c)].data(), xq.data() + x_row * size_t(c), n);
    }
    for (int i = 0; i < n; ++i) {
        uint32_t u;
        std::memcpy(&u, &x[0][size_t(i)], 4);
        if (bf16) QCOMPARE(reinterpret_cast<const uint16_t*>(xq.data())[i], uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16));
    }
    const auto want = [&](int r, int c) -> float {
        const uint8_t* wr = w.data() + w_row * size_t(r);
        const uint8_t* xc = xq.data() + x_row * size_t(c);
        if (bf16) {
            const auto* a = reinterpret_cast<const uint16_t*>(wr);
            const auto* b = reinterpret_cast<const uint16_t*>(xc);
            return o == wb::DotOrder::kRow ? float(bf16_row_by_definition(n, a, b))
                                           : lanes8_by_definition<uint16_t, bf16_value>(n, a, b);
        }
        const auto* a = reinterpret_cast<const float*>(wr);
        const auto* b = reinterpret_cast<const float*>(xc);
        return o == wb::DotOrder::kRow ? f32_row_by_definition(n, a, b)
                                       : lanes8_by_definition<float, f32_value>(n, a, b);
    };
    const auto same = [](float g, float e) { return std::memcmp(&g, &e, 4) == 0; };
    for (bool scalar : {false, true}) {
        std::unique_ptr<ScalarKernels> force;
        if (scalar) force = std::make_unique<ScalarKernels>();
        std::vector<float> got(rows);
        wb::vec_dot_rows(t, n, w.data(), w_row, rows, xq.data(), got.data(), o);
        for (int r = 0; r < rows; ++r)
            QVERIFY2(same(got[size_t(r)], want(r, 0)),
                     qPrintable(QString("%1 row %2: %3, llama.cpp's order gives %4").arg(wb::quant_kernel_name()).arg(r)
                                    .arg(double(got[size_t(r)]), 0, 'g', 9).arg(double(want(r, 0)), 0, 'g', 9)));
        std::vector<float> tile(static_cast<size_t>(cols));
        wb::vec_dot_tile(t, n, w.data() + w_row * 5, w_row, xq.data(), x_row, tile.data(), 1, o);
        for (int c = 0; c < cols; ++c) QVERIFY2(same(tile[size_t(c)], want(5, c)), qPrintable(QString("tile column %1").arg(c)));
    }
}

// The batch paths of llama.cpp's x86 build (ggml_compute_forward_mul_mat: the repack buffer, the tiled
// K-quant matmul, llamafile's tinyBLAS, the row dots), one expectation per type and shape.
void TestQuant::dot_orders_follow_llama_cpp_paths() {
    using O = wb::DotOrder;
    const auto order = [](GgmlType t, int64_t rows, int64_t n_in, int64_t n_tok, int64_t tok) {
        return wb::llama_cpp_dot_order(t, rows, n_in, n_tok, tok);
    };
    // The float types: tinyBLAS from 2 tokens when it takes the shape (rows % 4, row length % 8), else
    // the row dot (ggml_vec_dot_f32 / _f16 / _bf16).
    for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16}) {
        QCOMPARE(order(t, 256, 256, 1, 0), O::kRow);
        QCOMPARE(order(t, 256, 256, 2, 1), O::kLlamafile);
        QCOMPARE(order(t, 1028, 512, 9, 8), O::kLlamafile);
        QCOMPARE(order(t, 1030, 512, 9, 0), O::kRow);  // 1030 rows: not a multiple of 4
        QCOMPARE(order(t, 256, 514, 9, 0), O::kRow);   // rows of 514: not a multiple of 8
    }
    // Types whose every path rounds as the row dot does.
    for (GgmlType t : {GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::Q4_1, GgmlType::Q5_1,
                       GgmlType::TQ1_0, GgmlType::TQ2_0})
        for (int64_t n_tok : {1, 2, 8, 32}) QCOMPARE(order(t, 256, 256, n_tok, 0), O::kRow);
    // Repacked: groups of 4 through the gemm, the rest through the gemv; otherwise their own paths.
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::IQ4_NL}) {
        QCOMPARE(order(t, 256, 256, 6, 3), O::kGemm);
        QCOMPARE(order(t, 256, 256, 6, 4), O::kGemv);
        QCOMPARE(order(t, 256, 256, 1, 0), O::kGemv);
    }
    QCOMPARE(order(GgmlType::Q4_0, 252, 256, 8, 0), O::kRow);
    QCOMPARE(order(GgmlType::IQ4_NL, 252, 256, 1, 0), O::kRow);
    QCOMPARE(order(GgmlType::IQ4_NL, 252, 256, 2, 0), O::kLlamafile);
    QCOMPARE(order(GgmlType::Q4_K, 252, 256, 7, 0), O::kRow);
    QCOMPARE(order(GgmlType::Q4_K, 252, 256, 8, 0), O::kTiled);
    // The tiled matmul from 8 tokens.
    for (GgmlType t : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ1_S, GgmlType::IQ1_M,
                       GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
                       GgmlType::IQ4_XS}) {
        QCOMPARE(order(t, 256, 256, 7, 0), O::kRow);
        QCOMPARE(order(t, 256, 256, 8, 7), O::kTiled);
    }
}

void TestQuant::f16_row_conversion_is_identical_in_both_families() {
    std::mt19937 rng(5);
    const int64_t n = 203;  // not a multiple of 8: covers the SIMD tails
    std::vector<float> x = random_floats(rng, n, -70000.0f, 70000.0f);  // includes overflow to inf
    for (int64_t i = 0; i < 40; ++i) x[size_t(i)] *= 1e-9f;                // and fp16 subnormals
    std::vector<uint16_t> best(static_cast<size_t>(n)), scalar(static_cast<size_t>(n));
    std::vector<float> back_best(static_cast<size_t>(n)), back_scalar(static_cast<size_t>(n));
    wb::quantize_row(GgmlType::F16, x.data(), best.data(), n);
    wb::dequantize_row(GgmlType::F16, best.data(), back_best.data(), n);
    {
        ScalarKernels force;
        wb::quantize_row(GgmlType::F16, x.data(), scalar.data(), n);
        wb::dequantize_row(GgmlType::F16, scalar.data(), back_scalar.data(), n);
    }
    QVERIFY(best == scalar);
    QCOMPARE(std::memcmp(back_best.data(), back_scalar.data(), size_t(n) * sizeof(float)), 0);
}

// The activation quantizers (Q8_0, Q8_1, Q8_K) of both families write the same bytes: random rows
// and the cases where a vector form could differ: values exactly halfway between two codes (round to
// even), an all-zero block, and a block whose largest magnitude occurs with both signs (Q8_K takes
// the first one's sign).
void TestQuant::activation_quantizers_are_identical_in_both_families() {
    std::mt19937 rng(17);
    const int64_t n = 4 * 256;
    std::vector<float> x = random_floats(rng, n, -300.0f, 300.0f);
    for (int64_t i = 256; i < 512; ++i) x[size_t(i)] = 0.0f;                            // a zero Q8_K block
    for (int64_t i = 512; i < 768; ++i) x[size_t(i)] = float(int64_t(i % 255) - 127);  // q = x: exact codes
    x[512] = 127.0f;  // scale 1 (Q8_0/Q8_1 block 16, Q8_K block 2): halves are ties
    for (int64_t i = 513; i < 544; ++i) x[size_t(i)] = float(i - 528) + 0.5f;
    x[601] = -127.0f;
    x[770] = -400.0f;
    x[900] = 400.0f;  // the same magnitude later with the other sign
    for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K}) {
        const size_t bytes = wb::ggml_row_bytes(t, n);
        std::vector<uint8_t> best(bytes), scalar(bytes);
        wb::quantize_row(t, x.data(), best.data(), n);
        {
            ScalarKernels force;
            wb::quantize_row(t, x.data(), scalar.data(), n);
        }
        QVERIFY2(best == scalar, wb::ggml_type_name(t).c_str());
    }
}

void TestQuant::f16_attention_products_follow_their_orders_data() {
    QTest::addColumn<int>("order");
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("n_keys");
    QTest::addColumn<int>("g");  // query heads of the kv head
    for (int order : {int(wb::F16DotOrder::kLanes8), int(wb::F16DotOrder::kStep32)}) {
        const char* name = order == int(wb::F16DotOrder::kLanes8) ? "lanes8" : "step32";
        for (int n : {64, 256, 40, 100}) QTest::addRow("%s n=%d", name, n) << order << n << 37 << 3;
        // more keys than the value kernels convert at a time (256), a run not starting at lane 0 across it
        QTest::addRow("%s n=64 keys=301", name) << order << 64 << 301 << 3;
        // the avx512 scores' unrolled forms (head dims 64, 128, 256 with up to 4 heads) and their loop
        // form beyond 4 heads
        for (auto [n, g] : {std::pair{128, 4}, std::pair{256, 1}, std::pair{64, 2}, std::pair{64, 5}, std::pair{128, 8}})
            QTest::addRow("%s n=%d g=%d", name, n, g) << order << n << 41 << g;
    }
}

// The attention's f16 products: dot_f16_f16 is its order's definition bit for bit, and the decode
// attention's run kernels (one key row for several query heads; several value rows into lanes) give
// exactly what one dot_f16_f16 / fma_f16_row call per key and head gives. In both kernel families.
void TestQuant::f16_attention_products_follow_their_orders() {
    QFETCH(int, order);
    QFETCH(int, n);
    QFETCH(int, n_keys);
    QFETCH(int, g);
    const auto ord = wb::F16DotOrder(order);
    std::mt19937 rng(uint32_t(11 + n + 1000 * order + n_keys + 7 * g));
    const int64_t stride = n + 24;  // keys of a cache row laid out with a gap
    std::vector<uint16_t> k(size_t(n_keys * stride)), q16(size_t(g * n));
    wb::quantize_row(GgmlType::F16, random_floats(rng, n_keys * stride, -3.0f, 3.0f).data(), k.data(), n_keys * stride);
    wb::quantize_row(GgmlType::F16, random_floats(rng, g * n, -3.0f, 3.0f).data(), q16.data(), g * n);
    std::vector<float> qf(size_t(g * n)), p(size_t(g * n_keys));
    wb::dequantize_row(GgmlType::F16, q16.data(), qf.data(), g * n);
    for (auto& v : p) v = wb::fp16_to_f32(wb::f32_to_fp16(std::uniform_real_distribution<float>(0.0f, 1.0f)(rng)));
    const int n_lanes = wb::f16_dot_lanes(ord);

    for (bool scalar : {false, true}) {
        std::unique_ptr<ScalarKernels> force;
        if (scalar) force = std::make_unique<ScalarKernels>();
        std::vector<float> scores(size_t(g * n_keys));
        wb::dot_f16_keys(ord, n, k.data(), stride, n_keys, qf.data(), n, int(g), scores.data(), n_keys);
        for (int64_t j = 0; j < n_keys; ++j)
            for (int64_t i = 0; i < g; ++i) {
                const uint16_t* kj = k.data() + j * stride;
                const float want = f16_dot_by_definition(ord, n, kj, q16.data() + i * n);
                const float one = wb::dot_f16_f16(ord, n, kj, q16.data() + i * n), run = scores[size_t(i * n_keys + j)];
                // memcmp: QCOMPARE's float compare is fuzzy, and a reduction in another order is off by an ulp
                QVERIFY2(std::memcmp(&one, &want, sizeof want) == 0, qPrintable(QString("key %1 head %2: dot_f16_f16").arg(j).arg(i)));
                QVERIFY2(std::memcmp(&run, &want, sizeof want) == 0, qPrintable(QString("key %1 head %2: dot_f16_keys").arg(j).arg(i)));
            }

        // Keys 5.. go to lanes starting at 5 % n_lanes, as the decode attention's runs do.
        std::vector<float> lanes(size_t(g * n_lanes * n), 0.0f), want(lanes.size(), 0.0f);
        const int64_t lane0 = 5;
        wb::fma_f16_keys(n, k.data(), stride, n_keys, lane0, n_lanes, p.data(), n_keys, int(g), lanes.data(), n_lanes * n);
        for (int64_t j = 0; j < n_keys; ++j)
            for (int64_t i = 0; i < g; ++i)
                wb::fma_f16_row(p[size_t(i * n_keys + j)], k.data() + j * stride,
                                want.data() + i * n_lanes * n + ((lane0 + j) % n_lanes) * n, n);
        QCOMPARE(std::memcmp(lanes.data(), want.data(), lanes.size() * sizeof(float)), 0);

        // The attention's outputs: every dim's lanes summed in the order's tree, all dims in one call.
        std::vector<float> sums(static_cast<size_t>(n));
        for (int64_t i = 0; i < g; ++i) {
            const float* li = lanes.data() + i * n_lanes * n;
            wb::sum_f16_dot_lanes_by_dim(ord, li, n, n, sums.data());
            for (int64_t d = 0; d < n; ++d) {
                float gathered[32];
                for (int l = 0; l < n_lanes; ++l) gathered[l] = li[l * n + d];
                const float by_definition = f16_lane_tree_by_definition(ord, gathered);
                QCOMPARE(wb::sum_f16_dot_lanes(ord, gathered), by_definition);
                QVERIFY2(std::memcmp(&sums[size_t(d)], &by_definition, sizeof(float)) == 0, qPrintable(QString("dim %1").arg(d)));
            }
        }
    }
}

void TestQuant::vec_dot_types_follow_llama_cpp() {
    QCOMPARE(wb::vec_dot_type(GgmlType::F32), GgmlType::F32);
    QCOMPARE(wb::vec_dot_type(GgmlType::F16), GgmlType::F16);  // activations rounded to f16, as llama.cpp's
    QCOMPARE(wb::vec_dot_type(GgmlType::BF16), GgmlType::BF16);  // activations rounded to bf16, as llama.cpp's
    QCOMPARE(wb::vec_dot_type(GgmlType::Q4_0), GgmlType::Q8_0);
    QCOMPARE(wb::vec_dot_type(GgmlType::Q5_0), GgmlType::Q8_0);
    QCOMPARE(wb::vec_dot_type(GgmlType::Q8_0), GgmlType::Q8_0);
    QCOMPARE(wb::vec_dot_type(GgmlType::Q4_1), GgmlType::Q8_1);
    QCOMPARE(wb::vec_dot_type(GgmlType::Q5_1), GgmlType::Q8_1);
    QCOMPARE(wb::vec_dot_type(GgmlType::Q2_K), GgmlType::Q8_K);
    QCOMPARE(wb::vec_dot_type(GgmlType::Q6_K), GgmlType::Q8_K);
    QCOMPARE(wb::vec_dot_type(GgmlType::IQ4_NL), GgmlType::Q8_0);
    QCOMPARE(wb::vec_dot_type(GgmlType::IQ4_XS), GgmlType::Q8_K);
    QCOMPARE(wb::vec_dot_type(GgmlType::TQ1_0), GgmlType::Q8_K);
    QCOMPARE(wb::vec_dot_type(GgmlType::TQ2_0), GgmlType::Q8_K);
    QCOMPARE(wb::activation_row_bytes(GgmlType::IQ4_NL, 96), size_t(3 * 34));
    QCOMPARE(wb::activation_row_bytes(GgmlType::Q4_1, 576), size_t(18 * 36));
    QCOMPARE(wb::activation_row_bytes(GgmlType::Q4_K, 512), size_t(2 * 292));
    QCOMPARE(wb::activation_row_bytes(GgmlType::F16, 10), size_t(20));
    QCOMPARE(wb::activation_row_bytes(GgmlType::F32, 10), size_t(40));
}

void TestQuant::unsupported_type_throws_naming_it_data() {
    QTest::addColumn<uint32_t>("type");
    QTest::addColumn<QString>("name");
    QTest::newRow("I8") << uint32_t(GgmlType::I8) << "I8";
    QTest::newRow("MXFP4") << uint32_t(GgmlType::MXFP4) << "MXFP4";
    QTest::newRow("undefined 99") << 99u << "type_99";
}

void TestQuant::unsupported_type_throws_naming_it() {
    QFETCH(uint32_t, type);
    QFETCH(QString, name);
    const auto t = GgmlType(type);
    std::vector<uint8_t> buf(4096);
    std::vector<float> f(256);
    const auto expect_error = [&](const char* what, const std::function<void()>& call) {
        try {
            call();
        } catch (const wb::Error& e) {
            QVERIFY2(QString(e.what()).contains(name), qPrintable(QString("%1: message '%2' does not name %3").arg(what, e.what(), name)));
            return;
        }
        QFAIL(qPrintable(QString("%1 did not throw for %2").arg(what, name)));
    };
    expect_error("dequantize_row", [&] { wb::dequantize_row(t, buf.data(), f.data(), 256); });
    expect_error("vec_dot_type", [&] { wb::vec_dot_type(t); });
    expect_error("llama_cpp_dot_order", [&] { wb::llama_cpp_dot_order(t, 8, 256, 8, 0); });
    expect_error("vec_dot", [&] { wb::vec_dot(t, 256, buf.data(), buf.data()); });
    expect_error("vec_dot_rows", [&] { wb::vec_dot_rows(t, 256, buf.data(), 0, 1, buf.data(), f.data()); });
    expect_error("quantize_row", [&] { wb::quantize_row(t, f.data(), buf.data(), 256); });
    expect_error("quantize_activations", [&] { wb::quantize_activations(t, f.data(), buf.data(), 256); });
}

void TestQuant::partial_block_row_throws() {
    std::vector<uint8_t> buf(4096);
    std::vector<float> f(512);
    QVERIFY_THROWS_EXCEPTION(wb::Error, wb::dequantize_row(GgmlType::Q4_0, buf.data(), f.data(), 33));
    QVERIFY_THROWS_EXCEPTION(wb::Error, wb::vec_dot(GgmlType::Q4_K, 576, buf.data(), buf.data()));
    QVERIFY_THROWS_EXCEPTION(wb::Error, wb::quantize_activations(GgmlType::Q6_K, f.data(), buf.data(), 288));
    QVERIFY_THROWS_EXCEPTION(wb::Error, wb::quantize_row(GgmlType::Q2_K, f.data(), buf.data(), 256));  // no quantizer
}

QTEST_GUILESS_MAIN(TestQuant)
#include "test_quant.moc"
