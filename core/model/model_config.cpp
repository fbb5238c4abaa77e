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
    c.rope_base_swa = c.rope_base;
    const std::string scaling = f.get_string(a + ".rope.scaling.type").value_or("none");
    if (scaling == "linear") {
        const float factor = optional_float(f, a + ".rope.scaling.factor", 1.0f);
        if (!(factor > 0.0f)) throw Error("model metadata: rope.scaling.factor must be positive");
        c.rope_freq_scale = 1.0f / factor;
    } else if (scaling != "none" && !scaling.empty()) {
        throw Error("model uses rope scaling '" + scaling + "', which WhiteBox does not support yet");
    }
    const auto* tokens = f.get_string_array("tokenizer.ggml.tokens");
    if (!tokens || tokens->empty()) throw Error("model metadata has no vocabulary (tokenizer.ggml.tokens)");
    c.n_vocab = int32_t(tokens->size());
    c.attn_scale = 1.0f / std::sqrt(float(c.head_dim));
    c.layer_is_swa.assign(size_t(c.n_layer), false);
}

// Which layers of a gemma3 model use the sliding window. A file may list them (array of bools) or give
// the period n of the pattern: the last layer of every n is global, the others local. Without the key,
// llama.cpp uses a period of 6 for Gemma 3 ("5 local : 1 global").
void read_gemma3_swa_pattern(const GgufFile& f, ModelConfig& c) {
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
    const int32_t period = optional_int(f, key, 6);
    for (int32_t il = 0; il < c.n_layer; ++il) c.layer_is_swa[size_t(il)] = period > 0 && il % period < period - 1;
}

}  // namespace

const std::vector<std::string>& supported_architectures() {
    static const std::vector<std::string> archs = {"llama", "gemma3"};
    return archs;
}

ModelConfig ModelConfig::from_gguf(const GgufFile& f) {
    ModelConfig c;
    const auto arch = f.get_string("general.architecture");
    if (!arch) throw Error("model metadata is missing 'general.architecture'");
    c.arch = *arch;
    if (c.arch == "llama") {
        read_common(f, c);
        c.rope_mode = RopeMode::NORMAL;  // the GGUF converter permutes Q/K rows for interleaved pairs
        c.ffn_act = Activation::SILU;
        c.tied_output = f.find_tensor("output.weight") == nullptr;
        return c;
    }
    if (c.arch == "gemma3") {
        read_common(f, c);
        c.rope_mode = RopeMode::NEOX;
        c.ffn_act = Activation::GELU_TANH;
        // sqrtf as llama.cpp computes it, so the scaled embeddings agree bit for bit.
        c.embd_scale = std::sqrt(float(c.n_embd));
        // Gemma's query_pre_attn_scalar: head_dim for every size but 27B (62 layers), which uses
        // n_embd / n_head (llama.cpp and gemma_pytorch agree).
        c.attn_scale = c.n_layer == 62 ? 1.0f / std::sqrt(float(c.n_embd / c.n_head)) : 1.0f / std::sqrt(float(c.head_dim));
        c.sliding_window = optional_int(f, c.arch + ".attention.sliding_window", 0);
        if (c.sliding_window > 0) {
            read_gemma3_swa_pattern(f, c);
            // The local layers' theta is not in most files; 10000 is what Gemma 3 was trained with.
            c.rope_base_swa = optional_float(f, c.arch + ".rope.freq_base_swa", 10000.0f);
        }
        if (f.get_float(c.arch + ".final_logit_softcapping").value_or(0.0) != 0.0 ||
            f.get_float(c.arch + ".attn_logit_softcapping").value_or(0.0) != 0.0)
            throw Error("model uses logit soft-capping, which WhiteBox does not support yet");
        c.tied_output = f.find_tensor("output.weight") == nullptr;
        return c;
    }
    std::string list;
    for (const auto& a : supported_architectures()) list += (list.empty() ? "" : ", ") + a;
    throw Error("unsupported model architecture '" + c.arch + "' (supported: " + list + ")");
}

}  // namespace wb
