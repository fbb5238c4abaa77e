#pragma once
// The normaliser of a softmax over a whole logits row, sum_j exp(x_j - m), vectorised. A greedy draw
// reports its token's p = 1 / that sum (the inspector shows it), and with std::exp per term the sum
// over 49,152 to 262,144 entries cost an observed decode step about 4 % (docs/benchmarks.md, "the
// hooks' cost"). The AVX2 version and the portable one do the same float operations in the same
// order, so every CPU gives the same bits, and the chain's GreedySampler and the session's greedy
// fast path (SamplerChain::sample_greedy_row), which both use it, report the same p.
//
// Only greedy's p uses it: the other samplers keep std::exp, the arithmetic of llama.cpp's.
#include <cstddef>

namespace wb {

// sum_j exp(x[j] - m) over x[0..n), for a finite m >= every x[j] (the row's maximum; an x[j] above
// it counts as m, term 1, which keeps the exponent arithmetic in range). A NaN x[j] counts as -inf
// (its term is 0), as CandidateSet::assign takes it. Each term is a float within 2 ulp
// of exp(x[j] - m) (the difference itself rounded to float, as compute_probs does), or 0 below e^-87
// (1.6e-38: beside the maximum's term 1 no float sum can hold it). The terms are added in double,
// one running sum per lane j mod 8, and the 8 sums reduced by a fixed tree; n = 0 gives 0.
// terms (null: not wanted; may be x itself) receives every term.
double exp_sum(const float* x, size_t n, float m, float* terms = nullptr);

}  // namespace wb
