#pragma once
// Summary statistics of each captured head's attention row: what the head-summary grid colours and
// `generate --json --head-stats` writes. Computed from the probabilities the attention used (an
// AttentionEvent), so every front end shows the same numbers.
#include <cstdint>
#include <vector>

#include "engine/observer.h"
#include "engine/pass_boundary.h"
#include "model/model_config.h"

namespace wb {

struct HeadStats {
    int32_t layer = 0;
    int32_t head = 0;       // query head
    int32_t kv_head = 0;    // the key/value head it reads (grouped-query attention)
    float entropy = 0.0f;   // nats, of the row's distribution over keys
    float sink = 0.0f;      // share on the first token (key 0)
    float prev = 0.0f;      // share on the token before the query (0 for the first position)
    float distance = 0.0f;  // mean of query position - key position, weighted by the row
    // Share on the last `window` keys (query - window < key <= query). window: the layer's sliding
    // window, or for a global layer the model's (how local the global head is). 1 when there is none.
    float in_window = 1.0f;
    int32_t window = 0;     // the window in_window counts (0: none)
};

// One entry per captured head for query row `row` of the event (0 .. n_queries-1). model_window: the
// window in_window uses on layers without their own (0: the model has no sliding window).
std::vector<HeadStats> head_stats(const AttentionEvent& event, int32_t row, int32_t model_window);

// The window in_window uses on a model's layers without their own: the model's sliding window when some
// layer slides (its global layers' locality is measured against it), else 0.
int32_t head_stats_model_window(const ModelConfig& config);

// The statistics of the row whose logits draw the next token, for an observer: it passes on every
// attention event and reads last_pass() in on_token. Events come layer by layer, pass by pass; a pass
// is known by where it ends (n_keys), and its last row is the one the next token is drawn from. One
// implementation for every front end (the CLI, the chat, a replay), so they report the same numbers.
class PassHeadStats {
public:
    explicit PassHeadStats(int32_t model_window = 0) : model_window_(model_window) {}
    void add(const AttentionEvent& event);
    // Every captured layer's heads of the latest pass, in the order the events came.
    const std::vector<HeadStats>& last_pass() const { return heads_; }

private:
    int32_t model_window_;
    std::vector<HeadStats> heads_;
    PassBoundary pass_;  // when the next event begins a new pass
};

}  // namespace wb
