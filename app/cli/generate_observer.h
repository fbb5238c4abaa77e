#pragma once
// The observer behind `generate`: streams text to the terminal, collects per-token events for --json
// and the captured attention for --dump-attention.
#include <cstdio>
#include <string>
#include <vector>

#include "engine/observer.h"

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
};

class GenerateObserver : public Observer {
public:
    explicit GenerateObserver(GenerateCapture what) : what_(std::move(what)) {}

    CaptureSpec capture() const override;
    void on_token(const TokenEvent& e) override;
    void on_attention(const AttentionEvent& e) override { attention_.push_back(e); }

    const std::vector<TokenEvent>& steps() const { return steps_; }

    // Writes the captured attention with the token pieces of the whole context (prompt + reply) as
    // JSON (format: docs/attention-dump.md). Written to a temporary file and renamed into place.
    void write_attention(const std::string& path, const std::vector<int32_t>& context, const Tokenizer& tok) const;

private:
    GenerateCapture what_;
    std::vector<TokenEvent> steps_;
    std::vector<AttentionEvent> attention_;
};

}  // namespace wb::cli
