#pragma once
// llama.cpp's x86 dot-product orders (wb::DotOrder) recomputed from the block formats, for test_quant
// (quant_order_reference.cpp says how).
#include <cstdint>

#include "gguf/ggml_type.h"
#include "quant/quant.h"
#include "quant/quant_blocks.h"

namespace wb_test {

// kvalues_iq4nl (FACTS-2.md 3.2), the values of the IQ4 codes.
inline constexpr int kIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// One K-quant weight row (Q2_K .. Q6_K) against Q8_K activations in the given order.
float k_dot_ref(wb::GgmlType t, wb::DotOrder order, const uint8_t* w, const wb::BlockQ8_K* x, int64_t n);
// One Q4_0 / IQ4_NL row against Q8_0 activations in the given order.
float q8_0_order_ref(wb::GgmlType t, wb::DotOrder order, const uint8_t* w, const wb::BlockQ8_0* x, int64_t n);
// One IQ4_XS / TQ1_0 / TQ2_0 row against Q8_K activations: kRow or IQ4_XS's kTiled.
float q8_k_order_ref(wb::GgmlType t, wb::DotOrder order, const uint8_t* w, const wb::BlockQ8_K* x, int64_t n);
// "row", "tiled", "gemv", "gemm", "llamafile".
const char* dot_order_name(wb::DotOrder o);

}  // namespace wb_test
