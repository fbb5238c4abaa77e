#pragma once
// The attention rows a token was drawn after: for every captured layer and head, the probabilities of
// the query row whose logits drew it (the last row of the last forward pass before the token), over
// keys 0 .. n_keys-1, exactly as the engine captured them (masked keys 0). What a trace file carries
// per step when asked for (`--trace-attention`; docs/trace-format.md).
#include <cstdint>
#include <vector>

#include "engine/observer.h"
#include "engine/pass_boundary.h"

namespace wb {

struct AttentionRow {
    int32_t layer = 0;
    int32_t head = 0;          // query head
    std::vector<float> probs;  // keys 0 .. n_keys-1 (n_keys = the query's position + 1)
};

// Fed every attention event of a generation; last_pass() is the rows of the pass under way (events
// come layer by layer, pass by pass, and a pass is known by where it ends), read in on_token.
class PassAttentionRows {
public:
    void add(const AttentionEvent& event);
    const std::vector<AttentionRow>& last_pass() const { return rows_; }

private:
    std::vector<AttentionRow> rows_;
    PassBoundary pass_;  // when the next event begins a new pass
};

}  // namespace wb
