#pragma once
// The Session's side of the forward-pass hooks: turns an Observer's CaptureSpec into attention-capture
// buffers for the backend and AttentionEvents for the observer, and times layers when asked.
#include <chrono>
#include <cstdint>
#include <vector>

#include "engine/observer.h"
#include "model/forward.h"

namespace wb {

class SessionHooks : public ForwardHooks {
public:
    SessionHooks(const CaptureSpec& spec, Observer& observer, const ModelConfig& config, Backend& backend,
                 std::vector<double>& layer_ms);

    // Whether any forward pass of this generation needs the hooks at all.
    bool active() const { return spec_.any_attention() || spec_.layer_timing; }
    // Called before each forward pass: prompt batches and decode steps are captured separately.
    void begin_pass(bool prefill);

    void before_attention(int32_t il, int32_t n_rows, int32_t pos0, AttentionParams& p) override;
    void after_attention(int32_t il, int32_t n_rows, int32_t pos0, const AttentionParams& p) override;
    void layer_done(int32_t il) override;

private:
    CaptureSpec spec_;
    Observer& observer_;
    const ModelConfig& config_;
    Backend& backend_;
    std::vector<double>& layer_ms_;
    std::vector<int32_t> heads_;       // captured query heads
    bool prefill_ = false;
    AttentionEvent event_;             // reused: its probs buffer keeps its capacity
    std::chrono::steady_clock::time_point layer_start_;
};

}  // namespace wb
