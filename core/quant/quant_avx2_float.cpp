// AVX2 + FMA kernels of F32 and BF16 weights in llama.cpp's orders (quant.h, DotOrder): the row dots
// ggml_vec_dot_f32 / ggml_vec_dot_bf16 as its AVX2 build computes them, and tinyBLAS's float kernel
// for batches. The same values as the scalar family's definitions (quant_scalar.cpp), bit for bit:
// lane l of an accumulator register is lane l of the definition, every term a correctly rounded FMA.
//
// Built with -mavx2 -mfma -mf16c and -ffp-contract=off: the scalar tails add rounded products where
// llama.cpp's build does, which a contracting compiler would fuse. Handed out only after quant.cpp has
// checked the CPU.
#include <immintrin.h>

#include <cmath>
#include <cstdint>

#include "quant/quant_internal.h"
#include "quant/quant_isa_local.h"
#include "util/fp16.h"

namespace wb {

namespace {

WB_INLINE __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
WB_INLINE __m256 load8(const uint16_t* p) {  // BF16: the 16 bits are the high half of the float
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}
WB_INLINE float to_f32(float v) { return v; }
WB_INLINE float to_f32(uint16_t v) { return bf16_to_f32(v); }

// The kLanes8 tree: ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), as tinyBLAS's hsum.
WB_INLINE float sum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// Four 8-lane FMA accumulators over the runs of 32 (element i in lane i % 32).
template <class T>
WB_INLINE void step32_lanes(int64_t whole, const T* a, const T* b, __m256 acc[4]) {
    for (int u = 0; u < 4; ++u) acc[u] = _mm256_setzero_ps();
    for (int64_t i = 0; i < whole; i += 32)
        for (int u = 0; u < 4; ++u) acc[u] = _mm256_fmadd_ps(load8(a + i + 8 * u), load8(b + i + 8 * u), acc[u]);
}

// ggml_vec_dot_f32: the accumulators in kStep32's tree into a float, then its tail (quant_scalar.cpp's
// dot_f32_row says how GCC built it: rounded products added in order, the last 0-3 fused).
float dot_f32_row(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const float*>(w);
    const auto* b = static_cast<const float*>(x);
    const int64_t whole = n / 32 * 32;
    __m256 acc[4];
    step32_lanes(whole, a, b, acc);
    const __m256 s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3]));
    __m128 t = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    t = _mm_hadd_ps(t, t);
    t = _mm_hadd_ps(t, t);
    float sum = _mm_cvtss_f32(t);
    const int64_t rest = n - whole;
    const int64_t rounded = whole + rest / 8 * 8 + (rest % 8 >= 4 ? 4 : 0);
    int64_t i = whole;
    for (; i < rounded; ++i) sum += a[i] * b[i];
    for (; i < n; ++i) sum = fma_f(a[i], b[i], sum);
    return sum;
}

// ggml_vec_dot_bf16: the accumulators added (a0 + a2) + (a1 + a3), their lanes in the kLanes8 tree,
// the tail's rounded products added in double.
float dot_bf16_row(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const uint16_t*>(w);
    const auto* b = static_cast<const uint16_t*>(x);
    const int64_t whole = n / 32 * 32;
    __m256 acc[4];
    step32_lanes(whole, a, b, acc);
    double sum = 0.0;
    sum += sum8(_mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3])));
    for (int64_t i = whole; i < n; ++i) sum += double(bf16_to_f32(a[i]) * bf16_to_f32(b[i]));
    return float(sum);
}

// tinyBLAS's float kernel (kLlamafile): one 8-lane accumulator per output, summed by sum8; a tail
// (which tinyBLAS never has: it takes rows of whole runs of 8) is added in order.
template <class T>
float dot_lanes8(int64_t n, const void* w, const void* x) {
    const auto* a = static_cast<const T*>(w);
    const auto* b = static_cast<const T*>(x);
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(load8(a + i), load8(b + i), acc);
    float sum = sum8(acc);
    for (; i < n; ++i) sum += to_f32(a[i]) * to_f32(b[i]);
    return sum;
}

// The same for a tile of one weight row and kDotTileCols tokens: each 8-value slice of the weight row
// is loaded once for the tile's tokens; every output keeps dot_lanes8's operations and order.
template <class T>
void dot_lanes8_tile(int64_t n, const void* w, size_t, const void* x, size_t x_stride, float* out,
                     int64_t out_stride) {
    static_assert(kDotTileRows == 1, "one weight row a tile");
    const auto* a = static_cast<const T*>(w);
    const T* b[kDotTileCols];
    for (int c = 0; c < kDotTileCols; ++c)
        b[c] = reinterpret_cast<const T*>(static_cast<const uint8_t*>(x) + size_t(c) * x_stride);
    __m256 acc[kDotTileCols];
    for (__m256& v : acc) v = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 wv = load8(a + i);
        for (int c = 0; c < kDotTileCols; ++c) acc[c] = _mm256_fmadd_ps(wv, load8(b[c] + i), acc[c]);
    }
    for (int c = 0; c < kDotTileCols; ++c) {
        float sum = sum8(acc[c]);
        for (int64_t j = i; j < n; ++j) sum += to_f32(a[j]) * to_f32(b[c][j]);
        out[c * out_stride] = sum;
    }
}

}  // namespace

void add_float_avx2_kernels(KernelTable& t) {
    t.dot[slot(GgmlType::F32)] = dot_f32_row;
    t.dot_in(DotOrder::kLlamafile, GgmlType::F32) = dot_lanes8<float>;
    t.tile_in(DotOrder::kLlamafile, GgmlType::F32) = dot_lanes8_tile<float>;
    t.dot[slot(GgmlType::BF16)] = dot_bf16_row;
    t.dot_in(DotOrder::kLlamafile, GgmlType::BF16) = dot_lanes8<uint16_t>;
    t.tile_in(DotOrder::kLlamafile, GgmlType::BF16) = dot_lanes8_tile<uint16_t>;
}

}  // namespace wb
