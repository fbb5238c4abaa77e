#pragma once
// The observer behind `generate`: streams text to the terminal, collects per-token events for --json
// and the captured attention for --dump-attention.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "engine/head_stats.h"
#include "engine/observer.h"
#include "engine/pass_rows.h"

namespace wb {
class Tokenizer;
}

namespace wb::cli {

struct GenerateCapture {
    bool stream_text = false;        // print each token's text as it arrives
    int32_t top_candidates = 0;      // candidates per step (--top-candidates)
    bool attention = false;          // capture attention for --dump-attention
    std::vector<int32_t> layers;     // --layers (empty: all)
    std::vector<int32_t> heads;      // --heads (empty: all)
    int32_t logit_lens = 0;          // --logit-lens K
    bool head_stats = false;         // --head-stats
    int32_t model_window = 0;        // the model's sliding window (head statistics' in_window), 0: none
    bool sampler_trace = false;      // --export-trace / --replay
    int32_t trace_candidates = 0;    // candidates per stage record (a replay's file's; 0: CaptureSpec's)
    bool trace_attention = false;    // --trace-attention: each step's attention rows for the trace file
};

class GenerateObserver : public Observer {
public:
    explicit GenerateObserver(GenerateCapture what) : what_(std::move(what)), pass_heads_(what_.model_window) {}

    CaptureSpec capture() const override;
    void on_token(const TokenEvent& e) override;
    void on_attention(const AttentionEvent& e) override;

    const std::vector<TokenEvent>& steps() const { return steps_; }
    // --head-stats: for each step, the statistics of the attention row whose logits drew its token.
    const std::vector<std::vector<HeadStats>>& step_heads() const { return step_heads_; }
    // --trace-attention: for each step, the captured rows of the position whose logits drew its token.
    const std::vector<std::vector<AttentionRow>>& step_rows() const { return step_rows_; }
    // The same, moved out (step_rows() is empty after).
    std::vector<std::vector<AttentionRow>> take_step_rows() { return std::exchange(step_rows_, {}); }

    // Writes the captured attention with the token pieces of the whole context (prompt + reply) as
    // JSON (format: docs/attention-dump.md). Written to a temporary file and renamed into place.
    void write_attention(const std::string& path, const std::vector<int32_t>& context, const Tokenizer& tok) const;

private:
    GenerateCapture what_;
    std::vector<TokenEvent> steps_;
    std::vector<AttentionEvent> attention_;
    std::vector<std::vector<HeadStats>> step_heads_;
    PassHeadStats pass_heads_;  // the current forward pass's last row, every captured layer
    std::vector<std::vector<AttentionRow>> step_rows_;
    PassAttentionRows pass_rows_;
};

}  // namespace wb::cli
