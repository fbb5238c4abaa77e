#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "sampling/exp_sum.h"
#include "sampling/grammar/grammar_constraint.h"
#include "sampling/samplers.h"
#include "sampling/top_logits.h"
#include "util/error.h"

namespace wb {

static void require_finite(float value, const char* name) {
    if (!std::isfinite(value)) {
        throw Error(std::string("sampling parameter ") + name + " is " + std::to_string(value) +
                    "; it must be a finite number");
    }
}

static void validate_new_stages(const SamplingParams& p) {
    require_finite(p.xtc_probability, "xtc_probability");
    require_finite(p.xtc_threshold, "xtc_threshold");
    require_finite(p.top_n_sigma, "top_n_sigma");
    require_finite(p.mirostat_tau, "mirostat_tau");
    require_finite(p.mirostat_eta, "mirostat_eta");
    require_finite(p.dry_multiplier, "dry_multiplier");
    require_finite(p.dry_base, "dry_base");
    if (p.mirostat < 0 || p.mirostat > 2) {
        throw Error("sampling parameter mirostat is " + std::to_string(p.mirostat) +
                    "; it must be 0 (off), 1 (Mirostat) or 2 (Mirostat 2.0)");
    }
    if (p.dry_allowed_length < 0) {
        throw Error("sampling parameter dry_allowed_length is " + std::to_string(p.dry_allowed_length) +
                    "; it must be >= 0");
    }
    if (p.dry_penalty_last_n < -1) {
        throw Error("sampling parameter dry_penalty_last_n is " + std::to_string(p.dry_penalty_last_n) +
                    "; it must be -1 (all history), 0 (off) or a positive window");
    }
    for (const LogitBias& b : p.logit_bias) {
        if (b.token < 0) {
            throw Error("sampling parameter logit_bias names token " + std::to_string(b.token) +
                        "; token ids are >= 0");
        }
        // -inf bans a token; +inf or NaN would leave no valid distribution.
        if (std::isnan(b.bias) || b.bias == std::numeric_limits<float>::infinity()) {
            throw Error("sampling parameter logit_bias for token " + std::to_string(b.token) + " is " +
                        std::to_string(b.bias) + "; it must be a number or -inf");
        }
    }
    // Stored names must be canonical; parse_sampler_sequence names the offender otherwise.
    const auto canonical = parse_sampler_sequence(join_sampler_sequence(p.samplers));
    if (canonical != p.samplers) {
        throw Error("sampling parameter samplers is '" + join_sampler_sequence(p.samplers) +
                    "'; use the canonical names (" + join_sampler_sequence(canonical) + ")");
    }
}

// Only values without a sensible reading are rejected; the others are interpreted as documented
// at SamplerChain::set_params.
static void validate(const SamplingParams& p) {
    require_finite(p.temperature, "temperature");
    require_finite(p.top_p, "top_p");
    require_finite(p.min_p, "min_p");
    require_finite(p.typical_p, "typical_p");
    require_finite(p.repeat_penalty, "repeat_penalty");
    require_finite(p.frequency_penalty, "frequency_penalty");
    require_finite(p.presence_penalty, "presence_penalty");
    if (p.repeat_penalty <= 0.0f) {
        throw Error("sampling parameter repeat_penalty is " + std::to_string(p.repeat_penalty) +
                    "; it must be > 0 (1 = off)");
    }
    if (p.repeat_last_n < -1) {
        throw Error("sampling parameter repeat_last_n is " + std::to_string(p.repeat_last_n) +
                    "; it must be -1 (all history), 0 (off) or a positive window");
    }
    validate_new_stages(p);
}

static bool dry_on(const SamplingParams& p) {
    return p.dry_multiplier != 0.0f && p.dry_base >= 1.0f && p.dry_penalty_last_n != 0;
}
static bool xtc_on(const SamplingParams& p) { return p.xtc_probability > 0.0f && p.xtc_threshold <= 0.5f; }
static bool top_n_sigma_on(const SamplingParams& p) { return p.top_n_sigma > 0.0f; }

// The softmax of a candidate set, as compute_probs takes it (float terms, double sum), so the trace's
// p of the final stage is the p the draw used.
struct SoftmaxScale {
    float max_logit = -std::numeric_limits<float>::infinity();
    double inv_sum = 0.0;
    size_t n = 0;

    float p_of(float logit) const {
        if (max_logit == -std::numeric_limits<float>::infinity()) return 1.0f / static_cast<float>(n);
        return static_cast<float>(std::exp(logit - max_logit) * inv_sum);
    }
};

static SoftmaxScale softmax_scale(const CandidateSet& cands) {
    SoftmaxScale scale;
    scale.n = cands.data.size();
    for (const Candidate& c : cands.data) scale.max_logit = std::max(scale.max_logit, c.logit);
    if (scale.max_logit == -std::numeric_limits<float>::infinity()) return scale;
    double sum = 0.0;
    for (const Candidate& c : cands.data) sum += std::exp(c.logit - scale.max_logit);
    scale.inv_sum = 1.0 / sum;
    return scale;
}

// The k most likely candidates with p renormalised over all survivors (scale is the set's), without
// touching the set: tracing must not change what is sampled.
static std::vector<Candidate> top_candidates(const CandidateSet& cands, size_t k, const SoftmaxScale& scale) {
    std::vector<Candidate> top = best_candidates(cands.data, k);
    for (Candidate& c : top) c.p = scale.p_of(c.logit);
    return top;
}

static std::vector<Candidate> top_candidates(const CandidateSet& cands, size_t k) {
    return top_candidates(cands, k, softmax_scale(cands));
}

// The k most likely of what the draw left. GreedySampler's p have their own arithmetic (exp_sum, so
// that they equal sample_greedy_row's); its candidates carry them, and the trace shows those.
static std::vector<Candidate> drawn_candidates(const CandidateSet& cands, size_t k, bool greedy) {
    return greedy ? best_candidates(cands.data, k) : top_candidates(cands, k);
}

static void check_dry_vocab(const SamplingParams& p, const SamplerVocab* vocab) {
    if (dry_on(p) && !p.dry_sequence_breakers.empty() && (vocab == nullptr || !vocab->piece || !vocab->tokenize)) {
        throw Error("DRY's sequence breakers need the model's vocabulary (none was given to the sampler)");
    }
}

SamplerChain::SamplerChain(const SamplingParams& params, std::shared_ptr<const SamplerVocab> vocab)
    : vocab_(std::move(vocab)), params_(params) {
    validate(params_);
    check_dry_vocab(params_, vocab_.get());
    mirostat_mu_ = 2.0f * params_.mirostat_tau;
    install_grammar(params_.grammar);
    reseed();
    rebuild();
}

void SamplerChain::install_grammar(const std::string& gbnf) {
    if (gbnf.empty()) {
        grammar_.reset();
        return;
    }
    grammar_ = std::make_unique<GrammarConstraint>(gbnf, vocab_);
    grammar_->check_can_start();
}

SamplerChain::~SamplerChain() = default;

void SamplerChain::apply(CandidateSet& cands) {
    for (const auto& stage : stages_) {
        stage->apply(cands);
    }
}

void SamplerChain::accept(int32_t token) {
    // The whole history is kept (4 bytes a token) because a later set_params may widen the window.
    history_.push_back(token);
}

void SamplerChain::reset() {
    history_.clear();
    reply_started_ = false;
    reply_begin_ = 0;
    refused_grammar_.clear();
    refusal_.reset();
    if (grammar_) grammar_->reset();
    mirostat_mu_ = 2.0f * params_.mirostat_tau;
    reseed();
}

void SamplerChain::set_params(const SamplingParams& params) {
    validate(params);
    check_dry_vocab(params, vocab_.get());
    SamplingParams next = params;
    bool replace_grammar = false;
    std::unique_ptr<GrammarConstraint> new_grammar = change_grammar(next, replace_grammar);
    if (replace_grammar) grammar_ = std::move(new_grammar);
    const bool seed_changed = next.seed != params_.seed;
    if (next.mirostat != params_.mirostat || next.mirostat_tau != params_.mirostat_tau) {
        mirostat_mu_ = 2.0f * next.mirostat_tau;
    }
    params_ = std::move(next);
    if (seed_changed) {
        reseed();
    }
    rebuild();
}

std::unique_ptr<GrammarConstraint> SamplerChain::change_grammar(SamplingParams& params, bool& replace) {
    replace = false;
    if (params.grammar == params_.grammar) {
        // The grammar in force is asked for again (a GUI showing it after a refusal): a later change to
        // the refused text is the user trying again, and is parsed again.
        refused_grammar_.clear();
        return nullptr;
    }
    const auto keep_in_force = [&] {
        params.grammar = params_.grammar;
        params.grammar_mode = params_.grammar_mode;
        params.grammar_source = params_.grammar_source;
    };
    if (params.grammar.empty()) {  // None: no constraint from the next token on
        replace = true;
        return nullptr;
    }
    if (reply_started_ && params.grammar == refused_grammar_) {
        keep_in_force();
        return nullptr;
    }
    replace = true;
    // Parsed first: a malformed grammar throws here, with nothing changed.
    auto grammar = std::make_unique<GrammarConstraint>(params.grammar, vocab_);
    if (!reply_started_) {
        // From the reply's start: one no token can begin is refused now, before any prefill. (Mid-reply
        // the reply so far decides, below.)
        grammar->check_can_start();
        return grammar;
    }
    std::string why;
    const size_t n_reply = history_.size() - reply_begin_;
    if (n_reply == 0 || grammar->accept_all(history_.data() + reply_begin_, n_reply, &why)) return grammar;
    replace = false;
    refused_grammar_ = params.grammar;
    refusal_ = GrammarRefusal{params.grammar, why, params_.grammar_mode, params_.grammar_source, params_.grammar};
    keep_in_force();
    return nullptr;
}

std::optional<GrammarRefusal> SamplerChain::take_grammar_refusal() {
    std::optional<GrammarRefusal> out = std::move(refusal_);
    refusal_.reset();
    return out;
}

void SamplerChain::begin_reply() {
    if (reply_started_) return;
    reply_started_ = true;
    reply_begin_ = history_.size();
}

int32_t SamplerChain::sample(const float* logits, int32_t n_vocab, std::vector<SamplerStageTrace>* trace,
                             size_t trace_top) {
    if (n_vocab <= 0) {
        throw Error("cannot sample from an empty logits row (n_vocab = " + std::to_string(n_vocab) + ")");
    }
    begin_reply();
    if (grammar_) return sample_with_grammar(logits, n_vocab, trace, trace_top);
    scratch_.assign(logits, n_vocab);
    if (trace) trace->clear();
    run_stages(trace, trace_top);
    return scratch_.data[static_cast<size_t>(scratch_.selected)].id;
}

void SamplerChain::run_stages(std::vector<SamplerStageTrace>* trace, size_t trace_top) {
    if (trace == nullptr) {
        apply(scratch_);
        return;
    }
    // Each stage's input is the previous stage's output, so one softmax per stage serves both the
    // survivors' p and the next stage's cut-off as a probability.
    SoftmaxScale seen = softmax_scale(scratch_);
    for (const auto& stage : stages_) {
        SamplerStageTrace entry;
        entry.stage = stage->name();
        entry.n_before = scratch_.data.size();
        stage->apply(scratch_);
        entry.n_after = scratch_.data.size();
        const StageThreshold threshold = stage->threshold();
        entry.threshold = threshold.value;
        // A logit cut-off in the distribution the stage saw: the same float arithmetic as the p of its
        // candidates, so a survivor's p there is never below it.
        if (threshold.logit && std::isfinite(threshold.value) && seen.max_logit != -std::numeric_limits<float>::infinity())
            entry.p_cutoff = seen.p_of(static_cast<float>(threshold.value));
        seen = softmax_scale(scratch_);
        const bool greedy_draw = params_.is_greedy() && &stage == &stages_.back();
        entry.top_after = greedy_draw ? drawn_candidates(scratch_, trace_top, true) : top_candidates(scratch_, trace_top, seen);
        entry.detail = stage->describe();
        trace->push_back(std::move(entry));
    }
}

// A ColumnReader over a row the chain was given whole.
static SamplerChain::ColumnReader row_columns(const float* row) {
    return [row](const int32_t* ids, int32_t n, float* logits) {
        for (int32_t i = 0; i < n; ++i) logits[i] = row[ids[i]];
    };
}

int32_t SamplerChain::sample_with_grammar(const float* logits, int32_t n_vocab, std::vector<SamplerStageTrace>* trace,
                                          size_t trace_top) {
    if (trace) trace->clear();
    // The model's own choice first: checking one token is cheap, and where the grammar leaves the
    // choice open (inside a string) it almost always fits.
    scratch_.assign(logits, n_vocab);
    std::vector<SamplerStageTrace> first;
    run_stages(trace ? &first : nullptr, trace_top);
    int32_t id = scratch_.data[static_cast<size_t>(scratch_.selected)].id;
    if (grammar_->allows(id)) {
        if (trace) {
            SamplerStageTrace entry;
            entry.stage = "grammar";
            entry.n_before = entry.n_after = size_t(n_vocab);
            entry.top_after = drawn_candidates(scratch_, trace_top, params_.is_greedy());
            entry.detail = "the drawn token fits the grammar; nothing removed";
            *trace = std::move(first);
            trace->push_back(std::move(entry));
        }
    } else {
        id = redraw_with_grammar(n_vocab, row_columns(logits), id, trace, trace_top);
    }
    if (!grammar_->is_eog(id)) grammar_->accept(id);
    return id;
}

int32_t SamplerChain::redraw_with_grammar(int32_t n_row, const ColumnReader& columns, int32_t first,
                                          std::vector<SamplerStageTrace>* trace, size_t trace_top) {
    // The candidates filtering the whole row would leave, in the same (id) order with the same logits,
    // so the stages draw the same token bit for bit; only the allowed columns are read.
    const std::vector<int32_t>& ids = grammar_->allowed_tokens(n_row);
    allowed_logits_.resize(ids.size());
    columns(ids.data(), static_cast<int32_t>(ids.size()), allowed_logits_.data());
    scratch_.data.resize(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
        const float logit = std::isnan(allowed_logits_[i]) ? -std::numeric_limits<float>::infinity() : allowed_logits_[i];
        scratch_.data[i] = Candidate{ids[i], logit, 0.0f};
    }
    scratch_.sorted = false;
    scratch_.selected = -1;
    if (trace) {
        SamplerStageTrace entry;
        entry.stage = "grammar";
        entry.n_before = size_t(n_row);
        entry.n_after = scratch_.data.size();
        entry.top_after = top_candidates(scratch_, trace_top);
        entry.detail = "the first draw (token " + std::to_string(first) + ") does not fit; " + grammar_->last_filter() +
                       ", then drew again";
        trace->push_back(std::move(entry));
    }
    run_stages(trace, trace_top);
    return scratch_.data[static_cast<size_t>(scratch_.selected)].id;
}

int32_t SamplerChain::redraw_from_top(const int32_t* ids, const float* logits, int32_t n) {
    int64_t want = best_needed(0, false);
    if (want <= 0) return -1;
    std::vector<Candidate>& data = scratch_.data;
    data.clear();
    // The list is in raw order, so the allowed ones come best first; checking stops once there are
    // enough of them, which is where the draw costs a few pieces' checks instead of a whole filter.
    for (int32_t i = 0; i < n && int64_t(data.size()) < want; ++i) {
        if (!grammar_->allows(ids[i])) continue;
        const float logit = std::isnan(logits[i]) ? -std::numeric_limits<float>::infinity() : logits[i];
        // A masked id (the caller's -inf) sits among the best by its raw logit only: like a penalised
        // token it may leave the best, so it needs one more behind it.
        if (logit == -std::numeric_limits<float>::infinity()) ++want;
        data.push_back(Candidate{ids[i], logit, 0.0f});
    }
    if (int64_t(data.size()) < want) return -1;
    scratch_.sorted = std::is_sorted(data.begin(), data.end(), candidate_before);
    scratch_.selected = -1;
    apply(scratch_);
    return data[static_cast<size_t>(scratch_.selected)].id;
}

// Whether every stage the sequence runs before its first top_k leaves the top-k survivors and their
// order as they are on the whole row (lowering penalties and DRY are counted by the caller).
static bool prefix_keeps_top_k(const SamplingParams& p) {
    for (const std::string& name : p.samplers) {
        if (name == "top_k") return true;
        const bool harmless = name == "penalties" || name == "temperature" ||
                              (name == "dry" && (!dry_on(p) || p.dry_multiplier > 0.0f)) ||
                              (name == "top_n_sigma" && !top_n_sigma_on(p)) || (name == "xtc" && !xtc_on(p)) ||
                              (name == "typ_p" && p.typical_p >= 1.0f) || (name == "top_p" && p.top_p >= 1.0f) ||
                              (name == "min_p" && p.min_p <= 0.0f);
        if (!harmless) return false;
    }
    return false;  // no top_k stage
}

int64_t SamplerChain::best_needed(int32_t n_lowered, bool vocab_p) const {
    const SamplingParams& p = params_;
    int64_t need = 0;
    if (p.is_greedy()) {
        // XTC and typical sampling may remove the best tokens: the argmax of what is left needs the row.
        if (vocab_p || xtc_on(p) || p.typical_p < 1.0f) {
            return 0;
        }
        need = 1;
    } else {
        // Mirostat 1.0 fits the whole distribution; 2.0 has no fixed size.
        if (p.top_k <= 0 || p.mirostat != 0 || !prefix_keeps_top_k(p)) {
            return 0;
        }
        need = p.top_k;
    }
    for (const LogitBias& b : p.logit_bias) {
        if (b.bias > 0.0f) {
            return 0;  // a favoured token can come from anywhere
        }
        ++need;  // a lowered one may drop out of the best
    }
    const auto window = [&](int32_t last_n) {
        return last_n < 0 ? int64_t(history_.size()) : std::min<int64_t>(int64_t(history_.size()), last_n);
    };
    if (penalties_change_logits(history_, p.repeat_last_n, p.repeat_penalty, p.frequency_penalty, p.presence_penalty)) {
        // A raised logit can come from anywhere in the vocabulary.
        if (p.repeat_penalty < 1.0f || p.frequency_penalty < 0.0f || p.presence_penalty < 0.0f) {
            return 0;
        }
        // Each position of the window is at most one lowered token (PenaltiesSampler's window).
        need += window(p.repeat_last_n);
    }
    if (dry_on(p) && !history_.empty()) {
        if (p.dry_multiplier < 0.0f) {
            return 0;
        }
        need += window(p.dry_penalty_last_n);  // each lowered token follows a position of the window
    }
    return need + std::max(n_lowered, 0);
}

int32_t SamplerChain::top_needed(int32_t n_vocab, int32_t n_lowered, bool vocab_p) const {
    int64_t need = best_needed(n_lowered, vocab_p);
    if (need == 0 || need > kMaxTopNeeded) return 0;
    if (grammar_) need = std::min<int64_t>({need + kGrammarSlack, kMaxTopNeeded, std::max<int64_t>(need, n_vocab - 1)});
    return need >= n_vocab ? 0 : static_cast<int32_t>(need);
}

void SamplerChain::assign_top(const int32_t* ids, const float* logits, int32_t n) {
    CandidateSet& set = scratch_;
    set.data.resize(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
        const float logit = std::isnan(logits[i]) ? -std::numeric_limits<float>::infinity() : logits[i];
        set.data[static_cast<size_t>(i)] = Candidate{ids[i], logit, 0.0f};
    }
    // Masked entries may sit anywhere; otherwise the list arrives sorted and the flag says so, as
    // top-k would have left it.
    set.sorted = std::is_sorted(set.data.begin(), set.data.end(), candidate_before);
    set.selected = -1;
}

int32_t SamplerChain::sample_top(const int32_t* ids, const float* logits, int32_t n, const ColumnReader& columns) {
    if (n <= 0) {
        throw Error("cannot sample from an empty candidate list (n = " + std::to_string(n) + ")");
    }
    begin_reply();
    assign_top(ids, logits, n);
    apply(scratch_);
    int32_t id = scratch_.data[static_cast<size_t>(scratch_.selected)].id;
    if (!grammar_ || grammar_->allows(id)) {
        if (grammar_ && !grammar_->is_eog(id)) grammar_->accept(id);
        return id;
    }
    const int32_t refused = id;
    id = redraw_from_top(ids, logits, n);
    if (id < 0) {
        if (!columns) throw Error("sample_top: the grammar's second draw needs the allowed tokens' logits, and no reader was given");
        if (!vocab_ || vocab_->n_vocab <= 0) throw Error("sample_top: the grammar's second draw needs the vocabulary's size");
        id = redraw_with_grammar(vocab_->n_vocab, columns, refused, nullptr, 0);
    }
    if (!grammar_->is_eog(id)) grammar_->accept(id);
    return id;
}

bool SamplerChain::greedy_over_raw_row() const {
    if (!params_.is_greedy()) return false;
    // The last stage is the argmax (rebuild); every one before it must leave the row as it is.
    for (size_t i = 0; i + 1 < stages_.size(); ++i)
        if (stages_[i]->changes_candidates()) return false;
    return true;
}

int32_t SamplerChain::sample_greedy_row(const float* logits, int32_t n_vocab) {
    if (n_vocab <= 0) {
        throw Error("cannot sample from an empty logits row (n_vocab = " + std::to_string(n_vocab) + ")");
    }
    if (!greedy_over_raw_row()) throw Error("sample_greedy_row: a stage of this chain changes the row; use sample()");
    const int32_t best = first_max_index(logits, n_vocab);
    const float max_logit = logits[best];
    if (!std::isfinite(max_logit)) return sample(logits, n_vocab);  // NaN too: a row of NaN and -inf only
    // As sample(): a grammar set from now on must parse what this reply has drawn.
    begin_reply();
    // A grammar that refuses the argmax gets sample()'s second draw, over the allowed part of the row.
    if (grammar_ && !grammar_->allows(best)) {
        const int32_t id = redraw_with_grammar(n_vocab, row_columns(logits), best, nullptr, 0);
        if (!grammar_->is_eog(id)) grammar_->accept(id);
        return id;
    }
    // GreedySampler's p of its token: its term exp(0) = 1 times 1 / sum, the same sum.
    const double sum = exp_sum(logits, size_t(n_vocab), max_logit);
    scratch_.data.assign(1, Candidate{best, max_logit, static_cast<float>(1.0 / sum)});
    scratch_.sorted = true;
    scratch_.selected = 0;
    if (grammar_ && !grammar_->is_eog(best)) grammar_->accept(best);
    return best;
}

void SamplerChain::add_sequence_stage(const std::string& name) {
    const SamplingParams& p = params_;
    // The six original stages are always in the chain (and the trace), on or off; the newer ones
    // only when on, so that a default chain is what it was before they existed.
    if (name == "penalties") {
        stages_.push_back(std::make_unique<PenaltiesSampler>(history_, p.repeat_last_n, p.repeat_penalty,
                                                             p.frequency_penalty, p.presence_penalty));
    } else if (name == "dry") {
        if (dry_on(p))
            stages_.push_back(std::make_unique<DrySampler>(history_, dry_breakers_, p.dry_multiplier, p.dry_base,
                                                           p.dry_allowed_length, p.dry_penalty_last_n));
    } else if (name == "top_n_sigma") {
        if (top_n_sigma_on(p)) stages_.push_back(std::make_unique<TopNSigmaSampler>(p.top_n_sigma));
    } else if (name == "top_k") {
        stages_.push_back(std::make_unique<TopKSampler>(p.top_k));
    } else if (name == "typ_p") {
        stages_.push_back(std::make_unique<TypicalSampler>(p.typical_p));
    } else if (name == "top_p") {
        stages_.push_back(std::make_unique<TopPSampler>(p.top_p));
    } else if (name == "min_p") {
        stages_.push_back(std::make_unique<MinPSampler>(p.min_p));
    } else if (name == "xtc") {
        if (xtc_on(p)) stages_.push_back(std::make_unique<XtcSampler>(p.xtc_probability, p.xtc_threshold, rng_));
    } else if (name == "temperature") {
        stages_.push_back(std::make_unique<TemperatureSampler>(p.temperature));
    }
}

void SamplerChain::rebuild() {
    // Stages are stateless apart from references to the chain's history_, rng_, mirostat_mu_ and
    // dry_breakers_, so rebuilding them on every parameter change keeps all four.
    stages_.clear();
    const SamplingParams& p = params_;
    if (dry_on(p) && (!dry_breakers_built_ || dry_breakers_for_ != p.dry_sequence_breakers)) {
        // One pass over the vocabulary; redone only when the breakers change.
        dry_breakers_ = p.dry_sequence_breakers.empty() ? DryBreakers{} : process_dry_breakers(*vocab_, p.dry_sequence_breakers);
        dry_breakers_for_ = p.dry_sequence_breakers;
        dry_breakers_built_ = true;
    }
    if (!p.logit_bias.empty()) {
        stages_.push_back(std::make_unique<LogitBiasSampler>(p.logit_bias));
    }
    if (p.is_greedy()) {
        // llama.cpp runs the whole sequence before temperature 0 keeps the best. top-k, top-p, min-p
        // and top-nσ always keep the best token, so only the stages that change logits, and the two
        // that can remove the best (XTC, typical), matter to the argmax.
        for (const std::string& name : p.samplers) {
            if (name == "penalties" || name == "dry" || name == "xtc" || (name == "typ_p" && p.typical_p < 1.0f))
                add_sequence_stage(name);
        }
        stages_.push_back(std::make_unique<GreedySampler>());
        return;
    }
    if (p.mirostat != 0) {
        stages_.push_back(std::make_unique<TemperatureSampler>(p.temperature));
        if (p.mirostat == 1) {
            stages_.push_back(std::make_unique<MirostatSampler>(p.mirostat_tau, p.mirostat_eta, 100, mirostat_mu_, rng_));
        } else {
            stages_.push_back(std::make_unique<MirostatV2Sampler>(p.mirostat_tau, p.mirostat_eta, mirostat_mu_, rng_));
        }
        return;
    }
    for (const std::string& name : p.samplers) {
        add_sequence_stage(name);
    }
    stages_.push_back(std::make_unique<DistSampler>(rng_));
}

void SamplerChain::reseed() {
    uint64_t seed = params_.seed;
    if (seed == SamplingParams::kRandomSeed) {
        std::random_device device;
        // Never hand out kRandomSeed itself: typing seed_in_use() back in must replay this stream.
        do {
            seed = (static_cast<uint64_t>(device()) << 32) | device();
        } while (seed == SamplingParams::kRandomSeed);
    }
    seed_in_use_ = seed;
    rng_.seed(seed);
}

}  // namespace wb
