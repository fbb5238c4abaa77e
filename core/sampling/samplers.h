#pragma once
// The concrete samplers of the chain. Internal to wb_sampling (and its unit tests, which check each
// stage on hand-computed distributions); the rest of the engine builds a SamplerChain.
//
// Every stage keeps at least one candidate, and orders ties by token id (lowest first) so that the
// result never depends on how an earlier stage happened to permute the set.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "sampling/sampler.h"

namespace wb {

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

// Repetition, frequency and presence penalties over the last last_n accepted tokens of history
// (-1 = all, 0 = off). history belongs to the chain and outlives the stage.
class PenaltiesSampler : public Sampler {
public:
    PenaltiesSampler(const std::vector<int32_t>& history, int32_t last_n, float repeat, float frequency,
                     float presence);
    const char* name() const override { return "penalties"; }
    void apply(CandidateSet& cands) override;

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

private:
    float p_;
};

// Nucleus: the smallest most-likely prefix with cumulative p >= top_p. top_p >= 1 keeps all.
class TopPSampler : public Sampler {
public:
    explicit TopPSampler(float top_p) : p_(top_p) {}
    const char* name() const override { return "top_p"; }
    void apply(CandidateSet& cands) override;

private:
    float p_;
};

// Drops tokens with p < min_p * p_max. min_p <= 0 keeps all.
class MinPSampler : public Sampler {
public:
    explicit MinPSampler(float min_p) : p_(min_p) {}
    const char* name() const override { return "min_p"; }
    void apply(CandidateSet& cands) override;

private:
    float p_;
};

// logit /= temperature (temperature > 0; the chain uses GreedySampler otherwise).
class TemperatureSampler : public Sampler {
public:
    explicit TemperatureSampler(float temperature) : t_(temperature) {}
    const char* name() const override { return "temperature"; }
    void apply(CandidateSet& cands) override;

private:
    float t_;
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

// Picks the highest logit (ties: lowest id); sets selected. p is filled too, for the inspector.
class GreedySampler : public Sampler {
public:
    const char* name() const override { return "greedy"; }
    void apply(CandidateSet& cands) override;
};

}  // namespace wb
