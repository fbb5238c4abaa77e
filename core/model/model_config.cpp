#include "model/model_config.h"

#include <cmath>

#include "gguf/gguf_file.h"
#include "util/error.h"

namespace wb {

namespace {

int32_t required_int(const GgufFile& f, const std::string& key) {
    const auto v = f.get_uint(key);
    if (!v) throw Error("model metadata is missing '" + key + "'");
    if (*v == 0 || *v > (1u << 30)) throw Error("model metadata '" + key + "' has an implausible value " +
                                                std::to_string(*v));
    return int32_t(*v);
}

int32_t optional_int(const GgufFile& f, const std::string& key, int32_t fallback) {
    const auto v = f.get_uint(key);
    if (!v) return fallback;
    if (*v > (1u << 30)) throw Error("model metadata '" + key + "' has an implausible value " + std::to_string(*v));
    return int32_t(*v);
}

float optional_float(const GgufFile& f, const std::string& key, float fallback) {
    const auto v = f.get_float(key);
    return v ? float(*v) : fallback;
}

// Rope scaling as llama.cpp reads it: the type defaults to linear (a factor of 0 or none means no
// scaling), the factor may be under its old name; YaRN sets the extrapolation mix and the magnitude
// that cancels the kernel's own correction (llama_context's constructor), and
// rope.scaling.attn_factor multiplies whatever the type gives.
void read_rope_scaling(const GgufFile& f, ModelConfig& c) {
    const std::string& a = c.arch;
    const std::string type = f.get_string(a + ".rope.scaling.type").value_or("linear");
    float factor = optional_float(f, a + ".rope.scaling.factor", optional_float(f, a + ".rope.scale_linear", 0.0f));
    if (factor < 0.0f || !std::isfinite(factor)) throw Error("model metadata: rope.scaling.factor must be >= 0");
    c.rope_n_ctx_orig = optional_int(f, a + ".rope.scaling.original_context_length", c.n_ctx_train);
    if (c.rope_n_ctx_orig == 0) throw Error("model metadata: rope.scaling.original_context_length is 0");
    // llama.cpp changes YaRN's magnitude for this key (DeepSeek-style); not implemented, so refused.
    if (f.get_float(a + ".rope.scaling.yarn_log_multiplier").value_or(0.0) != 0.0)
        throw Error("model uses rope.scaling.yarn_log_multiplier, which WhiteBox does not support");
    c.rope_freq_scale_train = factor == 0.0f ? 1.0f : 1.0f / factor;
    if (type == "none") {
        c.rope_freq_scale = 1.0f;  // llama_context: "never scale if scaling type is none"
    } else if (type == "linear" || type == "yarn") {
        c.rope_freq_scale = c.rope_freq_scale_train;
        if (type == "yarn") {
            c.rope_ext_factor = 1.0f;
            const float scale = 1.0f / c.rope_freq_scale;
            const float mscale = scale <= 1.0f ? 1.0f : 0.1f * 1.0f * std::log(scale) + 1.0f;
            c.rope_attn_factor = mscale * (1.0f / (1.0f + 0.1f * std::log(scale)));
        }
    } else {
        throw Error("model uses rope scaling '" + type + "', which WhiteBox does not support (none, linear, yarn)");
    }
    const float attn_factor = optional_float(f, a + ".rope.scaling.attn_factor", 1.0f);
    if (!(attn_factor > 0.0f) || !std::isfinite(attn_factor))
        throw Error("model metadata: rope.scaling.attn_factor must be positive");
    c.rope_attn_factor *= attn_factor;
    // What the factors above become must be usable numbers (a subnormal factor makes 1 / factor inf).
    if (!std::isfinite(c.rope_freq_scale_train) || !(c.rope_freq_scale_train > 0.0f) || !std::isfinite(c.rope_attn_factor) ||
        !(c.rope_attn_factor > 0.0f))
        throw Error("model metadata: rope.scaling.factor " + std::to_string(factor) + " gives no usable rope scaling");
}

// Fields every supported architecture shares.
void read_common(const GgufFile& f, ModelConfig& c) {
    const std::string& a = c.arch;
    c.name = f.get_string("general.name").value_or("");
    c.n_ctx_train = required_int(f, a + ".context_length");
    c.n_embd = required_int(f, a + ".embedding_length");
    c.n_layer = required_int(f, a + ".block_count");
    c.n_ff = required_int(f, a + ".feed_forward_length");
    c.n_head = required_int(f, a + ".attention.head_count");
    c.n_head_kv = optional_int(f, a + ".attention.head_count_kv", c.n_head);
    if (c.n_head_kv == 0 || c.n_head % c.n_head_kv != 0)
        throw Error("model metadata: head_count " + std::to_string(c.n_head) + " is not a multiple of head_count_kv " +
                    std::to_string(c.n_head_kv));
    if (c.n_embd % c.n_head != 0 && !f.get_uint(a + ".attention.key_length"))
        throw Error("model metadata: embedding_length is not a multiple of head_count and key_length is absent");
    c.head_dim = optional_int(f, a + ".attention.key_length", c.n_embd / c.n_head);
    c.head_dim_v = optional_int(f, a + ".attention.value_length", c.head_dim);
    if (c.head_dim_v != c.head_dim)
        throw Error("model metadata: value_length " + std::to_string(c.head_dim_v) + " differs from key_length " +
                    std::to_string(c.head_dim) + " (not supported)");
    c.n_rot = optional_int(f, a + ".rope.dimension_count", c.head_dim);
    if (c.n_rot > c.head_dim || c.n_rot % 2 != 0)
        throw Error("model metadata: rope.dimension_count " + std::to_string(c.n_rot) + " must be even and <= " +
                    std::to_string(c.head_dim));
    c.norm_eps = optional_float(f, a + ".attention.layer_norm_rms_epsilon", 1e-5f);
    c.rope_base = optional_float(f, a + ".rope.freq_base", 10000.0f);
    if (!std::isfinite(c.rope_base) || !(c.rope_base > 1.0f))
        throw Error("model metadata: rope.freq_base must be a finite number above 1");
    c.rope_base_swa = c.rope_base;
    read_rope_scaling(f, c);
    const auto* tokens = f.get_string_array("tokenizer.ggml.tokens");
    if (!tokens || tokens->empty()) throw Error("model metadata has no vocabulary (tokenizer.ggml.tokens)");
    c.n_vocab = int32_t(tokens->size());
    c.attn_scale = 1.0f / std::sqrt(float(c.head_dim));
    c.layer_is_swa.assign(size_t(c.n_layer), false);
}

// Which layers of a Gemma model use the sliding window. A file may list them (array of bools) or give
// the period n of the pattern: the last layer of every n is global, the others local. Without the key,
// llama.cpp uses a period of 6 for Gemma 3 ("5 local : 1 global") and 2 for Gemma 2 (alternating).
void read_swa_pattern(const GgufFile& f, ModelConfig& c, int32_t default_period) {
    const std::string key = c.arch + ".attention.sliding_window_pattern";
    const GgufValue* v = f.find(key);
    if (v && v->type == GgufValueType::ARRAY) {
        const std::vector<int64_t>* flags = f.get_int_array(key);
        if (flags->size() != size_t(c.n_layer))
            throw Error("model metadata '" + key + "' has " + std::to_string(flags->size()) + " entries for " +
                        std::to_string(c.n_layer) + " layers");
        for (size_t il = 0; il < flags->size(); ++il) c.layer_is_swa[il] = (*flags)[il] != 0;
        return;
    }
    const int32_t period = optional_int(f, key, default_period);
    for (int32_t il = 0; il < c.n_layer; ++il) c.layer_is_swa[size_t(il)] = period > 0 && il % period < period - 1;
}

// Gemma 2 and 3: GELU-gated FFN, embeddings scaled by sqrt(n_embd), norms before and after each
// sub-layer, q scaled before the attention, local (sliding-window) and global layers. Gemma 3 adds
// per-head q/k norms and its own rope base for local layers; Gemma 2 soft-caps attention scores and
// logits, and always reads its output from the embedding.
void read_gemma(const GgufFile& f, ModelConfig& c) {
    const bool gemma2 = c.arch == "gemma2";
    read_common(f, c);
    c.rope_mode = RopeMode::NEOX;
    c.qk_norm = !gemma2;
    c.scale_q = true;
    c.ffn_act = Activation::GELU_TANH;
    // sqrtf as llama.cpp computes it, so the scaled embeddings agree bit for bit.
    c.embd_scale = std::sqrt(float(c.n_embd));
    // Gemma's query_pre_attn_scalar: head_dim for every size but the 27B models (Gemma 2: 46 layers,
    // Gemma 3: 62), which use n_embd / n_head (llama.cpp and gemma_pytorch agree).
    const bool big = c.n_layer == (gemma2 ? 46 : 62);
    c.attn_scale = big ? 1.0f / std::sqrt(float(c.n_embd / c.n_head)) : 1.0f / std::sqrt(float(c.head_dim));
    c.sliding_window = optional_int(f, c.arch + ".attention.sliding_window", gemma2 ? 4096 : 0);
    if (c.sliding_window > 0) {
        read_swa_pattern(f, c, gemma2 ? 2 : 6);
        // Gemma 3's local theta is not in most files (10000 is what it was trained with); Gemma 2's
        // local layers use the global one unless the file says otherwise.
        c.rope_base_swa = optional_float(f, c.arch + ".rope.freq_base_swa", gemma2 ? c.rope_base : 10000.0f);
        if (!std::isfinite(c.rope_base_swa) || !(c.rope_base_swa > 1.0f))
            throw Error("model metadata: rope.freq_base_swa must be a finite number above 1");
    }
    // The file's rope scaling (linear x8 on Gemma 3 4B and larger) applies to Gemma 3's global layers
    // only. Gemma 2's local layers take the file's factor as llama.cpp does (rope_freq_scale_train_swa
    // = rope_freq_scale_train): even when rope.scaling.type is none, which unscales only the global ones.
    c.rope_freq_scale_swa = gemma2 ? c.rope_freq_scale_train : 1.0f;
    // llama.cpp reads the final soft-cap for both (Gemma 2 default 30, Gemma 3 default off) and the
    // attention soft-cap for Gemma 2 only (default 50).
    c.final_softcap = optional_float(f, c.arch + ".final_logit_softcapping", gemma2 ? 30.0f : 0.0f);
    if (gemma2) c.attn_softcap = optional_float(f, c.arch + ".attn_logit_softcapping", 50.0f);
    if (c.final_softcap < 0.0f || c.attn_softcap < 0.0f || !std::isfinite(c.final_softcap) || !std::isfinite(c.attn_softcap))
        throw Error("model metadata: logit soft-capping values must be >= 0");
    c.tied_output = gemma2 || f.find_tensor("output.weight") == nullptr;
}

}  // namespace

const std::vector<std::string>& supported_architectures() {
    static const std::vector<std::string> archs = {"llama", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"};
    return archs;
}

ModelConfig ModelConfig::from_gguf(const GgufFile& f) {
    ModelConfig c;
    const auto arch = f.get_string("general.architecture");
    if (!arch) throw Error("model metadata is missing 'general.architecture'");
    c.arch = *arch;
    // The llama family: pre-norm blocks, grouped-query attention, SwiGLU, optional projection biases.
    //  - llama (Llama 1-3, Mistral, SmolLM2): NORMAL rope pairs (the converter permutes q/k rows);
    //  - qwen2 (Qwen 2 / 2.5, DeepSeek-R1-Distill-Qwen): NEOX rope, q/k/v biases;
    //  - qwen3 (dense): NEOX rope, per-head RMSNorm of q and k, head width from key_length.
    if (c.arch == "llama" || c.arch == "qwen2" || c.arch == "qwen3") {
        read_common(f, c);
        c.rope_mode = c.arch == "llama" ? RopeMode::NORMAL : RopeMode::NEOX;
        c.ffn_act = Activation::SILU;
        c.qk_norm = c.arch == "qwen3";
        if (c.arch != "llama" && c.n_rot != c.head_dim)
            throw Error("model metadata: rope.dimension_count " + std::to_string(c.n_rot) + " differs from the head width " +
                        std::to_string(c.head_dim) + " (" + c.arch + " rotates whole heads)");
        c.tied_output = f.find_tensor("output.weight") == nullptr;
        return c;
    }
    // Phi-3 / 3.5 / 4-mini: the llama graph with NEOX rope (possibly partial), q scaled before the
    // attention, fused q/k/v and gate/up matrices, and long/short rope factors (weights.cpp, forward.cpp).
    // llama.cpp disables Phi's sliding window ("results might be suboptimal"), and so do we.
    if (c.arch == "phi3") {
        read_common(f, c);
        c.rope_mode = RopeMode::NEOX;
        c.ffn_act = Activation::SILU;
        c.scale_q = true;
        c.tied_output = f.find_tensor("output.weight") == nullptr;
        return c;
    }
    if (c.arch == "gemma2" || c.arch == "gemma3") {
        read_gemma(f, c);
        return c;
    }
    std::string list;
    for (const auto& a : supported_architectures()) list += (list.empty() ? "" : ", ") + a;
    throw Error("unsupported model architecture '" + c.arch + "' (supported: " + list + ")");
}

}  // namespace wb
