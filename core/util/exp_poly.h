#pragma once
// exp(x) by range reduction and a degree-5 polynomial: the vectorised expf of Arm's Optimized Routines
// (MIT / Apache-2.0 WITH LLVM-exception), which llama.cpp's CPU backend uses for SiLU and softmax.
//
// Why not std::exp: llama.cpp is our correctness reference, and on models with large activations
// (SmolLM2) a 1-ulp difference in exp flips an int8 activation rounding a few layers later, which is
// enough to change greedy generations. With the same reduction and polynomial, evaluated in the same
// order with the same fused multiply-adds, the CPU backend agrees with llama.cpp bit for bit. Accuracy
// is within ~1.5 ulp of the true exp over the whole float range.
//
//   x = n ln2 + b,  n = round(x / ln2)          (Cody-Waite: ln2 split into a high and a low part)
//   exp(x) = 2^n (1 + b p(b)),  p a degree-4 polynomial fitted on |b| <= ln2/2
// For |n| > 126, 2^n is applied in two steps so neither factor over- or underflows early.
#include <cmath>
#include <cstdint>

#include "util/fp16.h"

namespace wb {

inline float exp_poly(float x) {
    constexpr float kShift = 0x1.8p23f;        // adding it rounds to an integer, kept in the mantissa
    constexpr float kInvLn2 = 0x1.715476p+0f;
    constexpr float kLn2Hi = 0x1.62e4p-1f;
    constexpr float kLn2Lo = 0x1.7f7d1cp-20f;
    constexpr float kC1 = 0x1.ffffecp-1f, kC2 = 0x1.fffdb6p-2f, kC3 = 0x1.555e66p-3f, kC4 = 0x1.573e2ep-5f,
                    kC5 = 0x1.0e4020p-7f;

    const float z = std::fma(x, kInvLn2, kShift);
    const float n = z - kShift;
    const float b = std::fma(-n, kLn2Lo, std::fma(-n, kLn2Hi, x));
    const uint32_t e = f32_to_bits(z) << 23;       // n moved into the exponent field
    const float scale = bits_to_f32(e + f32_to_bits(1.0f));  // 2^n for |n| <= 126
    const float b2 = b * b;
    const float poly = std::fma(std::fma(std::fma(kC5, b, kC4), b2, std::fma(kC3, b, kC2)), b2, kC1 * b);
    const float normal = std::fma(poly, scale, scale);
    // Large |x|: 2^n = s1 * s2 with s1 = 2^(+-127) chosen by the sign of n. Both results are computed
    // and one is selected, without a branch, so a loop over exp_poly vectorises (the softmax over
    // thousands of keys); every lane still gets exactly the operations of its own case.
    const uint32_t neg = n <= 0.0f ? 0x82000000u : 0u;
    const float s1 = bits_to_f32(neg + 0x7f000000u);
    const float s2 = bits_to_f32(e - neg);
    const float large = std::fabs(n) > 192.0f ? s1 * s1 : std::fma(s2, poly, s2) * s1;  // > 192: certain inf / 0
    return std::fabs(n) > 126.0f ? large : normal;
}

}  // namespace wb
