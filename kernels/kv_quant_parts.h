#pragma once
// The per-block arithmetic of a quantized KV cache (q8_0 / q4_0, core/kv/kv_types.h) as plain WB_HD
// code: the CUDA kv_store and attention kernels call these pieces on the device, and the unit test
// test_kv_quant_parts runs them on the CPU against core/kv's quantizer, dequantizer, rotation and key
// dot products. The kernels' loops around the pieces (parallel butterflies, the lanes of a key dot
// spread over a warp) are their own; test_gpu_kv checks what they store and score against the CPU.
//
// Every multiply and add that the CPU rounds separately is written with kv_mul / kv_add: nvcc contracts
// a * b + c into one fused multiply-add by default, which would round q4_0's x * id + 8.5 differently
// from the CPU (built with -ffp-contract=off) and move values across a nibble boundary.
#include <cmath>
#include <cstdint>

#include "quant/quant_blocks.h"
#include "util/fp16.h"
#include "util/hd.h"

namespace wb::cuda {

constexpr int kKvBlock = 32;  // values per q8_0 / q4_0 block; a head's row is a whole number of them

WB_HD float kv_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

WB_HD float kv_add(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

WB_HD float kv_div(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

WB_HD float kv_abs(float x) { return x < 0.0f ? -x : x; }

// Round to nearest, ties to even (the CPU's std::nearbyint in the default rounding mode).
WB_HD int kv_round_even(float x) {
#if defined(__CUDA_ARCH__)
    return __float2int_rn(x);
#else
    return int(__builtin_nearbyintf(x));
#endif
}

// One q8_0 block of x[0..32), as llama.cpp's CPU backend stores it (core/quant's quantize_block_q8):
// d = amax / 127, q = round-to-nearest-even(x * (127 / amax)); the scale stored as f16. Also the
// query's conversion for q8_0 and q4_0 keys (their dot type is q8_0: kv_prepare_query).
WB_HD void kv_quantize_q8_0(const float* x, BlockQ8_0& b) {
    float amax = 0.0f;
    for (int j = 0; j < kKvBlock; ++j) {
        const float a = kv_abs(x[j]);
        if (a > amax) amax = a;  // std::max(amax, a): a NaN never becomes the maximum
    }
    const float id = amax != 0.0f ? kv_div(127.0f, amax) : 0.0f;
    b.d = f32_to_fp16(kv_div(amax, 127.0f));
    for (int j = 0; j < kKvBlock; ++j) b.qs[j] = int8_t(kv_round_even(kv_mul(x[j], id)));
}

// One q4_0 block, as llama.cpp's reference quantizer (core/quant's quantize_row_q4_0): the value of
// largest magnitude, sign kept, maps to -8; q = min(15, trunc(x / d + 8.5)), low nibbles 0..15.
WB_HD void kv_quantize_q4_0(const float* x, BlockQ4_0& b) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kKvBlock; ++j)
        if (kv_abs(x[j]) > amax) {
            amax = kv_abs(x[j]);
            max = x[j];
        }
    const float d = kv_div(max, -8.0f);
    const float id = d != 0.0f ? kv_div(1.0f, d) : 0.0f;
    b.d = f32_to_fp16(d);
    for (int j = 0; j < kKvBlock / 2; ++j) {
        const int lo = int(kv_add(kv_mul(x[j], id), 8.5f));
        const int hi = int(kv_add(kv_mul(x[j + 16], id), 8.5f));
        b.qs[j] = uint8_t((lo < 15 ? lo : 15) | ((hi < 15 ? hi : 15) << 4));
    }
}

// The integer of value i (0..31) of a block: q8_0's byte, q4_0's nibble minus 8.
WB_HD int kv_int_q8_0(const BlockQ8_0& b, int i) { return b.qs[i]; }
WB_HD int kv_int_q4_0(const BlockQ4_0& b, int i) {
    return (i < 16 ? (b.qs[i] & 0xF) : (b.qs[i - 16] >> 4)) - 8;
}

// Value i of a block as a float, as the CPU's dequantize_block forms it: d * q.
WB_HD float kv_value_q8_0(const BlockQ8_0& b, int i) { return kv_mul(fp16_to_f32(b.d), float(kv_int_q8_0(b, i))); }
WB_HD float kv_value_q4_0(const BlockQ4_0& b, int i) { return kv_mul(fp16_to_f32(b.d), float(kv_int_q4_0(b, i))); }

// One butterfly of the Hadamard rotation (kv_rotate): pair t (0 .. n_rot / 2) of the pass of length
// len over a run of n_rot values. The passes run in order len = 1, 2, 4, .. n_rot / 2, after every
// value was multiplied by 1 / sqrtf(n_rot); within a pass the pairs are independent, so a kernel may
// do them in parallel and get the CPU's bits (each is one rounded addition and one subtraction).
WB_HD void kv_butterfly(float* run, int len, int t) {
    const int i = (t / len) * 2 * len + t % len;
    const float u = run[i], v = run[i + len];
    run[i] = kv_add(u, v);
    run[i + len] = u - v;
}

// The whole rotation of one run, serially: test_kv_quant_parts' composition of kv_butterfly (the kernels
// run the passes in parallel, rotate_shared / store_row).
WB_HD void kv_rotate_run(float* run, int n_rot, float scale) {
    for (int j = 0; j < n_rot; ++j) run[j] = kv_mul(run[j], scale);
    for (int len = 1; len < n_rot; len <<= 1)
        for (int t = 0; t < n_rot / 2; ++t) kv_butterfly(run, len, t);
}

// The four-value part of a key block's dot with a q8_0 query block (values 4p .. 4p + 3, p < 8): an
// exact integer, as one 32-bit lane of llama.cpp's AVX2 dot (mul_sum_i8_pairs_float) holds it.
template <typename Block, int (*Int)(const Block&, int)>
WB_HD int kv_dot_quad(const Block& k, const int8_t* q, int p) {
    int s = 0;
    for (int i = 4 * p; i < 4 * p + 4; ++i) s += Int(k, i) * q[i];
    return s;
}

// A key row of n values dotted with a q8_0 query row, in the GPU's order (test_kv_quant_parts' serial
// model of scores_quant, which spreads the lanes over a warp): per block, d = d_k * d_q and
// each of the 8 four-value parts accumulated into its own lane with a fused multiply-add (llama.cpp's
// AVX2 ggml_vec_dot_q8_0_q8_0 / q4_0_q8_0 order); then the 8 lanes summed pairwise, as a warp's
// shuffle reduction adds them (lanes l and l + 4, then l + 2, then l + 1). The CPU's sum of its lanes
// (sum_lanes8) pairs them the same way, so the two differ only where the CPU's kernel is not AVX2.
template <typename Block, int (*Int)(const Block&, int)>
WB_HD float kv_dot_row(const Block* k, const BlockQ8_0* q, int n) {
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int b = 0; b < n / kKvBlock; ++b) {
        const float d = kv_mul(fp16_to_f32(k[b].d), fp16_to_f32(q[b].d));
        for (int p = 0; p < 8; ++p) lane[p] = fmaf(d, float(kv_dot_quad<Block, Int>(k[b], q[b].qs, p)), lane[p]);
    }
    for (int w = 4; w >= 1; w >>= 1)
        for (int p = 0; p < w; ++p) lane[p] = kv_add(lane[p], lane[p + w]);
    return lane[0];
}

}  // namespace wb::cuda
