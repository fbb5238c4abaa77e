#pragma once
// Element types of the KV cache and the only code that knows their block layout.
//
// f16 (default) or llama.cpp's block formats: q8_0 (an f16 scale d + 32 int8 q, value = q * d) and q4_0
// (an f16 scale d + 16 bytes holding 32 nibbles, value = (q - 8) * d; the low nibbles are values 0..15,
// the high ones 16..31). K and V have a type each (llama.cpp's --cache-type-k / --cache-type-v).
// Backends store and read rows only through these functions, whose arithmetic is llama.cpp's CPU
// backend's, so attention over a quantized cache can follow llama.cpp's step by step.
#include <cstddef>
#include <cstdint>
#include <string>

namespace wb {

enum class KvType { F16, Q8_0, Q4_0 };

const char* kv_type_name(KvType t);
// The type named by s ("f16", "q8_0", "q4_0"); wb::Error naming the accepted names otherwise.
KvType kv_type_from_name(const std::string& s);
// "f16|q8_0|q4_0", for help texts and error messages.
const char* kv_type_names();
// Values per block (1 for f16, 32 for q8_0 / q4_0) and bytes per block (2, 34, 18).
int32_t kv_type_block_values(KvType t);
size_t kv_type_block_bytes(KvType t);
// Bits per stored value (16, 8.5, 4.5): what the KV panel shows.
double kv_type_bits(KvType t);
// Bytes of n values (n a multiple of kv_type_block_values).
size_t kv_type_row_bytes(KvType t, int64_t n);
bool kv_type_is_quantized(KvType t);

// Writes n floats as a row of type t, rounding as llama.cpp's CPU backend stores its cache (f16 round to
// nearest even; q8_0 its AVX quantizer: 127/amax and nearest-even; q4_0 its reference quantizer).
void kv_store_row(KvType t, const float* x, void* dst, int64_t n);
// The n values of a row of type t as floats (llama.cpp's to_float of the type: q * d).
void kv_dequantize_row(KvType t, const void* src, float* y, int64_t n);

// The attention product q.k over keys of type t, as llama.cpp's flash attention forms it: q is
// converted once to the dot type of t (f16 for f16 keys, q8_0 for q8_0 and q4_0 keys: ggml's
// vec_dot_type), then each key row is dotted with it by the type's row dot product
// (ggml_vec_dot_f16 / ggml_vec_dot_q8_0_q8_0 / ggml_vec_dot_q4_0_q8_0).
size_t kv_query_bytes(KvType t, int64_t n);
void kv_prepare_query(KvType t, const float* q, void* dst, int64_t n);
// out[j] = dot(key row k + j * k_stride bytes, prepared q) for j < n_keys, n values per row.
void kv_dot_keys(KvType t, int64_t n, const void* k, size_t k_stride, int64_t n_keys, const void* q_prepared,
                 float* out);

// llama.cpp (from 0.3.36's llama.cpp on) rotates attention by a Hadamard matrix when the cache is quantized,
// so that the blocks quantize values spread evenly over a head instead of a few outliers: with a quantized
// K, q and k are rotated (after RoPE, before k is stored); with a quantized V, v is rotated before it is
// stored and the attention output is rotated back (the normalized Hadamard matrix is its own inverse).
// Rotation sizes: for K the largest power of two >= 64 dividing head_dim, for V 64; 0 = no rotation (an f16
// cache, or a head_dim that is not a multiple of 64). LLAMA_ATTN_ROT_DISABLE turns it off in llama.cpp.
int32_t kv_rotation_k(KvType type_k, int32_t head_dim);
int32_t kv_rotation_v(KvType type_v, int32_t head_dim);
// Rotates each run of n_rot values of x[0, n) in place (n a multiple of n_rot), exactly as ggml-cpu's
// fast Walsh-Hadamard transform does it: x * (1 / sqrtf(n_rot)), then butterflies (u + v, u - v) of
// lengths 1, 2, 4, ... n_rot / 2. n_rot = 0: nothing.
void kv_rotate(float* x, int64_t n, int32_t n_rot);

}  // namespace wb
