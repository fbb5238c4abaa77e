#pragma once
// The sampler chain. Each sampler transforms a candidate set (llama.cpp's shape: {id, logit, p});
// the chain is itself a sampler. The chain can record what every stage did (the sampler trace the
// token inspector shows).
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "sampling/sampling_params.h"

namespace wb {

struct Candidate {
    int32_t id;
    float logit;
    float p;  // valid after a softmax; stages that need it call CandidateSet::softmax()
};

struct CandidateSet {
    std::vector<Candidate> data;
    bool sorted = false;    // by logit, descending
    int32_t selected = -1;  // index into data of the drawn token, set by the final stage

    // Fills from a logits row (p not yet valid).
    void assign(const float* logits, int32_t n_vocab);
    void sort_desc();
    // p = softmax(logit) over the current candidates (sorts first).
    void softmax();
};

// What one stage did, recorded only when the trace is on.
struct SamplerStageTrace {
    std::string stage;                  // "top_k", "top_p", ...
    size_t n_before = 0;
    size_t n_after = 0;
    std::vector<Candidate> top_after;   // the best candidates after the stage, p renormalised
    std::string detail;                 // the stage's parameters and what it did, e.g. "p >= 0.05 x p_max"
    // The threshold the stage applied, as it applied it, even where it cut nothing (NaN: the stage has
    // none or was off, or XTC did not trigger): top_k its k (which may exceed the candidates it was
    // given; n_after says how many it kept), top_p and typical_p the probability mass their survivors
    // reached, min_p and top_n_sigma the logit cut-off (kept: logit >= threshold), xtc the probability
    // threshold, mirostat the k it kept, mirostat_v2 mu (bits of surprise).
    double threshold = std::numeric_limits<double>::quiet_NaN();
    // min_p and top_n_sigma: their logit cut-off as a probability in the distribution the stage saw
    // (the softmax over the candidates it was given, after every earlier stage changed their logits);
    // every candidate it kept has p >= p_cutoff there (the cut itself is on logits, so a dropped one can
    // round to the same p). NaN for the other stages.
    double p_cutoff = std::numeric_limits<double>::quiet_NaN();
};

// What a stage's last apply() cut at, for the trace (SamplerStageTrace::threshold).
struct StageThreshold {
    double value = std::numeric_limits<double>::quiet_NaN();
    bool logit = false;  // value is a logit cut-off; the chain adds it as a probability (p_cutoff)
};

// What DRY needs from the model to turn its sequence breakers (strings) into tokens, as llama.cpp
// does: the text of each token and a tokenizer without BOS or special-token parsing.
class VocabTrie;

// The grammar's trie of every piece of a vocabulary, built on a grammar's first full filter and kept
// with the vocabulary: a chain (and its grammar) is made per reply, and on a 262k vocabulary the build
// takes ~150 ms. A Session keeps one SamplerVocab for all its replies; the lock makes a vocabulary
// shared between threads safe too.
struct VocabTrieCache {
    std::mutex mutex;
    std::shared_ptr<const VocabTrie> trie;
    std::vector<int32_t> eog;  // the vocabulary's end-of-generation tokens, found with the trie (never in it)
};

struct SamplerVocab {
    int32_t n_vocab = 0;
    std::function<std::string(int32_t)> piece;
    std::function<std::vector<int32_t>(const std::string&)> tokenize;
    std::function<bool(int32_t)> is_eog;
    std::shared_ptr<VocabTrieCache> tries = std::make_shared<VocabTrieCache>();
};

class GrammarConstraint;

// A grammar given while a reply was generated that the chain did not apply: the reply so far does not
// parse under it. The grammar setting that stays in force is given as the caller had set it, so a
// GUI can show it again.
struct GrammarRefusal {
    std::string refused;  // the GBNF not applied
    std::string why;      // which token of the reply it does not allow, after what
    GrammarMode kept_mode = GrammarMode::NONE;
    std::string kept_source;
    std::string kept_grammar;  // "" when no grammar stays in force
};

// (The grammar stage needs piece() for every token and is_eog(): end of generation is allowed only
// where the grammar is complete.)

// DRY's processed breakers: a head token -> the tokens that must follow it (empty: the head alone
// breaks). A head may have several tails.
using DryBreakers = std::unordered_multimap<int32_t, std::vector<int32_t>>;
DryBreakers process_dry_breakers(const SamplerVocab& vocab, const std::vector<std::string>& breakers);

// Splits a --samplers list ("penalties;dry;top_k", ';' or ',' separated) into canonical names,
// accepting llama.cpp's aliases; wb::Error naming the first unknown name.
std::vector<std::string> parse_sampler_sequence(const std::string& list);
std::string join_sampler_sequence(const std::vector<std::string>& names);

class Sampler {
public:
    virtual ~Sampler() = default;
    virtual const char* name() const = 0;
    virtual void apply(CandidateSet& cands) = 0;
    virtual void accept(int32_t /*token*/) {}
    virtual void reset() {}
    // For the trace: the parameters and what the last apply() did ("" = nothing to add).
    virtual std::string describe() const { return {}; }
    // For the trace: the threshold the last apply() used (none by default).
    virtual StageThreshold threshold() const { return {}; }
    // False only where apply() would now leave every candidate as it is (no logit changed, none
    // removed): the chain's greedy fast path (greedy_over_raw_row) skips such stages. When unsure, true.
    virtual bool changes_candidates() const { return true; }
};

// Penalties need the recent history; the chain hands it over by accept(), so a chain must see every
// token of the context (prompt and generated) to penalise as llama.cpp does.
class SamplerChain : public Sampler {
public:
    // Builds logit bias -> params.samplers in order -> draw, as llama.cpp's common sampler does; the
    // default sequence is penalties -> dry -> top_n_sigma -> top_k -> typical_p -> top_p -> min_p ->
    // xtc -> temperature. New stages that are off are left out of the chain (and the trace); the
    // original six always appear. Greedy (temperature <= 0) keeps only the logit-changing stages
    // (logit bias, penalties, dry) before the argmax; mirostat replaces the sequence with
    // temperature -> mirostat (llama.cpp: no penalties, top-k, ...). seed kRandomSeed picks a
    // random seed. vocab is needed only for DRY's sequence breakers (wb::Error without it).
    // Throws wb::Error naming the parameter when a value is not usable (see set_params), and for a
    // grammar that is malformed or that no token of the vocabulary can begin.
    explicit SamplerChain(const SamplingParams& params, std::shared_ptr<const SamplerVocab> vocab = nullptr);
    ~SamplerChain() override;
    // The stages refer to the chain's history and random stream, so a chain stays where it was built.
    SamplerChain(const SamplerChain&) = delete;
    SamplerChain& operator=(const SamplerChain&) = delete;

    const char* name() const override { return "chain"; }
    void apply(CandidateSet& cands) override;
    // Appends to the history the penalties and DRY look at; sample() does not do it by itself.
    void accept(int32_t token) override;
    // Starts a new generation: clears the history, resets mirostat's mu to 2 * tau and restarts the
    // random stream (a fixed seed replays the same stream; kRandomSeed picks a new seed).
    void reset() override;

    // Live update between tokens: thresholds change at once; history, the random stream and
    // mirostat's mu are kept (the stream restarts only if the seed changed, mu only if the mirostat
    // version or tau changed).
    // A grammar changed after the reply's first draw applies from the next token, its parse advanced
    // over the reply so far (the tokens accept()ed since the first sample() after reset()); an empty
    // one drops the constraint. One given before the first draw that no token can begin throws
    // wb::Error (GrammarConstraint::check_can_start), as a malformed one does. When the reply so far
    // does not parse under it, the grammar in force stays (params() keeps its grammar, grammar_mode
    // and grammar_source), take_grammar_refusal() says why, and that text is not tried again until a
    // set_params gives the grammar in force back.
    // Rules: NaN or infinite floats, repeat_penalty <= 0 and repeat_last_n < -1 throw wb::Error
    // naming the parameter (the chain keeps its previous settings). Out-of-range values that have an
    // obvious meaning are taken as such: temperature < 0 is greedy; top_k <= 0 is off; top_p and
    // typical_p >= 1 are off and <= 0 keep only the most likely token; min_p <= 0 is off and > 1 acts
    // as 1 (only the tokens tied with the best survive). New stages: mirostat not 0/1/2, a negative
    // dry_allowed_length, dry_penalty_last_n < -1, a NaN or +inf logit bias, a negative bias token
    // or an unknown sampler name throw likewise.
    void set_params(const SamplingParams& params);
    const SamplingParams& params() const { return params_; }

    // Sample one token from a logits row (n_vocab <= 0 throws wb::Error). trace may be null; when
    // set, it receives one entry per stage with up to trace_top candidates each. The trace costs
    // nothing when off and never changes which token is drawn. A NaN logit counts as -inf.
    //
    // With a grammar (params.grammar), the chain draws as llama.cpp's common sampler does: first
    // without the grammar; if the grammar does not allow that token, again from the tokens it allows
    // (so the whole vocabulary is checked only when the model's own choice does not fit). The drawn
    // token is then appended to the grammar's text (sample() advances the grammar; reset() restarts
    // it). The trace gets a "grammar" entry saying which of the two happened. wb::Error when the
    // grammar allows no token at all.
    int32_t sample(const float* logits, int32_t n_vocab, std::vector<SamplerStageTrace>* trace = nullptr,
                   size_t trace_top = 0);

    // ---- Sampling from the best few logits ----
    //
    // Every stage after the penalties works on the survivors of top-k (greedy: on the best one), and
    // penalties that only lower logits (repeat_penalty >= 1, frequency and presence >= 0) cannot
    // lift a token from beyond the best top_k + (tokens in the penalty window) into them. So the
    // chain draws exactly what sample() draws on the whole row from that many best raw logits — on a
    // GPU the row then never crosses to the host, and no stage sorts the vocabulary.
    //
    // With a grammar the same holds for both of its draws: the second one runs the stages over the
    // tokens the grammar allows, and the allowed ones among the best raw logits are the best of those
    // (every allowed token outside the list ranks below them). When the list holds as many allowed
    // ones as the first draw needed, the second draw takes them; otherwise it reads the logits of the
    // tokens the grammar allows (ColumnReader below).

    // The most best-logits sample_top() works from; more and the caller reads the whole row.
    static constexpr int32_t kMaxTopNeeded = 1024;
    // The best logits a grammar's chain reads beyond what its first draw needs: a grammar that allows
    // common tokens then finds enough of them there for its second draw, which otherwise walks the
    // vocabulary's trie for them (a 30-50 ms walk where most of 262k pieces fit). Selecting them costs
    // ~40 us more than 40 alone on a 262k-entry row.
    static constexpr int32_t kGrammarSlack = 192;

    // How many of the best raw logits (the order of select_top_logits) sample_top() needs to draw as
    // sample() would on the whole row, with n_lowered more ids the caller masks to -inf (ignore_eos);
    // 0 when the whole row is needed: no top-k stage, top_k + window above kMaxTopNeeded or n_vocab,
    // a penalty that can raise a logit, or greedy when vocab_p (its p is a softmax over the whole
    // vocabulary, which the inspector shows; over a few logits it would be another number; see
    // sample_greedy_row for that case). With a grammar, kGrammarSlack more (up to kMaxTopNeeded), so
    // that its second draw finds enough allowed tokens among them more often.
    int32_t top_needed(int32_t n_vocab, int32_t n_lowered, bool vocab_p) const;

    // What sample_top() reads when the best few do not serve a grammar's second draw: the logits of
    // the n columns ids (ascending, below the vocabulary's size) of the row, into logits, the caller's
    // masked ids -inf (as sample() would be given them). Those are the tokens the grammar allows —
    // inside a JSON structure a few dozen — so the rest of the row is never read. Called at most once.
    using ColumnReader = std::function<void(const int32_t* ids, int32_t n, float* logits)>;

    // sample() from the n >= top_needed() best raw logits of a row: ids and logits best first, the
    // caller's masked ids already -inf. Draws the same token from the same random stream, and
    // last_candidates() ends with the same survivors and p (for greedy, see vocab_p above). With a
    // grammar it advances the grammar as sample() does, and may need columns (wb::Error without
    // them when it does, or when the vocabulary's size is not known).
    int32_t sample_top(const int32_t* ids, const float* logits, int32_t n, const ColumnReader& columns = {});

    // ---- Greedy over the raw row ----
    //
    // Observed greedy needs its token's p over the whole vocabulary (vocab_p above), so the chain
    // would run over every candidate of the row. When no stage before the argmax changes anything
    // (no logit bias, XTC or typical sampling; penalties and DRY with nothing to penalise yet), the
    // argmax and its p come straight from the raw row instead; a grammar checks that argmax, and only
    // where it refuses it is the row filtered for the second draw, as sample() does.

    // Whether sample_greedy_row() draws what sample() draws on a row, with the same p.
    bool greedy_over_raw_row() const;
    // sample() for a chain with greedy_over_raw_row() (wb::Error otherwise, or for n_vocab <= 0): the
    // first index of the row's maximum (NaN as -inf), p = 1 / exp_sum(row, max), the same bits as
    // GreedySampler's. last_candidates() then holds the drawn token alone (after a grammar's second
    // draw: sample()'s candidates). A row without a finite maximum (all masked, or +inf) goes through
    // sample() itself. Starts the reply and advances the grammar as sample() does.
    int32_t sample_greedy_row(const float* logits, int32_t n_vocab);

    uint64_t seed_in_use() const { return seed_in_use_; }

    // The refusal of the last grammar change set_params did not apply, once (then empty).
    std::optional<GrammarRefusal> take_grammar_refusal();

    // The candidates the last sample() ended with: the final stage's survivors with p valid and
    // selected pointing at the returned token (after sample_greedy_row(): that token alone). Added so
    // the inspector can show the chosen token's probability and the final distribution without a
    // second pass over the vocabulary.
    const CandidateSet& last_candidates() const { return scratch_; }

private:
    void rebuild();
    void run_stages(std::vector<SamplerStageTrace>* trace, size_t trace_top);
    int32_t sample_with_grammar(const float* logits, int32_t n_vocab, std::vector<SamplerStageTrace>* trace,
                                size_t trace_top);
    // The grammar's second draw, from every token of a row of n_row logits it allows, their logits
    // read by columns (first: the refused token).
    int32_t redraw_with_grammar(int32_t n_row, const ColumnReader& columns, int32_t first,
                                std::vector<SamplerStageTrace>* trace, size_t trace_top);
    // The same from the best few (sample_top's list); -1 when they hold too few allowed tokens.
    int32_t redraw_from_top(const int32_t* ids, const float* logits, int32_t n);
    // top_needed() before the grammar's slack and the caps (0: the whole row).
    int64_t best_needed(int32_t n_lowered, bool vocab_p) const;
    // scratch_ = the list sample_top() was given.
    void assign_top(const int32_t* ids, const float* logits, int32_t n);
    void install_grammar(const std::string& gbnf);
    // set_params' grammar part: params' grammar fields become those in force after it.
    std::unique_ptr<GrammarConstraint> change_grammar(SamplingParams& params, bool& replace);
    void begin_reply();
    void reseed();
    void add_sequence_stage(const std::string& name);

    std::shared_ptr<const SamplerVocab> vocab_;
    DryBreakers dry_breakers_;
    std::vector<std::string> dry_breakers_for_;  // the strings dry_breakers_ was built from
    bool dry_breakers_built_ = false;
    float mirostat_mu_ = 0.0f;  // mirostat's running threshold; kept across tokens

    SamplingParams params_;
    uint64_t seed_in_use_ = 0;
    std::mt19937_64 rng_;
    std::vector<int32_t> history_;  // accepted tokens, newest last
    std::vector<std::unique_ptr<Sampler>> stages_;
    CandidateSet scratch_;
    std::vector<float> allowed_logits_;  // redraw_with_grammar's columns
    // The grammar in force (null: none); its source is always params_.grammar.
    std::unique_ptr<GrammarConstraint> grammar_;
    bool reply_started_ = false;  // a sample() since reset(): a new grammar must parse the reply so far
    size_t reply_begin_ = 0;      // history_ index of the reply's first token
    std::string refused_grammar_;  // the text last refused in this reply, not parsed again while it is set
    std::optional<GrammarRefusal> refusal_;
};

}  // namespace wb
