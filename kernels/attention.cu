#include <cuda_fp16.h>

#include <cmath>
#include <string>

#include "attention.cuh"
#include "common.cuh"
#include "cuda_check.h"

namespace wb::cuda {

namespace {

constexpr int kVecs = 8;      // query vectors per block: (row, head) pairs that share one kv head
constexpr int kThreads = 128;

// How query vectors are grouped into blocks (computed on the host, read by both kernels).
struct SplitLayout {
    AttentionArgs a;
    int32_t group = 0;     // query heads per kv head
    int32_t gc = 0;        // heads of the group per block (<= kVecs)
    int32_t n_gchunks = 0; // blocks needed to cover a group
    int32_t rows = 0;      // query rows per block; rows * gc <= kVecs
    float* partial = nullptr;  // [n_q][n_head][n_splits][head_dim + 2]
};

__device__ __forceinline__ int64_t partial_index(const SplitLayout& L, int32_t r, int32_t h, int32_t s) {
    return (int64_t(r) * L.a.n_head + h) * L.a.n_splits + s;
}

// One block per (split, kv head and chunk of its query heads, run of query rows). The K/V rows of
// the split's cache block are loaded once for all those query vectors (the grouped-query sharing).
// q is rounded to f16 first, as the CPU reference does, so q.k is a product of two f16 vectors; with
// scale_q the scale multiplies q before that rounding (f16(q * scale), as the CPU backend rounds it)
// and the scores are the plain dot products.
__global__ void __launch_bounds__(kThreads) attention_split_kernel(SplitLayout L) {
    const AttentionArgs& a = L.a;
    extern __shared__ float smem[];
    const int D = a.head_dim, BT = a.block_tokens;
    float* qs = smem;              // [kVecs][D]
    float* sc = smem + kVecs * D;  // [kVecs][BT]

    const int32_t s = blockIdx.x;
    const int32_t kvh = blockIdx.y / L.n_gchunks;
    const int32_t g0 = (blockIdx.y % L.n_gchunks) * L.gc;
    const int32_t r0 = blockIdx.z * L.rows;
    const int32_t pos0 = a.pos0_dev ? *a.pos0_dev : a.pos0;
    const int nv = L.rows * L.gc;

    // Vector i is query row r0 + i / gc, head kvh * group + g0 + i % gc.
    auto vec_row = [&](int i) { return r0 + i / L.gc; };
    auto vec_head = [&](int i) { return kvh * L.group + g0 + i % L.gc; };
    auto vec_active = [&](int i) { return i < nv && vec_row(i) < a.n_q && g0 + i % L.gc < L.group; };
    auto first_key = [&](int32_t pos) { return a.window > 0 ? max(0, pos - a.window + 1) : 0; };

    const int32_t last_row = min(r0 + L.rows, a.n_q) - 1;
    const int32_t kb = s * BT;
    const int32_t jlo = max(kb, first_key(pos0 + r0));
    const int32_t jhi = min(kb + BT - 1, pos0 + last_row);
    const int nk = jhi - jlo + 1;

    if (nk <= 0) {
        // Nothing visible in this block for any of the vectors: an empty partial (sum 0).
        if (threadIdx.x < kVecs && vec_active(threadIdx.x)) {
            float* p = L.partial + partial_index(L, vec_row(threadIdx.x), vec_head(threadIdx.x), s) * (D + 2);
            p[D] = -INFINITY;
            p[D + 1] = 0.0f;
        }
        return;
    }

    const float q_scale = a.scale_q ? a.scale : 1.0f;
    const float score_scale = a.scale_q ? 1.0f : a.scale;
    for (int idx = threadIdx.x; idx < kVecs * D; idx += blockDim.x) {
        const int i = idx / D, d = idx % D;
        // A plain multiply (nothing to contract it with) then round to nearest even: bit for bit the
        // CPU's f16(q * scale). q * 1.0f is q exactly.
        qs[idx] = vec_active(i) ? __half2float(__float2half_rn(
                                      a.q[int64_t(vec_row(i)) * a.q_stride + int64_t(vec_head(i)) * D + d] * q_scale))
                                : 0.0f;
    }
    __syncthreads();

    const int64_t width = int64_t(a.n_head_kv) * D;  // halves per cache row
    const __half* block = static_cast<const __half*>(a.blocks[s]);
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, n_warps = blockDim.x / kWarp;

    // Scores: a warp per key, lanes across the head dimension, every vector of the block at once.
    for (int j = jlo + warp; j <= jhi; j += n_warps) {
        const auto* k2 = reinterpret_cast<const __half2*>(block + int64_t(j - kb) * width + int64_t(kvh) * D);
        float acc[kVecs];
#pragma unroll
        for (int i = 0; i < kVecs; ++i) acc[i] = 0.0f;
        for (int d2 = lane; d2 < D / 2; d2 += kWarp) {
            const float2 kv = __half22float2(k2[d2]);
#pragma unroll
            for (int i = 0; i < kVecs; ++i)
                if (i < nv) acc[i] += qs[i * D + 2 * d2] * kv.x + qs[i * D + 2 * d2 + 1] * kv.y;
        }
#pragma unroll
        for (int i = 0; i < kVecs; ++i) {
            if (i < nv) {
                const float dot = warp_sum(acc[i]);
                const int32_t pos = pos0 + vec_row(i);
                const bool visible = vec_active(i) && j <= pos && j >= first_key(pos);
                // Gemma 2's soft-cap, as the CPU backend applies it (reciprocal, tanh, cap).
                const float capped = a.softcap > 0.0f ? tanhf(dot * (1.0f / a.softcap)) * a.softcap : dot;
                if (lane == 0) sc[i * BT + (j - jlo)] = visible ? capped * score_scale : -INFINITY;
            }
        }
    }
    __syncthreads();

    // Partial softmax per vector: exponentials relative to the block's own maximum.
    for (int i = warp; i < nv; i += n_warps) {
        float m = -INFINITY;
        for (int j = lane; j < nk; j += kWarp) m = fmaxf(m, sc[i * BT + j]);
        m = warp_max(m);
        float l = 0.0f;
        for (int j = lane; j < nk; j += kWarp) {
            const float e = m == -INFINITY ? 0.0f : expf(sc[i * BT + j] - m);
            sc[i * BT + j] = e;
            l += e;
        }
        l = warp_sum(l);
        if (lane == 0 && vec_active(i)) {
            float* p = L.partial + partial_index(L, vec_row(i), vec_head(i), s) * (D + 2);
            p[D] = m;
            p[D + 1] = l;
        }
        // Capture: these exponentials are the ones that weight V below; the capture kernel scales
        // them by the split's share of the global normaliser, as the combine kernel does.
        if (a.capture && vec_active(i)) {
            const int32_t slot = a.capture_slot[vec_head(i)];
            if (slot >= 0) {
                // Each lane reads back the exponentials it wrote itself just above.
                float* row = a.capture + (int64_t(slot) * a.n_q + vec_row(i)) * a.capture_keys;
                for (int j = lane; j < nk; j += kWarp) row[jlo + j] = sc[i * BT + j];
            }
        }
    }
    __syncthreads();

    // Unnormalised outputs: sum_j e_j v_j, a thread per (vector, pair of dims).
    for (int idx = threadIdx.x; idx < nv * (D / 2); idx += blockDim.x) {
        const int i = idx / (D / 2), d2 = idx % (D / 2);
        if (!vec_active(i)) continue;
        float2 o = make_float2(0.0f, 0.0f);
        for (int j = 0; j < nk; ++j) {
            const float e = sc[i * BT + j];
            const auto* v2 =
                reinterpret_cast<const __half2*>(block + int64_t(BT + jlo - kb + j) * width + int64_t(kvh) * D);
            const float2 v = __half22float2(v2[d2]);
            o.x += e * v.x;
            o.y += e * v.y;
        }
        float* p = L.partial + partial_index(L, vec_row(i), vec_head(i), s) * (D + 2);
        p[2 * d2] = o.x;
        p[2 * d2 + 1] = o.y;
    }
}

// Merges the splits of one (row, head): rescale each partial to the global maximum and normalise.
__global__ void attention_combine_kernel(SplitLayout L) {
    const AttentionArgs& a = L.a;
    const int32_t h = blockIdx.x, r = blockIdx.y;
    const int D = a.head_dim;
    const float* base = L.partial + partial_index(L, r, h, 0) * (D + 2);
    float m = -INFINITY;
    for (int s = 0; s < a.n_splits; ++s)
        if (base[s * (D + 2) + D + 1] > 0.0f) m = fmaxf(m, base[s * (D + 2) + D]);
    float l = 0.0f;
    bool nan = false;  // a NaN score made its split's sum NaN: the output is NaN, as on the CPU
    for (int s = 0; s < a.n_splits; ++s) {
        const float ls = base[s * (D + 2) + D + 1];
        if (ls > 0.0f) l += ls * expf(base[s * (D + 2) + D] - m);
        nan |= isnan(ls);
    }
    const float inv = nan ? NAN : (l > 0.0f ? 1.0f / l : 0.0f);
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float o = 0.0f;
        for (int s = 0; s < a.n_splits; ++s) {
            const float* p = base + s * (D + 2);
            if (p[D + 1] > 0.0f) o += p[d] * expf(p[D] - m);
        }
        a.out[int64_t(r) * a.out_stride + int64_t(h) * D + d] = o * inv;
    }
}

// Turns the captured per-split exponentials into probabilities: p_j = e_j * exp(m_s - M) / L for key
// j of split s, with M and L the merged maximum and normaliser of the row's head.
__global__ void attention_capture_kernel(SplitLayout L) {
    const AttentionArgs& a = L.a;
    const int32_t h = blockIdx.x, r = blockIdx.y;
    const int32_t slot = a.capture_slot[h];
    if (slot < 0) return;
    const int D = a.head_dim;
    const float* base = L.partial + partial_index(L, r, h, 0) * (D + 2);
    float m = -INFINITY, l = 0.0f;
    for (int s = 0; s < a.n_splits; ++s)
        if (base[s * (D + 2) + D + 1] > 0.0f) m = fmaxf(m, base[s * (D + 2) + D]);
    for (int s = 0; s < a.n_splits; ++s) {
        const float ls = base[s * (D + 2) + D + 1];
        if (ls > 0.0f) l += ls * expf(base[s * (D + 2) + D] - m);
    }
    float* row = a.capture + (int64_t(slot) * a.n_q + r) * a.capture_keys;
    for (int j = threadIdx.x; j < a.capture_keys; j += blockDim.x) {
        const float* p = base + (j / a.block_tokens) * (D + 2);
        row[j] = p[D + 1] > 0.0f && l > 0.0f ? row[j] * expf(p[D] - m) / l : 0.0f;
    }
}

void launch_attention(const SplitLayout& L, cudaStream_t stream) {
    const AttentionArgs& a = L.a;
    const dim3 grid(unsigned(a.n_splits), unsigned(a.n_head_kv * L.n_gchunks), unsigned(ceil_div(a.n_q, L.rows)));
    const size_t smem = size_t(kVecs) * size_t(a.head_dim + a.block_tokens) * sizeof(float);
    attention_split_kernel<<<grid, kThreads, smem, stream>>>(L);
    WB_CUDA_CHECK_LAUNCH();
    attention_combine_kernel<<<dim3(unsigned(a.n_head), unsigned(a.n_q)), kThreads, 0, stream>>>(L);
    WB_CUDA_CHECK_LAUNCH();
    if (a.capture) {
        attention_capture_kernel<<<dim3(unsigned(a.n_head), unsigned(a.n_q)), kThreads, 0, stream>>>(L);
        WB_CUDA_CHECK_LAUNCH();
    }
}

}  // namespace

void attention(const AttentionArgs& a, AttentionWorkspace& ws, cudaStream_t stream) {
    if (a.n_q <= 0) return;
    if (a.head_dim % 2 != 0 || a.n_head_kv <= 0 || a.n_head % a.n_head_kv != 0 || a.n_splits <= 0)
        throw Error("CUDA attention: unsupported shape (head_dim " + std::to_string(a.head_dim) + ", heads " +
                    std::to_string(a.n_head) + "/" + std::to_string(a.n_head_kv) + ")");
    const size_t smem = size_t(kVecs) * size_t(a.head_dim + a.block_tokens) * sizeof(float);
    if (smem > 48 * 1024)
        throw Error("CUDA attention: head_dim " + std::to_string(a.head_dim) + " with blocks of " +
                    std::to_string(a.block_tokens) + " positions needs more shared memory than supported");
    SplitLayout L;
    L.a = a;
    L.group = a.n_head / a.n_head_kv;
    L.gc = L.group < kVecs ? L.group : kVecs;
    L.n_gchunks = int32_t(ceil_div(L.group, L.gc));
    // Several query rows share a block when the group is small (prefill): each K/V row then serves
    // up to kVecs query vectors.
    L.rows = a.n_q == 1 ? 1 : kVecs / L.gc;
    // Query rows go on grid y (merge kernels) and z (split kernel): at most 65535 each.
    if (a.n_q > 65535)
        throw Error("CUDA attention: " + std::to_string(a.n_q) + " query rows in one batch; at most 65535 are supported");
    const size_t n_partial = size_t(a.n_q) * size_t(a.n_head) * size_t(a.n_splits) * size_t(a.head_dim + 2);
    L.partial = ws.partial.ensure_as<float>(n_partial, stream);
    launch_attention(L, stream);
}

}  // namespace wb::cuda
