// AVX-512 forms of the decode attention's f16 products over runs of keys (quant.h's dot_f16_keys and
// fma_f16_keys; quant_avx2.cpp holds the AVX2 forms and the orders' definitions), built with AVX-512
// flags and handed out by quant.cpp only on a CPU that has them (the avx512 family).
//
// Same results, bit for bit: each float lane receives the same operations in the same order, only two
// 8-lane accumulators of the AVX2 form share one 512-bit register.
//  - dot_f16_keys, kStep32 order (ggml_vec_dot_f16: 4 accumulators of 8 lanes over runs of 32, summed
//    (a0 + a2) + (a1 + a3), then the 8 lanes in a tree): (a0 | a1) and (a2 | a3) are two registers, so
//    their sum is (a0 + a2 | a1 + a3) and its two halves added give the AVX2 form's vector. Four keys at a
//    time, reduced together as the AVX2 form does. Other orders and shapes go to the AVX2 form.
//  - fma_f16_keys (the values times the probabilities into the order's lanes): 16 dims of a lane per
//    register where the AVX2 form holds 8; each lane still takes its keys' FMAs in ascending key order.
#include <immintrin.h>

#include "quant/quant_avx2_common.h"
#include "quant/quant_internal.h"
#include "quant/quant_isa_local.h"

namespace wb {

namespace {

WB_AVX512_WARNINGS_OFF

// The AVX2 forms, for what these do not cover (set once by add_attention_avx512_kernels, before use).
F16DotKeysFn g_dot_keys_avx2 = nullptr;
F16FmaKeysFn g_fma_keys_avx2 = nullptr;

WB_INLINE __m512 load16(const uint16_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }

// Keys ahead whose rows are prefetched. A key row is a short piece of a long stride (one kv head of
// a position), so the hardware prefetchers, which stop at every 4 KiB page, leave most rows to miss:
// without this the scores spent 80 % of their time waiting on the conversion's loads (perf, SmolLM2 at
// depth 4096; tests/bench_tiles' attention line: 14.3 -> 10.6 ms a token on one thread). The values'
// rows (fma_keys_in_registers) showed no gain from the same. The address may lie past the run (or the
// block): a prefetch never faults.
constexpr int64_t kPrefetchKeys = 16;

// The lines of n halves at row + ahead * stride halves, computed as an integer: the address may lie
// past the object, which a pointer may not.
WB_INLINE void prefetch_row(const uint16_t* row, int64_t ahead, int64_t stride, int64_t n) {
    const uintptr_t at = reinterpret_cast<uintptr_t>(row) + uintptr_t(ahead * stride) * sizeof(uint16_t);
    for (uintptr_t line = at & ~uintptr_t(63); line < at + uintptr_t(n) * sizeof(uint16_t); line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T0);
}

constexpr int64_t kMaxDim = 256;  // rows up to this long (every known head dim) take the 512-bit kStep32 form

// kStep32 for rows of whole runs of 32, four keys at a time. Returns the keys done (a multiple of 4).
int64_t dot_keys_step32_by4(int64_t n, const uint16_t* k, int64_t k_stride, int64_t n_keys, const float* q,
                            int64_t q_stride, int g, float* out, int64_t out_stride) {
    alignas(64) float kf[4][kMaxDim];
    const int64_t n4 = n_keys / 4 * 4;
    for (int64_t j0 = 0; j0 < n4; j0 += 4) {
        for (int r = 0; r < 4; ++r) {
            const uint16_t* kj = k + (j0 + r) * k_stride;
            prefetch_row(kj, kPrefetchKeys, k_stride, n);
            for (int64_t e = 0; e < n; e += 16) _mm512_store_ps(kf[r] + e, load16(kj + e));
        }
        for (int i = 0; i < g; ++i) {
            const float* qi = q + i * q_stride;
            __m128 t[4];
            for (int r = 0; r < 4; ++r) {
                __m512 a01 = _mm512_setzero_ps(), a23 = _mm512_setzero_ps();  // (a0 | a1), (a2 | a3)
                for (int64_t b = 0; b < n; b += 32) {
                    a01 = _mm512_fmadd_ps(_mm512_load_ps(kf[r] + b), _mm512_loadu_ps(qi + b), a01);
                    a23 = _mm512_fmadd_ps(_mm512_load_ps(kf[r] + b + 16), _mm512_loadu_ps(qi + b + 16), a23);
                }
                const __m512 s = _mm512_add_ps(a01, a23);  // (a0 + a2 | a1 + a3)
                const __m256 a = _mm256_add_ps(_mm512_castps512_ps256(s),
                                               _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
                t[r] = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
            }
            // hadd(hadd(t0, t1), hadd(t2, t3)) = ((t_r0 + t_r1) + (t_r2 + t_r3)) for r = 0..3, as the AVX2 form.
            const __m128 sums = _mm_hadd_ps(_mm_hadd_ps(t[0], t[1]), _mm_hadd_ps(t[2], t[3]));
            alignas(16) float s4[4];
            _mm_store_ps(s4, sums);
            for (int r = 0; r < 4; ++r) out[i * out_stride + j0 + r] = s4[r];
        }
    }
    return n4;
}

// dot_keys_step32_by4 for a head dim of NB runs of 32 (head dims 64, 128 and 256 take it) and at most
// kMaxHeadsInRegisters query heads, unrolled: each key row stays in registers as it is converted (no store and reload), the
// four keys' partial sums of every head stay in registers until their common reduction, and the four
// scores of a head are stored together. The per-lane operations and their order are the loop's, so
// the scores are bit for bit the same (the loop form, where this one was written, took about twice as
// long a key at depth 512, where the cache is in the L3 and the kernel is the limit).
constexpr int kMaxHeadsInRegisters = 4;

template <int NB>
int64_t dot_keys_step32_by4_unrolled(const uint16_t* k, int64_t k_stride, int64_t n_keys, const float* q,
                                     int64_t q_stride, int g, float* out, int64_t out_stride) {
    constexpr int64_t n = 32 * NB;
    const int64_t n4 = n_keys / 4 * 4;
    for (int64_t j0 = 0; j0 < n4; j0 += 4) {
        __m128 t[kMaxHeadsInRegisters][4];
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
            const uint16_t* kj = k + (j0 + r) * k_stride;
            prefetch_row(kj, kPrefetchKeys, k_stride, n);
            __m512 kf[2 * NB];
#pragma GCC unroll 16
            for (int e = 0; e < 2 * NB; ++e) kf[e] = load16(kj + 16 * e);
#pragma GCC unroll 4
            for (int i = 0; i < kMaxHeadsInRegisters; ++i) {
                if (i >= g) break;
                const float* qi = q + i * q_stride;
                __m512 a01 = _mm512_setzero_ps(), a23 = _mm512_setzero_ps();  // (a0 | a1), (a2 | a3)
#pragma GCC unroll 8
                for (int b = 0; b < NB; ++b) {
                    a01 = _mm512_fmadd_ps(kf[2 * b], _mm512_loadu_ps(qi + 32 * b), a01);
                    a23 = _mm512_fmadd_ps(kf[2 * b + 1], _mm512_loadu_ps(qi + 32 * b + 16), a23);
                }
                const __m512 s = _mm512_add_ps(a01, a23);  // (a0 + a2 | a1 + a3)
                const __m256 a = _mm256_add_ps(_mm512_castps512_ps256(s),
                                               _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1)));
                t[i][r] = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
            }
        }
#pragma GCC unroll 4
        for (int i = 0; i < kMaxHeadsInRegisters; ++i) {
            if (i >= g) break;
            // hadd(hadd(t0, t1), hadd(t2, t3)) = ((t_r0 + t_r1) + (t_r2 + t_r3)) for r = 0..3, as the loop form.
            _mm_storeu_ps(out + i * out_stride + j0, _mm_hadd_ps(_mm_hadd_ps(t[i][0], t[i][1]), _mm_hadd_ps(t[i][2], t[i][3])));
        }
    }
    return n4;
}

void dot_f16_keys_avx512(F16DotOrder order, int64_t n, const uint16_t* k, int64_t k_stride, int64_t n_keys,
                         const float* q, int64_t q_stride, int g, float* out, int64_t out_stride) {
    int64_t j = 0;
    const bool step32 = order == F16DotOrder::kStep32 && n % 32 == 0 && n <= kMaxDim;
    if (step32 && g <= kMaxHeadsInRegisters && n == 64)
        j = dot_keys_step32_by4_unrolled<2>(k, k_stride, n_keys, q, q_stride, g, out, out_stride);
    else if (step32 && g <= kMaxHeadsInRegisters && n == 128)
        j = dot_keys_step32_by4_unrolled<4>(k, k_stride, n_keys, q, q_stride, g, out, out_stride);
    else if (step32 && g <= kMaxHeadsInRegisters && n == 256)
        j = dot_keys_step32_by4_unrolled<8>(k, k_stride, n_keys, q, q_stride, g, out, out_stride);
    else if (step32)
        j = dot_keys_step32_by4(n, k, k_stride, n_keys, q, q_stride, g, out, out_stride);
    if (j < n_keys) g_dot_keys_avx2(order, n, k + j * k_stride, k_stride, n_keys - j, q, q_stride, g, out + j, out_stride);
}

// quant_avx2.cpp's fma_f16_keys_in_registers with 16-dim slices (n a multiple of 16): per slice the
// slice of every key is converted once, then per head 8 lanes at a time are held in registers while
// the keys that feed them stream by (key j + l feeds lane lb + l for the keys j of lane lb's runs).
void fma_keys_in_registers(int64_t n, const uint16_t* v, int64_t v_stride, int64_t n_keys, int64_t lane0, int n_lanes,
                           const float* p, int64_t p_stride, int g, float* lanes, int64_t lanes_stride) {
    constexpr int64_t kChunk = 256;  // keys converted at a time (16 KiB of floats)
    alignas(64) float vf[kChunk][16];
    for (int64_t c0 = 0; c0 < n_keys; c0 += kChunk) {
        const int64_t nk = min_of(kChunk, n_keys - c0);
        const int64_t l0 = lane0 + c0;
        for (int64_t d = 0; d < n; d += 16) {
            for (int64_t j = 0; j < nk; ++j) _mm512_store_ps(vf[j], load16(v + (c0 + j) * v_stride + d));
            for (int i = 0; i < g; ++i) {
                const float* pi = p + i * p_stride + c0;
                for (int lb = 0; lb < n_lanes; lb += 8) {
                    float* lane = lanes + i * lanes_stride + int64_t(lb) * n + d;  // lane lb + l at lane + l * n
                    __m512 acc[8];
                    for (int l = 0; l < 8; ++l) acc[l] = _mm512_loadu_ps(lane + l * n);
                    // the first key of lane lb's runs, possibly before key 0 (the run may start mid-block)
                    int64_t j = ((lb - l0) % n_lanes + n_lanes) % n_lanes - n_lanes;
                    const auto partial = [&](int64_t j0) {  // fully unrolled, so acc stays in registers
#pragma GCC unroll 8
                        for (int l = 0; l < 8; ++l)
                            if (j0 + l >= 0 && j0 + l < nk)
                                acc[l] = _mm512_fmadd_ps(_mm512_set1_ps(pi[j0 + l]), _mm512_load_ps(vf[j0 + l]), acc[l]);
                    };
                    if (j + 7 >= 0) partial(j);
                    for (j += n_lanes; j + 8 <= nk; j += n_lanes)
#pragma GCC unroll 8
                        for (int l = 0; l < 8; ++l)
                            acc[l] = _mm512_fmadd_ps(_mm512_set1_ps(pi[j + l]), _mm512_load_ps(vf[j + l]), acc[l]);
                    if (j < nk) partial(j);
                    for (int l = 0; l < 8; ++l) _mm512_storeu_ps(lane + l * n, acc[l]);
                }
            }
        }
    }
}

void fma_f16_keys_avx512(int64_t n, const uint16_t* v, int64_t v_stride, int64_t n_keys, int64_t lane0, int n_lanes,
                         const float* p, int64_t p_stride, int g, float* lanes, int64_t lanes_stride) {
    if (n % 16 == 0 && n_lanes % 8 == 0 && n_keys >= n_lanes)
        return fma_keys_in_registers(n, v, v_stride, n_keys, lane0, n_lanes, p, p_stride, g, lanes, lanes_stride);
    g_fma_keys_avx2(n, v, v_stride, n_keys, lane0, n_lanes, p, p_stride, g, lanes, lanes_stride);
}

WB_AVX512_WARNINGS_ON

}  // namespace

void add_attention_avx512_kernels(KernelTable& t) {
    // Called on the AVX2 table each time the avx512 family is built: the fallbacks are the AVX2 forms,
    // never these (which would call themselves).
    if (t.dot_f16_keys == dot_f16_keys_avx512 || t.fma_f16_keys == fma_f16_keys_avx512) return;
    g_dot_keys_avx2 = t.dot_f16_keys;
    g_fma_keys_avx2 = t.fma_f16_keys;
    t.dot_f16_keys = dot_f16_keys_avx512;
    t.fma_f16_keys = fma_f16_keys_avx512;
}

}  // namespace wb
