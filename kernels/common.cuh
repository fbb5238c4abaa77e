#pragma once
// Device helpers shared by the op files (and, from type_dispatch.h, the dispatch from a runtime
// GgmlType to a kernel template instantiated for it).
#include <cuda_runtime.h>

#include <cstdint>

#include "type_dispatch.h"

namespace wb::cuda {

constexpr int kWarp = 32;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

#if defined(__CUDACC__)
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = kWarp / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int off = kWarp / 2; off > 0; off /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}
#endif

}  // namespace wb::cuda
