#include "kv/kv_types.h"

#include <cmath>

#include "quant/quant.h"
#include "util/error.h"

namespace wb {

namespace {

GgmlType ggml_type_of(KvType t) {
    switch (t) {
        case KvType::F16: return GgmlType::F16;
        case KvType::Q8_0: return GgmlType::Q8_0;
        case KvType::Q4_0: return GgmlType::Q4_0;
    }
    throw Error("KV cache: unknown element type");
}

}  // namespace

const char* kv_type_name(KvType t) {
    switch (t) {
        case KvType::F16: return "f16";
        case KvType::Q8_0: return "q8_0";
        case KvType::Q4_0: return "q4_0";
    }
    return "?";
}

const char* kv_type_names() { return "f16|q8_0|q4_0"; }

KvType kv_type_from_name(const std::string& s) {
    for (KvType t : {KvType::F16, KvType::Q8_0, KvType::Q4_0})
        if (s == kv_type_name(t)) return t;
    throw Error("unknown KV cache type '" + s + "' (expected " + kv_type_names() + ")");
}

int32_t kv_type_block_values(KvType t) { return t == KvType::F16 ? 1 : 32; }

size_t kv_type_block_bytes(KvType t) {
    switch (t) {
        case KvType::F16: return 2;
        case KvType::Q8_0: return 34;  // f16 scale + 32 int8
        case KvType::Q4_0: return 18;  // f16 scale + 32 nibbles
    }
    return 0;
}

double kv_type_bits(KvType t) { return 8.0 * double(kv_type_block_bytes(t)) / double(kv_type_block_values(t)); }

size_t kv_type_row_bytes(KvType t, int64_t n) {
    return size_t(n / kv_type_block_values(t)) * kv_type_block_bytes(t);
}

bool kv_type_is_quantized(KvType t) { return t != KvType::F16; }

// quantize_row's Q8_0 quantizer is the one llama.cpp's x86 build stores with (ggml-cpu's
// quantize_row_q8_0, which uses 127/amax and rounds to nearest even, unlike quantize_row_q8_0_ref);
// for Q4_0 llama.cpp's CPU backend calls the reference quantizer, which quantize_row follows too.
void kv_store_row(KvType t, const float* x, void* dst, int64_t n) { quantize_row(ggml_type_of(t), x, dst, n); }

void kv_dequantize_row(KvType t, const void* src, float* y, int64_t n) {
    dequantize_row(ggml_type_of(t), src, y, n);
}

size_t kv_query_bytes(KvType t, int64_t n) { return activation_row_bytes(ggml_type_of(t), n); }

void kv_prepare_query(KvType t, const float* q, void* dst, int64_t n) { quantize_activations(ggml_type_of(t), q, dst, n); }

void kv_dot_keys(KvType t, int64_t n, const void* k, size_t k_stride, int64_t n_keys, const void* q_prepared,
                 float* out) {
    vec_dot_rows(ggml_type_of(t), n, k, k_stride, n_keys, q_prepared, out, DotOrder::kRow);
}

int32_t kv_rotation_k(KvType type_k, int32_t head_dim) {
    if (!kv_type_is_quantized(type_k) || head_dim % 64 != 0) return 0;
    int32_t n = 64;
    while (head_dim % (2 * n) == 0) n *= 2;
    return n;
}

int32_t kv_rotation_v(KvType type_v, int32_t head_dim) {
    return kv_type_is_quantized(type_v) && head_dim % 64 == 0 ? 64 : 0;
}

void kv_rotate(float* x, int64_t n, int32_t n_rot) {
    if (n_rot <= 0) return;
    const float scale = 1.0f / std::sqrt(float(n_rot));
    for (int64_t r = 0; r < n; r += n_rot) {
        float* row = x + r;
        for (int32_t j = 0; j < n_rot; ++j) row[j] *= scale;
        // Every butterfly is one float addition or subtraction (ggml's vector passes subtract with an fma
        // by -1, which rounds the same), so the pass order of its scalar and vector loops does not matter.
        for (int32_t len = 1; len < n_rot; len <<= 1)
            for (int32_t i = 0; i < n_rot; i += 2 * len)
                for (int32_t j = 0; j < len; ++j) {
                    const float u = row[i + j], v = row[i + len + j];
                    row[i + j] = u + v;
                    row[i + len + j] = u - v;
                }
    }
}

}  // namespace wb
