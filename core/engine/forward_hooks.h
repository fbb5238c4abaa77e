#pragma once
// The Session's side of the forward-pass hooks: turns an Observer's CaptureSpec into attention-capture
// buffers for the backend and AttentionEvents for the observer, times layers when asked, and computes
// the logit lens of each layer when asked (CaptureSpec::logit_lens).
#include <chrono>
#include <cstdint>
#include <vector>

#include "engine/observer.h"
#include "model/forward.h"

namespace wb {

class SessionHooks : public ForwardHooks {
public:
    SessionHooks(const CaptureSpec& spec, Observer& observer, const ModelConfig& config, const ModelWeights& weights,
                 Backend& backend, std::vector<double>& layer_ms);
    ~SessionHooks() override;
    SessionHooks(const SessionHooks&) = delete;
    SessionHooks& operator=(const SessionHooks&) = delete;

    // Whether any forward pass of this generation needs the hooks at all.
    bool active() const { return spec_.any_attention() || spec_.layer_timing || spec_.logit_lens > 0; }
    // Called before each forward pass: prompt batches and decode steps are captured separately. lens:
    // this pass's last row gives the next token (the last prompt batch, a decode step), so its logit
    // lens is wanted; the lens of the other prompt batches is never computed.
    void begin_pass(bool prefill, bool lens);
    // The lens of the last pass that computed one, for the token drawn from its logits.
    std::vector<LensLayer> lens(int32_t drawn) const;

    void before_attention(int32_t il, int32_t n_rows, int32_t pos0, AttentionParams& p) override;
    void after_attention(int32_t il, int32_t n_rows, int32_t pos0, const AttentionParams& p) override;
    void layer_done(int32_t il, const Tensor& x, const Tensor& delta) override;

private:
    CaptureSpec spec_;
    Observer& observer_;
    const ModelConfig& config_;
    const ModelWeights& weights_;
    Backend& backend_;
    std::vector<double>& layer_ms_;
    std::vector<int32_t> heads_;       // captured query heads
    bool prefill_ = false;
    AttentionEvent event_;             // reused: its probs buffer keeps its capacity
    std::chrono::steady_clock::time_point layer_start_;
    // Logit lens (allocated only when asked): one residual row, its norm and its logits on the
    // backend, and every layer's logits of the last lens pass on the host [n_layer][n_vocab].
    bool lens_pass_ = false;
    Tensor lens_x_, lens_xn_, lens_logits_;
    std::vector<float> lens_host_;
};

}  // namespace wb
