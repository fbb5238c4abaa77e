#include "model/weights.h"

#include <set>

#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "util/error.h"

namespace wb {

namespace {

std::string shape_str(int64_t a, int64_t b) {
    return b == 1 ? "[" + std::to_string(a) + "]" : "[" + std::to_string(a) + ", " + std::to_string(b) + "]";
}

Weight make_weight(const GgufTensor& t) {
    Weight w;
    w.src = &t;
    w.type = t.type;
    w.n_in = t.ne[0];
    w.n_out = t.ne[1];
    w.host = t.data;
    return w;
}

// The names of the weight types the engine computes with, in GGUF's numbering ("F32, F16, Q4_0, ...").
std::string supported_weight_types() {
    std::string out;
    for (uint32_t raw = 0; raw < 64; ++raw) {
        const GgmlTypeTraits tr = ggml_type_traits(raw);
        if (tr.known && tr.supported) out += (out.empty() ? "" : ", ") + std::string(tr.name);
    }
    return out;
}

// Binds one tensor; n_out == 1 means a vector. Optional tensors that are absent give an empty Weight.
Weight bind(const GgufFile& f, const std::string& name, int64_t n_in, int64_t n_out, bool required = true) {
    const GgufTensor* t = f.find_tensor(name);
    if (!t) {
        if (required) throw Error("model file is missing tensor '" + name + "'");
        return {};
    }
    const GgmlTypeTraits tr = ggml_type_traits(t->type);
    if (!tr.supported)
        throw Error("unsupported tensor type " + ggml_type_name(t->type) + " (" + std::to_string(uint32_t(t->type)) +
                    ") in '" + name + "'; supported: " + supported_weight_types());
    if (t->ne[0] != n_in || t->ne[1] != n_out || t->ne[2] != 1 || t->ne[3] != 1)
        throw Error("tensor '" + name + "' has shape " + shape_str(t->ne[0], t->ne[1]) + ", expected " +
                    shape_str(n_in, n_out));
    // Norm gains are used element by element on every token; only float types make sense there.
    if (n_out == 1 && t->type != GgmlType::F32)
        throw Error("tensor '" + name + "' is a norm vector of type " + ggml_type_name(t->type) + "; expected F32");
    return make_weight(*t);
}

// Rows [row0, row0 + n_rows) of a bound matrix, as a weight of their own: one part of a fused tensor
// (Phi-3's attn_qkv holds q, k and v; its ffn_up holds gate and up). Each output is the same row dot
// as in the fused product, so the parts compute exactly what the whole would.
Weight rows_of(const Weight& whole, int64_t row0, int64_t n_rows) {
    Weight w = whole;
    // A tensor the file does not hold (opened MAY_BE_TRUNCATED, as `info` and the Models dialog open a
    // partial download, then Model::check binds it) has no data: offsetting null is undefined, so its parts
    // have none either.
    if (whole.host) w.host = static_cast<const uint8_t*>(whole.host) + size_t(row0) * ggml_row_bytes(whole.type, whole.n_in);
    w.n_out = n_rows;
    return w;
}

std::string blk(int il, const char* what) { return "blk." + std::to_string(il) + "." + what + ".weight"; }
std::string blk_bias(int il, const char* what) { return "blk." + std::to_string(il) + "." + what + ".bias"; }

// Tensors of the file that no architecture reads (a fused attn_qkv, say) must not be silently
// ignored: the model would run, wrongly. Names the first one.
void check_all_bound(const GgufFile& f, const ModelWeights& w) {
    std::set<const GgufTensor*> bound;
    for (const Weight* x : w.all())
        if (x->src) bound.insert(x->src);
    for (const GgufTensor& t : f.tensors())
        if (!bound.count(&t))
            throw Error("model file has tensor '" + t.name + "', which the " + f.get_string("general.architecture").value_or("?") +
                        " architecture does not use here (not supported)");
}

}  // namespace

std::vector<Weight*> ModelWeights::all() {
    std::vector<Weight*> out = {&token_embd,  &output_norm,       &output,
                                &output_bias, &rope_freqs,        &rope_factors_long,
                                &rope_factors_short};
    for (auto& l : layers)
        for (Weight* w : {&l.attn_norm, &l.attn_q, &l.attn_k, &l.attn_v, &l.attn_output, &l.attn_q_norm, &l.attn_k_norm,
                          &l.post_attention_norm, &l.ffn_norm, &l.ffn_gate, &l.ffn_up, &l.ffn_down, &l.post_ffw_norm,
                          &l.attn_q_bias, &l.attn_k_bias, &l.attn_v_bias, &l.attn_output_bias})
            out.push_back(w);
    return out;
}

std::vector<const Weight*> ModelWeights::all() const {
    std::vector<const Weight*> out;
    for (Weight* w : const_cast<ModelWeights*>(this)->all()) out.push_back(w);  // same list, read-only
    return out;
}

uint64_t ModelWeights::total_bytes() const {
    std::set<const GgufTensor*> seen;
    uint64_t total = 0;
    for (const Weight* w : all())
        if (w->src && seen.insert(w->src).second) total += w->src->n_bytes;
    return total;
}

namespace {

// q, k and v: separate matrices, or the three parts of a fused attn_qkv (Phi-3).
void bind_qkv(const GgufFile& f, const ModelConfig& c, int il, LayerWeights& l) {
    if (c.arch == "phi3" && f.find_tensor(blk(il, "attn_qkv"))) {
        const Weight qkv = bind(f, blk(il, "attn_qkv"), c.n_embd, c.q_dim() + c.kv_dim() + c.v_dim());
        l.attn_q = rows_of(qkv, 0, c.q_dim());
        l.attn_k = rows_of(qkv, c.q_dim(), c.kv_dim());
        l.attn_v = rows_of(qkv, c.q_dim() + c.kv_dim(), c.v_dim());
        return;
    }
    l.attn_q = bind(f, blk(il, "attn_q"), c.n_embd, c.q_dim());
    l.attn_k = bind(f, blk(il, "attn_k"), c.n_embd, c.kv_dim());
    l.attn_v = bind(f, blk(il, "attn_v"), c.n_embd, c.v_dim());
}

// The gated FFN's two input matrices: separate, or Phi-3's ffn_up of 2 * n_ff rows (gate first).
void bind_gate_up(const GgufFile& f, const ModelConfig& c, int il, LayerWeights& l) {
    if (c.arch == "phi3") {
        const Weight gate_up = bind(f, blk(il, "ffn_up"), c.n_embd, 2 * int64_t(c.n_ff));
        l.ffn_gate = rows_of(gate_up, 0, c.n_ff);
        l.ffn_up = rows_of(gate_up, c.n_ff, c.n_ff);
        return;
    }
    l.ffn_gate = bind(f, blk(il, "ffn_gate"), c.n_embd, c.n_ff);
    l.ffn_up = bind(f, blk(il, "ffn_up"), c.n_embd, c.n_ff);
}

// The bias vectors each architecture may have, as llama.cpp's loader binds them (its
// create_tensor_qkv: optional q/k/v biases for every one of these; attn_output.bias for llama only;
// output.bias for qwen2 only). Any other bias is a tensor nothing reads, refused by check_all_bound:
// llama.cpp refuses such a file too ("wrong number of tensors").
struct Biases {
    bool attn_output = false, output = false;
};

Biases biases_of(const std::string& arch) {
    if (arch == "llama") return {true, false};
    if (arch == "qwen2") return {false, true};
    return {};
}

void bind_biases(const GgufFile& f, const ModelConfig& c, int il, LayerWeights& l) {
    l.attn_q_bias = bind(f, blk_bias(il, "attn_q"), c.q_dim(), 1, false);
    l.attn_k_bias = bind(f, blk_bias(il, "attn_k"), c.kv_dim(), 1, false);
    l.attn_v_bias = bind(f, blk_bias(il, "attn_v"), c.v_dim(), 1, false);
    // With a fused attn_qkv llama.cpp adds separate biases only when all three are there.
    const bool some = l.attn_q_bias || l.attn_k_bias || l.attn_v_bias;
    const bool all = l.attn_q_bias && l.attn_k_bias && l.attn_v_bias;
    if (some && !all && f.find_tensor(blk(il, "attn_qkv")))
        throw Error("model file has only some of the q/k/v biases of layer " + std::to_string(il) +
                    " beside a fused attn_qkv (not supported)");
    if (biases_of(c.arch).attn_output) l.attn_output_bias = bind(f, blk_bias(il, "attn_output"), c.n_embd, 1, false);
}

}  // namespace

ModelWeights bind_weights(const GgufFile& f, const ModelConfig& c) {
    ModelWeights w;
    w.token_embd = bind(f, "token_embd.weight", c.n_embd, c.n_vocab);
    w.output_norm = bind(f, "output_norm.weight", c.n_embd, 1);
    w.output = c.tied_output ? w.token_embd : bind(f, "output.weight", c.n_embd, c.n_vocab);
    const bool gemma = c.arch == "gemma2" || c.arch == "gemma3";
    if (biases_of(c.arch).output) w.output_bias = bind(f, "output.bias", c.n_vocab, 1, false);
    // Llama 3.1's frequency factors: llama.cpp's llama loader reads them, the others do not.
    if (c.arch == "llama") w.rope_freqs = bind(f, "rope_freqs.weight", c.n_rot / 2, 1, false);
    if (c.arch == "phi3") {
        w.rope_factors_long = bind(f, "rope_factors_long.weight", c.n_rot / 2, 1, false);
        w.rope_factors_short = bind(f, "rope_factors_short.weight", c.n_rot / 2, 1, false);
    }
    // Every layer has tensors of its own: a block count the file cannot hold is refused before the
    // layer table is sized by it (a hostile count of 2^30 asked for hundreds of GiB here).
    if (size_t(c.n_layer) > f.tensors().size())
        throw Error("model metadata: block_count " + std::to_string(c.n_layer) + " but the file has only " +
                    std::to_string(f.tensors().size()) + " tensors");
    w.layers.resize(size_t(c.n_layer));
    for (int il = 0; il < c.n_layer; ++il) {
        LayerWeights& l = w.layers[size_t(il)];
        l.attn_norm = bind(f, blk(il, "attn_norm"), c.n_embd, 1);
        bind_qkv(f, c, il, l);
        l.attn_output = bind(f, blk(il, "attn_output"), c.q_dim(), c.n_embd);
        l.ffn_norm = bind(f, blk(il, "ffn_norm"), c.n_embd, 1);
        bind_gate_up(f, c, il, l);
        l.ffn_down = bind(f, blk(il, "ffn_down"), c.n_ff, c.n_embd);
        l.attn_q_norm = bind(f, blk(il, "attn_q_norm"), c.head_dim, 1, c.qk_norm);
        l.attn_k_norm = bind(f, blk(il, "attn_k_norm"), c.head_dim, 1, c.qk_norm);
        l.post_attention_norm = bind(f, blk(il, "post_attention_norm"), c.n_embd, 1, gemma);
        l.post_ffw_norm = bind(f, blk(il, "post_ffw_norm"), c.n_embd, 1, gemma);
        bind_biases(f, c, il, l);
    }
    check_all_bound(f, w);
    return w;
}

}  // namespace wb
