// The llama family (Llama 1/2/3, SmolLM2, Mistral; Qwen 2 / 2.5; Qwen 3 dense): pre-norm blocks of
// grouped-query attention with RoPE and a SwiGLU feed-forward network. What differs between them is
// configuration (model_config.cpp) and optional tensors, as in llama.cpp's graphs for them:
//  - the rope layout (NORMAL pairs for llama, NEOX halves for qwen2/qwen3) and its scaling
//    (rope_freqs.weight of Llama 3.1+, linear or YaRN from the metadata);
//  - biases added right after the q/k/v projections (qwen2; allowed in any llama file), after the
//    output projection and on the logits;
//  - qwen3's per-head RMSNorm of q and k (QK-norm), after the biases and before RoPE;
//  - phi3 (Phi-3 / 3.5 / 4-mini): NEOX rope over the first n_rot dims with the long or short factors,
//    q scaled by 1/sqrt(head_dim) before the attention, and fused q/k/v and gate/up matrices, which
//    weights.cpp binds as row ranges (the same products as the fused ones).
#include "model/forward.h"
#include "model/weights.h"

namespace wb {

void forward_llama(Backend& be, const ModelConfig& c, const ModelWeights& w, KvCache& kv, ForwardBuffers& b,
                   const ForwardBatch& batch) {
    const int32_t n = batch.n;
    for (int32_t i = 0; i < n; ++i) b.positions[size_t(i)] = batch.pos0 + i;

    Tensor x = b.x.rows(0, n), xn = b.xn.rows(0, n), q = b.q.rows(0, n), k = b.k.rows(0, n), v = b.v.rows(0, n);
    Tensor attn = b.attn.rows(0, n), proj = b.proj.rows(0, n), gate = b.gate.rows(0, n), up = b.up.rows(0, n);

    const int32_t n_ctx = kv.config().n_ctx;
    const RopeParams rope_q = layer_rope(c, w, n_ctx, c.n_head, c.rope_base, c.rope_freq_scale);
    const RopeParams rope_k = layer_rope(c, w, n_ctx, c.n_head_kv, c.rope_base, c.rope_freq_scale);
    AttentionParams attn_params{c.n_head, c.n_head_kv, c.head_dim, c.attn_scale, 0};
    attn_params.scale_q = c.scale_q;  // phi3: q scaled after rope, scores not scaled

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
        project_qkv(be, c, l, b, xn, attn, q, k, v);
        // rotate q and k by their positions, then save k and v at those positions
        be.rope(q, rope_q, b.positions.data());
        be.rope(k, rope_k, b.positions.data());
        be.kv_store(kv, il, k, v, batch.pos0);
        // causal grouped-query attention over everything cached so far
        AttentionParams ap = attn_params;
        if (batch.hooks) batch.hooks->before_attention(il, n, batch.pos0, ap);
        be.attention(q, kv, il, batch.pos0, ap, attn);
        if (batch.hooks) batch.hooks->after_attention(il, n, batch.pos0, ap);
        // x = x + Wo attn, xn = rmsnorm(x) * ffn_norm. In the last layer only the rows whose logits are
        // read go on from here: llama.cpp prunes after the output projection, whose kernel (and so the
        // rounding of a Q4_K product) depends on the batch size.
        be.matmul(l.attn_output, attn, proj);
        if (l.attn_output_bias) be.add_bias(proj, l.attn_output_bias);
        if (il == c.n_layer - 1) keep_output_rows(batch, {&x, &attn, &proj, &xn, &gate, &up});
        be.add_rms_norm(x, proj, l.ffn_norm, c.norm_eps, xn);

        // feed-forward block: proj = W_down (silu(W_gate xn) * W_up xn), added to x by the next step
        be.matmul_glu(l.ffn_gate, l.ffn_up, xn, c.ffn_act, up, gate);
        be.matmul(l.ffn_down, gate, proj);
        if (batch.hooks) batch.hooks->layer_done(il, x, proj);
    }
    if (c.n_layer > 0) be.add(x, proj);  // the last layer's FFN output

    // final norm and output head: logits = output . rmsnorm(x) * output_norm
    forward_logits(be, c, w, b, batch);
}

}  // namespace wb
