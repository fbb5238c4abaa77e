#include "model/forward.h"

#include "util/error.h"

namespace wb {

void ForwardBuffers::allocate(Backend& backend, const ModelConfig& c, int32_t batch) {
    max_batch = batch;
    x = backend.alloc(batch, c.n_embd);
    xn = backend.alloc(batch, c.n_embd);
    q = backend.alloc(batch, c.q_dim());
    k = backend.alloc(batch, c.kv_dim());
    v = backend.alloc(batch, c.v_dim());
    attn = backend.alloc(batch, c.q_dim());
    proj = backend.alloc(batch, c.n_embd);
    gate = backend.alloc(batch, c.n_ff);
    up = backend.alloc(batch, c.n_ff);
    logits = backend.alloc(batch, c.n_vocab);
    positions.resize(size_t(batch));
}

void ForwardBuffers::release(Backend& backend) {
    for (Tensor* t : {&x, &xn, &q, &k, &v, &attn, &proj, &gate, &up, &logits})
        if (t->data) backend.free(*t);
    max_batch = 0;
}

ForwardFn forward_function(const std::string& arch) {
    if (arch == "llama") return &forward_llama;
    if (arch == "gemma3") return &forward_gemma3;
    throw Error("no forward pass for architecture '" + arch + "'");
}

}  // namespace wb
