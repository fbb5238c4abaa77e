// Radix select of the k largest logits in one block.
//
// Why a radix select: the k-th largest key is found digit by digit (8 bits a pass, four passes) by
// counting keys in a 256-bin shared histogram, with no sorting and no per-thread candidate lists, so
// k can be anything up to SamplerChain::kMaxTopNeeded at the same cost. The row (50k-260k floats) was
// just written by the logits matmul and sits in L2; one block of 1024 threads reads it five times.
#include <climits>
#include <string>

#include "common.cuh"
#include "cuda_check.h"
#include "top_k.cuh"

namespace wb::cuda {

namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / kWarp;
constexpr unsigned kFull = 0xffffffffu;

// The sampler's value of a logit: NaN would break every order, and is unselectable as -inf.
__device__ __forceinline__ float sampler_value(float v) { return isnan(v) ? -INFINITY : v; }

// The value's rank as an unsigned key: a larger value has a larger key. -0 is made +0 first, so
// equal keys are exactly the values the host's order (candidate_before) calls ties.
__device__ __forceinline__ uint32_t rank_key(float v) {
    v = sampler_value(v);
    if (v == 0.0f) v = 0.0f;
    const uint32_t u = __float_as_uint(v);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

struct Selection {
    uint32_t key;   // the k-th largest key, as far as decided
    uint32_t need;  // how many keys equal to it (and to no larger one) still belong to the top k
    uint32_t ties;  // how many keys of the row match it, as far as decided
};

// Warp 0, after a histogram pass: finds the digit (from the largest) that holds the need-th largest
// of the counted keys, and narrows the selection to it. Lane l holds digits 255-8l .. 248-8l.
__device__ void choose_digit(const uint32_t* hist, int shift, Selection* sel) {
    const int lane = threadIdx.x;
    const uint32_t need = sel->need;
    uint32_t count[8], sum = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        count[j] = hist[255 - 8 * lane - j];
        sum += count[j];
    }
    uint32_t through = sum;  // keys counted in this lane's digits and every larger digit
#pragma unroll
    for (int off = 1; off < kWarp; off *= 2) {
        const uint32_t o = __shfl_up_sync(kFull, through, off);
        if (lane >= off) through += o;
    }
    uint32_t before = through - sum;
    // Exactly one lane holds it: the counted keys are never fewer than need.
    if (before < need && need <= through) {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            if (need <= before + count[j]) {
                sel->key |= uint32_t(255 - 8 * lane - j) << shift;
                sel->need = need - before;
                sel->ties = count[j];
                break;
            }
            before += count[j];
        }
    }
}

__global__ void __launch_bounds__(kThreads) top_k_kernel(TopKArgs a) {
    __shared__ uint32_t hist[256];
    __shared__ uint32_t warp_ties[kWarps];
    __shared__ Selection sel;
    __shared__ uint32_t next_slot;
    const int tid = threadIdx.x;
    if (tid == 0) sel = Selection{0u, uint32_t(a.k), uint32_t(a.n)};

    // The k-th largest key, 8 bits a pass from the top.
    uint32_t decided = 0;  // mask of the key bits decided so far
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int i = tid; i < 256; i += kThreads) hist[i] = 0;
        __syncthreads();
        const uint32_t prefix = sel.key;
        for (int64_t i = tid; i < a.n; i += kThreads) {
            const uint32_t key = rank_key(a.row[i]);
            if ((key & decided) == prefix) atomicAdd(&hist[(key >> shift) & 0xffu], 1u);
        }
        __syncthreads();
        if (tid < kWarp) choose_digit(hist, shift, &sel);
        decided |= 0xffu << shift;
        __syncthreads();
    }
    const uint32_t kth = sel.key, need = sel.ties == sel.need ? 0u : sel.need;
    const uint32_t n_before_ties = uint32_t(a.k) - sel.need;

    // Every key above the k-th, and its ties too when all of them belong (the usual case), in any
    // order: the caller sorts the k pairs.
    if (tid == 0) next_slot = 0;
    __syncthreads();
    const bool all_ties = need == 0;
    for (int64_t i = tid; i < a.n; i += kThreads) {
        const float v = a.row[i];
        const uint32_t key = rank_key(v);
        if (key > kth || (all_ties && key == kth)) {
            const uint32_t slot = atomicAdd(&next_slot, 1u);
            a.ids[slot] = int32_t(i);
            a.values[slot] = sampler_value(v);
        }
    }
    if (all_ties) return;

    // More ties than places: the smallest columns win. Tiles of the row in column order, each tie
    // ranked by the ties before it; stops once the places are filled.
    const int lane = tid % kWarp, warp = tid / kWarp;
    uint32_t base = 0;  // ties in earlier tiles; the same in every thread
    for (int64_t t0 = 0; t0 < a.n && base < need; t0 += kThreads) {
        const int64_t i = t0 + tid;
        const float v = i < a.n ? a.row[i] : 0.0f;
        const bool tie = i < a.n && rank_key(v) == kth;
        const uint32_t ballot = __ballot_sync(kFull, tie);
        if (lane == 0) warp_ties[warp] = uint32_t(__popc(ballot));
        __syncthreads();
        uint32_t rank = base + uint32_t(__popc(ballot & ((1u << lane) - 1u))), tile = 0;
        for (int w = 0; w < kWarps; ++w) {
            if (w < warp) rank += warp_ties[w];
            tile += warp_ties[w];
        }
        if (tie && rank < need) {
            a.ids[n_before_ties + rank] = int32_t(i);
            a.values[n_before_ties + rank] = sampler_value(v);
        }
        __syncthreads();  // warp_ties is rewritten by the next tile
        base += tile;
    }
}

void launch_top_k(const TopKArgs& a, cudaStream_t stream) {
    top_k_kernel<<<1, kThreads, 0, stream>>>(a);
    WB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void top_k(const TopKArgs& a, cudaStream_t stream) {
    if (a.k < 1 || a.k > a.n || a.n > INT32_MAX)
        throw Error("top_k: k = " + std::to_string(a.k) + " of a row of " + std::to_string(a.n) +
                    " (1 <= k <= n < 2^31)");
    launch_top_k(a, stream);
}

}  // namespace wb::cuda
