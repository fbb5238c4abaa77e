// CPU check of the CUDA kernels' part-wise dequantization (kernels/dequant_parts.h): for every weight
// type, every 32-element part of random rows must equal the same elements of the CPU's
// dequantize_row, bit for bit. The GPU runs exactly these WB_HD functions, so this covers their math
// on machines without a GPU. A plain executable (label unit): prints what failed, exits non-zero.
#include <cstdio>
#include <cstring>
#include <vector>

#include "dequant_parts.h"
#include "quant/quant.h"
#include "random_llama.h"

namespace {

template <wb::GgmlType T>
int check_type() {
    constexpr int64_t n_in = 1024, n_rows = 3;
    const size_t row_bytes = wb::ggml_row_bytes(T, n_in);
    std::vector<uint8_t> data(row_bytes * n_rows);
    wb::fill_random_rows(T, n_in, n_rows, 0.5f, 0.1f, 7, /*random_blocks=*/true, data.data());
    std::vector<float> ref(n_in);
    int failures = 0;
    for (int64_t r = 0; r < n_rows; ++r) {
        const uint8_t* row = data.data() + size_t(r) * row_bytes;
        wb::dequantize_row(T, row, ref.data(), n_in);
        for (int64_t part = 0; part < n_in / wb::cuda::kPart; ++part) {
            float y[wb::cuda::kPart];
            wb::cuda::dequantize_row_part<T>(row, part, y);
            if (std::memcmp(y, ref.data() + part * wb::cuda::kPart, sizeof y) != 0) {
                if (failures++ < 3)
                    std::printf("FAIL %s row %lld part %lld: first value %g, expected %g\n", wb::ggml_type_name(T).c_str(),
                                (long long)r, (long long)part, double(y[0]), double(ref[size_t(part) * wb::cuda::kPart]));
            }
        }
    }
    std::printf("%-5s %s\n", wb::ggml_type_name(T).c_str(), failures ? "FAIL" : "ok");
    return failures;
}

}  // namespace

int main() {
    using T = wb::GgmlType;
    int failures = 0;
    failures += check_type<T::F32>() + check_type<T::F16>() + check_type<T::BF16>();
    failures += check_type<T::Q4_0>() + check_type<T::Q4_1>() + check_type<T::Q5_0>() + check_type<T::Q5_1>();
    failures += check_type<T::Q8_0>();
    failures += check_type<T::Q2_K>() + check_type<T::Q3_K>() + check_type<T::Q4_K>() + check_type<T::Q5_K>();
    failures += check_type<T::Q6_K>();
    failures += check_type<T::IQ4_NL>() + check_type<T::IQ4_XS>() + check_type<T::TQ1_0>() + check_type<T::TQ2_0>();
    failures += check_type<T::IQ2_XXS>() + check_type<T::IQ2_XS>() + check_type<T::IQ2_S>();
    failures += check_type<T::IQ3_XXS>() + check_type<T::IQ3_S>() + check_type<T::IQ1_S>() + check_type<T::IQ1_M>();
    std::printf(failures ? "test_dequant_parts: FAILED\n" : "test_dequant_parts: all parts match\n");
    return failures ? 1 : 0;
}
