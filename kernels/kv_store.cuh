#pragma once
// Writes K and V rows of a batch into the paged KV cache of one layer, in the cache's element types:
// f16 (round to nearest even) or llama.cpp's q8_0 / q4_0 blocks, quantized as the CPU backend does
// (kernels/kv_quant_parts.h), after the Hadamard rotation the CPU applies to a quantized K or V.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kv/kv_types.h"

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
    KvType type_k = KvType::F16, type_v = KvType::F16;
    size_t k_row_bytes = 0, v_row_bytes = 0;  // KvCache::k_row_bytes() / v_row_bytes()
    // Rotation run lengths (kv_rotation_k / _v; 0 = none) and their 1 / sqrtf(n), computed on the host
    // by the CPU's expression so that both sides multiply by the same float.
    int32_t rot_k = 0, rot_v = 0;
    float rot_k_scale = 1.0f, rot_v_scale = 1.0f;
};

void kv_store(const KvStoreArgs& a, cudaStream_t stream);

}  // namespace wb::cuda
