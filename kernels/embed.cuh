#pragma once
// Embedding lookup: rows of a table of any supported weight type, dequantized on the device.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "gguf/ggml_type.h"

namespace wb::cuda {

struct EmbedArgs {
    GgmlType type = GgmlType::F32;
    const uint8_t* table = nullptr;  // device: n_rows rows of row_bytes
    size_t row_bytes = 0;
    int64_t n_cols = 0;              // elements per row (multiple of 32)
    int64_t n_rows = 0;              // vocabulary size; ids outside [0, n_rows) give zero rows
    const int32_t* ids = nullptr;    // device: n ids
    int32_t n = 0;
    float scale = 1.0f;
    float* out = nullptr;            // device: [n][n_cols]
};

void embed(const EmbedArgs& a, cudaStream_t stream);

}  // namespace wb::cuda
