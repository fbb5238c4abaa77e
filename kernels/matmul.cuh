#pragma once
// out[t] = W x[t] for a weight matrix of any supported GGUF type and float32 activations.
// Few tokens (decode): a GEMV that reads the GGUF blocks directly. For quantized weights the
// activations are first quantized to 8 bits per 32 elements and the GEMV unpacks each weight part to
// 8-bit integers in registers and multiplies with dp4a (kernels/q8_parts.h); float weights (F32, F16,
// BF16) are dequantized in registers and multiplied in float32.
// Many tokens (prefill): W is dequantized to f16 and multiplied by cuBLAS on tensor cores.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "device_buffer.h"
#include "elementwise.cuh"
#include "gguf/ggml_type.h"

namespace wb::cuda {

struct MatmulArgs {
    GgmlType type = GgmlType::F32;
    const uint8_t* w = nullptr;  // device: n_out rows of w_row_bytes
    size_t w_row_bytes = 0;
    int64_t n_in = 0;            // multiple of 32
    int64_t n_out = 0;
    const float* x = nullptr;    // device: [n_tok][n_in]
    int32_t n_tok = 0;
    float* out = nullptr;        // device: [n_tok][out_stride]
    int64_t out_stride = 0;
};

struct MatmulWorkspace {
    cublasHandle_t cublas = nullptr;  // bound to the stream the matmul runs on
    DeviceBuffer w16;                 // dequantized weights (prefill)
    DeviceBuffer x16;                 // activations in f16 (prefill)
    DeviceBuffer xq8;                 // activations as 8-bit parts (decode): [n_tok][n_in] int8
    DeviceBuffer xq8_scales;          // their scales: [n_tok][n_in / 32] Q8Scale

    // Which activations xq8 holds, so the matmuls that share an input (q/k/v, gate/up) quantize it
    // once. The backend calls forget_q8() from every operation but the matmuls; matmul(),
    // matmul_shared() and matmul_glu() call it when their output overlaps those activations, and
    // before (re)filling the buffers. So a run of consecutive matmuls of the same x is the only reuse,
    // where x was quantized by the first of them or, for a norm's output, by the norm kernel itself.
    const float* q8_x = nullptr;
    int64_t q8_rows = 0, q8_cols = 0;
    void forget_q8() { q8_x = nullptr; }
};

// Tokens one GEMV block computes; more tokens take more blocks (grid y), each reading the weights.
constexpr int32_t kGemvMaxTokens = 8;
// Batches up to this many tokens take the GEMV path (decode, the only path inside CUDA graphs, and
// short prompts); larger ones cuBLAS. The GEMV reads W once per 8 tokens (0.56 bytes a weight for
// Q4_0), the cuBLAS path dequantizes W to f16 first (about 4.6 bytes a weight of traffic), so up to
// 32 tokens the GEMV moves half as much or less.
constexpr int32_t kGemvMaxBatch = 32;
constexpr int kMaxShared = 3;  // products of one input fused into one launch (q, k, v)

void matmul(const MatmulArgs& a, MatmulWorkspace& ws, cudaStream_t stream);

// Activations quantized by another kernel (the norms quantize their output as they write it): the
// buffers for rows x cols (the cache forgotten meanwhile), and remember_q8 once the kernel that fills
// them is queued, so the matmuls of x that follow skip their quantize kernel.
struct Q8Scale;
struct Q8Target {
    int8_t* q = nullptr;
    Q8Scale* scales = nullptr;
};
Q8Target q8_target(MatmulWorkspace& ws, int64_t rows, int64_t cols, cudaStream_t stream);
void remember_q8(MatmulWorkspace& ws, const float* x, int64_t rows, int64_t cols);

// The fused forms (Backend::matmul_shared / matmul_glu), for weights gemv_fusable says yes to: a
// quantized type and at most kGemvMaxBatch tokens (wb::Error otherwise). Each output element is
// computed with the arithmetic of matmul(); the launches are fewer.
bool gemv_fusable(GgmlType type, int32_t n_tok);
// a[i].out = W_i x for n <= kMaxShared products of one type and one input x (one launch).
void matmul_shared(const MatmulArgs* a, int n, MatmulWorkspace& ws, cudaStream_t stream);
// gate.out = act(W_gate x) * (W_up x): W_up has gate's type and shape (w_up: its device rows); one
// launch, without the two intermediate products ever reaching memory.
void matmul_glu(const MatmulArgs& gate, const uint8_t* w_up, GluAct act, MatmulWorkspace& ws, cudaStream_t stream);

}  // namespace wb::cuda
