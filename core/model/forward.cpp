#include "model/forward.h"

#include "model/weights.h"
#include "util/error.h"

namespace wb {

void ForwardBuffers::allocate(Backend& backend, const ModelConfig& c, int32_t batch) {
    max_batch = batch;
    x = backend.alloc(batch, c.n_embd);
    xn = backend.alloc(batch, c.n_embd);
    q = backend.alloc(batch, c.q_dim());
    k = backend.alloc(batch, c.kv_dim());
    k_raw = backend.alloc(batch, c.kv_dim());
    v = backend.alloc(batch, c.v_dim());
    attn = backend.alloc(batch, c.q_dim());
    proj = backend.alloc(batch, c.n_embd);
    gate = backend.alloc(batch, c.n_ff);
    up = backend.alloc(batch, c.n_ff);
    logits = backend.alloc(batch, c.n_vocab);
    positions.resize(size_t(batch));
}

void ForwardBuffers::release(Backend& backend) {
    for (Tensor* t : {&x, &xn, &q, &k, &k_raw, &v, &attn, &proj, &gate, &up, &logits})
        if (t->data) backend.free(*t);
    max_batch = 0;
}

void keep_output_rows(const ForwardBatch& batch, std::initializer_list<Tensor*> views) {
    if (batch.all_logits || batch.n <= 1) return;
    for (Tensor* t : views) *t = t->rows(t->n_rows - 1, 1);
}

void project_qkv(Backend& be, const ModelConfig& c, const LayerWeights& l, ForwardBuffers& b, const Tensor& xn,
                 Tensor& attn_scratch, Tensor& q, Tensor& k, Tensor& v) {
    Tensor q_raw = c.qk_norm ? attn_scratch : q, k_raw = c.qk_norm ? b.k_raw.rows(0, xn.n_rows) : k;
    const Weight* qkv_w[3] = {&l.attn_q, &l.attn_k, &l.attn_v};
    Tensor* qkv[3] = {&q_raw, &k_raw, &v};
    be.matmul_shared(xn, qkv_w, qkv, 3);
    if (l.attn_q_bias) be.add_bias(q_raw, l.attn_q_bias);
    if (l.attn_k_bias) be.add_bias(k_raw, l.attn_k_bias);
    if (l.attn_v_bias) be.add_bias(v, l.attn_v_bias);
    if (c.qk_norm) {
        be.rms_norm(q_raw, l.attn_q_norm, c.norm_eps, c.head_dim, q);
        be.rms_norm(k_raw, l.attn_k_norm, c.norm_eps, c.head_dim, k);
    }
}

// llama.cpp's get_rope_factors: the file's rope_freqs if it has them, else Phi-3's long factors when
// the context (padded to 256, as llama.cpp pads it) exceeds the original training context, else its
// short ones. Fixed for a context, whatever the position.
const Weight* rope_factors(const ModelConfig& c, const ModelWeights& w, int32_t n_ctx) {
    if (w.rope_freqs) return &w.rope_freqs;
    const int32_t n_ctx_pad = (n_ctx + 255) / 256 * 256;
    const Weight& chosen = n_ctx_pad > c.rope_n_ctx_orig ? w.rope_factors_long : w.rope_factors_short;
    return chosen ? &chosen : nullptr;
}

RopeParams layer_rope(const ModelConfig& c, const ModelWeights& w, int32_t n_ctx, int32_t n_head, float base,
                      float freq_scale) {
    RopeParams p;
    p.n_head = n_head;
    p.head_dim = c.head_dim;
    p.n_rot = c.n_rot;
    p.base = base;
    p.freq_scale = freq_scale;
    p.mode = c.rope_mode;
    p.freq_factors = rope_factors(c, w, n_ctx);
    p.ext_factor = c.rope_ext_factor;
    p.attn_factor = c.rope_attn_factor;
    p.n_ctx_orig = c.rope_n_ctx_orig;
    return p;
}

void forward_logits(Backend& be, const ModelConfig& c, const ModelWeights& w, ForwardBuffers& b,
                    const ForwardBatch& batch) {
    // The output matrix is the largest of the model (vocabulary rows): skip the rows nobody reads.
    const int32_t first = batch.all_logits ? 0 : batch.n - 1;
    const int32_t n_out = batch.n - first;
    Tensor x = b.x.rows(first, n_out), xn = b.xn.rows(0, n_out), logits = b.logits.rows(0, n_out);
    be.rms_norm(x, w.output_norm, c.norm_eps, c.n_embd, xn);
    be.matmul(w.output, xn, logits);
    if (w.output_bias) be.add_bias(logits, w.output_bias);
    if (c.final_softcap > 0.0f) be.softcap(logits, c.final_softcap);
}

ForwardFn forward_function(const std::string& arch) {
    // qwen2, qwen3 and phi3 are the llama graph with other options (model_config.cpp, arch_llama.cpp).
    if (arch == "llama" || arch == "qwen2" || arch == "qwen3" || arch == "phi3") return &forward_llama;
    if (arch == "gemma2" || arch == "gemma3") return &forward_gemma;
    throw Error("no forward pass for architecture '" + arch + "'");
}

}  // namespace wb
