#include "engine/forward_hooks.h"

namespace wb {

SessionHooks::SessionHooks(const CaptureSpec& spec, Observer& observer, const ModelConfig& config, Backend& backend,
                           std::vector<double>& layer_ms)
    : spec_(spec), observer_(observer), config_(config), backend_(backend), layer_ms_(layer_ms) {
    for (int32_t h = 0; h < config.n_head; ++h)
        if (spec_.wants_head(h)) heads_.push_back(h);
    if (spec_.layer_timing) layer_ms_.assign(size_t(config.n_layer), 0.0);
    event_.n_head = config.n_head;
    event_.n_head_kv = config.n_head_kv;
    event_.heads = heads_;
    for (int32_t h : heads_) event_.kv_head_of.push_back(h / config.n_gqa());
}

void SessionHooks::begin_pass(bool prefill) {
    prefill_ = prefill;
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

void SessionHooks::layer_done(int32_t il) {
    if (!spec_.layer_timing) return;
    backend_.synchronize();
    const auto now = std::chrono::steady_clock::now();
    layer_ms_[size_t(il)] += std::chrono::duration<double, std::milli>(now - layer_start_).count();
    layer_start_ = now;
}

}  // namespace wb
