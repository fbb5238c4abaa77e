#pragma once
// Context shift on the paged KV cache of one layer (Backend::kv_shift): rows move down, K is
// re-rotated by the shift's angle (rope_shift_pair, shared with the CPU backend). K is f16, as the CPU
// backend requires (a quantized K is stored rotated and in blocks: re-roping it is implemented on
// neither backend); V moves as the bytes of its type (f16, q8_0 or q4_0), as the CPU copies it.
#include <cuda_runtime.h>

#include <cstdint>

namespace wb::cuda {

struct KvShiftArgs {
    void* const* blocks = nullptr;  // device: the layer's block table (KvCache layout: K rows, then V rows)
    int32_t block_tokens = 0;
    int32_t width = 0;              // n_head_kv * head_dim
    size_t k_row_bytes = 0;         // KvCache::k_row_bytes() (2 * width: f16)
    size_t v_row_bytes = 0;         // KvCache::v_row_bytes() (even for every type: 2-byte scales, 2 * width for f16)
    int32_t head_dim = 0;
    int32_t n_rot = 0;
    bool neox = false;
    const float* cos_sin = nullptr;  // device: [n_rot / 2] cos, then [n_rot / 2] sin of the shift's angle
    int32_t src = 0, dst = 0, n = 0;  // rows [src, src + n) -> [dst, dst + n), dst <= src
};

void kv_shift(const KvShiftArgs& a, cudaStream_t stream);

}  // namespace wb::cuda
