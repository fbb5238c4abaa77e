#include "gguf/ggml_type.h"

namespace wb {

namespace {

struct Entry {
    uint32_t id;
    GgmlTypeTraits traits;
};

// Block sizes and byte sizes from the ggml block structs (FACTS.md section 2).
constexpr Entry kTypes[] = {
    {0, {"F32", 1, 4, true, true}},
    {1, {"F16", 1, 2, true, true}},
    {2, {"Q4_0", 32, 18, true, true}},
    {3, {"Q4_1", 32, 20, true, true}},
    {6, {"Q5_0", 32, 22, true, true}},
    {7, {"Q5_1", 32, 24, true, true}},
    {8, {"Q8_0", 32, 34, true, true}},
    {9, {"Q8_1", 32, 36, true, false}},
    {10, {"Q2_K", 256, 84, true, true}},
    {11, {"Q3_K", 256, 110, true, true}},
    {12, {"Q4_K", 256, 144, true, true}},
    {13, {"Q5_K", 256, 176, true, true}},
    {14, {"Q6_K", 256, 210, true, true}},
    {15, {"Q8_K", 256, 292, true, false}},
    {16, {"IQ2_XXS", 256, 66, true, true}},
    {17, {"IQ2_XS", 256, 74, true, true}},
    {18, {"IQ3_XXS", 256, 98, true, true}},
    {19, {"IQ1_S", 256, 50, true, true}},
    {20, {"IQ4_NL", 32, 18, true, true}},
    {21, {"IQ3_S", 256, 110, true, true}},
    {22, {"IQ2_S", 256, 82, true, true}},
    {23, {"IQ4_XS", 256, 136, true, true}},
    {24, {"I8", 1, 1, true, false}},
    {25, {"I16", 1, 2, true, false}},
    {26, {"I32", 1, 4, true, false}},
    {27, {"I64", 1, 8, true, false}},
    {28, {"F64", 1, 8, true, false}},
    {29, {"IQ1_M", 256, 56, true, true}},
    {30, {"BF16", 1, 2, true, true}},
    {34, {"TQ1_0", 256, 54, true, true}},
    {35, {"TQ2_0", 256, 66, true, true}},
    {39, {"MXFP4", 32, 17, true, false}},
};

}  // namespace

GgmlTypeTraits ggml_type_traits(uint32_t raw_type) {
    for (const Entry& e : kTypes)
        if (e.id == raw_type) return e.traits;
    return {"unknown", 0, 0, false, false};
}

std::string ggml_type_name(GgmlType t) {
    const GgmlTypeTraits tr = ggml_type_traits(t);
    return tr.known ? std::string(tr.name) : "type_" + std::to_string(uint32_t(t));
}

size_t ggml_row_bytes(GgmlType t, int64_t n) {
    const GgmlTypeTraits tr = ggml_type_traits(t);
    if (tr.block_elems <= 0) return 0;
    return size_t(n / tr.block_elems) * tr.block_bytes;
}

}  // namespace wb
