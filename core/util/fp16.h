#pragma once
// IEEE binary16 and bfloat16 <-> float32, bit-exact and portable (no F16C needed; the SIMD paths use
// the hardware instructions where they exist).
#include <cstdint>
#include <cstring>

#include "util/hd.h"

namespace wb {

WB_HD float bits_to_f32(uint32_t bits) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(bits);
#else
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
#endif
}

WB_HD uint32_t f32_to_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
#endif
}

WB_HD float fp16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        // zero or subnormal: value = mant * 2^-24, exact in float32
        const float v = float(mant) * (1.0f / 16777216.0f);
        return (sign ? -v : v);
    }
    if (exp == 31) return bits_to_f32(sign | 0x7f800000u | (mant << 13));  // inf / NaN
    return bits_to_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

// Round-to-nearest-even, overflow to inf, NaN preserved.
WB_HD uint16_t f32_to_fp16(float f) {
    const uint32_t x = f32_to_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return uint16_t(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
    if (ax < 0x38800000u) {
        // result is subnormal (or zero): scale into the 10-bit mantissa with rounding
        if (ax < 0x33000000u) return uint16_t(sign);  // < 2^-25 rounds to zero
        const uint32_t e = ax >> 23;
        const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
        const uint32_t shift = 126u - e;  // 14..24 -> lands in subnormal range
        uint32_t r = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1u);
        const uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) ++r;
        return uint16_t(sign | r);
    }
    uint32_t r = ((ax >> 13) - (112u << 10));
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
    return uint16_t(sign | r);
}

WB_HD float bf16_to_f32(uint16_t b) { return bits_to_f32(uint32_t(b) << 16); }

WB_HD uint16_t f32_to_bf16(float f) {
    const uint32_t x = f32_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
    return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace wb
