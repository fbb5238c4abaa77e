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

}  // namespace

const std::vector<std::string>& supported_architectures() {
    static const std::vector<std::string> archs = {"llama"};
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
    std::string list;
    for (const auto& a : supported_architectures()) list += (list.empty() ? "" : ", ") + a;
    throw Error("unsupported model architecture '" + c.arch + "' (supported: " + list + ")");
}

}  // namespace wb
