#pragma once
// Hyperparameters of a decoder-only transformer, read from GGUF metadata ({arch}.* keys).
#include <cstdint>
#include <string>
#include <vector>

namespace wb {

class GgufFile;

enum class RopeMode {
    NORMAL,  // GPT-J style: rotates pairs (x[2i], x[2i+1]); GGUF `llama` weights are permuted for it
    NEOX,    // rotate_half: rotates pairs (x[i], x[i + n_rot/2]); Gemma, Qwen
};

enum class Activation { SILU, GELU_TANH };

struct ModelConfig {
    std::string arch;            // general.architecture, e.g. "llama"
    std::string name;            // general.name (display only; may be empty)
    int32_t n_ctx_train = 0;     // tokens: context length the model was trained with
    int32_t n_embd = 0;          // width of the residual stream (hidden size)
    int32_t n_layer = 0;         // transformer blocks
    int32_t n_ff = 0;            // inner width of the feed-forward network
    int32_t n_head = 0;          // query heads
    int32_t n_head_kv = 0;       // key/value heads (grouped-query attention when < n_head)
    int32_t head_dim = 0;        // width of one query/key head (key_length; default n_embd / n_head)
    int32_t head_dim_v = 0;      // width of one value head (value_length; default head_dim)
    int32_t n_rot = 0;           // leading dims of each head that RoPE rotates (usually head_dim)
    int32_t n_vocab = 0;         // rows of the embedding / output matrices
    float norm_eps = 1e-5f;      // RMSNorm epsilon added to mean(x^2)
    float rope_base = 10000.0f;  // RoPE theta for full-attention layers
    float rope_base_swa = 10000.0f;  // RoPE theta for sliding-window layers (gemma2, gemma3)
    float rope_freq_scale = 1.0f;    // 1 / the rope scaling factor (rope.scaling.type linear or yarn)
    // 1 / rope.scaling.factor whatever the type says (llama.cpp's rope_freq_scale_train): Gemma 2's
    // sliding-window layers take it even under rope.scaling.type none
    float rope_freq_scale_train = 1.0f;
    float rope_freq_scale_swa = 1.0f;  // the scale of sliding-window layers (gemma2: rope_freq_scale_train; gemma3: 1)
    float rope_ext_factor = 0.0f;    // YaRN's extrapolation mix: 1 for rope.scaling.type yarn, else 0
    float rope_attn_factor = 1.0f;   // magnitude of cos/sin (YaRN's, times rope.scaling.attn_factor)
    int32_t rope_n_ctx_orig = 0;     // rope.scaling.original_context_length (YaRN's correction dims)
    RopeMode rope_mode = RopeMode::NORMAL;
    Activation ffn_act = Activation::SILU;  // gate activation of the gated FFN
    float attn_scale = 0.0f;     // multiplies q.k; 1/sqrt(head_dim) unless the architecture says otherwise
    float embd_scale = 1.0f;     // embedding rows are multiplied by this (gemma3: sqrt(n_embd))
    int32_t sliding_window = 0;  // tokens a sliding-window layer sees (itself included); 0 = none
    std::vector<bool> layer_is_swa;  // per layer: true if the layer uses the sliding window
    bool tied_output = false;    // no output.weight: logits use token_embd.weight
    bool qk_norm = false;        // per-head RMSNorm of q and k before RoPE (gemma3, qwen3)
    bool scale_q = false;        // attn_scale multiplies q before the attention, not q.k (phi3, gemma)
    float attn_softcap = 0.0f;   // > 0: attention scores soft-capped, cap * tanh(s / cap) (gemma2)
    float final_softcap = 0.0f;  // > 0: logits soft-capped the same way (gemma2)

    int32_t n_gqa() const { return n_head / n_head_kv; }   // query heads per key/value head
    int32_t q_dim() const { return n_head * head_dim; }     // width of the concatenated query heads
    int32_t kv_dim() const { return n_head_kv * head_dim; } // width of the concatenated key heads
    int32_t v_dim() const { return n_head_kv * head_dim_v; }

    // Reads and checks the hyperparameters of a supported architecture; wb::Error names a missing or
    // inconsistent key.
    static ModelConfig from_gguf(const GgufFile& file);
};

// Architectures this build can run.
const std::vector<std::string>& supported_architectures();

}  // namespace wb
