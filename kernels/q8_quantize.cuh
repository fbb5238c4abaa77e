#pragma once
// The device side of quantize_part_q8 (q8_parts.h): a warp quantizes one 32-element part, lane i
// holding element i. Used by the matmul's quantize kernel and by the norm kernels, which quantize
// their output as they write it so the matmul that follows finds it ready.
#include <cmath>
#include <cstdint>

#include "common.cuh"
#include "q8_parts.h"

namespace wb::cuda {

#if defined(__CUDACC__)
// Every lane of the warp must call this (full-mask shuffles). The max and the integer sum are exact
// in any order, so this equals quantize_part_q8 bit for bit; a NaN or infinity makes the part NaN.
__device__ __forceinline__ void quantize_part_q8_warp(float v, int8_t* q_part, Q8Scale* scale) {
    const int lane = threadIdx.x % kWarp;
    const bool finite = !__any_sync(0xffffffffu, !isfinite(v));
    const float amax = warp_max(fabsf(v));
    const int q = finite ? q8_round(v, q8_inverse_scale(amax)) : 0;
    q_part[lane] = int8_t(q);
    const float sum = warp_sum(float(q));  // |sum| <= 32 * 127: exact in float
    if (lane == 0) {
        const float d = finite ? amax / 127.0f : NAN;
        *scale = {d, d * sum};
    }
}
#endif

}  // namespace wb::cuda
