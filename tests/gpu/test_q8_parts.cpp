// CPU check of the CUDA decode GEMV's integer arithmetic (kernels/q8_parts.h), which the GPU runs as
// it is:
//   - every weight part unpacked to signed bytes and scales gives back dequantize_row's values
//     exactly (d * q + m, for random blocks: every bit pattern of quants and scales);
//   - activation parts quantize exactly as the CPU's Q8_1 (same integers, same scale);
//   - the integer dot product of a part equals the double-precision product of the two dequantized
//     parts to float rounding;
//   - a whole row's dot (the host emulation the GPU tests use) is within the 8-bit activation
//     rounding of the exact product.
// A plain executable (label unit): prints what failed, exits non-zero.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bell_floats.h"
#include "q8_parts.h"
#include "q8_reference.h"
#include "quant/quant.h"
#include "quant/quant_blocks.h"
#include "random_llama.h"

namespace {

using wb::GgmlType;
namespace cu = wb::cuda;

int g_failures = 0;

void fail(const char* fmt, const char* type, long long a, long long b, double x, double y) {
    if (g_failures++ < 10) {
        std::printf("FAIL %s: ", type);
        std::printf(fmt, a, b, x, y);
        std::printf("\n");
    }
}

template <GgmlType T>
void check_type() {
    const std::string name = wb::ggml_type_name(T);
    constexpr int64_t n_in = 1024, n_rows = 4;
    const size_t row_bytes = wb::ggml_row_bytes(T, n_in);
    std::vector<uint8_t> data(row_bytes * n_rows);
    wb::fill_random_rows(T, n_in, n_rows, 0.5f, 0.1f, 11, /*random_blocks=*/true, data.data());
    const std::vector<float> x = wb::bell_floats(size_t(n_in), uint64_t(T) + 5, 0.6f);
    const wb::gputest::Q8Activations xa = wb::gputest::quantize_activations_q8(x.data(), 1, n_in);
    const int before = g_failures;

    std::vector<float> ref(n_in);
    for (int64_t r = 0; r < n_rows; ++r) {
        const uint8_t* row = data.data() + size_t(r) * row_bytes;
        wb::dequantize_row(T, row, ref.data(), n_in);
        double row_exact = 0.0, row_abs = 0.0;
        for (int64_t p = 0; p < n_in / cu::kPart; ++p) {
            cu::IntPart w;
            cu::unpack_row_part<T>(row, p, w);
            // Unpacking: d * q + m is the dequantized value.
            for (int i = 0; i < cu::kPart; ++i) {
                const int8_t q = int8_t(uint8_t(w.q[i / 4] >> (8 * (i % 4))));
                const float got = w.d[i / 16] * float(q) + w.m[i / 16];
                const float want = ref[size_t(p * cu::kPart + i)];
                if (got != want) fail("row %lld element %lld: %g, dequantize_row %g", name.c_str(), r, p * cu::kPart + i, got, want);
            }
            // The part's dot product against the dequantized operands in double precision.
            uint32_t xq[8];
            std::memcpy(xq, xa.q.data() + p * cu::kPart, sizeof xq);
            const cu::Q8Scale xs = xa.scale[size_t(p)];
            const float got = cu::dot_part_q8<T>(w, xq, xs);
            double exact = 0.0, mag = 0.0;
            for (int i = 0; i < cu::kPart; ++i) {
                const double wi = double(ref[size_t(p * cu::kPart + i)]);
                const double xi = double(xs.d) * double(xa.q[size_t(p * cu::kPart + i)]);
                exact += wi * xi;
                mag += std::fabs(wi * xi);
            }
            if (std::fabs(double(got) - exact) > 1e-5 * mag + 1e-30)
                fail("row %lld part %lld: dot %g, exact %g", name.c_str(), r, p, got, exact);
            for (int i = 0; i < cu::kPart; ++i) {
                row_exact += double(ref[size_t(p * cu::kPart + i)]) * double(x[size_t(p * cu::kPart + i)]);
                row_abs += std::fabs(double(ref[size_t(p * cu::kPart + i)]) * double(x[size_t(p * cu::kPart + i)]));
            }
        }
        // The whole row against unquantized activations: 8-bit rounding is at most half a step of
        // amax/127 per element, far inside 1 % of sum |w x| for bell-shaped activations.
        const float got = wb::gputest::dot_row_q8(T, row, xa, 0);
        if (std::fabs(double(got) - row_exact) > 1e-2 * row_abs)
            fail("row %lld (%lld): row dot %g, exact %g", name.c_str(), r, 0, got, row_exact);
    }
    std::printf("%-5s %s\n", name.c_str(), g_failures == before ? "ok" : "FAIL");
}

// Activation parts against the CPU's Q8_1 quantization (llama.cpp's rounding).
void check_activations() {
    constexpr int64_t n = 4096;
    std::vector<float> x = wb::bell_floats(size_t(n), 99, 0.6f);
    for (int i = 0; i < 32; ++i) x[size_t(64 + i)] = 0.0f;   // an all-zero part: scale 0, no division by zero
    for (int i = 0; i < 32; ++i) x[size_t(192 + i)] *= 1e-30f;  // a part of tiny values (scale ~1e-32)
    const wb::gputest::Q8Activations a = wb::gputest::quantize_activations_q8(x.data(), 1, n);
    std::vector<wb::BlockQ8_1> cpu(size_t(n / wb::kQK));
    wb::quantize_row(GgmlType::Q8_1, x.data(), cpu.data(), n);
    const int before = g_failures;
    for (int64_t p = 0; p < n / cu::kPart; ++p) {
        const wb::BlockQ8_1& b = cpu[size_t(p)];
        if (std::memcmp(b.qs, a.q.data() + p * cu::kPart, cu::kPart) != 0)
            fail("activation part %lld (%lld): integers differ from the CPU's Q8_1 (%g %g)", "q8", p, 0, 0, 0);
        const cu::Q8Scale s = a.scale[size_t(p)];
        if (wb::f32_to_fp16(s.d) != b.d || wb::f32_to_fp16(s.s) != b.s)
            fail("activation part %lld (%lld): scale %g, CPU Q8_1 %g", "q8", p, 0, s.d, wb::fp16_to_f32(b.d));
    }
    // A NaN or infinity makes its part's scale NaN (and only that part's), so products are NaN.
    for (float bad : {NAN, INFINITY}) {
        std::vector<float> y = wb::bell_floats(64, 5);
        y[40] = bad;
        const wb::gputest::Q8Activations b = wb::gputest::quantize_activations_q8(y.data(), 1, 64);
        if (!std::isnan(b.scale[1].d) || !std::isnan(b.scale[1].s) || std::isnan(b.scale[0].d))
            fail("non-finite input %lld (%lld): scales %g, %g", "q8", 0, 0, b.scale[0].d, b.scale[1].d);
    }
    std::printf("q8 activations %s\n", g_failures == before ? "ok" : "FAIL");
}

// The bit tricks on their own, over all byte values they are used with.
void check_byte_helpers() {
    const int before = g_failures;
    for (uint32_t v = 0; v < 128; ++v)
        for (uint32_t k : {0u, 4u, 8u, 16u, 32u}) {
            const uint32_t r = cu::sub_bytes(v * 0x01010101u, k * 0x01010101u);
            for (int b = 0; b < 4; ++b)
                if (int8_t(uint8_t(r >> (8 * b))) != int(v) - int(k))
                    fail("sub_bytes(%lld, %lld) byte: %g, want %g", "bytes", v, k, double(int8_t(uint8_t(r >> (8 * b)))),
                         double(int(v) - int(k)));
        }
    for (uint32_t bits = 0; bits < 16; ++bits) {
        const uint32_t r = cu::bits_to_byte_bit4(bits);
        for (int b = 0; b < 4; ++b)
            if (((r >> (8 * b)) & 0xFFu) != (((bits >> b) & 1u) << 4))
                fail("bits_to_byte_bit4(%lld) byte %lld: %g, want %g", "bytes", bits, b, double((r >> (8 * b)) & 0xFFu),
                     double(((bits >> b) & 1u) << 4));
    }
    if (cu::dot4_i8(0x80FF7F01u, 0x7F0180FFu, 5) != 5 + (1 * -1) + (127 * -128) + (-1 * 1) + (-128 * 127))
        fail("dot4_i8: %lld %lld %g %g", "bytes", 0, 0, 0, 0);
    std::printf("byte helpers %s\n", g_failures == before ? "ok" : "FAIL");
}

}  // namespace

int main() {
    using T = GgmlType;
    check_byte_helpers();
    check_activations();
    check_type<T::Q4_0>();
    check_type<T::Q4_1>();
    check_type<T::Q5_0>();
    check_type<T::Q5_1>();
    check_type<T::Q8_0>();
    check_type<T::Q2_K>();
    check_type<T::Q3_K>();
    check_type<T::Q4_K>();
    check_type<T::Q5_K>();
    check_type<T::Q6_K>();
    check_type<T::IQ4_NL>();
    check_type<T::IQ4_XS>();
    check_type<T::TQ1_0>();
    check_type<T::TQ2_0>();
    check_type<T::IQ2_XXS>();
    check_type<T::IQ2_XS>();
    check_type<T::IQ2_S>();
    check_type<T::IQ3_XXS>();
    check_type<T::IQ3_S>();
    check_type<T::IQ1_S>();
    check_type<T::IQ1_M>();
    std::printf(g_failures ? "test_q8_parts: FAILED (%d)\n" : "test_q8_parts: all checks pass\n", g_failures);
    return g_failures ? 1 : 0;
}
