#pragma once
// A Session is one conversation with a model on a backend: it owns the KV cache and the token history,
// runs prefill and decode, samples, detokenizes and decides when a reply ends.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/context_policy.h"
#include "engine/model.h"
#include "engine/observer.h"
#include "model/forward.h"
#include "sampling/sampling_params.h"

namespace wb {

class SamplerChain;
class SessionHooks;
struct SamplerStageTrace;

enum class StopReason { NONE, EOS, STOP_STRING, MAX_TOKENS, CONTEXT_FULL, STOPPED, ERROR };
const char* stop_reason_name(StopReason r);  // "eos", "stop_string", ...

// Sampling settings that another thread (the GUI) may change while a reply is generated; the session
// reads a copy before every token.
class LiveSamplingParams {
public:
    explicit LiveSamplingParams(const SamplingParams& p = {}) : params_(p) {}
    void set(const SamplingParams& p) {
        std::lock_guard<std::mutex> lock(mutex_);
        params_ = p;
    }
    SamplingParams get() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return params_;
    }

private:
    mutable std::mutex mutex_;
    SamplingParams params_;
};

struct SessionOptions {
    int32_t n_ctx = 0;      // context size in tokens; 0 = min(model's training context, 4096)
    int32_t n_batch = 256;  // prompt tokens per forward pass during prefill
    KvType kv_type_k = KvType::F16;  // element type of the cached keys (kv/kv_types.h)
    KvType kv_type_v = KvType::F16;  // ... and values
};

struct GenerateResult {
    std::vector<int32_t> tokens;  // generated ids (an end-of-generation token is not included)
    std::string text;             // their text, without a matched stop string
    StopReason reason = StopReason::NONE;
    std::string error;            // when reason == ERROR
    Timings timings;
    uint64_t seed = 0;            // seed the sampler used
    int32_t context_shifts = 0;   // context shifts during this call (ContextPolicy::SHIFT)
    int32_t tokens_dropped = 0;   // tokens those shifts dropped
    std::vector<ContextCut> cuts; // each of those shifts: where and how many (cache positions)
};

class Session {
public:
    Session(const Model& model, Backend& backend, const SessionOptions& options = {});
    ~Session();
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // Continues the conversation so that the context becomes `prompt` followed by the reply. The longest
    // prefix of `prompt` already in the cache is reused; the rest is prefilled in batches. Errors (an
    // over-long prompt, a backend failure) end the reply with reason ERROR and a message.
    GenerateResult generate(const std::vector<int32_t>& prompt, const LiveSamplingParams& params,
                            Observer* observer = nullptr);

    // Appends tokens to the context and runs them through the model in batches of n_batch; returns
    // the logits after the last one ([n_vocab], valid until the next call). wb::Error when the context
    // cannot hold them or a token id is outside the vocabulary. generate() runs the same passes without
    // reading whole rows it does not need; benchmarks and tools use this directly.
    const std::vector<float>& append(const int32_t* tokens, int32_t n);

    // Teacher forcing from an empty cache: logits of every position, [tokens.size()][n_vocab].
    // after_batch (optional) hears the tokens done so far after each batch; false from it ends the
    // evaluation with wb::Error("evaluate: stopped") (a GUI's Cancel between two batches).
    std::vector<float> evaluate(const std::vector<int32_t>& tokens,
                                const std::function<bool(size_t done)>& after_batch = {});
    // One step of evaluate(): appends n <= n_batch() tokens that fit the context and returns the logits
    // of every one of them, [n][n_vocab], valid until the next call. Two sessions stepped side by side
    // (compare_models) hold one batch of rows each instead of every position's.
    const std::vector<float>& append_rows(const int32_t* tokens, int32_t n);
    int32_t n_batch() const { return n_batch_; }

    // Asks a running generate() to end after the current token (or prompt batch); callable from any
    // thread. generate() clears it when it starts: a stop meant for a request not yet started goes
    // through Observer::stop_requested.
    void stop() { stop_requested_.store(true); }
    // Drops everything after the first n tokens of the context (regenerate, edit and resend). When a
    // sliding-window layer has already released keys the kept prefix needs, the prefix is computed
    // again (a prefill of n tokens).
    void truncate(int32_t n);
    // Forgets the conversation (new chat).
    void reset() { truncate(0); }

    // What a full context does from the next generate() on (the default: STOP).
    // n_keep = -1 keeps each generate()'s whole prompt; append() then keeps none.
    // wb::Error, with the policy unchanged, when this cache cannot carry it out (check_context_policy).
    void set_context_policy(const ContextPolicyOptions& options);
    const ContextPolicyOptions& context_policy() const { return policy_; }

    // After a context shift the cache holds fewer tokens than the conversation: history() is every
    // token of it (the caller's prompts and the replies), context_tokens() the ones whose K/V are
    // cached, at their positions: history() minus [shift_keep, shift_keep + dropped) of it. generate()
    // and truncate() count in history() tokens, so a chat passes its whole conversation as before.
    const std::vector<int32_t>& history() const { return history_; }
    const std::vector<int32_t>& context_tokens() const { return cached_; }  // tokens whose K/V are cached
    int32_t dropped() const { return dropped_; }
    // How history() maps onto the cache while dropped() > 0: history positions from
    // shifted_keep() + dropped() on are at cache positions dropped() lower (meaningless when dropped() is 0).
    int32_t shifted_keep() const { return shift_keep_; }
    // The first step of generate(prompt), on its own so a caller can report its outcome before the
    // prompt runs: matches `prompt` against history() (at least its last token is evaluated again),
    // keeps that prefix of the cache (keep_history: a shifted cache keeps the mapping only when the
    // prefix reaches past the dropped run, and sliding-window layers may keep less) and returns how
    // many history tokens stay. After it, shifted_keep() and dropped() are the mapping generate() will
    // continue from; generate() repeats the step, which changes nothing then. An empty prompt: 0, no change.
    int32_t reuse_prefix(const std::vector<int32_t>& prompt);
    int32_t n_ctx() const { return n_ctx_; }
    KvStats kv_stats() const { return kv_->stats(); }
    // The cache itself, read-only (the parity tests compare its rows with llama.cpp's).
    const KvCache& kv_cache() const { return *kv_; }
    const Model& model() const { return model_; }
    Backend& backend() { return backend_; }

private:
    // append() without reading the logits, with the observer hooks of a generation (null: none);
    // prefill marks prompt batches, lens the passes whose logit lens is wanted (see SessionHooks::begin_pass).
    void run(const int32_t* tokens, int32_t n, SessionHooks* hooks, bool prefill, bool lens = false);
    // One forward pass of nb <= n_batch tokens that fit the context, appended to the cache (not to history_).
    void forward_batch(const int32_t* tokens, int32_t nb, SessionHooks* hooks, bool prefill, bool lens);
    // Draws the next token from the last evaluated position's logits, reading from the backend only
    // the best few when the chain can work from them (SamplerChain::top_needed) and whole_row is
    // false; else the whole row into last_logits_. vocab_p: the greedy token's p must be over the
    // whole vocabulary (without whole_row, a greedy chain that leaves the row as it is then takes
    // SamplerChain::sample_greedy_row). now.ignore_eos masks the end-of-generation tokens.
    // The vocabulary as the samplers see it (DRY's breakers, the grammar), made on first use.
    std::shared_ptr<const SamplerVocab> sampler_vocab();
    int32_t sample_next(SamplerChain& chain, const SamplingParams& now, bool whole_row, bool vocab_p,
                        std::vector<SamplerStageTrace>* trace, size_t trace_top);
    // wb::Error naming the first id outside [0, n_vocab).
    void check_token_ids(const int32_t* tokens, int32_t n) const;
    // Drops cached positions >= n; returns how many stay: n, or 0 when sliding-window layers can no
    // longer continue from n (the caller recomputes what it needs).
    int32_t drop_after(int32_t n);
    // Makes the conversation the first n tokens of history() or fewer (a shifted cache can keep only its
    // kept tokens when n falls in what was dropped); returns how many history tokens stay.
    int32_t keep_history(int32_t n);
    // ContextPolicy::SHIFT when the cache is full: drops half of what follows the kept tokens
    // (shift_kv), or recomputes the rest when sliding-window layers cannot continue from the shift.
    void shift_context();
    // The constructor's KV cache, scratch buffers and logits row (after prepare_weights).
    void make_cache_and_buffers(const SessionOptions& options);

    const Model& model_;
    Backend& backend_;
    ModelWeights weights_;  // the model's weights as prepared by this backend
    ForwardFn forward_;
    int32_t n_ctx_ = 0;
    int32_t n_batch_ = 0;
    std::unique_ptr<KvCache> kv_;
    ForwardBuffers buffers_;
    std::vector<int32_t> cached_;
    std::vector<int32_t> history_;     // cached_ plus the tokens shifts dropped (see history())
    ContextPolicyOptions policy_;
    int32_t keep_now_ = 0;             // tokens a shift keeps in the current generate()
    int32_t shift_keep_ = 0;           // the kept tokens of the shifts behind the cache, when dropped_ > 0
    int32_t dropped_ = 0;              // history tokens [shift_keep_, shift_keep_ + dropped_) not cached
    int32_t shifts_now_ = 0, dropped_now_ = 0;  // this generate()'s shifts (GenerateResult)
    std::vector<ContextCut> cuts_now_;          // ... and each one's cut
    Observer* observer_ = nullptr;              // of the generate() under way (on_context_cut)
    std::vector<float> rows_;                   // append_rows()'s logits
    std::vector<float> last_logits_;   // the last row read whole
    std::shared_ptr<const SamplerVocab> sampler_vocab_;  // sampler_vocab()
    std::vector<int32_t> top_ids_;     // the best few logits of the last row, when only they are read
    std::vector<float> top_logits_;
    std::atomic<bool> stop_requested_{false};
};

}  // namespace wb
