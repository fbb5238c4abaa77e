#pragma once
// Observer hooks: how the inspector (and the CLI's --json) sees what the engine did. Callbacks run on
// the inference thread, synchronously; every default is empty so an observer overrides only what it
// needs. What is expensive to capture (attention, candidates, the sampler trace, per-layer timing) is
// captured only when the observer's CaptureSpec asks for it, so an observer that asks for nothing costs
// nothing measurable.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/context_policy.h"
#include "kv/kv_cache.h"
#include "sampling/sampler.h"

namespace wb {

// What an observer wants captured during one generation.
struct CaptureSpec {
    std::vector<int32_t> layers;     // layers whose attention is captured; empty = all
    std::vector<int32_t> heads;      // query heads captured; empty = all
    bool prefill_attention = false;  // the [queries x keys] block of every prefill batch
    bool decode_attention = false;   // the 1 x keys row of every generated token
    int32_t top_candidates = 0;      // candidates per token event (0 = none)
    bool sampler_trace = false;      // what each sampler stage kept and how it changed p
    // Candidates each trace stage records; 0: max(top_candidates, 10). A replay asks for its file's
    // count, or its stages would record another number of candidates than the file's and differ.
    int32_t trace_candidates = 0;
    bool layer_timing = false;       // per-layer forward time (adds a synchronisation per layer on GPUs)
    // > 0: the logit lens with this many top tokens per layer (TokenEvent::lens): the final norm and the
    // output matrix applied to every layer's residual stream, one extra output product per layer
    int32_t logit_lens = 0;

    bool wants_layer(int32_t il) const;
    bool wants_head(int32_t h) const;
    bool any_attention() const { return prefill_attention || decode_attention; }
    int32_t trace_top() const { return trace_candidates > 0 ? trace_candidates : std::max(top_candidates, 10); }
};

// Post-softmax attention probabilities of one layer, exactly those the attention used.
struct AttentionEvent {
    int32_t layer = 0;
    bool prefill = false;              // true: a prompt batch; false: one generated token
    int32_t n_head = 0;                // query heads of the model
    int32_t n_head_kv = 0;             // key/value heads of the model
    std::vector<int32_t> heads;        // captured query heads, in the order of probs
    std::vector<int32_t> kv_head_of;   // for each captured head, the kv head that served it (GQA)
    int32_t query_pos0 = 0;            // position of the first query row
    int32_t n_queries = 0;             // query rows
    int32_t n_keys = 0;                // key columns 0 .. n_keys-1 (= query_pos0 + n_queries)
    int32_t window = 0;                // > 0: sliding window (keys older than window are masked)
    // [heads.size()][n_queries][n_keys]; masked entries (future keys, outside the window) are 0.
    std::vector<float> probs;

    float at(size_t head_index, int32_t query, int32_t key) const {
        return probs[(head_index * size_t(n_queries) + size_t(query)) * size_t(n_keys) + size_t(key)];
    }
};

// One token the sampler considered: raw probability (softmax of the logits before any sampler) and
// final probability (in the distribution the token was drawn from; 0 if a stage removed it).
struct TokenCandidate {
    int32_t id = 0;
    std::string piece;
    float p_raw = 0.0f;
    float p_final = 0.0f;
};

// The logit lens of one layer at the position whose logits produced a token: the next-token
// distribution the model would give if its residual stream ended after this layer (final norm, output
// matrix, bias and soft-cap as the model's own head). The last layer's is the model's raw distribution.
struct LensLayer {
    int32_t layer = 0;
    std::vector<int32_t> top_ids;  // the k most likely tokens, most likely first
    std::vector<float> top_p;      // their probabilities
    float p_drawn = 0.0f;          // probability of the token finally drawn
    float entropy = 0.0f;          // nats
};

struct TokenEvent {
    int32_t index = 0;      // 0 for the first generated token
    int32_t id = 0;
    std::string piece;      // complete UTF-8 text this token adds to the reply (may be empty)
    std::string token_piece;  // the token's own bytes (may be part of a multi-byte character)
    float p = 0.0f;         // probability of the chosen token in the distribution it was drawn from
    float entropy = 0.0f;   // entropy (nats) of the raw next-token distribution; set when candidates are captured
    float p_raw = 0.0f;     // probability of the chosen token in the raw distribution; set when candidates are captured
    std::vector<TokenCandidate> candidates;   // top CaptureSpec::top_candidates by raw probability
    std::vector<SamplerStageTrace> trace;     // when CaptureSpec::sampler_trace
    std::vector<LensLayer> lens;              // every layer, when CaptureSpec::logit_lens > 0
};

struct Timings {
    double load_ms = 0.0;       // not used by Session; front ends fill it
    double prefill_ms = 0.0;    // forward passes over the (non-reused) prompt
    int32_t n_prefill = 0;      // prompt tokens evaluated
    int32_t n_reused = 0;       // prompt tokens whose K/V were reused from the previous turn
    double ttft_ms = 0.0;       // from generate() to the first generated token
    double decode_ms = 0.0;     // forward passes + sampling of generated tokens
    int32_t n_decode = 0;       // generated tokens that went through a forward pass
    double last_token_ms = 0.0; // the most recent decode step
    std::vector<double> layer_ms;  // per layer, summed over the generation (CaptureSpec::layer_timing)

    double prefill_tps() const { return prefill_ms > 0 ? 1000.0 * n_prefill / prefill_ms : 0.0; }
    double decode_tps() const { return decode_ms > 0 ? 1000.0 * n_decode / decode_ms : 0.0; }
};

class Observer {
public:
    virtual ~Observer() = default;
    // Read once at the start of each generate(); the default captures nothing.
    virtual CaptureSpec capture() const { return {}; }
    virtual void on_token(const TokenEvent& /*event*/) {}
    virtual void on_attention(const AttentionEvent& /*event*/) {}
    virtual void on_kv_cache(const KvStats& /*stats*/) {}
    // A context shift happened (ContextPolicy::SHIFT), right after the cache was cut.
    virtual void on_context_cut(const ContextCut& /*cut*/) {}
    // During the prompt's prefill, after each batch: tokens evaluated so far of total.
    virtual void on_prefill_progress(int32_t /*done*/, int32_t /*total*/) {}
    // After the prefill, after each decode step (running totals), and once at the end.
    virtual void on_timing(const Timings& /*timings*/) {}
    // A grammar changed during the reply was not applied (the reply so far does not parse under it),
    // right after the token's settings were read; the grammar in force stays (SamplerChain::set_params).
    virtual void on_grammar_refused(const GrammarRefusal& /*refusal*/) {}
    // Polled by generate() before the prefill, after each prompt batch and after each token: true
    // ends the reply (reason STOPPED) as Session::stop() does. For a caller whose stop can come before
    // generate() starts, which clears an earlier stop() (a GUI's Stop pressed while its request waits
    // in a queue): the observer knows which request it serves.
    virtual bool stop_requested() const { return false; }
};

}  // namespace wb
