#include <cuda_fp16.h>

#include <string>

#include "common.cuh"
#include "cuda_check.h"
#include "dequant_parts.h"
#include "elementwise.cuh"
#include "matmul.cuh"
#include "q8_parts.h"
#include "q8_quantize.cuh"

namespace wb::cuda {

namespace {

constexpr int kGemvWarps = 4;  // rows per block: one warp per output row

// ---- decode: GEMV straight from the GGUF blocks ----
//
// A warp owns one weight row; lane l takes parts l, l + 32, ... and dots each with the matching 32
// activations of up to NT tokens, so a weight byte is read once per batch of NT tokens. Quantized
// weights go the integer way (q8_parts.h), float weights the float way below.

// One warp per part of the activations: lane i quantizes element i.
__global__ void quantize_q8_kernel(const float* x, int64_t n_parts, int8_t* xq, Q8Scale* xs) {
    const int64_t part = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
    if (part >= n_parts) return;  // whole warps: part is the same for all lanes
    quantize_part_q8_warp(x[part * kPart + threadIdx.x % kWarp], xq + part * kPart, xs + part);
}

// This lane's share of NW weight rows of type T times the activations of tokens tok0 .. tok0 + nt - 1:
// acc[k][t] += parts lane, lane + 32, ... of row k . x[tok0 + t]. The rows share each activation load
// (gate and up of a fused feed-forward).
template <GgmlType T, int NT, int NW>
__device__ __forceinline__ void gemv_q8_lane(const uint8_t* const (&wrow)[NW], int64_t n_parts, int tok0, int nt,
                                             const int8_t* __restrict__ xq, const Q8Scale* __restrict__ xs,
                                             float (&acc)[NW][NT]) {
    for (int64_t part = threadIdx.x % kWarp; part < n_parts; part += kWarp) {
        IntPart w[NW];
#pragma unroll
        for (int k = 0; k < NW; ++k) unpack_row_part<T>(wrow[k], part, w[k]);
#pragma unroll
        for (int t = 0; t < NT; ++t) {
            if (t < nt) {
                // A part of xq is 32 bytes at a multiple of 32 (n_in is a multiple of 32).
                const int64_t xi = int64_t(tok0 + t) * n_parts + part;
                const uint4* xp = reinterpret_cast<const uint4*>(xq + xi * kPart);
                const uint4 x0 = __ldg(xp), x1 = __ldg(xp + 1);
                const uint32_t x[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
                const Q8Scale scale = xs[xi];
#pragma unroll
                for (int k = 0; k < NW; ++k) acc[k][t] += dot_part_q8<T>(w[k], x, scale);
            }
        }
    }
}

// Up to kMaxShared matrices of one type times the same activations in one launch (q, k and v):
// blockIdx.x runs over the row blocks of all of them, first_block[i] is where matrix i starts.
struct SharedGemv {
    MatmulArgs m[kMaxShared];
    int n = 0;
    unsigned first_block[kMaxShared + 1] = {};
};

template <GgmlType T, int NT>
__global__ void __launch_bounds__(kGemvWarps * kWarp)
    gemv_q8_kernel(SharedGemv g, const int8_t* __restrict__ xq, const Q8Scale* __restrict__ xs) {
    int i = 0;
    while (i + 1 < g.n && blockIdx.x >= g.first_block[i + 1]) ++i;
    const MatmulArgs& a = g.m[i];
    const int lane = threadIdx.x % kWarp;
    const int64_t row = int64_t(blockIdx.x - g.first_block[i]) * kGemvWarps + threadIdx.x / kWarp;
    if (row >= a.n_out) return;  // whole warps
    const int tok0 = blockIdx.y * NT;
    const int nt = min(NT, a.n_tok - tok0);
    const uint8_t* wrow[1] = {a.w + row * a.w_row_bytes};
    float acc[1][NT];
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[0][t] = 0.0f;
    gemv_q8_lane<T, NT, 1>(wrow, a.n_in / kPart, tok0, nt, xq, xs, acc);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        const float s = warp_sum(acc[0][t]);
        if (lane == 0 && t < nt) a.out[int64_t(tok0 + t) * a.out_stride + row] = s;
    }
}

// out[t][r] = act(gate[r] . x[t]) * (up[r] . x[t]): a warp computes row r of both projections.
template <GgmlType T, int NT, GluAct A>
__global__ void __launch_bounds__(kGemvWarps * kWarp)
    gemv_q8_glu_kernel(MatmulArgs gate, const uint8_t* __restrict__ w_up, const int8_t* __restrict__ xq,
                       const Q8Scale* __restrict__ xs) {
    const int lane = threadIdx.x % kWarp;
    const int64_t row = int64_t(blockIdx.x) * kGemvWarps + threadIdx.x / kWarp;
    if (row >= gate.n_out) return;  // whole warps
    const int tok0 = blockIdx.y * NT;
    const int nt = min(NT, gate.n_tok - tok0);
    const uint8_t* wrow[2] = {gate.w + row * gate.w_row_bytes, w_up + row * gate.w_row_bytes};
    float acc[2][NT];
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[0][t] = acc[1][t] = 0.0f;
    gemv_q8_lane<T, NT, 2>(wrow, gate.n_in / kPart, tok0, nt, xq, xs, acc);
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        const float g = warp_sum(acc[0][t]);
        const float u = warp_sum(acc[1][t]);
        if (lane == 0 && t < nt) gate.out[int64_t(tok0 + t) * gate.out_stride + row] = glu_activation<A>(g) * u;
    }
}

template <GgmlType T, int NT>
__global__ void __launch_bounds__(kGemvWarps * kWarp) gemv_kernel(MatmulArgs a) {
    const int lane = threadIdx.x % kWarp;
    const int64_t row = int64_t(blockIdx.x) * kGemvWarps + threadIdx.x / kWarp;
    if (row >= a.n_out) return;
    const int tok0 = blockIdx.y * NT;
    const int nt = min(NT, a.n_tok - tok0);
    const uint8_t* wrow = a.w + row * a.w_row_bytes;
    const int64_t n_parts = a.n_in / kPart;

    float acc[NT];
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[t] = 0.0f;
    for (int64_t part = lane; part < n_parts; part += kWarp) {
        float w[kPart];
        dequantize_row_part<T>(wrow, part, w);
#pragma unroll
        for (int t = 0; t < NT; ++t) {
            if (t < nt) {
                // n_in is a multiple of 32, so every part of an activation row is 128-byte aligned.
                const float4* xp = reinterpret_cast<const float4*>(a.x + int64_t(tok0 + t) * a.n_in + part * kPart);
                float s = 0.0f;
#pragma unroll
                for (int i = 0; i < kPart / 4; ++i) {
                    const float4 xv = __ldg(xp + i);
                    s += w[4 * i] * xv.x + w[4 * i + 1] * xv.y + w[4 * i + 2] * xv.z + w[4 * i + 3] * xv.w;
                }
                acc[t] += s;
            }
        }
    }
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        const float s = warp_sum(acc[t]);
        if (lane == 0 && t < nt) a.out[int64_t(tok0 + t) * a.out_stride + row] = s;
    }
}

// Grid: (row blocks, token groups); one token alone takes the NT = 1 instantiation.
dim3 gemv_grid(int64_t row_blocks, int32_t n_tok) {
    return dim3(unsigned(row_blocks), n_tok == 1 ? 1u : unsigned(ceil_div(n_tok, kGemvMaxTokens)));
}

template <GgmlType T>
void launch_gemv(const MatmulArgs& a, cudaStream_t stream) {
    const dim3 grid = gemv_grid(ceil_div(a.n_out, kGemvWarps), a.n_tok);
    if (a.n_tok == 1)
        gemv_kernel<T, 1><<<grid, kGemvWarps * kWarp, 0, stream>>>(a);
    else
        gemv_kernel<T, kGemvMaxTokens><<<grid, kGemvWarps * kWarp, 0, stream>>>(a);
    WB_CUDA_CHECK_LAUNCH();
}

// Quantizes a.x into the workspace unless it already holds these activations (see forget_q8).
void quantize_activations(const MatmulArgs& a, MatmulWorkspace& ws, cudaStream_t stream) {
    if (ws.q8_x == a.x && ws.q8_rows == a.n_tok && ws.q8_cols == a.n_in) return;
    ws.forget_q8();  // until the buffers hold x: growing them may throw
    const int64_t n_parts = int64_t(a.n_tok) * (a.n_in / kPart);
    auto* xq = ws.xq8.ensure_as<int8_t>(size_t(n_parts * kPart), stream);
    auto* xs = ws.xq8_scales.ensure_as<Q8Scale>(size_t(n_parts), stream);
    constexpr int kThreads = 256;  // 8 parts per block
    quantize_q8_kernel<<<unsigned(ceil_div(n_parts * kWarp, kThreads)), kThreads, 0, stream>>>(a.x, n_parts, xq, xs);
    WB_CUDA_CHECK_LAUNCH();
    ws.q8_x = a.x;
    ws.q8_rows = a.n_tok;
    ws.q8_cols = a.n_in;
}

}  // namespace

Q8Target q8_target(MatmulWorkspace& ws, int64_t rows, int64_t cols, cudaStream_t stream) {
    ws.forget_q8();  // until the buffers hold the new activations
    const int64_t n_parts = rows * (cols / kPart);
    Q8Target t;
    t.q = ws.xq8.ensure_as<int8_t>(size_t(n_parts * kPart), stream);
    t.scales = ws.xq8_scales.ensure_as<Q8Scale>(size_t(n_parts), stream);
    return t;
}

void remember_q8(MatmulWorkspace& ws, const float* x, int64_t rows, int64_t cols) {
    ws.q8_x = x;
    ws.q8_rows = rows;
    ws.q8_cols = cols;
}

namespace {


template <GgmlType T>
void launch_gemv_q8(const SharedGemv& g, const int8_t* xq, const Q8Scale* xs, cudaStream_t stream) {
    const dim3 grid = gemv_grid(g.first_block[g.n], g.m[0].n_tok);
    if (g.m[0].n_tok == 1)
        gemv_q8_kernel<T, 1><<<grid, kGemvWarps * kWarp, 0, stream>>>(g, xq, xs);
    else
        gemv_q8_kernel<T, kGemvMaxTokens><<<grid, kGemvWarps * kWarp, 0, stream>>>(g, xq, xs);
    WB_CUDA_CHECK_LAUNCH();
}

template <GgmlType T, GluAct A>
void launch_gemv_q8_glu(const MatmulArgs& gate, const uint8_t* w_up, const int8_t* xq, const Q8Scale* xs,
                        cudaStream_t stream) {
    const dim3 grid = gemv_grid(ceil_div(gate.n_out, kGemvWarps), gate.n_tok);
    if (gate.n_tok == 1)
        gemv_q8_glu_kernel<T, 1, A><<<grid, kGemvWarps * kWarp, 0, stream>>>(gate, w_up, xq, xs);
    else
        gemv_q8_glu_kernel<T, kGemvMaxTokens, A><<<grid, kGemvWarps * kWarp, 0, stream>>>(gate, w_up, xq, xs);
    WB_CUDA_CHECK_LAUNCH();
}

// Forgets the quantized activations when a product's output overlaps the memory they were made of
// (a float-weight GEMV or a cuBLAS product writing over them).
void forget_if_overwritten(MatmulWorkspace& ws, const MatmulArgs& a) {
    const float* out_end = a.out + int64_t(a.n_tok) * a.out_stride;
    if (ws.q8_x && a.out < ws.q8_x + ws.q8_rows * ws.q8_cols && ws.q8_x < out_end) ws.forget_q8();
}

// ---- prefill: dequantize to f16, then cuBLAS ----

// One thread per part of the matrix; parts of a row are consecutive threads, so stores coalesce.
template <GgmlType T>
__global__ void dequantize_f16_kernel(const uint8_t* w, size_t row_bytes, int64_t n_in, int64_t n_out, __half* out) {
    const int64_t n_parts = n_in / kPart;
    const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= n_out * n_parts) return;
    const int64_t row = idx / n_parts, part = idx % n_parts;
    float y[kPart];
    dequantize_row_part<T>(w + row * row_bytes, part, y);
    auto* o = reinterpret_cast<__half2*>(out + row * n_in + part * kPart);
#pragma unroll
    for (int i = 0; i < kPart / 2; ++i) o[i] = __floats2half2_rn(y[2 * i], y[2 * i + 1]);
}

__global__ void f32_to_f16_kernel(const float* x, __half* y, int64_t n) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2half_rn(x[i]);
}

template <GgmlType T>
void launch_dequantize_f16(const MatmulArgs& a, __half* out, cudaStream_t stream) {
    constexpr int kThreads = 256;
    const int64_t total = a.n_out * (a.n_in / kPart);
    dequantize_f16_kernel<T><<<unsigned(ceil_div(total, kThreads)), kThreads, 0, stream>>>(a.w, a.w_row_bytes, a.n_in,
                                                                                            a.n_out, out);
    WB_CUDA_CHECK_LAUNCH();
}

// Row-major W [n_out][n_in] is column-major W^T (n_in x n_out) with ld n_in; likewise X. cuBLAS then
// computes the column-major out^T (n_out x n_tok) = op(W^T)^T X, i.e. out[t][r] = W[r] . x[t].
void gemm_cublas(const MatmulArgs& a, MatmulWorkspace& ws, cudaStream_t stream) {
    const float alpha = 1.0f, beta = 0.0f;
    if (a.type == GgmlType::F32) {
        WB_CUBLAS_CHECK(cublasGemmEx(ws.cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(a.n_out), a.n_tok, int(a.n_in), &alpha,
                                     a.w, CUDA_R_32F, int(a.n_in), a.x, CUDA_R_32F, int(a.n_in), &beta, a.out,
                                     CUDA_R_32F, int(a.out_stride), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        return;
    }
    const __half* w16 = nullptr;
    if (a.type == GgmlType::F16) {
        w16 = reinterpret_cast<const __half*>(a.w);  // already f16: no conversion pass
    } else {
        auto* buf = ws.w16.ensure_as<__half>(size_t(a.n_out * a.n_in), stream);
        dispatch_weight_type(a.type, [&](auto tc) { launch_dequantize_f16<decltype(tc)::value>(a, buf, stream); });
        w16 = buf;
    }
    const int64_t nx = int64_t(a.n_tok) * a.n_in;
    auto* x16 = ws.x16.ensure_as<__half>(size_t(nx), stream);
    constexpr int kThreads = 256;
    f32_to_f16_kernel<<<unsigned(ceil_div(nx, kThreads)), kThreads, 0, stream>>>(a.x, x16, nx);
    WB_CUDA_CHECK_LAUNCH();
    // f16 inputs, f32 accumulation and output: tensor cores with the precision of the f16 roundings only.
    WB_CUBLAS_CHECK(cublasGemmEx(ws.cublas, CUBLAS_OP_T, CUBLAS_OP_N, int(a.n_out), a.n_tok, int(a.n_in), &alpha, w16,
                                 CUDA_R_16F, int(a.n_in), x16, CUDA_R_16F, int(a.n_in), &beta, a.out, CUDA_R_32F,
                                 int(a.out_stride), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void check_args(const MatmulArgs& a) {
    const int64_t block = ggml_type_traits(a.type).block_elems;
    if (a.n_in % kPart != 0 || block <= 0 || a.n_in % block != 0)
        throw Error("CUDA matmul: row length " + std::to_string(a.n_in) + " is not a whole number of " +
                    ggml_type_name(a.type) + " blocks (and of 32)");
}

}  // namespace

bool gemv_fusable(GgmlType type, int32_t n_tok) { return has_int_part(type) && n_tok <= kGemvMaxBatch; }

void matmul(const MatmulArgs& a, MatmulWorkspace& ws, cudaStream_t stream) {
    if (a.n_tok <= 0 || a.n_out <= 0) return;
    check_args(a);
    if (gemv_fusable(a.type, a.n_tok)) {
        matmul_shared(&a, 1, ws, stream);
        return;
    }
    if (a.n_tok <= kGemvMaxBatch) {
        dispatch_weight_type(a.type, [&](auto tc) {
            constexpr GgmlType T = decltype(tc)::value;
            if constexpr (!has_int_part(T)) {
                launch_gemv<T>(a, stream);
            } else {
                throw Error("CUDA matmul: internal error, a quantized type on the float GEMV");
            }
        });
    } else {
        gemm_cublas(a, ws, stream);
    }
    forget_if_overwritten(ws, a);
}

void matmul_shared(const MatmulArgs* a, int n, MatmulWorkspace& ws, cudaStream_t stream) {
    if (n < 1 || n > kMaxShared) throw Error("CUDA matmul: " + std::to_string(n) + " products of one input at once");
    SharedGemv g;
    g.n = n;
    for (int i = 0; i < n; ++i) {
        check_args(a[i]);
        if (a[i].type != a[0].type || a[i].x != a[0].x || a[i].n_in != a[0].n_in || a[i].n_tok != a[0].n_tok ||
            !gemv_fusable(a[i].type, a[i].n_tok))
            throw Error("CUDA matmul: fused products need one quantized type, one input and at most " +
                        std::to_string(kGemvMaxTokens) + " tokens");
        g.m[i] = a[i];
        g.first_block[i + 1] = g.first_block[i] + unsigned(ceil_div(a[i].n_out, kGemvWarps));
    }
    if (a[0].n_tok <= 0 || g.first_block[n] == 0) return;
    quantize_activations(a[0], ws, stream);
    const auto* xq = static_cast<const int8_t*>(ws.xq8.get());
    const auto* xs = static_cast<const Q8Scale*>(ws.xq8_scales.get());
    dispatch_weight_type(a[0].type, [&](auto tc) {
        constexpr GgmlType T = decltype(tc)::value;
        if constexpr (has_int_part(T)) launch_gemv_q8<T>(g, xq, xs, stream);
    });
    for (int i = 0; i < n; ++i) forget_if_overwritten(ws, a[i]);
}

void matmul_glu(const MatmulArgs& gate, const uint8_t* w_up, GluAct act, MatmulWorkspace& ws, cudaStream_t stream) {
    check_args(gate);
    if (!gemv_fusable(gate.type, gate.n_tok))
        throw Error("CUDA matmul: a fused gate/up product needs a quantized type and at most " +
                    std::to_string(kGemvMaxTokens) + " tokens");
    if (gate.n_tok <= 0 || gate.n_out <= 0) return;
    quantize_activations(gate, ws, stream);
    const auto* xq = static_cast<const int8_t*>(ws.xq8.get());
    const auto* xs = static_cast<const Q8Scale*>(ws.xq8_scales.get());
    dispatch_weight_type(gate.type, [&](auto tc) {
        constexpr GgmlType T = decltype(tc)::value;
        if constexpr (has_int_part(T)) {
            if (act == GluAct::SILU)
                launch_gemv_q8_glu<T, GluAct::SILU>(gate, w_up, xq, xs, stream);
            else
                launch_gemv_q8_glu<T, GluAct::GELU_TANH>(gate, w_up, xq, xs, stream);
        }
    });
    forget_if_overwritten(ws, gate);
}

}  // namespace wb::cuda
