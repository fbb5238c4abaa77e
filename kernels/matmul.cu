#include <cuda_fp16.h>

#include <string>

#include "common.cuh"
#include "cuda_check.h"
#include "dequant_parts.h"
#include "matmul.cuh"
#include "q8_parts.h"

namespace wb::cuda {

namespace {

constexpr int kGemvWarps = 4;  // rows per block: one warp per output row

// ---- decode: GEMV straight from the GGUF blocks ----
//
// A warp owns one weight row; lane l takes parts l, l + 32, ... and dots each with the matching 32
// activations of up to NT tokens, so a weight byte is read once per batch of NT tokens. Quantized
// weights go the integer way (q8_parts.h), float weights the float way below.

// One warp per part of the activations: lane i quantizes element i. The same math as
// quantize_part_q8 (the max and the integer sum are exact in any order).
__global__ void quantize_q8_kernel(const float* x, int64_t n_parts, int8_t* xq, Q8Scale* xs) {
    const int64_t part = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
    const int lane = threadIdx.x % kWarp;
    if (part >= n_parts) return;  // whole warps: part is the same for all lanes
    const float v = x[part * kPart + lane];
    const float amax = warp_max(fabsf(v));
    const int q = q8_round(v, q8_inverse_scale(amax));
    xq[part * kPart + lane] = int8_t(q);
    const float sum = warp_sum(float(q));  // |sum| <= 32 * 127: exact in float
    if (lane == 0) {
        const float d = amax / 127.0f;
        xs[part] = {d, d * sum};
    }
}

template <GgmlType T, int NT>
__global__ void __launch_bounds__(kGemvWarps * kWarp)
    gemv_q8_kernel(MatmulArgs a, const int8_t* __restrict__ xq, const Q8Scale* __restrict__ xs) {
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
        IntPart w;
        unpack_row_part<T>(wrow, part, w);
#pragma unroll
        for (int t = 0; t < NT; ++t) {
            if (t < nt) {
                // A part of xq is 32 bytes at a multiple of 32 (n_in is a multiple of 32).
                const int64_t xi = int64_t(tok0 + t) * n_parts + part;
                const uint4* xp = reinterpret_cast<const uint4*>(xq + xi * kPart);
                const uint4 x0 = __ldg(xp), x1 = __ldg(xp + 1);
                const uint32_t x[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
                acc[t] += dot_part_q8<T>(w, x, xs[xi]);
            }
        }
    }
#pragma unroll
    for (int t = 0; t < NT; ++t) {
        const float s = warp_sum(acc[t]);
        if (lane == 0 && t < nt) a.out[int64_t(tok0 + t) * a.out_stride + row] = s;
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

template <GgmlType T>
void launch_gemv(const MatmulArgs& a, cudaStream_t stream) {
    const dim3 block(kGemvWarps * kWarp);
    if (a.n_tok == 1) {
        gemv_kernel<T, 1><<<dim3(unsigned(ceil_div(a.n_out, kGemvWarps)), 1), block, 0, stream>>>(a);
    } else {
        constexpr int kNt = kGemvMaxTokens;
        const dim3 grid(unsigned(ceil_div(a.n_out, kGemvWarps)), unsigned(ceil_div(a.n_tok, kNt)));
        gemv_kernel<T, kNt><<<grid, block, 0, stream>>>(a);
    }
    WB_CUDA_CHECK_LAUNCH();
}

// Quantizes a.x into the workspace unless it already holds these activations (see forget_q8).
void quantize_activations(const MatmulArgs& a, MatmulWorkspace& ws, cudaStream_t stream) {
    if (ws.q8_x == a.x && ws.q8_rows == a.n_tok && ws.q8_cols == a.n_in) return;
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

template <GgmlType T>
void launch_gemv_q8(const MatmulArgs& a, MatmulWorkspace& ws, cudaStream_t stream) {
    quantize_activations(a, ws, stream);
    const auto* xq = static_cast<const int8_t*>(ws.xq8.get());
    const auto* xs = static_cast<const Q8Scale*>(ws.xq8_scales.get());
    const dim3 block(kGemvWarps * kWarp);
    if (a.n_tok == 1) {
        gemv_q8_kernel<T, 1><<<dim3(unsigned(ceil_div(a.n_out, kGemvWarps)), 1), block, 0, stream>>>(a, xq, xs);
    } else {
        constexpr int kNt = kGemvMaxTokens;
        const dim3 grid(unsigned(ceil_div(a.n_out, kGemvWarps)), unsigned(ceil_div(a.n_tok, kNt)));
        gemv_q8_kernel<T, kNt><<<grid, block, 0, stream>>>(a, xq, xs);
    }
    WB_CUDA_CHECK_LAUNCH();
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

}  // namespace

void matmul(const MatmulArgs& a, MatmulWorkspace& ws, cudaStream_t stream) {
    if (a.n_tok <= 0 || a.n_out <= 0) return;
    if (a.n_in % kPart != 0)
        throw Error("CUDA matmul: row length " + std::to_string(a.n_in) + " is not a multiple of 32");
    if (a.n_tok <= kGemvMaxTokens) {
        dispatch_weight_type(a.type, [&](auto tc) {
            constexpr GgmlType T = decltype(tc)::value;
            if constexpr (has_int_part(T)) {
                launch_gemv_q8<T>(a, ws, stream);
            } else {
                launch_gemv<T>(a, stream);
            }
        });
    } else {
        gemm_cublas(a, ws, stream);
    }
}

}  // namespace wb::cuda
