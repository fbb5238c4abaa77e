#pragma once
// ggml tensor element types as stored in GGUF files (the numeric values are the file format's).
#include <cstddef>
#include <cstdint>
#include <string>

namespace wb {

enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
};

struct GgmlTypeTraits {
    const char* name;      // "Q4_K"; "unknown" for values the format does not define
    int64_t block_elems;   // elements per block (1 for plain types, 32 or 256 for quantized)
    size_t block_bytes;    // bytes per block; 0 when unknown
    bool known;            // a value the GGUF format defines
    bool supported;        // WhiteBox can compute with it (dequantize and dot)
};

GgmlTypeTraits ggml_type_traits(uint32_t raw_type);
inline GgmlTypeTraits ggml_type_traits(GgmlType t) { return ggml_type_traits(uint32_t(t)); }
std::string ggml_type_name(GgmlType t);

// Bytes of one row of n elements; n must be a multiple of the block size (checked by callers).
size_t ggml_row_bytes(GgmlType t, int64_t n);

}  // namespace wb
