#pragma once
// WB_HD marks small pure functions (block dequantization, rope angles, fp16 conversion) that the CPU
// code and the CUDA kernels share, so the CPU unit tests cover the math the GPU runs.
//
// On the host they are static inline, internal to each object: an inline function with external
// linkage is a weak symbol of which the linker keeps any one copy, and the copy compiled in an
// AVX2 / AVX-512 file (quant_avx2*.cpp, quant_avx512_iq.cpp) would then also run for the scalar code
// of a CPU without those instructions (SIGILL). tests/check_isa_symbols.cmake checks that those files
// export nothing but their entry points.
#if defined(__CUDACC__)
#define WB_HD __host__ __device__ __forceinline__
#else
#define WB_HD static inline
#endif
