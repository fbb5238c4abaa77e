#include <cuda_fp16.h>

#include <cmath>
#include <string>

#include "attention.cuh"
#include "common.cuh"
#include "cuda_check.h"
#include "kv_quant_parts.h"

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

// The query vectors of one block of the split kernel: vector i is query row r0 + i / gc, head
// kvh * group + g0 + i % gc.
struct Vecs {
    const SplitLayout& L;
    int32_t kvh, g0, r0, pos0, nv;
    __device__ int32_t row(int i) const { return r0 + i / L.gc; }
    __device__ int32_t head(int i) const { return kvh * L.group + g0 + i % L.gc; }
    __device__ bool active(int i) const { return i < nv && row(i) < L.a.n_q && g0 + i % L.gc < L.group; }
    __device__ int32_t first_key(int32_t pos) const { return L.a.window > 0 ? max(0, pos - L.a.window + 1) : 0; }
    __device__ bool visible(int i, int32_t j) const {
        const int32_t pos = pos0 + row(i);
        return active(i) && j <= pos && j >= first_key(pos);
    }
};

// The shared memory of the split kernel, carved from one dynamic allocation.
struct SplitSmem {
    float* qs;   // [kVecs][D]: f16-rounded q (f16 K); q scaled and rotated, before quantizing (q8_0 / q4_0 K)
    float* sc;   // [kVecs][BT]: scores, then their exponentials
    float* qd;   // [kVecs][D / 32]: the scales of the quantized q
    int8_t* qi;  // [kVecs][D]: the quantized q
};

// Score of key j for vector i (-inf where the vector does not see it), at its place in the block's row.
// With capture_scores (a test hook) the visible scores of captured heads also go to the capture buffer.
__device__ void sc_store(const SplitSmem& m, const Vecs& V, int i, int32_t j, int32_t jlo, float score) {
    const AttentionArgs& a = V.L.a;
    const bool visible = V.visible(i, j);
    m.sc[i * a.block_tokens + (j - jlo)] = visible ? score : -INFINITY;
    if (a.capture && a.capture_scores && visible) {
        const int32_t slot = a.capture_slot[V.head(i)];
        if (slot >= 0) a.capture[(int64_t(slot) * a.n_q + V.row(i)) * a.capture_keys + j] = score;
    }
}

// qs and sc; with a quantized K also qd and qi (an f16 K needs no quantized q).
__host__ __device__ size_t split_smem_bytes(int32_t head_dim, int32_t block_tokens, bool quant_k) {
    const size_t base = size_t(kVecs) * size_t(head_dim + block_tokens) * sizeof(float);
    return quant_k ? base + size_t(kVecs) * (size_t(head_dim / kKvBlock) * sizeof(float) + size_t(head_dim)) : base;
}

// Score of a dot product. An f16 cache: soft-capped, then scaled (score_scale is 1 with scale_q). A
// quantized K or V: the CPU flash path's formula, s = dot * (scale / cap), then cap * tanh(s).
__device__ float finish_score(const AttentionArgs& a, float dot, float score_scale, bool flash) {
    if (flash) {
        const float scale = a.softcap > 0.0f ? kv_div(score_scale, a.softcap) : score_scale;
        const float s = kv_mul(dot, scale);
        return a.softcap > 0.0f ? kv_mul(a.softcap, tanhf(s)) : s;
    }
    // Gemma 2's soft-cap, as the CPU backend applies it (reciprocal, tanh, cap).
    const float capped = a.softcap > 0.0f ? tanhf(dot * (1.0f / a.softcap)) * a.softcap : dot;
    return capped * score_scale;
}

// Runs the Hadamard passes over n vectors of D values in shared memory x (runs of rot, each value first
// times scale), the CPU's kv_rotate; every thread of the block takes part.
__device__ void rotate_shared(float* x, int n, int D, int32_t rot, float scale) {
    for (int idx = threadIdx.x; idx < n * D; idx += blockDim.x) x[idx] = kv_mul(x[idx], scale);
    __syncthreads();
    const int half = rot / 2;
    for (int32_t len = 1; len < rot; len <<= 1) {
        for (int t = threadIdx.x; t < n * (D / 2); t += blockDim.x) {
            const int i = t / (D / 2), tt = t % (D / 2);
            kv_butterfly(x + int64_t(i) * D + (tt / half) * rot, len, tt % half);
        }
        __syncthreads();
    }
}

// Loads the block's query vectors: rounded to f16 for an f16 K (with scale_q the scale multiplies q
// before that rounding: f16(q * scale), as the CPU backend rounds it; q * 1.0f is q exactly); for a
// quantized K scaled in f32, rotated like the keys and quantized to q8_0, as kv_prepare_query does.
__device__ void load_queries(const Vecs& V, const SplitSmem& m) {
    const AttentionArgs& a = V.L.a;
    const int D = a.head_dim;
    const float q_scale = a.scale_q ? a.scale : 1.0f;
    const bool quant_k = a.type_k != KvType::F16;
    for (int idx = threadIdx.x; idx < kVecs * D; idx += blockDim.x) {
        const int i = idx / D, d = idx % D;
        const float q = V.active(i) ? a.q[int64_t(V.row(i)) * a.q_stride + int64_t(V.head(i)) * D + d] : 0.0f;
        m.qs[idx] = quant_k ? kv_mul(q, q_scale) : __half2float(__float2half_rn(kv_mul(q, q_scale)));
    }
    __syncthreads();
    if (!quant_k) return;
    if (a.rot_k) rotate_shared(m.qs, kVecs, D, a.rot_k, a.rot_k_scale);
    const int nb = D / kKvBlock;
    for (int t = threadIdx.x; t < kVecs * nb; t += blockDim.x) {
        BlockQ8_0 blk;
        kv_quantize_q8_0(m.qs + int64_t(t) * kKvBlock, blk);  // vector t / nb, block t % nb
        m.qd[t] = fp16_to_f32(blk.d);
        for (int e = 0; e < kKvBlock; ++e) m.qi[int64_t(t) * kKvBlock + e] = blk.qs[e];
    }
    __syncthreads();
}

// f16 K: a warp per key, lanes across the head dimension, every vector of the block at once.
__device__ void scores_f16(const Vecs& V, const SplitSmem& m, const uint8_t* kbase, int32_t kb, int32_t jlo, int32_t jhi,
                           float score_scale, bool flash) {
    const AttentionArgs& a = V.L.a;
    const int D = a.head_dim;
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, n_warps = blockDim.x / kWarp;
    for (int j = jlo + warp; j <= jhi; j += n_warps) {
        const auto* k2 = reinterpret_cast<const __half2*>(kbase + int64_t(j - kb) * int64_t(a.k_row_bytes) +
                                                          int64_t(V.kvh) * int64_t(a.k_head_bytes));
        float acc[kVecs];
#pragma unroll
        for (int i = 0; i < kVecs; ++i) acc[i] = 0.0f;
        for (int d2 = lane; d2 < D / 2; d2 += kWarp) {
            const float2 kv = __half22float2(k2[d2]);
#pragma unroll
            for (int i = 0; i < kVecs; ++i)
                if (i < V.nv) acc[i] += m.qs[i * D + 2 * d2] * kv.x + m.qs[i * D + 2 * d2 + 1] * kv.y;
        }
#pragma unroll
        for (int i = 0; i < kVecs; ++i) {
            if (i < V.nv) {
                const float dot = warp_sum(acc[i]);
                if (lane == 0) sc_store(m, V, i, j, jlo, finish_score(a, dot, score_scale, flash));
            }
        }
    }
}

// q8_0 / q4_0 K: a warp takes four keys at once, eight lanes per key; lane p of a key accumulates the
// four-value parts p of every block (kv_dot_quad) with one fused multiply-add per block, and the
// eight lanes are summed pairwise: kv_dot_row's order, which is the CPU's (kv_quant_parts.h).
template <typename Block, int (*Int)(const Block&, int)>
__device__ void scores_quant(const Vecs& V, const SplitSmem& m, const uint8_t* kbase, int32_t kb, int32_t jlo,
                             int32_t jhi, float score_scale) {
    const AttentionArgs& a = V.L.a;
    const int D = a.head_dim, nb = D / kKvBlock;
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, n_warps = blockDim.x / kWarp;
    const int grp = lane / 8, p = lane % 8;
    for (int32_t j0 = jlo + 4 * warp; j0 <= jhi; j0 += 4 * n_warps) {  // uniform across the warp
        const int32_t j = j0 + grp;
        const bool valid = j <= jhi;
        const auto* kr = reinterpret_cast<const Block*>(kbase + int64_t((valid ? j : jlo) - kb) * int64_t(a.k_row_bytes) +
                                                        int64_t(V.kvh) * int64_t(a.k_head_bytes));
        float acc[kVecs];
#pragma unroll
        for (int i = 0; i < kVecs; ++i) acc[i] = 0.0f;
        for (int b = 0; b < nb; ++b) {
            const float dk = fp16_to_f32(kr[b].d);
#pragma unroll
            for (int i = 0; i < kVecs; ++i)
                if (i < V.nv)
                    acc[i] = fmaf(kv_mul(dk, m.qd[i * nb + b]),
                                  float(kv_dot_quad<Block, Int>(kr[b], m.qi + i * D + b * kKvBlock, p)), acc[i]);
        }
#pragma unroll
        for (int i = 0; i < kVecs; ++i) {
            if (i < V.nv) {
                float dot = acc[i];
                for (int off = 4; off >= 1; off >>= 1) dot = kv_add(dot, __shfl_xor_sync(0xffffffffu, dot, off));
                if (p == 0 && valid) sc_store(m, V, i, j, jlo, finish_score(a, dot, score_scale, true));
            }
        }
    }
}

// Values i and i + 1 (i even) of a V row, by type. An f16 row is read as one __half2: the V rows of a
// block start at block_tokens * k_row_bytes from its 256-byte-aligned base, a multiple of 4 (attention()
// checks it), and a head's row at kvh * head_dim * 2 bytes, head_dim even.
struct VF16 {
    static __device__ float2 pair(const uint8_t* row, int i) {
        return __half22float2(reinterpret_cast<const __half2*>(row)[i / 2]);
    }
};
struct VQ8 {
    static __device__ float2 pair(const uint8_t* row, int i) {
        const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row)[i / kKvBlock];
        return make_float2(kv_value_q8_0(b, i % kKvBlock), kv_value_q8_0(b, i % kKvBlock + 1));
    }
};
struct VQ4 {
    static __device__ float2 pair(const uint8_t* row, int i) {
        const BlockQ4_0& b = reinterpret_cast<const BlockQ4_0*>(row)[i / kKvBlock];
        return make_float2(kv_value_q4_0(b, i % kKvBlock), kv_value_q4_0(b, i % kKvBlock + 1));
    }
};

// Unnormalised outputs: sum_j e_j v_j, a thread per (vector, pair of dims), V read by Load (its type,
// chosen once per launch, not per key).
template <typename Load>
__device__ void weight_values(const Vecs& V, const SplitSmem& m, const uint8_t* vbase, int32_t s, int32_t kb, int32_t jlo,
                              int nk) {
    const AttentionArgs& a = V.L.a;
    const int D = a.head_dim, BT = a.block_tokens;
    for (int idx = threadIdx.x; idx < V.nv * (D / 2); idx += blockDim.x) {
        const int i = idx / (D / 2), d2 = idx % (D / 2);
        if (!V.active(i)) continue;
        float2 o = make_float2(0.0f, 0.0f);
        for (int j = 0; j < nk; ++j) {
            const float e = m.sc[i * BT + j];
            const uint8_t* row = vbase + int64_t(jlo - kb + j) * int64_t(a.v_row_bytes) + int64_t(V.kvh) * int64_t(a.v_head_bytes);
            const float2 v = Load::pair(row, 2 * d2);
            o.x += e * v.x;
            o.y += e * v.y;
        }
        float* p = V.L.partial + partial_index(V.L, V.row(i), V.head(i), s) * (D + 2);
        p[2 * d2] = o.x;
        p[2 * d2 + 1] = o.y;
    }
}

// Partial softmax per vector: exponentials relative to the block's own maximum (and the capture).
__device__ void split_softmax(const Vecs& V, const SplitSmem& m, int32_t s, int32_t jlo, int nk) {
    const AttentionArgs& a = V.L.a;
    const int D = a.head_dim, BT = a.block_tokens;
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, n_warps = blockDim.x / kWarp;
    for (int i = warp; i < V.nv; i += n_warps) {
        float mx = -INFINITY;
        for (int j = lane; j < nk; j += kWarp) mx = fmaxf(mx, m.sc[i * BT + j]);
        mx = warp_max(mx);
        float l = 0.0f;
        for (int j = lane; j < nk; j += kWarp) {
            const float e = mx == -INFINITY ? 0.0f : expf(m.sc[i * BT + j] - mx);
            m.sc[i * BT + j] = e;
            l += e;
        }
        l = warp_sum(l);
        if (lane == 0 && V.active(i)) {
            float* p = V.L.partial + partial_index(V.L, V.row(i), V.head(i), s) * (D + 2);
            p[D] = mx;
            p[D + 1] = l;
        }
        // Capture: these exponentials are the ones that weight V below; the capture kernel scales
        // them by the split's share of the global normaliser, as the combine kernel does.
        if (a.capture && !a.capture_scores && V.active(i)) {
            const int32_t slot = a.capture_slot[V.head(i)];
            if (slot >= 0) {
                // Each lane reads back the exponentials it wrote itself just above.
                float* row = a.capture + (int64_t(slot) * a.n_q + V.row(i)) * a.capture_keys;
                for (int j = lane; j < nk; j += kWarp) row[jlo + j] = m.sc[i * BT + j];
            }
        }
    }
}

// One block per (split, kv head and chunk of its query heads, run of query rows). The K/V rows of
// the split's cache block are loaded once for all those query vectors (the grouped-query sharing).
__global__ void __launch_bounds__(kThreads) attention_split_kernel(SplitLayout L) {
    const AttentionArgs& a = L.a;
    extern __shared__ float smem[];
    const int D = a.head_dim, BT = a.block_tokens;
    // qd and qi lie past the allocation of an f16 K, which never touches them (split_smem_bytes).
    const SplitSmem m{smem, smem + kVecs * D, smem + kVecs * (D + BT),
                      reinterpret_cast<int8_t*>(smem + kVecs * (D + BT + D / kKvBlock))};
    const int32_t s = blockIdx.x;
    const int32_t pos0 = a.pos0_dev ? *a.pos0_dev : a.pos0;
    const Vecs V{L, int32_t(blockIdx.y / L.n_gchunks), int32_t((blockIdx.y % L.n_gchunks) * L.gc),
                 int32_t(blockIdx.z * L.rows), pos0, L.rows * L.gc};

    const int32_t last_row = min(V.r0 + L.rows, a.n_q) - 1;
    const int32_t kb = s * BT;
    const int32_t jlo = max(kb, V.first_key(pos0 + V.r0));
    const int32_t jhi = min(kb + BT - 1, pos0 + last_row);
    const int nk = jhi - jlo + 1;
    if (nk <= 0) {
        // Nothing visible in this block for any of the vectors: an empty partial (sum 0).
        if (threadIdx.x < kVecs && V.active(threadIdx.x)) {
            float* p = L.partial + partial_index(L, V.row(threadIdx.x), V.head(threadIdx.x), s) * (D + 2);
            p[D] = -INFINITY;
            p[D + 1] = 0.0f;
        }
        return;
    }
    load_queries(V, m);
    const float score_scale = a.scale_q ? 1.0f : a.scale;
    const bool flash = a.type_k != KvType::F16 || a.type_v != KvType::F16;
    const auto* kbase = static_cast<const uint8_t*>(a.blocks[s]);
    if (a.type_k == KvType::Q8_0)
        scores_quant<BlockQ8_0, kv_int_q8_0>(V, m, kbase, kb, jlo, jhi, score_scale);
    else if (a.type_k == KvType::Q4_0)
        scores_quant<BlockQ4_0, kv_int_q4_0>(V, m, kbase, kb, jlo, jhi, score_scale);
    else
        scores_f16(V, m, kbase, kb, jlo, jhi, score_scale, flash);
    __syncthreads();
    split_softmax(V, m, s, jlo, nk);
    __syncthreads();
    const uint8_t* vbase = kbase + int64_t(BT) * int64_t(a.k_row_bytes);
    if (a.type_v == KvType::Q8_0)
        weight_values<VQ8>(V, m, vbase, s, kb, jlo, nk);
    else if (a.type_v == KvType::Q4_0)
        weight_values<VQ4>(V, m, vbase, s, kb, jlo, nk);
    else
        weight_values<VF16>(V, m, vbase, s, kb, jlo, nk);
}

// Merges the splits of one (row, head): rescale each partial to the global maximum and normalise. A
// quantized V was stored rotated: the output is rotated back (in shared memory, D floats), as the CPU
// rotates its output.
__global__ void attention_combine_kernel(SplitLayout L) {
    extern __shared__ float ob[];
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
    float* out = a.out + int64_t(r) * a.out_stride + int64_t(h) * D;
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float o = 0.0f;
        for (int s = 0; s < a.n_splits; ++s) {
            const float* p = base + s * (D + 2);
            if (p[D + 1] > 0.0f) o += p[d] * expf(p[D] - m);
        }
        (a.rot_v ? ob : out)[d] = kv_mul(o, inv);
    }
    if (!a.rot_v) return;  // uniform across the block
    __syncthreads();
    rotate_shared(ob, 1, D, a.rot_v, a.rot_v_scale);
    for (int d = threadIdx.x; d < D; d += blockDim.x) out[d] = ob[d];
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
    attention_split_kernel<<<grid, kThreads, split_smem_bytes(a.head_dim, a.block_tokens, a.type_k != KvType::F16), stream>>>(L);
    WB_CUDA_CHECK_LAUNCH();
    const size_t combine_smem = a.rot_v ? size_t(a.head_dim) * sizeof(float) : 0;
    attention_combine_kernel<<<dim3(unsigned(a.n_head), unsigned(a.n_q)), kThreads, combine_smem, stream>>>(L);
    WB_CUDA_CHECK_LAUNCH();
    if (a.capture && !a.capture_scores) {
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
    const bool quantized = a.type_k != KvType::F16 || a.type_v != KvType::F16;
    if (quantized && (a.head_dim % kKvBlock != 0 || (a.rot_k && a.head_dim % a.rot_k) || (a.rot_v && a.head_dim % a.rot_v)))
        throw Error("CUDA attention: a quantized KV cache needs head_dim a multiple of 32 (and of its rotation), not " +
                    std::to_string(a.head_dim));
    if (a.type_v == KvType::F16 && (size_t(a.block_tokens) * a.k_row_bytes) % 4 != 0)
        throw Error("CUDA attention: an f16 V behind K rows of " + std::to_string(a.k_row_bytes) + " bytes needs an even " +
                    "block_tokens (its rows are read as 4-byte pairs), not " + std::to_string(a.block_tokens));
    if (a.capture_scores && !quantized)
        throw Error("CUDA attention: capture_scores needs a quantized K or V (the flash path)");
    if (split_smem_bytes(a.head_dim, a.block_tokens, a.type_k != KvType::F16) > 48 * 1024)
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
