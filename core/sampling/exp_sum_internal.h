#pragma once
// For exp_sum.cpp, exp_sum_avx2.cpp and the unit test only: the two implementations behind
// exp_sum() and the constants both use. The steps of one term, lane by lane in both:
//   keep = d >= kExpMinArg (false for NaN)          d = x - m, rounded to float
//   c    = min(max(d, kExpMinArg), 0)               (max(NaN, a) = a, as the instruction's)
//   k    = round_to_nearest_even(c * log2 e)        an integer in [-126, 0]
//   r    = fma(k, -kLn2Lo, fma(k, -kLn2Hi, c))      c - k ln 2 in two steps (Cody and Waite)
//   q    = fma(...fma(kExpC[7], r, kExpC[6])..., r, kExpC[0])   exp(r), |r| <= ln 2 / 2
//   term = keep ? q * 2^k : 0                       2^k built in the exponent bits
// Every multiply-add is one fma, every other operation one rounding, and the files are compiled
// with -ffp-contract=off, so the compiler adds no fusing of its own.
#include <cstddef>

namespace wb {

// Below this a term counts as 0 (exp(-87) = 1.6e-38); it also keeps 2^k a normal float.
constexpr float kExpMinArg = -87.0f;
constexpr float kLog2e = 1.44269504f;
// ln 2 = kLn2Hi + kLn2Lo; kLn2Hi has 9 significant bits, so k * kLn2Hi is exact for |k| <= 126.
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
// Taylor's coefficients 1 / i!: at |r| <= 0.347 the first term left out, r^8 / 8!, is below 1e-8.
constexpr float kExpC[8] = {1.0f,          1.0f,          1.0f / 2.0f,   1.0f / 6.0f,
                            1.0f / 24.0f,  1.0f / 120.0f, 1.0f / 720.0f, 1.0f / 5040.0f};

using ExpSumFn = double (*)(const float* x, size_t n, float m, float* terms);

double exp_sum_portable(const float* x, size_t n, float m, float* terms);
// The AVX2 + FMA version where it is compiled in and the CPU has both; null otherwise.
ExpSumFn exp_sum_avx2_if_supported();
// Defined in exp_sum_avx2.cpp (x86-64 only); call it only on a CPU with AVX2 and FMA.
double exp_sum_avx2(const float* x, size_t n, float m, float* terms);

}  // namespace wb
