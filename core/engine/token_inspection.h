#pragma once
// Builds the inspector's view of one sampling step: the raw next-token distribution (entropy, top
// candidates) next to the distribution the sampler actually drew from.
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/observer.h"

namespace wb {

class Tokenizer;

// The softmax of a logits row as the inspector reports it: the terms in float (exp of a value <= 0, at
// most 1), the sums in double. Every probability the inspector shows of a row comes from p(), so the
// same row gives the same numbers wherever it is shown (candidates, the logit lens).
struct SoftmaxStats {
    float max_logit = 0.0f;
    double z = 0.0;
    float entropy = 0.0f;  // nats
    float p(float logit) const { return float(std::exp(double(logit) - max_logit) / z); }
};
SoftmaxStats softmax_stats(const float* logits, int32_t n_vocab);

// One layer's logit lens from the logits its residual stream gives: top k, the drawn token's p, entropy.
LensLayer lens_layer(int32_t layer, const float* logits, int32_t n_vocab, int32_t k, int32_t drawn);

// Fills event.entropy, event.p_raw (of event.id) and event.candidates (top n by raw probability, with
// p_raw and p_final) from the raw logits and the sampler's final candidate set. O(vocab); called only when an observer asks.
void inspect_candidates(const float* logits, int32_t n_vocab, const CandidateSet& final_set, int32_t n,
                        const Tokenizer& tok, TokenEvent& event);

}  // namespace wb
