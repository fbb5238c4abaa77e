#pragma once
// For the files built with AVX2 / AVX-512 flags only (quant_avx2*.cpp, quant_avx512_*.cpp): what they
// would otherwise take from the standard library's inline functions, all with internal linkage (the
// unnamed namespace), so each of those objects keeps its own copy compiled for its instructions. An
// inline function of external linkage (std::fma, std::min, std::vector's members) is a weak symbol
// of which the linker keeps one copy for the whole program, possibly the AVX-512 one, which would
// then run for the scalar code on a CPU without AVX-512 (SIGILL). tests/check_isa_symbols.cmake
// checks that these objects export only their entry points.
#include <cstddef>
#include <new>

// Forced inlining for the kernels' small helpers: the per-block functions are passed to the dot loops
// as template arguments, GCC does not always inline those, and a call per block (with the
// accumulators spilled around it) costs more than the block.
#define WB_INLINE [[gnu::always_inline]] inline

// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined_*, which its -Wall then reports
// as used uninitialized wherever they are inlined (broadcast, permute, insert, extract): false alarms.
// The AVX-512 files bracket their kernels with these two (and nothing else is silenced).
#if defined(__GNUC__) && !defined(__clang__)
#define WB_AVX512_WARNINGS_OFF                                 \
    _Pragma("GCC diagnostic push")                             \
    _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")      \
    _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#define WB_AVX512_WARNINGS_ON _Pragma("GCC diagnostic pop")
#else
#define WB_AVX512_WARNINGS_OFF
#define WB_AVX512_WARNINGS_ON
#endif

namespace wb {
namespace {

// Correctly rounded a * b + c, as std::fma (the instruction where the file's flags have FMA).
inline float fma_f(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
inline float abs_f(float x) { return __builtin_fabsf(x); }
template <class T>
constexpr T min_of(T a, T b) {
    return b < a ? b : a;
}

// A float buffer that only grows (one per thread where it is thread_local), in place of a std::vector.
class FloatBuffer {
public:
    FloatBuffer() = default;
    FloatBuffer(const FloatBuffer&) = delete;
    FloatBuffer& operator=(const FloatBuffer&) = delete;
    ~FloatBuffer() { delete[] data_; }
    // At least n floats (contents unspecified).
    float* get(size_t n) {
        if (n > size_) {
            delete[] data_;
            data_ = nullptr;
            size_ = 0;
            data_ = new float[n];
            size_ = n;
        }
        return data_;
    }

private:
    float* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace
}  // namespace wb
