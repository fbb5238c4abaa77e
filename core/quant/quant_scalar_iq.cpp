// Portable kernels of the grid IQ types (quant_blocks_iq.h), in llama.cpp's x86 float orders.
//
// As for IQ4_XS and TQ (quant_scalar.cpp), these follow the AVX2 kernels float operation by float
// operation: the integer lanes are exact, so both families and llama.cpp's x86 build agree bit for
// bit. Lane k of a block holds elements 4k..4k+3 of every run of 32 (what _mm256_madd_epi16 leaves).
//
// The orders (FACTS-2 3.4 and llama.cpp's tiled matmul):
//  - row dot, IQ2/IQ3: acc[k] = fma(d_w*d_x, lane k, acc[k]) block by block, then C * (lane sum),
//    C = 1/8 (IQ2), 1/4 (IQ3_XXS), 1 (IQ3_S): the factor llama.cpp leaves out of the integer scales;
//  - row dot, IQ1_S: lanes of scale * grid value as above, the shift terms summed per block into a
//    scalar accum1 = fma(d, sum, accum1); result sum + accum1 / 8;
//  - row dot, IQ1_M: the shift terms in a second 8-lane accumulator, result sum1 + sum2 / 8;
//  - tiled (batches of 8 tokens or more): per block r = (C*d_w) * sum, acc = fma(r, d_x, acc), with
//    IQ1 values as 8 * grid + shift and C = 1/8.
#include <cmath>
#include <type_traits>

#include "quant/quant_blocks_iq.h"
#include "quant/quant_internal.h"

namespace wb {

namespace {

// The two integer parts of a block against Q8_K activations, per lane: scale * value * y, and
// (IQ1) scale * shift sign * y.
struct IqLanes {
    int grid[8] = {};
    int delta[8] = {};
};

template <class B>
IqLanes iq_lanes(const IqValues& u, const BlockQ8_K& x) {
    IqLanes l;
    for (int e = 0; e < kQKK; ++e) {
        const int sy = u.scale[e / 16] * x.qs[e];
        l.grid[e % 32 / 4] += u.v[e] * sy;
        if constexpr (kIqIsIq1<B>) l.delta[e % 32 / 4] += u.delta[e / 8] * sy;
    }
    return l;
}

int sum8(const int* v) {
    int s = 0;
    for (int k = 0; k < 8; ++k) s += v[k];
    return s;
}

template <class B>
constexpr float kIqRowFactor = std::is_same_v<B, BlockIQ3_S> ? 1.0f : std::is_same_v<B, BlockIQ3_XXS> ? 0.25f : 0.125f;

template <class B>
float dot_iq_row(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const B*>(w);
    const auto* bx = static_cast<const BlockQ8_K*>(x);
    float acc[8] = {}, acc_delta[8] = {};
    float accum1 = 0.0f;  // IQ1_S's scalar shift accumulator
    IqValues u;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        iq_unpack(bw[i], u);
        const IqLanes l = iq_lanes<B>(u, bx[i]);
        const float d = u.d * bx[i].d;
        for (int k = 0; k < 8; ++k) acc[k] = std::fma(d, float(l.grid[k]), acc[k]);
        if constexpr (std::is_same_v<B, BlockIQ1_S>) accum1 = std::fma(d, float(sum8(l.delta)), accum1);
        if constexpr (std::is_same_v<B, BlockIQ1_M>)
            for (int k = 0; k < 8; ++k) acc_delta[k] = std::fma(d, float(l.delta[k]), acc_delta[k]);
    }
    if constexpr (std::is_same_v<B, BlockIQ1_S>) return sum_lanes8(acc) + 0.125f * accum1;
    if constexpr (std::is_same_v<B, BlockIQ1_M>) return sum_lanes8(acc) + 0.125f * sum_lanes8(acc_delta);
    return kIqRowFactor<B> * sum_lanes8(acc);
}

template <class B>
float dot_iq_tiled(int64_t n, const void* w, const void* x) {
    const auto* bw = static_cast<const B*>(w);
    const auto* bx = static_cast<const BlockQ8_K*>(x);
    float acc = 0.0f;
    IqValues u;
    for (int64_t i = 0; i < n / kQKK; ++i) {
        iq_unpack(bw[i], u);
        const IqLanes l = iq_lanes<B>(u, bx[i]);
        const int sumi = kIqIsIq1<B> ? 8 * sum8(l.grid) + sum8(l.delta) : sum8(l.grid);
        const float r = u.d * (kIqIsIq1<B> ? 0.125f : kIqRowFactor<B>) * float(sumi);
        acc = std::fma(r, bx[i].d, acc);
    }
    return acc;
}

template <class B>
void add_iq_type(KernelTable& t, GgmlType type) {
    t.dot[slot(type)] = dot_iq_row<B>;
    t.dot_in(DotOrder::kTiled, type) = dot_iq_tiled<B>;
}

}  // namespace

void add_iq_grid_scalar_kernels(KernelTable& t) {
    add_iq_type<BlockIQ2_XXS>(t, GgmlType::IQ2_XXS);
    add_iq_type<BlockIQ2_XS>(t, GgmlType::IQ2_XS);
    add_iq_type<BlockIQ2_S>(t, GgmlType::IQ2_S);
    add_iq_type<BlockIQ3_XXS>(t, GgmlType::IQ3_XXS);
    add_iq_type<BlockIQ3_S>(t, GgmlType::IQ3_S);
    add_iq_type<BlockIQ1_S>(t, GgmlType::IQ1_S);
    add_iq_type<BlockIQ1_M>(t, GgmlType::IQ1_M);
}

}  // namespace wb
