#pragma once
// Compare (issue 16 item 7): the same prompt and reply run through two models (two quantizations of
// one model, or one model on two backends or cache types) token by token, teacher-forced, and per
// generated token the KL divergence between their next-token distributions and whether their most
// likely token differs (a top-1 flip): the quantization view otherwise built from llama-perplexity dumps.
#include <cstdint>
#include <functional>
#include <vector>

namespace wb {

class Session;

struct TokenComparison {
    int32_t token = 0;   // the reply token both distributions predict
    double kl = 0.0;     // KL(a || b) in nats, log-softmax in double over the whole vocabulary
    int32_t top_a = 0;   // each model's most likely token there (lower id first on ties)
    int32_t top_b = 0;
    bool flip() const { return top_a != top_b; }
};

struct ModelComparison {
    std::vector<TokenComparison> tokens;
    double kl_mean = 0.0, kl_max = 0.0;
    int32_t flips = 0;
};

// Progress of a comparison: positions evaluated so far of both sessions together (total = twice the
// prompt and reply); false ends the comparison with wb::Error("compare: stopped").
using CompareProgress = std::function<bool(size_t done, size_t total)>;

// Evaluates prompt + reply from an empty cache in both sessions (they are reset) and compares the
// distributions that predicted each reply token, a batch of both at a time (neither holds more than
// one batch of logits rows). wb::Error when the vocabularies differ (in size or in a token's text),
// the prompt is empty or the tokens do not fit a session's context (the message gives both sizes).
ModelComparison compare_models(Session& a, Session& b, const std::vector<int32_t>& prompt,
                               const std::vector<int32_t>& reply, const CompareProgress& progress = {});

}  // namespace wb
