#pragma once
// One forward pass per architecture, each in its own file (arch_<name>.cpp), written against Backend.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/backend.h"

namespace wb {

struct ModelWeights;
struct LayerWeights;

// Scratch activations for batches of up to max_batch tokens, allocated once per session.
struct ForwardBuffers {
    int32_t max_batch = 0;
    Tensor x;       // [max_batch, n_embd]   residual stream
    Tensor xn;      // [max_batch, n_embd]   normalised input of a sub-layer
    Tensor q;       // [max_batch, q_dim]
    Tensor k;       // [max_batch, kv_dim]
    Tensor k_raw;   // [max_batch, kv_dim]   k before its per-head norm (QK-norm architectures)
    Tensor v;       // [max_batch, kv_dim]
    Tensor attn;    // [max_batch, q_dim]    attention output, heads concatenated
    Tensor proj;    // [max_batch, n_embd]   output projection of a sub-layer
    Tensor gate;    // [max_batch, n_ff]
    Tensor up;      // [max_batch, n_ff]
    Tensor logits;  // [max_batch, n_vocab]
    std::vector<int32_t> positions;  // host: positions of the batch's tokens

    void allocate(Backend& backend, const ModelConfig& c, int32_t max_batch);
    void release(Backend& backend);
};

// What the observer hooks need from inside a forward pass. Architectures call these around each
// layer's attention and at each layer's end; both are no-ops unless the session asked for something.
class ForwardHooks {
public:
    virtual ~ForwardHooks() = default;
    // Before attention of layer il: may point p's capture fields at a buffer.
    virtual void before_attention(int32_t il, int32_t n_rows, int32_t pos0, AttentionParams& p) = 0;
    // After attention of layer il: hands what was captured to the observer.
    virtual void after_attention(int32_t il, int32_t n_rows, int32_t pos0, const AttentionParams& p) = 0;
    // After layer il has been computed (per-layer timing, the logit lens). Its last residual add is done
    // by the next layer's first operation (add_rms_norm), so that add is timed with the next layer and
    // the layer's residual stream is x + delta (the views of the batch's rows; in the last layer of a
    // prompt batch only the last row).
    virtual void layer_done(int32_t il, const Tensor& x, const Tensor& delta) = 0;
};

struct ForwardBatch {
    const int32_t* tokens = nullptr;  // host
    int32_t n = 0;                    // tokens in the batch (<= max_batch)
    int32_t pos0 = 0;                 // position of the first token (= tokens already in the cache)
    bool all_logits = false;          // logits for every token (teacher forcing) or only the last
    ForwardHooks* hooks = nullptr;    // null: nobody is looking (the common case)
};

// Runs the batch through the model: stores its K/V in every layer of the cache (blocks must be
// reserved for positions < pos0 + n) and leaves the logits in buffers.logits (rows: n or 1).
using ForwardFn = void (*)(Backend& backend, const ModelConfig& config, const ModelWeights& weights, KvCache& kv,
                           ForwardBuffers& buffers, const ForwardBatch& batch);

ForwardFn forward_function(const std::string& arch);

// The last layer, once its attention and output projection are done, needs only the rows whose
// logits are read: narrows each view to the last row unless every row's logits are wanted. A prompt
// batch then skips the feed-forward network of n-1 rows, as llama.cpp does in generation (its graphs
// prune right after the attention block's output projection, so the architectures call this there:
// the CPU backend picks llama.cpp's kernel, and accumulation order, by batch size for some types
// (Q4_K, Q2_K-Q6_K), and the pruned rows must take the same ones as llama.cpp's).
void keep_output_rows(const ForwardBatch& batch, std::initializer_list<Tensor*> views);

// q, k and v of one layer from its normalised input xn: the three projections, their biases when the
// file has them, and the per-head norms of q and k when the model has them (config.qk_norm). The raw
// q projection then goes through `attn_scratch` (free until the attention writes it) and k's through
// buffers.k_raw, so that no backend operation works in place.
void project_qkv(Backend& backend, const ModelConfig& config, const LayerWeights& layer, ForwardBuffers& buffers,
                 const Tensor& xn, Tensor& attn_scratch, Tensor& q, Tensor& k, Tensor& v);

// The rope of one layer's q or k (n_head heads): the model's scaling, its frequency factors if it has
// them (Phi-3's long or short ones by the context size n_ctx), and the given theta and frequency
// scale (the two differ between a Gemma model's layers).
RopeParams layer_rope(const ModelConfig& config, const ModelWeights& weights, int32_t n_ctx, int32_t n_head, float base,
                      float freq_scale);

// The step every architecture ends with: the final RMSNorm of buffers.x and the output matrix, for
// only the rows whose logits are wanted (all, or the last), into buffers.logits.
void forward_logits(Backend& backend, const ModelConfig& config, const ModelWeights& weights, ForwardBuffers& buffers,
                    const ForwardBatch& batch);

void forward_llama(Backend& backend, const ModelConfig& config, const ModelWeights& weights, KvCache& kv,
                   ForwardBuffers& buffers, const ForwardBatch& batch);
void forward_gemma(Backend& backend, const ModelConfig& config, const ModelWeights& weights, KvCache& kv,
                   ForwardBuffers& buffers, const ForwardBatch& batch);

}  // namespace wb
