#pragma once
// Where one forward pass's attention events end and the next's begin, for the classes that keep "the
// latest pass" (PassHeadStats, PassAttentionRows). The engine sends one event per captured layer per
// pass, layers in ascending order (SessionHooks::after_attention), so an event whose layer is not
// above the last one seen begins a new pass. n_keys cannot tell: after a context shift a pass can end
// at the same n_keys as the pass before it.
#include <cstdint>

#include "engine/observer.h"

namespace wb {

class PassBoundary {
public:
    // True when `e` is the first event of a pass after an earlier one (the caller drops that pass).
    bool starts_new_pass(const AttentionEvent& e) {
        const bool next = last_layer_ >= 0 && e.layer <= last_layer_;
        last_layer_ = e.layer;
        return next;
    }

private:
    int32_t last_layer_ = -1;  // the layer of the last event seen (-1: none yet)
};

}  // namespace wb
