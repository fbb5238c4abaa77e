#include "engine/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "engine/forward_hooks.h"
#include "engine/sampler_vocab.h"
#include "engine/stop_strings.h"
#include "engine/token_inspection.h"
#include "sampling/sampler.h"
#include "util/error.h"

namespace wb {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Default context when the user asks for none: the model's own, capped so a 128k-context model does
// not promise more than a desktop chat needs (the cache grows on demand either way).
constexpr int32_t kDefaultMaxContext = 4096;

}  // namespace

const char* stop_reason_name(StopReason r) {
    switch (r) {
        case StopReason::NONE: return "none";
        case StopReason::EOS: return "eos";
        case StopReason::STOP_STRING: return "stop_string";
        case StopReason::MAX_TOKENS: return "max_tokens";
        case StopReason::CONTEXT_FULL: return "context_full";
        case StopReason::STOPPED: return "stopped";
        case StopReason::ERROR: return "error";
    }
    return "?";
}

Session::Session(const Model& model, Backend& backend, const SessionOptions& options)
    : model_(model), backend_(backend), weights_(model.weights()), forward_(forward_function(model.config().arch)) {
    const ModelConfig& c = model.config();
    n_ctx_ = options.n_ctx > 0 ? options.n_ctx : std::min(c.n_ctx_train, kDefaultMaxContext);
    if (options.n_ctx > c.n_ctx_train && c.n_ctx_train > 0)
        throw Error("context size " + std::to_string(options.n_ctx) + " exceeds the model's training context " +
                    std::to_string(c.n_ctx_train));
    n_batch_ = std::clamp(options.n_batch, 1, n_ctx_);
    backend_.prepare_weights(weights_);
    try {
        make_cache_and_buffers(options);
    } catch (...) {
        // No destructor runs for a constructor that throws: give back what prepare_weights took (a
        // CPU backend's repacked copies, a GPU backend's uploads), which would otherwise stay with
        // the backend, here possibly the chat's, for as long as it lives.
        kv_.reset();
        buffers_.release(backend_);
        backend_.release_weights(weights_);
        throw;
    }
}

void Session::make_cache_and_buffers(const SessionOptions& options) {
    const ModelConfig& c = model_.config();
    KvCacheConfig kc;
    kc.n_layer = c.n_layer;
    kc.n_head_kv = c.n_head_kv;
    kc.head_dim = c.head_dim;
    kc.n_ctx = n_ctx_;
    kc.layer_is_swa = c.layer_is_swa;
    kc.sliding_window = c.sliding_window;
    kc.type_k = options.kv_type_k;
    kc.type_v = options.kv_type_v;
    backend_.check_kv_types(kc.type_k, kc.type_v);
    kv_ = std::make_unique<KvCache>(kc, backend_);
    buffers_.allocate(backend_, c, n_batch_);
    last_logits_.resize(size_t(c.n_vocab));
}

Session::~Session() {
    kv_.reset();
    buffers_.release(backend_);
    backend_.release_weights(weights_);  // a GPU backend frees its copy of the weights
}

void Session::truncate(int32_t n) {
    n = std::clamp(n, 0, int32_t(history_.size()));
    const std::vector<int32_t> prefix(history_.begin(), history_.begin() + n);
    const int32_t kept = keep_history(n);
    // Sliding-window layers had released keys that position n needs, so the cache started over:
    // compute the prefix again, and the context is exactly its first n tokens as promised.
    if (kept < n) append(prefix.data() + kept, n - kept);
}

int32_t Session::drop_after(int32_t n) {
    n = std::clamp(n, 0, int32_t(cached_.size()));
    cached_.resize(size_t(kv_->truncate(n)));
    return int32_t(cached_.size());
}

void Session::set_context_policy(const ContextPolicyOptions& options) {
    check_context_policy(options.policy, kv_->config().type_k, model_.config().n_rot, model_.config().head_dim,
                         backend_);
    policy_ = options;
    keep_now_ = std::max(0, options.n_keep);
    const bool shift = policy_.policy == ContextPolicy::SHIFT;
    kv_->pin_prefix(shift ? shift_keep(dropped_ > 0 ? shift_keep_ : keep_now_, n_ctx_) : 0);
}

int32_t Session::keep_history(int32_t n) {
    n = std::clamp(n, 0, int32_t(history_.size()));
    // History position n is cache position n - dropped_ past the dropped run, n before it; inside it
    // only the kept tokens are left in the cache.
    int32_t cache_n = n;
    if (dropped_ > 0) cache_n = n >= shift_keep_ + dropped_ ? n - dropped_ : std::min(n, shift_keep_);
    const int32_t kept = drop_after(cache_n);
    if (dropped_ > 0 && kept > shift_keep_) {
        history_.resize(size_t(kept + dropped_));
    } else {
        dropped_ = 0;  // the cache is a plain prefix of the history again
        history_.resize(size_t(kept));
    }
    return int32_t(history_.size());
}

int32_t Session::reuse_prefix(const std::vector<int32_t>& prompt) {
    if (prompt.empty()) return 0;
    // Reuse the cached prefix; at least the last prompt token is evaluated again for its logits.
    // The prompt is matched against the history, so a shifted conversation continues (history()).
    size_t common = 0;
    while (common < history_.size() && common < prompt.size() && history_[common] == prompt[common]) ++common;
    common = std::min(common, prompt.size() - 1);
    // With sliding-window layers the cache may keep less than asked (see KvCache::truncate); the
    // rest of the prompt is then prefilled like any new text.
    return keep_history(int32_t(common));
}

void Session::shift_context() {
    // Later shifts keep what the first one kept: the history maps onto the cache by one dropped run.
    const int32_t keep = dropped_ > 0 ? shift_keep_ : shift_keep(keep_now_, n_ctx_);
    const int32_t n = int32_t(cached_.size());
    const int32_t discard = shift_discard(n, keep);
    if (discard <= 0)
        throw Error("context full: the context shift keeps " + std::to_string(keep) + " of " + std::to_string(n) +
                    " tokens and has nothing to drop");
    backend_.synchronize();
    std::vector<int32_t> rest(cached_.begin() + keep + discard, cached_.end());
    if (shift_kv(backend_, model_.config(), weights_, *kv_, keep, discard)) {
        cached_.erase(cached_.begin() + keep, cached_.begin() + keep + discard);
    } else {
        // A sliding-window layer lost kept keys its next window needs: compute the shifted context anew.
        std::vector<int32_t> all(cached_.begin(), cached_.begin() + keep);
        all.insert(all.end(), rest.begin(), rest.end());
        const int32_t kept = drop_after(keep);
        for (int32_t done = kept; done < int32_t(all.size());) {
            const int32_t nb = std::min(n_batch_, int32_t(all.size()) - done);
            forward_batch(all.data() + done, nb, nullptr, true, false);
            done += nb;
        }
    }
    shift_keep_ = keep;
    dropped_ += discard;
    ++shifts_now_;
    dropped_now_ += discard;
    const ContextCut cut{ContextPolicy::SHIFT, keep, discard};
    cuts_now_.push_back(cut);
    if (observer_) observer_->on_context_cut(cut);
}

const std::vector<float>& Session::append(const int32_t* tokens, int32_t n) {
    run(tokens, n, nullptr, n > 1);
    backend_.read(buffers_.logits.rows(0, 1), last_logits_.data());
    return last_logits_;
}

void Session::check_token_ids(const int32_t* tokens, int32_t n) const {
    const int32_t n_vocab = model_.config().n_vocab;
    for (int32_t i = 0; i < n; ++i)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            throw Error("token id " + std::to_string(tokens[i]) + " is outside the vocabulary (0.." +
                        std::to_string(n_vocab - 1) + ")");
}

void Session::run(const int32_t* tokens, int32_t n, SessionHooks* hooks, bool prefill, bool lens) {
    if (n <= 0) throw Error("append: no tokens to evaluate");
    if (hooks && !hooks->active()) hooks = nullptr;
    // Checked here as well as by the backends' embedding: a replayed decode step (below) embeds on the
    // device from a recording, where nothing would check the id.
    check_token_ids(tokens, n);
    const bool shift = policy_.policy == ContextPolicy::SHIFT;
    for (int32_t done = 0; done < n;) {
        if (shift && int32_t(cached_.size()) >= n_ctx_) shift_context();
        const int32_t nb = std::min({n_batch_, n - done, shift ? n_ctx_ - int32_t(cached_.size()) : n_batch_});
        // Only the last batch's last row gives the next token: the lens of earlier batches is not wanted.
        forward_batch(tokens + done, nb, hooks, prefill, lens && done + nb == n);
        history_.insert(history_.end(), tokens + done, tokens + done + nb);
        done += nb;
    }
}

void Session::forward_batch(const int32_t* tokens, int32_t nb, SessionHooks* hooks, bool prefill, bool lens) {
    const ModelConfig& c = model_.config();
    const int32_t pos0 = int32_t(cached_.size());
    kv_->reserve(pos0 + nb);
    ForwardBatch batch{tokens, nb, pos0, false, hooks};
    if (hooks) hooks->begin_pass(prefill, lens);
    // A one-token step may be replayed by the backend from a recording of an earlier one (CUDA
    // graphs, see Backend::decode_step_begin); otherwise the forward pass runs as usual. Hooks
    // need the operations to run, so a step that captures is never replayed.
    const bool one = nb == 1 && !hooks;
    if (!(one && backend_.decode_step_begin(*kv_, tokens[0], pos0))) {
        try {
            forward_(backend_, c, weights_, *kv_, buffers_, batch);
        } catch (...) {
            if (one) backend_.decode_step_end(false);
            throw;
        }
        if (one) backend_.decode_step_end(true);
    }
    cached_.insert(cached_.end(), tokens, tokens + nb);
    kv_->set_n_tokens(int32_t(cached_.size()));
}

std::shared_ptr<const SamplerVocab> Session::sampler_vocab() {
    // Made once and kept: the grammar's trie of the vocabulary is cached in it for every later reply.
    if (!sampler_vocab_) sampler_vocab_ = make_sampler_vocab(model_);
    return sampler_vocab_;
}

int32_t Session::sample_next(SamplerChain& chain, const SamplingParams& now, bool whole_row, bool vocab_p,
                             std::vector<SamplerStageTrace>* trace, size_t trace_top) {
    const Tokenizer& tok = model_.tokenizer();
    const int32_t n_vocab = model_.config().n_vocab;
    const Tensor row = buffers_.logits.rows(0, 1);
    const int32_t n_masked = now.ignore_eos ? int32_t(tok.eog_ids().size()) : 0;
    const int32_t k = whole_row ? 0 : chain.top_needed(n_vocab, n_masked, vocab_p);
    if (k > 0) {
        top_ids_.resize(size_t(k));
        top_logits_.resize(size_t(k));
        backend_.read_top(row, k, top_ids_.data(), top_logits_.data());
        if (now.ignore_eos)
            for (int32_t i = 0; i < k; ++i)
                if (tok.is_eog(top_ids_[size_t(i)])) top_logits_[size_t(i)] = -INFINITY;
        // A grammar's second draw reads the logits of the tokens it allows, only when the best few
        // hold too few of them.
        const auto read_allowed = [&](const int32_t* ids, int32_t n, float* logits) {
            backend_.read_columns(row, ids, n, logits);
            if (now.ignore_eos)
                for (int32_t i = 0; i < n; ++i)
                    if (tok.is_eog(ids[i])) logits[i] = -INFINITY;
        };
        return chain.sample_top(top_ids_.data(), top_logits_.data(), k, read_allowed);
    }
    backend_.read(row, last_logits_.data());
    // last_logits_ is the session's own copy, so masking it changes nothing else.
    if (now.ignore_eos)
        for (int32_t eog : tok.eog_ids()) last_logits_[size_t(eog)] = -INFINITY;
    // Observed greedy without the inspector's candidates or trace: the argmax and its p straight from
    // the row, instead of the chain's stages over every candidate (issue 16's hooks' cost).
    if (!whole_row && chain.greedy_over_raw_row()) return chain.sample_greedy_row(last_logits_.data(), n_vocab);
    return chain.sample(last_logits_.data(), n_vocab, trace, trace_top);
}

std::vector<float> Session::evaluate(const std::vector<int32_t>& tokens, const std::function<bool(size_t done)>& after_batch) {
    const size_t n_vocab = size_t(model_.config().n_vocab);
    if (int32_t(tokens.size()) > n_ctx_)
        throw Error("evaluate: " + std::to_string(tokens.size()) + " tokens do not fit the context of " +
                    std::to_string(n_ctx_));
    reset();
    std::vector<float> out(tokens.size() * n_vocab);
    for (size_t done = 0; done < tokens.size();) {
        const int32_t nb = std::min<int32_t>(n_batch_, int32_t(tokens.size() - done));
        const std::vector<float>& rows = append_rows(tokens.data() + done, nb);
        std::copy(rows.begin(), rows.end(), out.begin() + long(done * n_vocab));
        done += size_t(nb);
        if (after_batch && !after_batch(done)) throw Error("evaluate: stopped");
    }
    return out;
}

const std::vector<float>& Session::append_rows(const int32_t* tokens, int32_t n) {
    const ModelConfig& c = model_.config();
    if (n <= 0 || n > n_batch_ || int64_t(cached_.size()) + n > n_ctx_)
        throw Error("append_rows: " + std::to_string(n) + " tokens after " + std::to_string(cached_.size()) +
                    " are not one batch of at most " + std::to_string(n_batch_) + " that fits the context of " +
                    std::to_string(n_ctx_));
    check_token_ids(tokens, n);
    const int32_t pos0 = int32_t(cached_.size());
    kv_->reserve(pos0 + n);
    ForwardBatch batch{tokens, n, pos0, true};
    forward_(backend_, c, weights_, *kv_, buffers_, batch);
    rows_.resize(size_t(n) * size_t(c.n_vocab));
    backend_.read(buffers_.logits.rows(0, n), rows_.data());
    cached_.insert(cached_.end(), tokens, tokens + n);
    history_.insert(history_.end(), tokens, tokens + n);
    kv_->set_n_tokens(int32_t(cached_.size()));
    return rows_;
}

GenerateResult Session::generate(const std::vector<int32_t>& prompt, const LiveSamplingParams& live,
                                 Observer* observer) {
    GenerateResult result;
    // The observer hears of the shifts of this call only (every return path forgets it).
    struct ObserverScope {
        Observer*& slot;
        ~ObserverScope() { slot = nullptr; }
    } observer_scope{observer_};
    observer_ = observer;
    shifts_now_ = dropped_now_ = 0;  // an early error reports none of an earlier call's
    cuts_now_.clear();
    stop_requested_.store(false);
    const auto stopping = [&] { return stop_requested_.load() || (observer && observer->stop_requested()); };
    const auto t_start = Clock::now();
    const Tokenizer& tok = model_.tokenizer();
    const int32_t n_vocab = model_.config().n_vocab;
    try {
        if (prompt.empty()) throw Error("the prompt is empty");
        check_token_ids(prompt.data(), int32_t(prompt.size()));  // before any batch changes the cache
        const bool shift = policy_.policy == ContextPolicy::SHIFT;
        if (!shift && int32_t(prompt.size()) >= n_ctx_)
            throw Error("the prompt is " + std::to_string(prompt.size()) + " tokens but the context holds " +
                        std::to_string(n_ctx_) + " (including the reply): shorten it or raise the context size");

        const size_t common = size_t(reuse_prefix(prompt));
        result.timings.n_reused = int32_t(cached_.size());
        // A shift keeps the first n_keep tokens: on sliding-window layers too, where the window after
        // the shift may reach back into them (so they must not be released meanwhile).
        keep_now_ = policy_.n_keep < 0 ? int32_t(prompt.size()) : policy_.n_keep;
        shifts_now_ = dropped_now_ = 0;
        cuts_now_.clear();
        kv_->pin_prefix(shift ? shift_keep(dropped_ > 0 ? shift_keep_ : keep_now_, n_ctx_) : 0);

        const CaptureSpec spec = observer ? observer->capture() : CaptureSpec{};
        SamplingParams params = live.get();
        SamplerChain chain(params, sampler_vocab());
        result.seed = chain.seed_in_use();
        for (int32_t t : prompt) chain.accept(t);

        const auto t_prefill = Clock::now();
        std::unique_ptr<SessionHooks> hooks;
        if (observer) hooks = std::make_unique<SessionHooks>(spec, *observer, model_.config(), weights_, backend_,
                                                                result.timings.layer_ms);
        // The prompt goes in batch by batch so a long prefill reports progress and can be stopped
        // (even before its first batch: a stop that came while the request waited).
        const int32_t n_new = int32_t(prompt.size() - common);
        if (stopping()) {
            result.reason = StopReason::STOPPED;
            if (observer) observer->on_timing(result.timings);
            return result;
        }
        for (int32_t done = 0; done < n_new;) {
            const int32_t nb = std::min(n_batch_, n_new - done);
            run(prompt.data() + common + done, nb, hooks.get(), true, done + nb == n_new);
            // A GPU backend returns before its queued work is done (run() reads nothing back): progress
            // and the prefill time count finished work.
            backend_.synchronize();
            done += nb;
            if (observer) observer->on_prefill_progress(done, n_new);
            if (done < n_new && stopping()) {
                result.reason = StopReason::STOPPED;
                result.timings.prefill_ms = ms_since(t_prefill);
                result.timings.n_prefill = done;
                if (observer) observer->on_timing(result.timings);
                return result;
            }
        }
        result.timings.prefill_ms = ms_since(t_prefill);
        result.timings.n_prefill = n_new;
        if (observer) {
            observer->on_kv_cache(kv_->stats());
            observer->on_timing(result.timings);
        }

        StopStringMatcher stops(params.stop);
        StreamDecoder decoder(tok);
        std::vector<SamplerStageTrace> trace;
        const auto t_decode = Clock::now();
        for (;;) {
            // Live controls: the settings in force now apply to this very token.
            const SamplingParams now = live.get();
            chain.set_params(now);
            if (observer)
                if (std::optional<GrammarRefusal> refusal = chain.take_grammar_refusal()) observer->on_grammar_refused(*refusal);
            // The inspector's candidates and trace need the whole logits row; otherwise the chain may
            // need only its best few (the greedy token's p is shown whenever someone observes).
            const bool whole_row = spec.top_candidates > 0 || spec.sampler_trace;
            const int32_t id = sample_next(chain, now, whole_row, observer != nullptr,
                                           spec.sampler_trace ? &trace : nullptr,
                                           size_t(spec.trace_top()));
            if (result.tokens.empty()) result.timings.ttft_ms = ms_since(t_start);
            if (tok.is_eog(id)) {
                result.reason = StopReason::EOS;
                break;
            }
            chain.accept(id);
            result.tokens.push_back(id);
            const std::string shown = stops.push(decoder.push(id));
            result.text += shown;
            if (observer) {
                TokenEvent ev;
                ev.index = int32_t(result.tokens.size() - 1);
                ev.id = id;
                ev.piece = shown;
                ev.token_piece = tok.token_to_piece(id, true);
                const CandidateSet& final_set = chain.last_candidates();
                ev.p = final_set.data[size_t(final_set.selected)].p;
                if (spec.top_candidates > 0)
                    inspect_candidates(last_logits_.data(), n_vocab, final_set, spec.top_candidates, tok, ev);
                if (spec.sampler_trace) ev.trace = trace;
                if (hooks && spec.logit_lens > 0) ev.lens = hooks->lens(id);
                observer->on_token(ev);
            }
            if (stops.matched()) {
                result.reason = StopReason::STOP_STRING;
                break;
            }
            if (int32_t(result.tokens.size()) >= now.max_tokens) {
                result.reason = StopReason::MAX_TOKENS;
                break;
            }
            if (stopping()) {
                result.reason = StopReason::STOPPED;
                break;
            }
            if (!shift && int32_t(cached_.size()) + 1 > n_ctx_) {
                result.reason = StopReason::CONTEXT_FULL;
                break;
            }
            const auto t_step = Clock::now();
            run(&id, 1, hooks.get(), false, true);
            ++result.timings.n_decode;
            if (observer) {
                backend_.synchronize();  // as for the prefill: the step's time until its work is done
                result.timings.last_token_ms = ms_since(t_step);
                result.timings.decode_ms = ms_since(t_decode);
                observer->on_kv_cache(kv_->stats());
                observer->on_timing(result.timings);
            }
        }
        result.timings.decode_ms = ms_since(t_decode);
        if (result.reason != StopReason::STOP_STRING) result.text += stops.flush() + decoder.flush();
    } catch (const std::exception& e) {
        result.reason = StopReason::ERROR;
        result.error = e.what();
    }
    result.context_shifts = shifts_now_;
    result.tokens_dropped = dropped_now_;
    result.cuts = cuts_now_;
    if (observer) observer->on_timing(result.timings);
    return result;
}

}  // namespace wb
