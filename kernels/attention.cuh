#pragma once
// Causal grouped-query attention over the paged KV cache (optional sliding window), for decode and
// prefill alike: split-KV ("flash-decoding") partial softmaxes, one KV block per split, merged by a
// second kernel. K and V are read in the cache's types (f16, q8_0, q4_0) straight from its blocks.
//
// How the quantized types are read, against the CPU backend (core/engine/backend_cpu_attention_flash.cpp,
// llama.cpp's flash attention):
//  - q8_0 / q4_0 K: q (times the scale with scale_q) is rotated like the stored keys and quantized to
//    q8_0 per block with kv_quant_parts.h's quantizer, and each score is the key row's dot with it in
//    llama.cpp's AVX2 order (integer sums of four products, one fused multiply-add per block and lane,
//    the eight lanes summed pairwise), then scaled and soft-capped by the CPU flash path's formula.
//    The kernel's own loops (rotate_shared, scores_quant) compose kv_quant_parts.h's pieces; that these
//    scores equal the CPU's bit for bit (without a soft cap: tanhf is the device's) is what
//    test_gpu_kv checks on a device through capture_scores; test_kv_quant_parts checks the pieces,
//    and kv_dot_row (their serial composition, used by that test only), against core/kv on the CPU;
//  - V (any type) is accumulated in f32 from the dequantized values, d * q; the CPU accumulates an f16
//    V in f16 on this path, and both sum the keys in another order (online softmax over all keys vs
//    per-block partials merged here), so outputs agree to rounding, not bit for bit;
//  - a quantized V's output is rotated back (the 64-value Hadamard runs) in the merge kernel.
// An f16 K and V keep the f16 path (q rounded to f16, f16 products, V read as __half2 pairs).
#include <cuda_runtime.h>

#include <cstdint>

#include "device_buffer.h"
#include "kv/kv_types.h"

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
    int32_t head_dim = 0;             // even; a multiple of 32 with a quantized K or V
    KvType type_k = KvType::F16, type_v = KvType::F16;
    size_t k_row_bytes = 0, v_row_bytes = 0;    // KvCache::k_row_bytes() / v_row_bytes()
    size_t k_head_bytes = 0, v_head_bytes = 0;  // KvCache::k_head_bytes() / v_head_bytes()
    // Hadamard runs of a quantized K / V (kv_rotation_k / _v; 0 = none) and 1 / sqrtf of them, the
    // CPU's float (kv_store.cuh).
    int32_t rot_k = 0, rot_v = 0;
    float rot_k_scale = 1.0f, rot_v_scale = 1.0f;
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
    // Test hook (AttentionParams::capture_scores): the capture receives the scores (after the scale and
    // the soft cap, before the softmax) instead of the probabilities. A quantized K or V only.
    bool capture_scores = false;
};

struct AttentionWorkspace {
    DeviceBuffer partial;  // per (row, head, split): D output sums, then max and sum of exponentials
};

void attention(const AttentionArgs& a, AttentionWorkspace& ws, cudaStream_t stream);

}  // namespace wb::cuda
