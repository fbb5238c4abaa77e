#pragma once
// The best few entries of a logits row. Samplers with a top-k stage never look past them, so a
// backend can hand the sampler these instead of the whole row (SamplerChain::top_needed), and the
// inspector lists its top candidates from them.
#include <cstdint>

namespace wb {

// Writes the k largest logits[0..n) to values[0..k) and their indices to ids[0..k), largest first;
// ties go to the smaller index, and NaN counts as -inf (values receive -inf for it), the order of
// CandidateSet. k is clamped to [0, n]. One pass with a k-element heap: O(n) for k << n on a real
// distribution, where few entries ever beat the heap's weakest member.
void select_top_logits(const float* logits, int32_t n, int32_t k, int32_t* ids, float* values);

// The first index of the largest of logits[0..n) in that order (NaN as -inf; a row of only -inf or
// NaN gives 0): the greedy token, as select_top_logits with k = 1 picks it. n > 0.
int32_t first_max_index(const float* logits, int32_t n);

// Puts k (id, value) pairs selected elsewhere (a GPU's top-k, which leaves them in no order) into
// select_top_logits' order: largest value first, ties to the smaller id. values hold no NaN.
void order_top_logits(int32_t* ids, float* values, int32_t k);

}  // namespace wb
