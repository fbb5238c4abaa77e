#pragma once
// WB_HD marks small pure functions (block dequantization, rope angles, fp16 conversion) that the CPU
// code and the CUDA kernels share, so the CPU unit tests cover the math the GPU runs.
#if defined(__CUDACC__)
#define WB_HD __host__ __device__ __forceinline__
#else
#define WB_HD inline
#endif
