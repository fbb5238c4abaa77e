// The Gemma family: `gemma3` (Gemma 3 text models, e.g. gemma-3-270m) and `gemma2`.
// Blocks with RMSNorm before *and after* attention and FFN, NEOX RoPE, a GELU(tanh)-gated FFN,
// embeddings scaled by sqrt(n_embd), and local layers that attend over a sliding window (Gemma 3:
// 5 local : 1 global, with their own RoPE base; Gemma 2: alternating). Gemma 3 normalises q and k per
// head (QK-norm); Gemma 2 soft-caps the attention scores and the logits (forward_logits).
//
// The GGUF converter already stores every norm gain as (1 + w) (HF's Gemma RMSNorm), so the gains are
// used as they are, exactly like llama's.
#include "model/forward.h"
#include "model/weights.h"

namespace wb {

void forward_gemma(Backend& be, const ModelConfig& c, const ModelWeights& w, KvCache& kv, ForwardBuffers& b,
                   const ForwardBatch& batch) {
    const int32_t n = batch.n;
    for (int32_t i = 0; i < n; ++i) b.positions[size_t(i)] = batch.pos0 + i;

    Tensor x = b.x.rows(0, n), xn = b.xn.rows(0, n), q = b.q.rows(0, n), k = b.k.rows(0, n), v = b.v.rows(0, n);
    Tensor attn = b.attn.rows(0, n), proj = b.proj.rows(0, n), gate = b.gate.rows(0, n), up = b.up.rows(0, n);

    // x = token_embd[tokens] * sqrt(n_embd)
    be.embed(w.token_embd, batch.tokens, n, c.embd_scale, x);

    for (int32_t il = 0; il < c.n_layer; ++il) {
        const LayerWeights& l = w.layers[size_t(il)];
        const bool local = c.layer_is_swa[size_t(il)];
        // Local layers: their theta, scale and a window; global layers: the file's theta and every key.
        const float base = local ? c.rope_base_swa : c.rope_base;
        const float freq_scale = local ? c.rope_freq_scale_swa : c.rope_freq_scale;
        const RopeParams rope_q = layer_rope(c, w, kv.config().n_ctx, c.n_head, base, freq_scale);
        const RopeParams rope_k = layer_rope(c, w, kv.config().n_ctx, c.n_head_kv, base, freq_scale);
        // llama.cpp multiplies q by the scale and runs attention with scale 1. Even for a power of two
        // (1/16 for head_dim 256) that is not the same as scaling q.k: q is rounded to f16 for the
        // product, and the small elements of q/16 fall into f16's subnormal range and lose bits.
        AttentionParams ap{c.n_head, c.n_head_kv, c.head_dim, c.attn_scale, local ? c.sliding_window : 0};
        ap.scale_q = true;
        ap.softcap = c.attn_softcap;

        // x = x + the previous layer's normalised FFN output (in xn), xn = rmsnorm(x) * attn_norm. The
        // residual add waits for the norm it feeds: one operation for both.
        if (il == 0)
            be.rms_norm(x, l.attn_norm, c.norm_eps, c.n_embd, xn);
        else
            be.add_rms_norm(x, xn, l.attn_norm, c.norm_eps, xn);
        // q = rmsnorm_per_head(Wq xn) * attn_q_norm, k = rmsnorm_per_head(Wk xn) * attn_k_norm, v = Wv xn
        // (Gemma 2: q = Wq xn, k = Wk xn).
        project_qkv(be, c, l, b, xn, attn, q, k, v);
        // rotate q and k by their positions (NEOX pairs), then save k and v at those positions
        be.rope(q, rope_q, b.positions.data());
        be.rope(k, rope_k, b.positions.data());
        be.kv_store(kv, il, k, v, batch.pos0);
        // causal grouped-query attention: the last `sliding_window` keys on local layers, all on global
        if (batch.hooks) batch.hooks->before_attention(il, n, batch.pos0, ap);
        be.attention(q, kv, il, batch.pos0, ap, attn);
        if (batch.hooks) batch.hooks->after_attention(il, n, batch.pos0, ap);
        // x = x + rmsnorm(Wo attn) * post_attention_norm, xn = rmsnorm(x) * ffn_norm. In the last layer
        // only the rows whose logits are read go on from here, as in llama.cpp (after the projection).
        be.matmul(l.attn_output, attn, proj);
        if (il == c.n_layer - 1) keep_output_rows(batch, {&x, &attn, &proj, &xn, &gate, &up});
        be.rms_norm(proj, l.post_attention_norm, c.norm_eps, c.n_embd, xn);
        be.add_rms_norm(x, xn, l.ffn_norm, c.norm_eps, xn);

        // xn = rmsnorm(W_down (gelu_tanh(W_gate xn) * W_up xn)) * post_ffw_norm, added to x by the next step
        be.matmul_glu(l.ffn_gate, l.ffn_up, xn, c.ffn_act, up, gate);
        be.matmul(l.ffn_down, gate, proj);
        be.rms_norm(proj, l.post_ffw_norm, c.norm_eps, c.n_embd, xn);
        if (batch.hooks) batch.hooks->layer_done(il, x, xn);
    }
    if (c.n_layer > 0) be.add(x, xn);  // the last layer's FFN output

    // final norm and output head: logits = output . rmsnorm(x) * output_norm
    forward_logits(be, c, w, b, batch);
}

}  // namespace wb
