// Portable kernels: the reference every SIMD family is tested against, and the fallback on CPUs
// without AVX2. Also the quantizers, which both families share.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "quant/quant_blocks.h"
#include "quant/quant_internal.h"

namespace wb {

namespace {

// ---- legacy 32-blocks: integer dot per block, one float multiply-add per block ----

float dot_q4_0(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const BlockQ4_0*>(w);
    const auto* bx = static_cast<const BlockQ8_0*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
            sumi += ((bw[i].qs[j] & 0xF) - 8) * bx[i].qs[j];
            sumi += ((bw[i].qs[j] >> 4) - 8) * bx[i].qs[j + 16];
        }
        sum += fp16_to_f32(bw[i].d) * fp16_to_f32(bx[i].d) * float(sumi);
    }
    return sum;
}

// sum((d*q + m) * dx*qx) = d*dx*sum(q*qx) + m*s, with s = dx*sum(qx) precomputed in the Q8_1 block.
float dot_q4_1(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const BlockQ4_1*>(w);
    const auto* bx = static_cast<const BlockQ8_1*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        int sumi = 0;
        for (int j = 0; j < 16; ++j) {
            sumi += (bw[i].qs[j] & 0xF) * bx[i].qs[j];
            sumi += (bw[i].qs[j] >> 4) * bx[i].qs[j + 16];
        }
        sum += fp16_to_f32(bw[i].d) * fp16_to_f32(bx[i].d) * float(sumi);
        sum += fp16_to_f32(bw[i].m) * fp16_to_f32(bx[i].s);
    }
    return sum;
}

float dot_q5_0(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const BlockQ5_0*>(w);
    const auto* bx = static_cast<const BlockQ8_0*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        const uint32_t h = q5_high_bits(bw[i].qh);
        int sumi = 0;
        for (int j = 0; j < kQK; ++j) sumi += (q5_value(bw[i].qs, h, j) - 16) * bx[i].qs[j];
        sum += fp16_to_f32(bw[i].d) * fp16_to_f32(bx[i].d) * float(sumi);
    }
    return sum;
}

float dot_q5_1(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const BlockQ5_1*>(w);
    const auto* bx = static_cast<const BlockQ8_1*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        const uint32_t h = q5_high_bits(bw[i].qh);
        int sumi = 0;
        for (int j = 0; j < kQK; ++j) sumi += q5_value(bw[i].qs, h, j) * bx[i].qs[j];
        sum += fp16_to_f32(bw[i].d) * fp16_to_f32(bx[i].d) * float(sumi);
        sum += fp16_to_f32(bw[i].m) * fp16_to_f32(bx[i].s);
    }
    return sum;
}

float dot_q8_0(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const BlockQ8_0*>(w);
    const auto* bx = static_cast<const BlockQ8_0*>(x);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        int sumi = 0;
        for (int j = 0; j < kQK; ++j) sumi += bw[i].qs[j] * bx[i].qs[j];
        sum += fp16_to_f32(bw[i].d) * fp16_to_f32(bx[i].d) * float(sumi);
    }
    return sum;
}

// ---- K-quants: every type unpacks to the same shape, value = d*scale[k]*q - dmin*min[k] for the
// 16 sub-blocks k of 16 elements, so one integer kernel serves all of them ----

struct KUnpacked {
    float d = 0.0f;
    float dmin = 0.0f;
    int8_t q[kQKK];
    int scale[kQKK / 16];
    int min[kQKK / 16] = {};
};

void unpack(const BlockQ2_K& b, KUnpacked& u) {
    u.d = fp16_to_f32(b.d);
    u.dmin = fp16_to_f32(b.dmin);
    for (int k = 0; k < 16; ++k) {
        u.scale[k] = b.scales[k] & 0xF;
        u.min[k] = b.scales[k] >> 4;
    }
    for (int h = 0; h < 2; ++h)
        for (int j = 0; j < 4; ++j)
            for (int l = 0; l < 32; ++l) u.q[128 * h + 32 * j + l] = int8_t((b.qs[32 * h + l] >> (2 * j)) & 3);
}

void unpack(const BlockQ3_K& b, KUnpacked& u) {
    u.d = fp16_to_f32(b.d);
    for (int k = 0; k < 16; ++k) u.scale[k] = q3k_scale(k, b.scales);
    for (int h = 0; h < 2; ++h) {
        for (int j = 0; j < 4; ++j) {
            for (int l = 0; l < 32; ++l) {
                const int low = (b.qs[32 * h + l] >> (2 * j)) & 3;
                const bool high = (b.hmask[l] >> (4 * h + j)) & 1;
                u.q[128 * h + 32 * j + l] = int8_t(low - (high ? 0 : 4));
            }
        }
    }
}

void unpack(const BlockQ4_K& b, KUnpacked& u) {
    u.d = fp16_to_f32(b.d);
    u.dmin = fp16_to_f32(b.dmin);
    for (int j = 0; j < 8; ++j) {
        int sc, mn;
        k4_scale_min(j, b.scales, sc, mn);
        u.scale[2 * j] = u.scale[2 * j + 1] = sc;
        u.min[2 * j] = u.min[2 * j + 1] = mn;
    }
    for (int c = 0; c < 4; ++c) {
        for (int l = 0; l < 32; ++l) {
            u.q[64 * c + l] = int8_t(b.qs[32 * c + l] & 0xF);
            u.q[64 * c + 32 + l] = int8_t(b.qs[32 * c + l] >> 4);
        }
    }
}

void unpack(const BlockQ5_K& b, KUnpacked& u) {
    u.d = fp16_to_f32(b.d);
    u.dmin = fp16_to_f32(b.dmin);
    for (int j = 0; j < 8; ++j) {
        int sc, mn;
        k4_scale_min(j, b.scales, sc, mn);
        u.scale[2 * j] = u.scale[2 * j + 1] = sc;
        u.min[2 * j] = u.min[2 * j + 1] = mn;
    }
    for (int c = 0; c < 4; ++c) {
        for (int l = 0; l < 32; ++l) {
            u.q[64 * c + l] = int8_t((b.qs[32 * c + l] & 0xF) | (((b.qh[l] >> (2 * c)) & 1) << 4));
            u.q[64 * c + 32 + l] = int8_t((b.qs[32 * c + l] >> 4) | (((b.qh[l] >> (2 * c + 1)) & 1) << 4));
        }
    }
}

void unpack(const BlockQ6_K& b, KUnpacked& u) {
    u.d = fp16_to_f32(b.d);
    for (int k = 0; k < 16; ++k) u.scale[k] = b.scales[k];
    for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = b.ql + 64 * h;
        const uint8_t* qh = b.qh + 32 * h;
        int8_t* q = u.q + 128 * h;
        for (int l = 0; l < 32; ++l) {
            q[l] = int8_t(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
            q[l + 32] = int8_t(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
            q[l + 64] = int8_t(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            q[l + 96] = int8_t(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
    }
}

// The exact integer parts of a block: sumi = sum_k scale[k] * sum(q * y) over the 16 sub-blocks,
// summ = sum_k min[k] * (activation sum of sub-block k).
void unpacked_ints(const KUnpacked& u, const BlockQ8_K& x, int& sumi, int& summ) {
    sumi = 0;
    summ = 0;  // the min terms only need the sub-block sums of the activations
    for (int k = 0; k < 16; ++k) {
        int s = 0;
        for (int l = 0; l < 16; ++l) s += u.q[16 * k + l] * x.qs[16 * k + l];
        sumi += u.scale[k] * s;
        summ += u.min[k] * x.bsums[k];
    }
}

template <class Block>
float dot_kquant(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const Block*>(w);
    const auto* bx = static_cast<const BlockQ8_K*>(x);
    KUnpacked u;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        unpack(bw[i], u);
        int sumi, summ;
        unpacked_ints(u, bx[i], sumi, summ);
        sum += bx[i].d * (u.d * float(sumi) - u.dmin * float(summ));
    }
    return sum;
}

// DotOrder::kTiled, the order of llama.cpp's tiled K-quant matmul, which the AVX2 family follows too:
// the float operations are fixed and the integer parts exact, so both families agree bit for bit.
template <class Block, bool kHasMin>
float dot_kquant_tiled(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const Block*>(w);
    const auto* bx = static_cast<const BlockQ8_K*>(x);
    KUnpacked u;
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        unpack(bw[i], u);
        int sumi, summ;
        unpacked_ints(u, bx[i], sumi, summ);
        float r = u.d * float(sumi);
        if constexpr (kHasMin) r = std::fma(-u.dmin, float(summ), r);
        acc = std::fma(r, bx[i].d, acc);
    }
    return acc;
}

// ---- IQ4_NL, IQ4_XS, TQ1_0, TQ2_0 in llama.cpp's x86 orders ----
//
// Unlike the reference dots above, these follow the AVX2 kernels float operation by float operation:
// the integer lanes are exact, and every float step is the same correctly rounded operation, so both
// families (and llama.cpp's x86 build) agree bit for bit. Lane k of a block holds elements
// 4k..4k+3 of every run of 32, as _mm256_madd_epi16 leaves them.

// A block's 8 exact integer lanes and the float scale the kernel applies to them.
struct Lanes8 {
    float d;
    int lane[8];
};

int lane_sum(const Lanes8& b) {
    int s = 0;
    for (int v : b.lane) s += v;
    return s;
}

Lanes8 iq4_nl_lanes(const BlockIQ4_NL& w, const BlockQ8_0& x) {
    Lanes8 b{fp16_to_f32(w.d) * fp16_to_f32(x.d), {}};
    for (int j = 0; j < 16; ++j) {
        b.lane[j / 4] += iq4nl_value(w.qs[j] & 0xF) * x.qs[j];
        b.lane[4 + j / 4] += iq4nl_value(w.qs[j] >> 4) * x.qs[j + 16];
    }
    return b;
}

// The group scales multiply inside the lanes (in integers), d_w*d_x outside.
Lanes8 iq4_xs_lanes(const BlockIQ4_XS& w, const BlockQ8_K& x) {
    Lanes8 b{fp16_to_f32(w.d) * x.d, {}};
    for (int g = 0; g < 8; ++g) {
        const int ls = iq4xs_scale(w, g);
        for (int j = 0; j < 16; ++j) {
            b.lane[j / 4] += ls * iq4nl_value(w.qs[16 * g + j] & 0xF) * x.qs[32 * g + j];
            b.lane[4 + j / 4] += ls * iq4nl_value(w.qs[16 * g + j] >> 4) * x.qs[32 * g + 16 + j];
        }
    }
    return b;
}

// Ternary lanes: the codes (0..2) times the activations, and the -1 of every value taken off as
// activation sums, lane k losing those of elements 32k..32k+31 (bsums 2k and 2k+1), as the AVX2
// kernel subtracts the 16 bsums from its 16-bit pair sums.
template <class Block, int (*Code)(const Block&, int)>
Lanes8 ternary_lanes(const Block& w, const BlockQ8_K& x) {
    Lanes8 b{x.d * fp16_to_f32(w.d), {}};
    for (int e = 0; e < kQKK; ++e) b.lane[e % 32 / 4] += Code(w, e) * x.qs[e];
    for (int k = 0; k < 8; ++k) b.lane[k] -= x.bsums[2 * k] + x.bsums[2 * k + 1];
    return b;
}

// One 8-lane accumulator, acc[k] = fma(d, lane k, acc[k]) block by block, summed in _mm256 order.
template <class BW, class BX, Lanes8 (*Lanes)(const BW&, const BX&)>
float dot_lanes8(int64_t n, const void* w, const void* x) {
    constexpr int64_t elems = std::is_same_v<BX, BlockQ8_K> ? kQKK : kQK;
    const auto* bw = static_cast<const BW*>(w);
    const auto* bx = static_cast<const BX*>(x);
    float acc[8] = {};
    for (int64_t i = 0; i < n / elems; ++i) {
        const Lanes8 b = Lanes(bw[i], bx[i]);
        for (int k = 0; k < 8; ++k) acc[k] = std::fma(b.d, float(b.lane[k]), acc[k]);
    }
    return sum_lanes8(acc);
}

// IQ4_NL's row dot (ggml_vec_dot_iq4_nl_q8_0): blocks in pairs, the even one into one 8-lane
// accumulator and the odd one into another, the two added lane by lane before the horizontal sum;
// an odd last block is added after it with a separate multiply and add (llama.cpp's build does
// not fuse that scalar tail).
float dot_iq4_nl_row(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const BlockIQ4_NL*>(w);
    const auto* bx = static_cast<const BlockQ8_0*>(x);
    const int64_t nb = n / kQK;
    float acc[2][8] = {};
    int64_t i = 0;
    for (; i + 1 < nb; i += 2)
        for (int h = 0; h < 2; ++h) {
            const Lanes8 b = iq4_nl_lanes(bw[i + h], bx[i + h]);
            for (int k = 0; k < 8; ++k) acc[h][k] = std::fma(b.d, float(b.lane[k]), acc[h][k]);
        }
    float both[8];
    for (int k = 0; k < 8; ++k) both[k] = acc[0][k] + acc[1][k];
    float sum = sum_lanes8(both);
    if (i < nb) {
        const Lanes8 b = iq4_nl_lanes(bw[i], bx[i]);
        const float term = b.d * float(lane_sum(b));
        sum += term;
    }
    return sum;
}

// Q4_0 and IQ4_NL in the order of llama.cpp's repacked gemv/gemm (DotOrder::kGemv, kGemm): each
// block's exact sum folded into one float, acc = fma(sum, d_w*d_x, acc).
Lanes8 q4_0_lanes(const BlockQ4_0& w, const BlockQ8_0& x) {
    Lanes8 b{fp16_to_f32(w.d) * fp16_to_f32(x.d), {}};
    for (int j = 0; j < 16; ++j) {
        b.lane[j / 4] += ((w.qs[j] & 0xF) - 8) * x.qs[j];
        b.lane[4 + j / 4] += ((w.qs[j] >> 4) - 8) * x.qs[j + 16];
    }
    return b;
}

template <class BW, Lanes8 (*Lanes)(const BW&, const BlockQ8_0&)>
float dot_block_sums(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const BW*>(w);
    const auto* bx = static_cast<const BlockQ8_0*>(x);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQK; ++i) {
        const Lanes8 b = Lanes(bw[i], bx[i]);
        acc = std::fma(float(lane_sum(b)), b.d, acc);
    }
    return acc;
}

// IQ4_XS in llama.cpp's tiled order (DotOrder::kTiled): r = d_w * sum, acc = fma(r, d_x, acc).
float dot_iq4_xs_tiled(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const BlockIQ4_XS*>(w);
    const auto* bx = static_cast<const BlockQ8_K*>(x);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const float r = fp16_to_f32(bw[i].d) * float(lane_sum(iq4_xs_lanes(bw[i], bx[i])));
        acc = std::fma(r, bx[i].d, acc);
    }
    return acc;
}

// ---- F32 and BF16 weights in llama.cpp's orders (quant.h; F32 activations, resp. rounded to BF16) ----

float to_f32(float v) { return v; }
float to_f32_bf16(uint16_t v) { return bf16_to_f32(v); }

// ggml_vec_dot_f32 as GCC builds it for AVX2+FMA: four 8-lane FMA accumulators over the runs of 32
// (element i in lane i % 32), summed in kStep32's tree into a float; then the elements past the last
// run as the compiler vectorized that loop: groups of 8, then one of 4, each product rounded and added
// one by one in order, and the last 0-3 elements with a fused multiply-add each.
float dot_f32_row(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const float*>(w);
    const auto* b = static_cast<const float*>(x);
    float lanes[32] = {};
    const int64_t whole = n / 32 * 32;
    for (int64_t i = 0; i < whole; ++i) lanes[i % 32] = std::fma(a[i], b[i], lanes[i % 32]);
    float sum = sum_lanes32(lanes);
    const int64_t rest = n - whole;
    const int64_t rounded = whole + rest / 8 * 8 + (rest % 8 >= 4 ? 4 : 0);
    int64_t i = whole;
    for (; i < rounded; ++i) sum += a[i] * b[i];  // this file is built with -ffp-contract=off
    for (; i < n; ++i) sum = std::fma(a[i], b[i], sum);
    return sum;
}

// ggml_vec_dot_bf16 (AVX2) over activations rounded to BF16: the same 32 lanes (its mul/add pairs
// are contracted to FMAs), the four accumulators added (a0 + a2) + (a1 + a3) and their 8 lanes in
// kLanes8's tree, then the elements past the last run of 32 as rounded products added in double.
float dot_bf16_row(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const uint16_t*>(w);
    const auto* b = static_cast<const uint16_t*>(x);
    float lanes[32] = {};
    const int64_t whole = n / 32 * 32;
    for (int64_t i = 0; i < whole; ++i)
        lanes[i % 32] = std::fma(bf16_to_f32(a[i]), bf16_to_f32(b[i]), lanes[i % 32]);
    float c[8];
    for (int l = 0; l < 8; ++l) c[l] = (lanes[l] + lanes[16 + l]) + (lanes[8 + l] + lanes[24 + l]);
    double sum = 0.0;
    sum += sum_lanes8(c);
    for (int64_t i = whole; i < n; ++i) sum += double(bf16_to_f32(a[i]) * bf16_to_f32(b[i]));
    return float(sum);
}

// tinyBLAS's float kernel (the kLlamafile order): one 8-lane FMA accumulator per output, its kLanes8
// sum. tinyBLAS takes only rows of whole runs of 8; a tail is added in order, as dot_f16_lanes8 does.
template <class T, float (*Convert)(T)>
float dot_float_lanes8(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const T*>(w);
    const auto* b = static_cast<const T*>(x);
    float lanes[8] = {};
    const int64_t whole = n / 8 * 8;
    for (int64_t i = 0; i < whole; ++i) lanes[i % 8] = std::fma(Convert(a[i]), Convert(b[i]), lanes[i % 8]);
    float sum = sum_lanes8(lanes);
    for (int64_t i = whole; i < n; ++i) sum += Convert(a[i]) * Convert(b[i]);
    return sum;
}

// ---- attention's F16 products: lanes of correctly rounded FMAs, as the AVX2 family computes them ----

float dot_f16_lanes8(int64_t n, const uint16_t* x, const uint16_t* y) {
    float lanes[8] = {};
    const int64_t whole = n / 8 * 8;
    for (int64_t i = 0; i < whole; ++i) lanes[i % 8] = std::fma(fp16_to_f32(x[i]), fp16_to_f32(y[i]), lanes[i % 8]);
    float sum = sum_lanes8(lanes);
    for (int64_t i = whole; i < n; ++i) sum += fp16_to_f32(x[i]) * fp16_to_f32(y[i]);
    return sum;
}

float dot_f16_step32(int64_t n, const uint16_t* x, const uint16_t* y) {
    float lanes[32] = {};
    const int64_t whole = n / 32 * 32;
    for (int64_t i = 0; i < whole; ++i)
        lanes[i % 32] = std::fma(fp16_to_f32(x[i]), fp16_to_f32(y[i]), lanes[i % 32]);
    double sum = sum_lanes32(lanes);
    for (int64_t i = whole; i < n; ++i) sum += double(fp16_to_f32(x[i]) * fp16_to_f32(y[i]));
    return float(sum);
}

// F16 weights against activations rounded to F16 (quant.h): ggml_vec_dot_f16's order for a row,
// tinyBLAS's 8 lanes for the kLlamafile order.
float dot_f16_weights_step32(int64_t n, const void* w, const void* x) {
    return dot_f16_step32(n, static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(x));
}
float dot_f16_weights_lanes8(int64_t n, const void* w, const void* x) {
    return dot_f16_lanes8(n, static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(x));
}

void fma_f16_row_scalar(float a, const uint16_t* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::fma(a, fp16_to_f32(x[i]), y[i]);
}

// The definitions of quant.h, key by key and head by head.
void dot_f16_keys_scalar(F16DotOrder order, int64_t n, const uint16_t* k, int64_t k_stride, int64_t n_keys, const float* q,
                  int64_t q_stride, int g, float* out, int64_t out_stride) {
    const int n_lanes = f16_dot_lanes(order);
    const int64_t whole = n / n_lanes * n_lanes;
    for (int64_t j = 0; j < n_keys; ++j) {
        const uint16_t* kj = k + j * k_stride;
        for (int i = 0; i < g; ++i) {
            const float* qi = q + i * q_stride;
            float lanes[32] = {};
            for (int64_t e = 0; e < whole; ++e) lanes[e % n_lanes] = std::fma(fp16_to_f32(kj[e]), qi[e], lanes[e % n_lanes]);
            float& o = out[i * out_stride + j];
            if (order == F16DotOrder::kLanes8) {
                float sum = sum_lanes8(lanes);
                for (int64_t e = whole; e < n; ++e) sum += fp16_to_f32(kj[e]) * qi[e];
                o = sum;
            } else {
                double sum = sum_lanes32(lanes);
                for (int64_t e = whole; e < n; ++e) sum += double(fp16_to_f32(kj[e]) * qi[e]);
                o = float(sum);
            }
        }
    }
}

void fma_f16_keys_scalar(int64_t n, const uint16_t* v, int64_t v_stride, int64_t n_keys, int64_t lane0, int n_lanes,
                  const float* p, int64_t p_stride, int g, float* lanes, int64_t lanes_stride) {
    for (int64_t j = 0; j < n_keys; ++j) {
        const int64_t lane = (lane0 + j) % n_lanes;
        for (int i = 0; i < g; ++i)
            fma_f16_row_scalar(p[i * p_stride + j], v + j * v_stride, lanes + i * lanes_stride + lane * n, n);
    }
}

// ---- quantizer helpers ----

float block_amax(const float* x, int count) {
    float amax = 0.0f;
    for (int j = 0; j < count; ++j) amax = std::max(amax, std::fabs(x[j]));
    return amax;
}

// The value of largest magnitude, sign kept: symmetric 4/5-bit and Q8_K scales are negative
// multiples of it so that the extreme value lands exactly on the wider negative end of the range.
float block_signed_max(const float* x, int count) {
    float amax = 0.0f;
    float max = 0.0f;
    for (int j = 0; j < count; ++j) {
        if (std::fabs(x[j]) > amax) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

// Q8_0 and Q8_1 share everything but s. Returns the unrounded scale; sum receives sum(qs).
float quantize_block_q8(const float* x, int8_t* qs, int& sum) {
    // As llama.cpp: the inverse scale is 127/amax (not 1/d) and rounding is to nearest-even, so the
    // integer activations, and with them the dot products, come out bit-identical.
    const float amax = block_amax(x, kQK);
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    sum = 0;
    for (int j = 0; j < kQK; ++j) {
        qs[j] = int8_t(std::nearbyint(x[j] * id));
        sum += qs[j];
    }
    return d;
}

}  // namespace

KernelTable scalar_kernels() {
    KernelTable t;
    t.name = "scalar";
    t.dot[slot(GgmlType::F32)] = dot_f32_row;
    t.dot_in(DotOrder::kLlamafile, GgmlType::F32) = dot_float_lanes8<float, to_f32>;
    t.dot[slot(GgmlType::F16)] = dot_f16_weights_step32;
    t.dot_in(DotOrder::kLlamafile, GgmlType::F16) = dot_f16_weights_lanes8;
    t.dot[slot(GgmlType::BF16)] = dot_bf16_row;
    t.dot_in(DotOrder::kLlamafile, GgmlType::BF16) = dot_float_lanes8<uint16_t, to_f32_bf16>;
    t.dot[slot(GgmlType::Q4_0)] = dot_q4_0;
    t.dot[slot(GgmlType::Q4_1)] = dot_q4_1;
    t.dot[slot(GgmlType::Q5_0)] = dot_q5_0;
    t.dot[slot(GgmlType::Q5_1)] = dot_q5_1;
    t.dot[slot(GgmlType::Q8_0)] = dot_q8_0;
    t.dot[slot(GgmlType::Q2_K)] = dot_kquant<BlockQ2_K>;
    t.dot[slot(GgmlType::Q3_K)] = dot_kquant<BlockQ3_K>;
    t.dot[slot(GgmlType::Q4_K)] = dot_kquant<BlockQ4_K>;
    t.dot[slot(GgmlType::Q5_K)] = dot_kquant<BlockQ5_K>;
    t.dot[slot(GgmlType::Q6_K)] = dot_kquant<BlockQ6_K>;
    t.dot_in(DotOrder::kTiled, GgmlType::Q2_K) = dot_kquant_tiled<BlockQ2_K, true>;
    t.dot_in(DotOrder::kTiled, GgmlType::Q3_K) = dot_kquant_tiled<BlockQ3_K, false>;
    t.dot_in(DotOrder::kTiled, GgmlType::Q4_K) = dot_kquant_tiled<BlockQ4_K, true>;
    t.dot_in(DotOrder::kTiled, GgmlType::Q5_K) = dot_kquant_tiled<BlockQ5_K, true>;
    t.dot_in(DotOrder::kTiled, GgmlType::Q6_K) = dot_kquant_tiled<BlockQ6_K, false>;
    t.dot[slot(GgmlType::IQ4_NL)] = dot_iq4_nl_row;
    t.dot_in(DotOrder::kLlamafile, GgmlType::IQ4_NL) = dot_lanes8<BlockIQ4_NL, BlockQ8_0, iq4_nl_lanes>;
    for (DotOrder o : {DotOrder::kGemv, DotOrder::kGemm}) {
        t.dot_in(o, GgmlType::Q4_0) = dot_block_sums<BlockQ4_0, q4_0_lanes>;
        t.dot_in(o, GgmlType::IQ4_NL) = dot_block_sums<BlockIQ4_NL, iq4_nl_lanes>;
    }
    t.dot[slot(GgmlType::IQ4_XS)] = dot_lanes8<BlockIQ4_XS, BlockQ8_K, iq4_xs_lanes>;
    t.dot_in(DotOrder::kTiled, GgmlType::IQ4_XS) = dot_iq4_xs_tiled;
    t.dot[slot(GgmlType::TQ1_0)] = dot_lanes8<BlockTQ1_0, BlockQ8_K, ternary_lanes<BlockTQ1_0, tq1_code>>;
    t.dot[slot(GgmlType::TQ2_0)] = dot_lanes8<BlockTQ2_0, BlockQ8_K, ternary_lanes<BlockTQ2_0, tq2_code>>;
    add_iq_grid_scalar_kernels(t);
    t.f16_to_f32 = [](const uint16_t* x, float* y, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_f32(x[i]);
    };
    t.dot_f16_lanes8 = dot_f16_lanes8;
    t.dot_f16_step32 = dot_f16_step32;
    t.fma_f16_row = fma_f16_row_scalar;
    t.dot_f16_keys = dot_f16_keys_scalar;
    t.fma_f16_keys = fma_f16_keys_scalar;
    t.f32_to_f16 = [](const float* x, uint16_t* y, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y[i] = f32_to_fp16(x[i]);
    };
    t.quantize_q8_0 = quantize_row_q8_0;
    t.quantize_q8_1 = quantize_row_q8_1;
    t.quantize_q8_k = quantize_row_q8_k;
    return t;
}

void quantize_row_q8_0(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_0*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i) {
        int sum;
        y[i].d = f32_to_fp16(quantize_block_q8(x + i * kQK, y[i].qs, sum));
    }
}

void quantize_row_q8_1(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_1*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i) {
        int sum;
        const float d = quantize_block_q8(x + i * kQK, y[i].qs, sum);
        y[i].d = f32_to_fp16(d);
        y[i].s = f32_to_fp16(d * float(sum));
    }
}

void quantize_row_q8_k(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ8_K*>(dst);
    for (int64_t i = 0; i < n / kQKK; ++i) {
        const float* xb = x + i * kQKK;
        BlockQ8_K& b = y[i];
        const float max = block_signed_max(xb, kQKK);
        if (max == 0.0f) {
            std::memset(&b, 0, sizeof b);
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < kQKK; ++j) b.qs[j] = int8_t(std::min(127L, std::lrint(iscale * xb[j])));
        for (int k = 0; k < kQKK / 16; ++k) {
            int sum = 0;
            for (int l = 0; l < 16; ++l) sum += b.qs[16 * k + l];
            b.bsums[k] = int16_t(sum);
        }
        b.d = 1.0f / iscale;
    }
}

void quantize_row_q4_0(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ4_0*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i) {
        const float* xb = x + i * kQK;
        const float d = block_signed_max(xb, kQK) / -8.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f32_to_fp16(d);
        for (int j = 0; j < 16; ++j) {
            const int lo = std::min(15, int(xb[j] * id + 8.5f));
            const int hi = std::min(15, int(xb[j + 16] * id + 8.5f));
            y[i].qs[j] = uint8_t(lo | (hi << 4));
        }
    }
}

void quantize_row_q4_1(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ4_1*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i) {
        const float* xb = x + i * kQK;
        const auto [mn, mx] = std::minmax_element(xb, xb + kQK);
        const float d = (*mx - *mn) / 15.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f32_to_fp16(d);
        y[i].m = f32_to_fp16(*mn);
        for (int j = 0; j < 16; ++j) {
            const int lo = std::min(15, int((xb[j] - *mn) * id + 0.5f));
            const int hi = std::min(15, int((xb[j + 16] - *mn) * id + 0.5f));
            y[i].qs[j] = uint8_t(lo | (hi << 4));
        }
    }
}

namespace {

// Q5_0/Q5_1: packs 32 five-bit values into the nibble array and the high-bit word.
void pack_q5(const int* q, uint8_t* qs, uint8_t* qh) {
    uint32_t h = 0;
    for (int j = 0; j < 16; ++j) {
        qs[j] = uint8_t((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
        h |= uint32_t(q[j] >> 4) << j;
        h |= uint32_t(q[j + 16] >> 4) << (j + 16);
    }
    for (int b = 0; b < 4; ++b) qh[b] = uint8_t(h >> (8 * b));
}

}  // namespace

void quantize_row_q5_0(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ5_0*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i) {
        const float* xb = x + i * kQK;
        const float d = block_signed_max(xb, kQK) / -16.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int q[kQK];
        for (int j = 0; j < kQK; ++j) q[j] = std::min(31, int(xb[j] * id + 16.5f));
        y[i].d = f32_to_fp16(d);
        pack_q5(q, y[i].qs, y[i].qh);
    }
}

void quantize_row_q5_1(const float* x, void* dst, int64_t n) {
    auto* y = static_cast<BlockQ5_1*>(dst);
    for (int64_t i = 0; i < n / kQK; ++i) {
        const float* xb = x + i * kQK;
        const auto [mn, mx] = std::minmax_element(xb, xb + kQK);
        const float d = (*mx - *mn) / 31.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        int q[kQK];
        for (int j = 0; j < kQK; ++j) q[j] = std::min(31, int((xb[j] - *mn) * id + 0.5f));
        y[i].d = f32_to_fp16(d);
        y[i].m = f32_to_fp16(*mn);
        pack_q5(q, y[i].qs, y[i].qh);
    }
}

}  // namespace wb
