#pragma once
// WB_FMA_CLONES: the CPU backend's element-wise loops lean on fused multiply-adds (exp_poly, rope).
// Built for the generic x86-64 baseline, std::fma would be a libm call per element; target_clones adds
// an FMA build (and an AVX-512 one, whose loops vectorise 16 wide) of each such function and picks it
// at load time on CPUs that have them. Results are identical either way: std::fma is exact in all, and
// vectorising an element-wise loop gives each element the same operations. Not under ThreadSanitizer: the clones' resolver
// runs during relocation, before the TSan runtime exists, and its instrumented code crashes there.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define WB_FMA_CLONES __attribute__((target_clones("avx512f", "fma", "default")))
#else
#define WB_FMA_CLONES
#endif
