#pragma once
// Builds the inspector's view of one sampling step: the raw next-token distribution (entropy, top
// candidates) next to the distribution the sampler actually drew from.
#include <cstdint>
#include <vector>

#include "engine/observer.h"

namespace wb {

class Tokenizer;

// Fills event.entropy and event.candidates (top n by raw probability, with p_raw and p_final) from the
// raw logits and the sampler's final candidate set. O(vocab); called only when an observer asks.
void inspect_candidates(const float* logits, int32_t n_vocab, const CandidateSet& final_set, int32_t n,
                        const Tokenizer& tok, TokenEvent& event);

}  // namespace wb
