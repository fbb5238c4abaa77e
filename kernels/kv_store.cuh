#pragma once
// Writes K and V rows of a batch into the paged f16 KV cache of one layer.
#include <cuda_runtime.h>

#include <cstdint>

namespace wb::cuda {

struct KvStoreArgs {
    const float* k = nullptr;      // device: [n_rows][width]
    const float* v = nullptr;      // device: [n_rows][width]
    int64_t n_rows = 0;
    int64_t width = 0;             // n_head_kv * head_dim
    void* const* blocks = nullptr; // device: the layer's block table (KvCache layout: K rows, then V rows)
    int32_t block_tokens = 0;
    int32_t pos0 = 0;              // position of row 0 ...
    const int32_t* pos0_dev = nullptr;  // ... or, when set, read from device memory (graph replay)
};

void kv_store(const KvStoreArgs& a, cudaStream_t stream);

}  // namespace wb::cuda
