#pragma once
// Observer hooks: how the inspector (and the CLI's --json) sees what the engine did. Callbacks run on
// the inference thread; every default is empty so an observer overrides only what it needs.
#include <cstdint>
#include <string>

#include "kv/kv_cache.h"

namespace wb {

struct TokenEvent {
    int32_t index = 0;      // 0 for the first generated token
    int32_t id = 0;
    std::string piece;      // complete UTF-8 text this token adds to the reply (may be empty)
    float p = 0.0f;         // probability of the chosen token in the distribution it was drawn from
};

struct Timings {
    double load_ms = 0.0;       // not used by Session; front ends fill it
    double prefill_ms = 0.0;    // forward passes over the (non-reused) prompt
    int32_t n_prefill = 0;      // prompt tokens evaluated
    int32_t n_reused = 0;       // prompt tokens whose K/V were reused from the previous turn
    double ttft_ms = 0.0;       // from generate() to the first generated token
    double decode_ms = 0.0;     // forward passes + sampling of generated tokens
    int32_t n_decode = 0;       // generated tokens that went through a forward pass

    double prefill_tps() const { return prefill_ms > 0 ? 1000.0 * n_prefill / prefill_ms : 0.0; }
    double decode_tps() const { return decode_ms > 0 ? 1000.0 * n_decode / decode_ms : 0.0; }
};

class Observer {
public:
    virtual ~Observer() = default;
    virtual void on_token(const TokenEvent& /*event*/) {}
    virtual void on_kv_cache(const KvStats& /*stats*/) {}
    virtual void on_timing(const Timings& /*timings*/) {}
};

}  // namespace wb
