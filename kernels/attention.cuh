#pragma once
// Causal grouped-query attention over the paged f16 KV cache (optional sliding window), for decode
// and prefill alike: split-KV ("flash-decoding") partial softmaxes, one KV block per split, merged by
// a second kernel.
#include <cuda_runtime.h>

#include <cstdint>

#include "device_buffer.h"

namespace wb::cuda {

struct AttentionArgs {
    const float* q = nullptr;         // device: [n_q][q_stride]; head h at h * head_dim
    int64_t q_stride = 0;
    float* out = nullptr;             // device: [n_q][out_stride]
    int64_t out_stride = 0;
    void* const* blocks = nullptr;    // device: the layer's block table
    int32_t block_tokens = 0;
    int32_t n_q = 0;                  // query rows (tokens) at positions pos0 ..
    int32_t n_head = 0;
    int32_t n_head_kv = 0;
    int32_t head_dim = 0;             // even
    int32_t window = 0;               // > 0: sliding window
    float scale = 1.0f;
    // true: scale multiplies q before q is rounded to f16 and the scores are q.k as they are (Gemma 3,
    // as llama.cpp's graph does it); false: q is rounded as it is and the scores are scale * q.k.
    bool scale_q = false;
    float softcap = 0.0f;             // > 0: scores soft-capped before the softmax (AttentionParams)
    int32_t pos0 = 0;
    const int32_t* pos0_dev = nullptr;  // when set, pos0 is read from device memory (graph replay)
    // KV blocks examined per query row. Splits past the last visible key exit at once, so a decode
    // step may pass the cache's capacity here and keep the same launch shape at every position.
    int32_t n_splits = 0;
    // Probability capture (the inspector): when set, the softmax outputs of the query heads with
    // capture_slot[h] >= 0 are written to capture[slot][row][key] for keys 0 .. capture_keys - 1
    // (zero where masked). Never inside a recorded graph.
    float* capture = nullptr;              // device, zeroed by the caller (keys no split reaches stay 0)
    const int32_t* capture_slot = nullptr; // device: [n_head], -1 = not captured
    int32_t capture_keys = 0;              // pos0 + n_q
};

struct AttentionWorkspace {
    DeviceBuffer partial;  // per (row, head, split): D output sums, then max and sum of exponentials
};

void attention(const AttentionArgs& a, AttentionWorkspace& ws, cudaStream_t stream);

}  // namespace wb::cuda
