#pragma once
// out[t] = W x[t] for a weight matrix of any supported GGUF type and float32 activations.
// Few tokens (decode): a GEMV that reads the GGUF blocks directly and dequantizes in registers.
// Many tokens (prefill): W is dequantized to f16 and multiplied by cuBLAS on tensor cores.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "device_buffer.h"
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
};

// Batches up to this many tokens take the GEMV path (also the only path used inside CUDA graphs).
constexpr int32_t kGemvMaxTokens = 8;

void matmul(const MatmulArgs& a, MatmulWorkspace& ws, cudaStream_t stream);

}  // namespace wb::cuda
