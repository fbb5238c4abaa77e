// Reference implementations of llama.cpp's x86 dot-product orders (wb::DotOrder), written out plainly
// from the block formats (FACTS.md section 2, FACTS-2.md 3.2) and from llama.cpp's kernels operation by
// operation: what test_quant checks every kernel of both families against, bit for bit.
#include "quant_order_reference.h"

#include <cmath>
#include <cstring>

#include "quant/quant_blocks.h"
#include "util/fp16.h"

using wb::GgmlType;

namespace wb_test {

namespace {

// ---- llama.cpp's K-quant float orders (wb::DotOrder), written out plainly from their definitions ----

// A K-quant block as integers: element e (0..255) is d * scale[e / 16] * (q[e] - offset) - dmin * min[e / 16].
struct KBlockInts {
    float d = 0.0f;
    float dmin = 0.0f;
    int q[256] = {};
    int offset = 0;
    int scale[16] = {};
    int min[16] = {};
};

template <class Block>
Block block_at(const uint8_t* p) {
    Block b;
    std::memcpy(&b, p, sizeof b);
    return b;
}

// Decodes a block straight from the format description (FACTS.md section 2).
KBlockInts decode_k_block(GgmlType t, const uint8_t* p) {
    KBlockInts k;
    switch (t) {
        case GgmlType::Q2_K: {
            const auto b = block_at<wb::BlockQ2_K>(p);
            k.d = wb::fp16_to_f32(b.d);
            k.dmin = wb::fp16_to_f32(b.dmin);
            for (int e = 0; e < 256; ++e) k.q[e] = (b.qs[32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32))) & 3;
            for (int s = 0; s < 16; ++s) {
                k.scale[s] = b.scales[s] & 0xF;
                k.min[s] = b.scales[s] >> 4;
            }
            break;
        }
        case GgmlType::Q3_K: {
            const auto b = block_at<wb::BlockQ3_K>(p);
            k.d = wb::fp16_to_f32(b.d);
            k.offset = 4;
            for (int e = 0; e < 256; ++e) {
                const int h = e / 128, j = e % 128 / 32, l = e % 32;
                k.q[e] = ((b.qs[32 * h + l] >> (2 * j)) & 3) + 4 * ((b.hmask[l] >> (4 * h + j)) & 1);
            }
            for (int s = 0; s < 16; ++s) k.scale[s] = wb::q3k_scale(s, b.scales);
            break;
        }
        case GgmlType::Q4_K:
        case GgmlType::Q5_K: {
            const bool five = t == GgmlType::Q5_K;
            const auto b4 = block_at<wb::BlockQ4_K>(p);
            const auto b5 = block_at<wb::BlockQ5_K>(p);
            k.d = wb::fp16_to_f32(five ? b5.d : b4.d);
            k.dmin = wb::fp16_to_f32(five ? b5.dmin : b4.dmin);
            const uint8_t* qs = five ? b5.qs : b4.qs;
            for (int e = 0; e < 256; ++e) {
                const int c = e / 64, upper = e % 64 / 32, l = e % 32;
                k.q[e] = upper ? qs[32 * c + l] >> 4 : qs[32 * c + l] & 0xF;
                if (five) k.q[e] += ((b5.qh[l] >> (2 * c + upper)) & 1) << 4;
            }
            for (int j = 0; j < 8; ++j) {
                int sc, mn;
                wb::k4_scale_min(j, five ? b5.scales : b4.scales, sc, mn);
                k.scale[2 * j] = k.scale[2 * j + 1] = sc;
                k.min[2 * j] = k.min[2 * j + 1] = mn;
            }
            break;
        }
        default: {  // Q6_K
            const auto b = block_at<wb::BlockQ6_K>(p);
            k.d = wb::fp16_to_f32(b.d);
            k.offset = 32;
            for (int e = 0; e < 256; ++e) {
                const int h = e / 128, r = e % 128 / 32, l = e % 32;
                const uint8_t ql = b.ql[64 * h + 32 * (r % 2) + l];
                k.q[e] = (r < 2 ? ql & 0xF : ql >> 4) | (((b.qh[32 * h + l] >> (2 * r)) & 3) << 4);
            }
            for (int s = 0; s < 16; ++s) k.scale[s] = b.scales[s];
            break;
        }
    }
    return k;
}

// The 8 int32 lanes of llama.cpp's x86 row dots: lane l sums scale * (q - offset) * y over elements
// 4l..4l+3 of every run of 32 (offset 0 where the kernel takes the values unsigned).
void k_lanes(const KBlockInts& k, const wb::BlockQ8_K& x, int offset, int64_t* lanes) {
    for (int l = 0; l < 8; ++l) lanes[l] = 0;
    for (int e = 0; e < 256; ++e) lanes[e % 32 / 4] += int64_t(k.scale[e / 16]) * (k.q[e] - offset) * x.qs[e];
}

// Sum of scale * (q - offset) * y over the elements [e0, e1), and of min * bsums over their 16-sub-blocks.
int64_t k_sum(const KBlockInts& k, const wb::BlockQ8_K& x, int e0, int e1) {
    int64_t s = 0;
    for (int e = e0; e < e1; ++e) s += int64_t(k.scale[e / 16]) * (k.q[e] - k.offset) * x.qs[e];
    return s;
}
int64_t k_min_sum(const KBlockInts& k, const wb::BlockQ8_K& x, int e0, int e1) {
    int64_t s = 0;
    for (int sb = e0 / 16; sb < e1 / 16; ++sb) s += int64_t(k.min[sb]) * x.bsums[sb];
    return s;
}

// _mm256 horizontal sum: ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
float hsum8(const float* a) { return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7])); }

// One weight row dotted with Q8_K activations in the given order, following llama.cpp's kernels
// operation by operation (see wb::DotOrder; ggml_vec_dot_*_q8_K for kRow).
float k_dot_reference(GgmlType t, wb::DotOrder order, const uint8_t* w, const wb::BlockQ8_K* x, int64_t n) {
    const size_t block_bytes = wb::ggml_row_bytes(t, 256);
    const bool has_min = t == GgmlType::Q2_K || t == GgmlType::Q4_K || t == GgmlType::Q5_K;
    float acc8[8] = {}, acc4[4] = {}, acc = 0.0f, acc_min = 0.0f, extra = 0.0f;
    for (int64_t i = 0; i < n / 256; ++i) {
        const KBlockInts k = decode_k_block(t, w + size_t(i) * block_bytes);
        const wb::BlockQ8_K& y = x[i];
        if (order == wb::DotOrder::kTiled) {
            float r = k.d * float(k_sum(k, y, 0, 256));
            if (has_min) r = std::fma(-k.dmin, float(k_min_sum(k, y, 0, 256)), r);
            acc = std::fma(r, y.d, acc);
        } else if (order == wb::DotOrder::kGemv || order == wb::DotOrder::kGemm) {  // Q4_K repacked
            const int chunk = order == wb::DotOrder::kGemv ? 256 : 64;
            for (int e0 = 0; e0 < 256; e0 += chunk) {
                acc = std::fma(float(k_sum(k, y, e0, e0 + chunk)), k.d * y.d, acc);
                acc_min = std::fma(float(k_min_sum(k, y, e0, e0 + chunk)), k.dmin * y.d, acc_min);
            }
        } else {  // kRow
            int64_t lanes[8];
            switch (t) {
                case GgmlType::Q2_K:
                    for (int l = 0; l < 8; ++l)
                        acc8[l] = std::fma(-y.d * k.dmin, float(k_min_sum(k, y, 32 * l, 32 * l + 32)), acc8[l]);
                    k_lanes(k, y, 0, lanes);
                    break;
                case GgmlType::Q3_K: k_lanes(k, y, 4, lanes); break;
                case GgmlType::Q4_K:
                    for (int m = 0; m < 4; ++m)
                        acc4[m] = std::fma(-y.d * k.dmin, float(k_min_sum(k, y, 64 * m, 64 * m + 64)), acc4[m]);
                    k_lanes(k, y, 0, lanes);
                    break;
                case GgmlType::Q5_K:
                    extra = std::fma(-(k.dmin * y.d), float(k_min_sum(k, y, 0, 256)), extra);
                    k_lanes(k, y, 0, lanes);
                    break;
                default:  // Q6_K: unsigned values, the -32 per lane pair of sub-blocks
                    k_lanes(k, y, 0, lanes);
                    for (int l = 0; l < 8; ++l)
                        lanes[l] -= 32 * (k.scale[2 * l] * y.bsums[2 * l] + k.scale[2 * l + 1] * y.bsums[2 * l + 1]);
                    break;
            }
            for (int l = 0; l < 8; ++l) acc8[l] = std::fma(y.d * k.d, float(lanes[l]), acc8[l]);
        }
    }
    switch (order) {
        case wb::DotOrder::kTiled: return acc;
        case wb::DotOrder::kGemv:
        case wb::DotOrder::kGemm: return acc - acc_min;
        default: return hsum8(acc8) + ((acc4[0] + acc4[2]) + (acc4[1] + acc4[3])) + extra;
    }
}

const char* order_name(wb::DotOrder o) {
    switch (o) {
        case wb::DotOrder::kRow: return "row";
        case wb::DotOrder::kTiled: return "tiled";
        case wb::DotOrder::kGemv: return "gemv";
        case wb::DotOrder::kGemm: return "gemm";
        default: return "llamafile";
    }
}

// ---- llama.cpp's orders for Q4_0 (repacked), IQ4_NL, IQ4_XS, TQ1_0, TQ2_0, from the block format ----

// A block as integers: element e is d_w * w[e] (the ternary types: d_w * (w[e] - 1)).
struct IntBlock {
    float d = 0.0f;
    int w[256] = {};
};

int tq1_digit(uint8_t byte, int n) {
    const int pow3[5] = {1, 3, 9, 27, 81};
    return (uint8_t(byte * pow3[n]) * 3) >> 8;
}

// Decodes block i of a row straight from FACTS-2.md 3.2 (TQ codes 0..3 as they are).
IntBlock decode_int_block(GgmlType t, const uint8_t* row, int64_t i) {
    IntBlock b;
    const uint8_t* p = row + size_t(i) * wb::ggml_type_traits(t).block_bytes;
    switch (t) {
        case GgmlType::Q4_0:
        case GgmlType::IQ4_NL: {
            const auto x = block_at<wb::BlockIQ4_NL>(p);  // the same layout
            b.d = wb::fp16_to_f32(x.d);
            for (int j = 0; j < 16; ++j) {
                const int lo = x.qs[j] & 0xF, hi = x.qs[j] >> 4;
                b.w[j] = t == GgmlType::Q4_0 ? lo - 8 : kIq4nl[lo];
                b.w[j + 16] = t == GgmlType::Q4_0 ? hi - 8 : kIq4nl[hi];
            }
            break;
        }
        case GgmlType::IQ4_XS: {
            const auto x = block_at<wb::BlockIQ4_XS>(p);
            b.d = wb::fp16_to_f32(x.d);
            for (int g = 0; g < 8; ++g) {
                const int ls = (((x.scales_l[g / 2] >> (4 * (g % 2))) & 15) | ((x.scales_h >> (2 * g)) & 3) << 4) - 32;
                for (int j = 0; j < 16; ++j) {
                    b.w[32 * g + j] = ls * kIq4nl[x.qs[16 * g + j] & 0xF];
                    b.w[32 * g + 16 + j] = ls * kIq4nl[x.qs[16 * g + j] >> 4];
                }
            }
            break;
        }
        case GgmlType::TQ1_0: {
            const auto x = block_at<wb::BlockTQ1_0>(p);
            b.d = wb::fp16_to_f32(x.d);
            for (int n = 0; n < 5; ++n)
                for (int m = 0; m < 32; ++m) b.w[32 * n + m] = tq1_digit(x.qs[m], n);
            for (int n = 0; n < 5; ++n)
                for (int m = 0; m < 16; ++m) b.w[160 + 16 * n + m] = tq1_digit(x.qs[32 + m], n);
            for (int n = 0; n < 4; ++n)
                for (int j = 0; j < 4; ++j) b.w[240 + 4 * n + j] = tq1_digit(x.qh[j], n);
            break;
        }
        default: {  // TQ2_0
            const auto x = block_at<wb::BlockTQ2_0>(p);
            b.d = wb::fp16_to_f32(x.d);
            for (int c = 0; c < 2; ++c)
                for (int l = 0; l < 4; ++l)
                    for (int m = 0; m < 32; ++m) b.w[128 * c + 32 * l + m] = (x.qs[32 * c + m] >> (2 * l)) & 3;
            break;
        }
    }
    return b;
}

// The 8 lanes of llama.cpp's x86 kernels (lane k: elements 4k..4k+3 of every run of 32) of w * y.
void int_lanes(const IntBlock& b, const int8_t* y, int elems, int64_t* lanes) {
    for (int k = 0; k < 8; ++k) lanes[k] = 0;
    for (int e = 0; e < elems; ++e) lanes[e % 32 / 4] += int64_t(b.w[e]) * y[e];
}

// One weight row against Q8_0 activations (Q4_0, IQ4_NL) in the given order.
float q8_0_order_reference(GgmlType t, wb::DotOrder order, const uint8_t* w, const wb::BlockQ8_0* x, int64_t n) {
    const int64_t nb = n / 32;
    float acc[2][8] = {}, acc1 = 0.0f, tail = 0.0f;
    bool has_tail = false;
    for (int64_t i = 0; i < nb; ++i) {
        const IntBlock b = decode_int_block(t, w, i);
        int64_t lanes[8];
        int_lanes(b, x[i].qs, 32, lanes);
        const float d = b.d * wb::fp16_to_f32(x[i].d);
        int64_t sum = 0;
        for (int64_t l : lanes) sum += l;
        if (order == wb::DotOrder::kGemv || order == wb::DotOrder::kGemm) {
            acc1 = std::fma(float(sum), d, acc1);
        } else if (order == wb::DotOrder::kRow && i == nb - 1 && nb % 2 == 1) {  // IQ4_NL's odd last block
            tail = d * float(sum);
            has_tail = true;
        } else {  // the row dot's even / odd accumulators, or llamafile's one
            float* a = acc[order == wb::DotOrder::kRow ? i % 2 : 0];
            for (int k = 0; k < 8; ++k) a[k] = std::fma(d, float(lanes[k]), a[k]);
        }
    }
    if (order == wb::DotOrder::kGemv || order == wb::DotOrder::kGemm) return acc1;
    float both[8];
    for (int k = 0; k < 8; ++k) both[k] = acc[0][k] + acc[1][k];
    const float sum = hsum8(both);
    return has_tail ? sum + tail : sum;
}

// One weight row against Q8_K activations (IQ4_XS, TQ1_0, TQ2_0): kRow or IQ4_XS's kTiled.
float q8_k_order_reference(GgmlType t, wb::DotOrder order, const uint8_t* w, const wb::BlockQ8_K* x, int64_t n) {
    float acc8[8] = {}, acc = 0.0f;
    for (int64_t i = 0; i < n / 256; ++i) {
        const IntBlock b = decode_int_block(t, w, i);
        int64_t lanes[8];
        int_lanes(b, x[i].qs, 256, lanes);
        // The ternary kernels take the -1 of every value off as activation sums, lane k losing
        // those of elements 32k..32k+31.
        if (t == GgmlType::TQ1_0 || t == GgmlType::TQ2_0)
            for (int k = 0; k < 8; ++k) lanes[k] -= x[i].bsums[2 * k] + x[i].bsums[2 * k + 1];
        if (order == wb::DotOrder::kTiled) {
            int64_t sum = 0;
            for (int64_t l : lanes) sum += l;
            acc = std::fma(b.d * float(sum), x[i].d, acc);
        } else {
            for (int k = 0; k < 8; ++k) acc8[k] = std::fma(b.d * x[i].d, float(lanes[k]), acc8[k]);
        }
    }
    return order == wb::DotOrder::kTiled ? acc : hsum8(acc8);
}

}  // namespace

float k_dot_ref(GgmlType t, wb::DotOrder order, const uint8_t* w, const wb::BlockQ8_K* x, int64_t n) {
    return k_dot_reference(t, order, w, x, n);
}
float q8_0_order_ref(GgmlType t, wb::DotOrder order, const uint8_t* w, const wb::BlockQ8_0* x, int64_t n) {
    return q8_0_order_reference(t, order, w, x, n);
}
float q8_k_order_ref(GgmlType t, wb::DotOrder order, const uint8_t* w, const wb::BlockQ8_K* x, int64_t n) {
    return q8_k_order_reference(t, order, w, x, n);
}
const char* dot_order_name(wb::DotOrder o) { return order_name(o); }

}  // namespace wb_test
