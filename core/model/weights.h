#pragma once
// The model's weight tensors, bound by name from the GGUF file with their shapes checked.
//
// A Weight points at the tensor inside the memory-mapped file (host) and, once a backend has prepared
// it, at the backend's own copy (device memory for CUDA; the CPU backend uses the mapping directly).
// Shapes below are in ggml order [ne0, ne1]: ne0 is the input width (row length), ne1 the output rows.
#include <cstdint>
#include <string>
#include <vector>

#include "gguf/ggml_type.h"

namespace wb {

class GgufFile;
struct GgufTensor;
struct ModelConfig;

struct Weight {
    const GgufTensor* src = nullptr;  // null for an optional tensor the file does not have
    GgmlType type = GgmlType::F32;
    int64_t n_in = 0;                 // ne0: elements per row
    int64_t n_out = 0;                // ne1: rows (1 for a vector)
    const void* host = nullptr;       // rows in the GGUF mapping
    void* device = nullptr;           // the backend's copy, when it keeps one

    explicit operator bool() const { return src != nullptr; }
};

struct LayerWeights {
    Weight attn_norm;            // [n_embd]            RMSNorm gain before attention
    Weight attn_q;               // [n_embd, q_dim]
    Weight attn_k;               // [n_embd, kv_dim]
    Weight attn_v;               // [n_embd, kv_dim]
    Weight attn_output;          // [q_dim, n_embd]
    Weight attn_q_norm;          // [head_dim]          per-head RMSNorm of q (gemma3; absent in llama)
    Weight attn_k_norm;          // [head_dim]          per-head RMSNorm of k (gemma3)
    Weight post_attention_norm;  // [n_embd]            norm of the attention output (gemma3)
    Weight ffn_norm;             // [n_embd]            RMSNorm gain before the FFN
    Weight ffn_gate;             // [n_embd, n_ff]
    Weight ffn_up;               // [n_embd, n_ff]
    Weight ffn_down;             // [n_ff, n_embd]
    Weight post_ffw_norm;        // [n_embd]            norm of the FFN output (gemma3)
    Weight attn_q_bias;          // [q_dim]             optional biases of the projections (qwen2's; a
    Weight attn_k_bias;          // [kv_dim]            file of any architecture may have them)
    Weight attn_v_bias;          // [v_dim]
    Weight attn_output_bias;     // [n_embd]            llama only
};

struct ModelWeights {
    Weight token_embd;           // [n_embd, n_vocab]   row t = embedding of token t
    Weight output_norm;          // [n_embd]
    Weight output;               // [n_embd, n_vocab]   = token_embd when the output head is tied
    Weight output_bias;          // [n_vocab]           optional (qwen2)
    Weight rope_freqs;           // [n_rot / 2]         optional divisors of the rope angles (Llama 3.1+)
    Weight rope_factors_long;    // [n_rot / 2]         Phi-3's divisors for contexts past the original one
    Weight rope_factors_short;   // [n_rot / 2]         ... and for contexts within it
    std::vector<LayerWeights> layers;

    // Every bound weight, for backends that upload or account for them.
    std::vector<Weight*> all();
    std::vector<const Weight*> all() const;
    // Bytes of all distinct weight tensors (a tied output counted once).
    uint64_t total_bytes() const;
};

// Binds the tensors an architecture needs and checks each one's shape and type; wb::Error names the
// tensor and what was expected ("tensor 'blk.3.attn_q.weight' has shape [576, 192], expected [576, 576]",
// "unsupported tensor type MXFP4 (39) in 'blk.0.ffn_up.weight'").
ModelWeights bind_weights(const GgufFile& file, const ModelConfig& config);

}  // namespace wb
