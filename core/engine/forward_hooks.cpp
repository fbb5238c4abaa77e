#include "engine/forward_hooks.h"

#include "engine/token_inspection.h"
#include "model/weights.h"

namespace wb {

SessionHooks::SessionHooks(const CaptureSpec& spec, Observer& observer, const ModelConfig& config,
                           const ModelWeights& weights, Backend& backend, std::vector<double>& layer_ms)
    : spec_(spec), observer_(observer), config_(config), weights_(weights), backend_(backend), layer_ms_(layer_ms) {
    for (int32_t h = 0; h < config.n_head; ++h)
        if (spec_.wants_head(h)) heads_.push_back(h);
    if (spec_.layer_timing) layer_ms_.assign(size_t(config.n_layer), 0.0);
    event_.n_head = config.n_head;
    event_.n_head_kv = config.n_head_kv;
    event_.heads = heads_;
    for (int32_t h : heads_) event_.kv_head_of.push_back(h / config.n_gqa());
    if (spec_.logit_lens > 0) {
        lens_x_ = backend_.alloc(1, config.n_embd);
        lens_xn_ = backend_.alloc(1, config.n_embd);
        lens_logits_ = backend_.alloc(1, config.n_vocab);
        lens_host_.resize(size_t(config.n_layer) * size_t(config.n_vocab));
    }
}

SessionHooks::~SessionHooks() {
    for (Tensor* t : {&lens_x_, &lens_xn_, &lens_logits_})
        if (t->data) backend_.free(*t);
}

void SessionHooks::begin_pass(bool prefill, bool lens) {
    prefill_ = prefill;
    lens_pass_ = lens && spec_.logit_lens > 0;
    layer_start_ = std::chrono::steady_clock::now();
}

void SessionHooks::before_attention(int32_t il, int32_t n_rows, int32_t pos0, AttentionParams& p) {
    const bool wanted = prefill_ ? spec_.prefill_attention : spec_.decode_attention;
    if (!wanted || !spec_.wants_layer(il) || heads_.empty()) return;
    event_.probs.resize(heads_.size() * size_t(n_rows) * size_t(pos0 + n_rows));
    p.capture_probs = event_.probs.data();
    p.capture_heads = heads_.data();
    p.n_capture_heads = int32_t(heads_.size());
}

void SessionHooks::after_attention(int32_t il, int32_t n_rows, int32_t pos0, const AttentionParams& p) {
    if (!p.capture_probs) return;
    event_.layer = il;
    event_.prefill = prefill_;
    event_.query_pos0 = pos0;
    event_.n_queries = n_rows;
    event_.n_keys = pos0 + n_rows;
    event_.window = p.window;
    observer_.on_attention(event_);
}

void SessionHooks::layer_done(int32_t il, const Tensor& x, const Tensor& delta) {
    if (spec_.layer_timing) {
        backend_.synchronize();
        layer_ms_[size_t(il)] +=
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - layer_start_).count();
    }
    if (lens_pass_) {
        // The model's own head (forward_logits) on the last row's residual stream x + delta, with the
        // operations the forward pass uses, so the last layer's lens is the model's logits bit for bit.
        backend_.copy(x.rows(x.n_rows - 1, 1), lens_x_);
        backend_.add(lens_x_, delta.rows(delta.n_rows - 1, 1));
        backend_.rms_norm(lens_x_, weights_.output_norm, config_.norm_eps, config_.n_embd, lens_xn_);
        backend_.matmul(weights_.output, lens_xn_, lens_logits_);
        if (weights_.output_bias) backend_.add_bias(lens_logits_, weights_.output_bias);
        if (config_.final_softcap > 0.0f) backend_.softcap(lens_logits_, config_.final_softcap);
        backend_.read(lens_logits_, lens_host_.data() + size_t(il) * size_t(config_.n_vocab));
    }
    // The next layer's time starts here: the lens is not counted in any layer's.
    if (spec_.layer_timing) layer_start_ = std::chrono::steady_clock::now();
}

std::vector<LensLayer> SessionHooks::lens(int32_t drawn) const {
    std::vector<LensLayer> out;
    if (spec_.logit_lens <= 0) return out;
    for (int32_t il = 0; il < config_.n_layer; ++il)
        out.push_back(lens_layer(il, lens_host_.data() + size_t(il) * size_t(config_.n_vocab), config_.n_vocab,
                                 spec_.logit_lens, drawn));
    return out;
}

}  // namespace wb
