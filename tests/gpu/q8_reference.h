#pragma once
// The CUDA decode GEMV's arithmetic on the host: activations quantized per 32-element part and each
// weight part dotted in integers, with the very functions the kernel runs (kernels/q8_parts.h). The
// GPU tests use it as the tight reference for the GEMV of quantized weights; only the order of the
// float sums over parts (and the GPU's fused multiply-adds) differs.
#include <cstdint>
#include <cstring>
#include <vector>

#include "gguf/ggml_type.h"
#include "q8_parts.h"
#include "type_dispatch.h"
#include "util/error.h"

namespace wb::gputest {

// Activations [n_tok][n_in] quantized as the GPU's quantize kernel does.
struct Q8Activations {
    int64_t n_in = 0;
    std::vector<int8_t> q;             // [n_tok][n_in]
    std::vector<cuda::Q8Scale> scale;  // [n_tok][n_in / 32]
};

inline Q8Activations quantize_activations_q8(const float* x, int64_t n_tok, int64_t n_in) {
    Q8Activations a;
    a.n_in = n_in;
    const int64_t n_parts = n_tok * (n_in / cuda::kPart);
    a.q.resize(size_t(n_parts * cuda::kPart));
    a.scale.resize(size_t(n_parts));
    for (int64_t p = 0; p < n_parts; ++p)
        a.scale[size_t(p)] = cuda::quantize_part_q8(x + p * cuda::kPart, a.q.data() + p * cuda::kPart);
    return a;
}

template <GgmlType T>
float dot_row_q8_typed(const uint8_t* row, const Q8Activations& x, int64_t tok) {
    const int64_t n_parts = x.n_in / cuda::kPart;
    float acc = 0.0f;
    for (int64_t p = 0; p < n_parts; ++p) {
        cuda::IntPart w;
        cuda::unpack_row_part<T>(row, p, w);
        const int64_t xi = tok * n_parts + p;
        uint32_t xq[8];
        std::memcpy(xq, x.q.data() + xi * cuda::kPart, sizeof xq);
        acc += cuda::dot_part_q8<T>(w, xq, x.scale[size_t(xi)]);
    }
    return acc;
}

// Weight row (type t, x.n_in elements) . activations of token tok, the GPU's way.
inline float dot_row_q8(GgmlType t, const uint8_t* row, const Q8Activations& x, int64_t tok) {
    if (!cuda::has_int_part(t)) throw Error("dot_row_q8: " + ggml_type_name(t) + " has no integer part form");
    float r = 0.0f;
    cuda::dispatch_weight_type(t, [&](auto tag) {
        constexpr GgmlType T = decltype(tag)::value;
        if constexpr (cuda::has_int_part(T)) r = dot_row_q8_typed<T>(row, x, tok);
    });
    return r;
}

}  // namespace wb::gputest
