// The `llama` architecture (Llama 1/2/3, SmolLM2, Mistral-style dense models):
// pre-norm blocks of grouped-query attention with NORMAL RoPE and a SwiGLU feed-forward network.
#include "model/forward.h"
#include "model/weights.h"

namespace wb {

void forward_llama(Backend& be, const ModelConfig& c, const ModelWeights& w, KvCache& kv, ForwardBuffers& b,
                   const ForwardBatch& batch) {
    const int32_t n = batch.n;
    for (int32_t i = 0; i < n; ++i) b.positions[size_t(i)] = batch.pos0 + i;

    Tensor x = b.x.rows(0, n), xn = b.xn.rows(0, n), q = b.q.rows(0, n), k = b.k.rows(0, n), v = b.v.rows(0, n);
    Tensor attn = b.attn.rows(0, n), proj = b.proj.rows(0, n), gate = b.gate.rows(0, n), up = b.up.rows(0, n);

    const RopeParams rope_q{c.n_head, c.head_dim, c.n_rot, c.rope_base, c.rope_freq_scale, c.rope_mode};
    const RopeParams rope_k{c.n_head_kv, c.head_dim, c.n_rot, c.rope_base, c.rope_freq_scale, c.rope_mode};
    const AttentionParams attn_params{c.n_head, c.n_head_kv, c.head_dim, c.attn_scale, 0};

    // x = token_embd[tokens]
    be.embed(w.token_embd, batch.tokens, n, c.embd_scale, x);

    for (int32_t il = 0; il < c.n_layer; ++il) {
        const LayerWeights& l = w.layers[size_t(il)];

        // attention block: x = x + the previous layer's FFN output (in proj), xn = rmsnorm(x) * attn_norm;
        // q, k, v projections. The residual add waits for the norm it feeds: one operation for both.
        if (il == 0)
            be.rms_norm(x, l.attn_norm, c.norm_eps, c.n_embd, xn);
        else
            be.add_rms_norm(x, proj, l.attn_norm, c.norm_eps, xn);
        const Weight* qkv_w[3] = {&l.attn_q, &l.attn_k, &l.attn_v};
        Tensor* qkv[3] = {&q, &k, &v};
        be.matmul_shared(xn, qkv_w, qkv, 3);
        // rotate q and k by their positions, then save k and v at those positions
        be.rope(q, rope_q, b.positions.data());
        be.rope(k, rope_k, b.positions.data());
        be.kv_store(kv, il, k, v, batch.pos0);
        // causal grouped-query attention over everything cached so far
        AttentionParams ap = attn_params;
        if (batch.hooks) batch.hooks->before_attention(il, n, batch.pos0, ap);
        be.attention(q, kv, il, batch.pos0, ap, attn);
        if (batch.hooks) batch.hooks->after_attention(il, n, batch.pos0, ap);
        if (il == c.n_layer - 1) keep_output_rows(batch, {&x, &attn, &proj, &xn, &gate, &up});
        // x = x + Wo attn, xn = rmsnorm(x) * ffn_norm
        be.matmul(l.attn_output, attn, proj);
        be.add_rms_norm(x, proj, l.ffn_norm, c.norm_eps, xn);

        // feed-forward block: proj = W_down (silu(W_gate xn) * W_up xn), added to x by the next step
        be.matmul_glu(l.ffn_gate, l.ffn_up, xn, c.ffn_act, up, gate);
        be.matmul(l.ffn_down, gate, proj);
        if (batch.hooks) batch.hooks->layer_done(il);
    }
    if (c.n_layer > 0) be.add(x, proj);  // the last layer's FFN output

    // final norm and output head: logits = output . rmsnorm(x) * output_norm
    forward_logits(be, c, w, b, batch);
}

}  // namespace wb
