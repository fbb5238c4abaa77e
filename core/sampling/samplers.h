#pragma once
// The concrete samplers of the chain. Internal to wb_sampling (and its unit tests, which check each
// stage on hand-computed distributions); the rest of the engine builds a SamplerChain.
//
// Every stage keeps at least one candidate, and orders ties by token id (lowest first) so that the
// result never depends on how an earlier stage happened to permute the set.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "sampling/sampler.h"

namespace wb {

// A parameter for the trace's detail text: shortest form ("0.05", "40", "-inf").
std::string format_number(double value);

// Total order used by every sort: logit descending, then id ascending. Inline: sorts of the whole
// vocabulary call it millions of times.
inline bool candidate_before(const Candidate& a, const Candidate& b) {
    return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
}

// The k best candidates in candidate_before's order, by one pass with a k-element heap: O(n) on a
// model's distribution, against nth_element's several passes moving 12-byte candidates.
std::vector<Candidate> best_candidates(const std::vector<Candidate>& data, size_t k);

// p = softmax(logit) over the candidates in their current order (no sorting).
void compute_probs(CandidateSet& cands);

// Partially sorts items by less until a sorted prefix carries cumulative mass_of(item) >= mass and
// returns that prefix's length (items.size() if the total stays below mass). The sorted prefix grows
// geometrically, so a mass reached within the first few hundred of 262144 tokens costs O(n) rather
// than a full sort. sorted says whether items are already sorted, and is set when they become so.
template <class T, class Less, class MassOf>
size_t sort_until_mass(std::vector<T>& items, bool& sorted, double mass, Less less, MassOf mass_of) {
    const size_t n = items.size();
    if (n == 0) {
        return 0;
    }
    // Most of the mass of a language model's distribution sits in its first few hundred tokens.
    constexpr size_t kFirstPrefix = 256;
    for (size_t m = sorted ? n : std::min(n, kFirstPrefix);; m = std::min(n, m * 4)) {
        if (!sorted) {
            auto mid = items.begin() + static_cast<std::ptrdiff_t>(m);
            std::nth_element(items.begin(), mid, items.end(), less);
            std::sort(items.begin(), mid, less);
            sorted = m == n;
        }
        double cum = 0.0;
        for (size_t i = 0; i < m; ++i) {
            cum += mass_of(items[i]);
            if (cum >= mass) {
                return i + 1;
            }
        }
        if (m == n) {
            return n;
        }
    }
}

// With p valid: sort_until_mass on the candidates in likelihood order; returns a length >= 1.
size_t sorted_prefix_reaching(CandidateSet& cands, double mass);

constexpr double kNoThreshold = std::numeric_limits<double>::quiet_NaN();

// ": reached 0.953" for a mass stage's detail; "" when it did not act (NaN).
std::string reached(double mass);

// Whether the penalties would change any logit: a window (last_n: -1 all, 0 off) with tokens in it
// and a penalty that is not neutral. PenaltiesSampler::apply and the chain's top_needed ask.
bool penalties_change_logits(const std::vector<int32_t>& history, int32_t last_n, float repeat, float frequency,
                             float presence);

// Repetition, frequency and presence penalties over the last last_n accepted tokens of history
// (-1 = all, 0 = off). history belongs to the chain and outlives the stage.
class PenaltiesSampler : public Sampler {
public:
    PenaltiesSampler(const std::vector<int32_t>& history, int32_t last_n, float repeat, float frequency,
                     float presence);
    const char* name() const override { return "penalties"; }
    void apply(CandidateSet& cands) override;
    std::string describe() const override {
        return "repeat " + format_number(repeat_) + ", frequency " + format_number(frequency_) + ", presence " +
               format_number(presence_) + " over the last " + (last_n_ < 0 ? std::string("all") : format_number(last_n_)) +
               " tokens";
    }
    bool changes_candidates() const override {
        return penalties_change_logits(history_, last_n_, repeat_, frequency_, presence_);
    }

private:
    const std::vector<int32_t>& history_;
    int32_t last_n_;
    float repeat_;
    float frequency_;
    float presence_;
};

// Keeps the k highest logits; k <= 0 or k >= n keeps all.
class TopKSampler : public Sampler {
public:
    explicit TopKSampler(int32_t k) : k_(k) {}
    const char* name() const override { return "top_k"; }
    void apply(CandidateSet& cands) override;
    std::string describe() const override { return "k = " + format_number(k_) + (k_ <= 0 ? " (off)" : ""); }
    StageThreshold threshold() const override { return {k_ > 0 ? double(k_) : kNoThreshold}; }

private:
    int32_t k_;
};

// Locally typical sampling: keeps the tokens whose surprise -log p is closest to the entropy until
// their mass reaches typical_p. typical_p >= 1 keeps all.
class TypicalSampler : public Sampler {
public:
    explicit TypicalSampler(float typical_p) : p_(typical_p) {}
    const char* name() const override { return "typical_p"; }
    void apply(CandidateSet& cands) override;
    std::string describe() const override {
        return "mass " + format_number(p_) + (p_ >= 1.0f ? " (off)" : "") + reached(mass_reached_);
    }
    StageThreshold threshold() const override { return {mass_reached_}; }

private:
    float p_;
    double mass_reached_ = kNoThreshold;  // of the last apply's survivors (NaN: it kept all untouched)
};

// Nucleus: the smallest most-likely prefix with cumulative p >= top_p. top_p >= 1 keeps all.
class TopPSampler : public Sampler {
public:
    explicit TopPSampler(float top_p) : p_(top_p) {}
    const char* name() const override { return "top_p"; }
    void apply(CandidateSet& cands) override;
    std::string describe() const override {
        return "cumulative p >= " + format_number(p_) + (p_ >= 1.0f ? " (off)" : "") + reached(mass_reached_);
    }
    StageThreshold threshold() const override { return {mass_reached_}; }

private:
    float p_;
    double mass_reached_ = kNoThreshold;  // of the last apply's survivors (NaN: it kept all untouched)
};

// Drops tokens with p < min_p * p_max. min_p <= 0 keeps all.
class MinPSampler : public Sampler {
public:
    explicit MinPSampler(float min_p) : p_(min_p) {}
    const char* name() const override { return "min_p"; }
    void apply(CandidateSet& cands) override;
    std::string describe() const override { return "p >= " + format_number(p_) + " x p_max" + (p_ <= 0.0f ? " (off)" : ""); }
    StageThreshold threshold() const override { return {min_logit_, true}; }

private:
    float p_;
    double min_logit_ = kNoThreshold;  // the last apply's logit cut-off (NaN: off)
};

// logit /= temperature (temperature > 0; the chain uses GreedySampler otherwise).
class TemperatureSampler : public Sampler {
public:
    explicit TemperatureSampler(float temperature) : t_(temperature) {}
    const char* name() const override { return "temperature"; }
    void apply(CandidateSet& cands) override;
    // Says so when an earlier stage left one candidate: the draw is then decided whatever the
    // temperature, which the user would otherwise tune without seeing why nothing changes.
    std::string describe() const override {
        return "logit / " + format_number(t_) +
               (n_seen_ == 1 ? "; no effect: an earlier stage left only one candidate" : "");
    }

private:
    float t_;
    size_t n_seen_ = 0;  // candidates the last apply() saw
};

// logit += bias for each listed token (llama.cpp's logit_bias); ids outside the set are ignored.
class LogitBiasSampler : public Sampler {
public:
    explicit LogitBiasSampler(std::vector<LogitBias> biases) : biases_(std::move(biases)) {}
    const char* name() const override { return "logit_bias"; }
    void apply(CandidateSet& cands) override;
    std::string describe() const override;

private:
    std::vector<LogitBias> biases_;
    size_t n_found_ = 0;
};

// XTC ("exclude top choices"): with chance probability, removes every token with p >= threshold
// except the least likely of them (so one "top choice" remains). Off when probability <= 0 or
// threshold > 0.5. Draws its chance from the chain's random stream.
class XtcSampler : public Sampler {
public:
    XtcSampler(float probability, float threshold, std::mt19937_64& rng)
        : probability_(probability), threshold_(threshold), rng_(rng) {}
    const char* name() const override { return "xtc"; }
    void apply(CandidateSet& cands) override;
    std::string describe() const override;
    StageThreshold threshold() const override {
        return {last_chance_ >= 0.0 && last_chance_ <= probability_ ? double(threshold_) : kNoThreshold};
    }

private:
    float probability_;
    float threshold_;
    std::mt19937_64& rng_;
    double last_chance_ = -1.0;  // the last draw (< 0: not drawn)
    size_t removed_ = 0;
};

// Top-nσ: keeps the tokens whose logit >= max - n * stddev, the mean and stddev taken over the
// finite logits of the set. n <= 0 keeps all.
class TopNSigmaSampler : public Sampler {
public:
    explicit TopNSigmaSampler(float n) : n_(n) {}
    const char* name() const override { return "top_n_sigma"; }
    void apply(CandidateSet& cands) override;
    std::string describe() const override;
    StageThreshold threshold() const override { return {cutoff_, true}; }

private:
    float n_;
    double cutoff_ = kNoThreshold;  // the last apply's logit cut-off (NaN: it measured nothing)
};

// Mirostat 1.0: estimates the Zipf exponent s from the best m tokens, keeps the k tokens that make
// the expected surprise mu, draws, and moves mu by eta * (tau - observed surprise). mu belongs to
// the chain, which keeps it across tokens. Selects the token itself.
class MirostatSampler : public Sampler {
public:
    MirostatSampler(float tau, float eta, int32_t m, float& mu, std::mt19937_64& rng)
        : tau_(tau), eta_(eta), m_(m), mu_(mu), rng_(rng) {}
    const char* name() const override { return "mirostat"; }
    void apply(CandidateSet& cands) override;
    std::string describe() const override;
    StageThreshold threshold() const override { return {double(k_)}; }
    // The deterministic half of apply() (no draw, mu unchanged): softmax, keep k, renormalise.
    // n_vocab is the vocabulary size in the formula for k. Returns k.
    int32_t truncate(CandidateSet& cands, int32_t n_vocab) const;

private:
    float tau_, eta_;
    int32_t m_;
    float& mu_;
    std::mt19937_64& rng_;
    float mu_before_ = 0.0f;
    int32_t k_ = 0;
};

// Mirostat 2.0: keeps the likely tokens whose surprise -log2 p <= mu (at least one), renormalises,
// draws, and moves mu by eta * (tau - observed surprise). Selects the token itself.
class MirostatV2Sampler : public Sampler {
public:
    MirostatV2Sampler(float tau, float eta, float& mu, std::mt19937_64& rng)
        : tau_(tau), eta_(eta), mu_(mu), rng_(rng) {}
    const char* name() const override { return "mirostat_v2"; }
    void apply(CandidateSet& cands) override;
    std::string describe() const override;
    StageThreshold threshold() const override { return {double(mu_before_)}; }
    void truncate(CandidateSet& cands) const;  // the deterministic half, as MirostatSampler's

private:
    float tau_, eta_;
    float& mu_;
    std::mt19937_64& rng_;
    float mu_before_ = 0.0f;
};

// Mirostat's update: mu -= eta * (-log2 p_selected - tau).
float mirostat_next_mu(float mu, float eta, float tau, float p_selected);

// Draws a token from the candidates' p (valid, set sorted) with one 53-bit draw of rng; returns its
// index. Shared by DistSampler and the mirostat stages.
size_t draw_index(CandidateSet& cands, std::mt19937_64& rng);

// DRY ("don't repeat yourself", llama.cpp / KoboldCpp semantics): a token that would extend a
// sequence already repeated in the last last_n tokens of history, longer than allowed_length, gets
// logit -= multiplier * base^(length - allowed_length). Breakers end the sequence a repeat can span.
// last_n -1 = the whole history. history and breakers belong to the chain.
class DrySampler : public Sampler {
public:
    DrySampler(const std::vector<int32_t>& history, const DryBreakers& breakers, float multiplier, float base,
               int32_t allowed_length, int32_t last_n)
        : history_(history), breakers_(breakers), multiplier_(multiplier), base_(base),
          allowed_length_(allowed_length), last_n_(last_n) {}
    const char* name() const override { return "dry"; }
    void apply(CandidateSet& cands) override;
    std::string describe() const override;
    // Whether the history has a repeat for apply() to penalise.
    bool changes_candidates() const override { return !penalised_tokens().empty(); }

private:
    // token -> the longest repeat it would extend (only repeats >= allowed_length).
    std::unordered_map<int32_t, int32_t> extending_tokens() const;
    // extending_tokens() without the tokens that are breakers on their own (they end a repeat
    // instead of extending it); empty when the stage is off.
    std::unordered_map<int32_t, int32_t> penalised_tokens() const;

    const std::vector<int32_t>& history_;
    const DryBreakers& breakers_;
    float multiplier_, base_;
    int32_t allowed_length_, last_n_;
    size_t n_penalised_ = 0;
    int32_t longest_ = 0;
};

// Draws one token from softmax(logit) with the chain's random stream; sets selected.
class DistSampler : public Sampler {
public:
    explicit DistSampler(std::mt19937_64& rng) : rng_(rng) {}
    const char* name() const override { return "dist"; }
    void apply(CandidateSet& cands) override;

private:
    std::mt19937_64& rng_;
};

// Picks the highest logit (ties: lowest id); sets selected. p is filled too, for the inspector, with
// exp_sum's terms and normaliser (not std::exp): the bits of SamplerChain::sample_greedy_row's p.
class GreedySampler : public Sampler {
public:
    const char* name() const override { return "greedy"; }
    void apply(CandidateSet& cands) override;

private:
    std::vector<float> terms_;  // the candidates' logits, then their exp terms (kept to reuse its memory)
};

}  // namespace wb
