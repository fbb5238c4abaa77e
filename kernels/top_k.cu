// Selection of the k largest logits in one block of 1024 threads.
//
// The k-th largest key is found by a radix select: 8 bits a pass, four passes, each counting keys in
// a 256-bin shared histogram; no sorting and no per-thread lists, so any k up to
// SamplerChain::kMaxTopNeeded costs the same. Running those passes over the whole row (50k-260k
// floats) would be slow: a row's keys crowd into a few exponent bins and the shared atomics
// serialise. So a pre-filter runs first:
//   1. every thread takes the largest key of its strided share of the row (one read, no atomics);
//   2. the k-th largest of those 1024 maxima, L, is a lower bound of the row's k-th largest key
//      (the k largest maxima are k distinct entries >= L), found by the radix select over 1024 keys;
//   3. the entries with key >= L — every one of the top k, typically a few times k — are gathered
//      into shared memory (a second read) and the radix select runs on them.
// When k exceeds the maxima or too many entries pass (a row of ties, k near 1024), the passes run
// over the row itself. Ties of the k-th key that do not all fit are taken in column order from the
// row, since the gathered list is in no order.
#include <climits>
#include <string>

#include "common.cuh"
#include "cuda_check.h"
#include "top_k.cuh"

namespace wb::cuda {

namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / kWarp;
constexpr int kGathered = 4096;  // entries the pre-filter may keep in shared memory (32 KB)
constexpr unsigned kFull = 0xffffffffu;

// The sampler's value of a logit: NaN would break every order, and is unselectable as -inf.
__device__ __forceinline__ float sampler_value(float v) { return isnan(v) ? -INFINITY : v; }

// The value's rank as an unsigned key: a larger value has a larger key. -0 is made +0 first (by its
// bits, so that no flush-to-zero setting can merge denormals with it): equal keys are exactly the
// values the host's order (candidate_before) calls ties. Every float maps to a key >= 0x007fffff
// (-inf), so key 0 can stand for "no entry".
__device__ __forceinline__ uint32_t rank_key(float v) {
    uint32_t u = __float_as_uint(sampler_value(v));
    if ((u << 1) == 0u) u = 0u;
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

struct Selection {
    uint32_t key;   // the k-th largest key, as far as decided
    uint32_t need;  // how many keys equal to it (and to no larger one) still belong to the top k
    uint32_t ties;  // how many of the counted keys match it, as far as decided
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
    __syncwarp();  // every lane has read sel->need before one lane rewrites it
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

// Shared state of one selection.
struct Scratch {
    uint32_t hist[256];
    uint32_t warp_ties[kWarps];
    uint32_t key[kGathered];  // the gathered entries: keys and columns
    int32_t col[kGathered];
    Selection sel;
    uint32_t n_gathered;      // entries that passed the pre-filter (may exceed kGathered)
    uint32_t next_slot;
};

// The need-th largest of the keys each thread passes to visit(f) (f(key) per key; key 0 = none),
// into s.sel, which must start as {0, need, count}. Called by every thread of the block.
template <typename Visit>
__device__ void radix_select(Scratch& s, Visit visit) {
    uint32_t decided = 0;  // mask of the key bits decided so far
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int i = threadIdx.x; i < 256; i += kThreads) s.hist[i] = 0;
        __syncthreads();
        const uint32_t prefix = s.sel.key;
        visit([&](uint32_t key) {
            if (key != 0u && (key & decided) == prefix) atomicAdd(&s.hist[(key >> shift) & 0xffu], 1u);
        });
        __syncthreads();
        if (threadIdx.x < kWarp) choose_digit(s.hist, shift, &s.sel);
        decided |= 0xffu << shift;
        __syncthreads();
    }
}

// Writes out slot `slot`: column i of the row.
__device__ __forceinline__ void put(const TopKArgs& a, uint32_t slot, int64_t i) {
    a.ids[slot] = int32_t(i);
    a.values[slot] = sampler_value(a.row[i]);
}

__global__ void __launch_bounds__(kThreads) top_k_kernel(TopKArgs a) {
    __shared__ Scratch s;
    const int tid = threadIdx.x;
    const auto each_row_key = [&](auto f) {
        for (int64_t i = tid; i < a.n; i += kThreads) f(rank_key(a.row[i]));
    };

    // 1-2. The lower bound L: the k-th largest of the threads' maxima (when there are k of them).
    uint32_t my_max = 0u;
    each_row_key([&](uint32_t key) { my_max = max(my_max, key); });
    const int64_t n_maxima = a.n < kThreads ? a.n : kThreads;
    bool gathered = false;
    if (a.k <= n_maxima) {
        if (tid == 0) s.sel = Selection{0u, uint32_t(a.k), uint32_t(n_maxima)};
        radix_select(s, [&](auto f) { f(my_max); });
        const uint32_t bound = s.sel.key;
        // 3. Gather the entries with key >= L.
        if (tid == 0) s.n_gathered = 0;
        __syncthreads();
        for (int64_t i = tid; i < a.n; i += kThreads) {
            const uint32_t key = rank_key(a.row[i]);
            if (key >= bound) {
                const uint32_t j = atomicAdd(&s.n_gathered, 1u);
                if (j < uint32_t(kGathered)) {
                    s.key[j] = key;
                    s.col[j] = int32_t(i);
                }
            }
        }
        __syncthreads();
        gathered = s.n_gathered <= uint32_t(kGathered);
    }

    // The k-th largest key, over the gathered entries or over the row.
    const uint32_t n_gathered = gathered ? s.n_gathered : 0u;
    if (tid == 0) s.sel = Selection{0u, uint32_t(a.k), gathered ? n_gathered : uint32_t(a.n)};
    if (gathered)
        radix_select(s, [&](auto f) {
            for (uint32_t j = tid; j < n_gathered; j += kThreads) f(s.key[j]);
        });
    else
        radix_select(s, each_row_key);
    const uint32_t kth = s.sel.key;
    const bool all_ties = s.sel.ties == s.sel.need;
    const uint32_t need = s.sel.need, n_above = uint32_t(a.k) - need;

    // Every key above the k-th, and its ties too when all of them belong (the usual case), in any
    // order: the caller sorts the k pairs.
    if (tid == 0) s.next_slot = 0;
    __syncthreads();
    const auto take = [&](uint32_t key, int64_t i) {
        if (key > kth || (all_ties && key == kth)) put(a, atomicAdd(&s.next_slot, 1u), i);
    };
    if (gathered)
        for (uint32_t j = tid; j < n_gathered; j += kThreads) take(s.key[j], s.col[j]);
    else
        for (int64_t i = tid; i < a.n; i += kThreads) take(rank_key(a.row[i]), i);
    if (all_ties) return;

    // More ties than places: the smallest columns win. Tiles of the row in column order, each tie
    // ranked by the ties before it; stops once the places are filled.
    const int lane = tid % kWarp, warp = tid / kWarp;
    uint32_t base = 0;  // ties in earlier tiles; the same in every thread
    for (int64_t t0 = 0; t0 < a.n && base < need; t0 += kThreads) {
        const int64_t i = t0 + tid;
        const bool tie = i < a.n && rank_key(a.row[i]) == kth;
        const uint32_t ballot = __ballot_sync(kFull, tie);
        if (lane == 0) s.warp_ties[warp] = uint32_t(__popc(ballot));
        __syncthreads();
        uint32_t rank = base + uint32_t(__popc(ballot & ((1u << lane) - 1u))), tile = 0;
        for (int w = 0; w < kWarps; ++w) {
            if (w < warp) rank += s.warp_ties[w];
            tile += s.warp_ties[w];
        }
        if (tie && rank < need) put(a, n_above + rank, i);
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
