// CPU check of the CUDA kernels' quantized-KV arithmetic (kernels/kv_quant_parts.h) against core/kv,
// which is what the CPU backend stores and reads:
//  - every q8_0 / q4_0 block the kernels' quantizers write equals kv_store_row's, byte for byte, on
//    thousands of rows (several scales, zeros, halves that land on rounding ties, a lone outlier);
//  - every value kv_value_* decodes equals kv_dequantize_row's, bit for bit;
//  - the Hadamard rotation composed of kv_butterfly passes equals kv_rotate, bit for bit;
//  - the query converted for q8_0 / q4_0 keys equals kv_prepare_query's bytes, and the key-row dot in
//    the GPU's lane order equals kv_dot_keys bit for bit when the CPU's kernels are the AVX2 ones
//    (llama.cpp's order, which the GPU follows); the scalar family (another order) within 1e-6 of the
//    sum of the terms' magnitudes.
// The kernels call the quantizers, the value decoders, kv_butterfly and kv_dot_quad themselves; the
// serial compositions checked here (kv_rotate_run, kv_dot_row) are this test's only, and the kernels'
// own loops around those pieces (rotate_shared, scores_quant, store_row) are checked on a device by
// test_gpu_kv (stored bytes and scores against the CPU's). A plain executable (label unit): exits
// non-zero on failure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bell_floats.h"
#include "kv/kv_types.h"
#include "kv_quant_parts.h"
#include "quant/quant.h"
#include "quant/quant_internal.h"  // quant_force_scalar

namespace {

using wb::KvType;
namespace wc = wb::cuda;

int g_failures = 0;

void check(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    if (!ok) ++g_failures;
}

// n_rows rows of n values: bell-shaped at several scales, with zero blocks, values on q8_0's rounding
// ties (x * 127 / amax = k + 0.5 exactly: amax 127 and halves), and rows with one large outlier.
std::vector<float> test_rows(int n_rows, int n, uint64_t seed) {
    std::vector<float> x = wb::bell_floats(size_t(n_rows) * size_t(n), seed);
    for (int r = 0; r < n_rows; ++r) {
        float* row = x.data() + size_t(r) * size_t(n);
        const float scale = std::ldexp(1.0f, r % 17 - 8);
        for (int i = 0; i < n; ++i) row[i] *= scale;
        if (r % 7 == 1) std::fill(row, row + 32, 0.0f);
        if (r % 7 == 2)
            for (int i = 0; i < 32; ++i) row[i] = i == 0 ? 127.0f : float(i % 9) - 4.5f;
        if (r % 7 == 3) row[r % n] = 40.0f * scale;
    }
    return x;
}

void quantize_row_parts(KvType t, const float* x, uint8_t* dst, int n) {
    for (int b = 0; b < n / wc::kKvBlock; ++b) {
        if (t == KvType::Q8_0)
            wc::kv_quantize_q8_0(x + b * 32, reinterpret_cast<wb::BlockQ8_0*>(dst)[b]);
        else
            wc::kv_quantize_q4_0(x + b * 32, reinterpret_cast<wb::BlockQ4_0*>(dst)[b]);
    }
}

float value_part(KvType t, const uint8_t* row, int i) {
    return t == KvType::Q8_0 ? wc::kv_value_q8_0(reinterpret_cast<const wb::BlockQ8_0*>(row)[i / 32], i % 32)
                             : wc::kv_value_q4_0(reinterpret_cast<const wb::BlockQ4_0*>(row)[i / 32], i % 32);
}

// Stores and decodes n_rows rows both ways; counts rows whose bytes or values differ.
void check_store_and_values(KvType t) {
    const int n_rows = 4000, n = 256;
    const std::vector<float> x = test_rows(n_rows, n, 11 + uint64_t(t));
    const size_t bytes = wb::kv_type_row_bytes(t, n);
    std::vector<uint8_t> cpu(bytes), gpu(bytes);
    std::vector<float> y(static_cast<size_t>(n));
    int byte_rows = 0, value_rows = 0;
    for (int r = 0; r < n_rows; ++r) {
        const float* row = x.data() + size_t(r) * size_t(n);
        wb::kv_store_row(t, row, cpu.data(), n);
        quantize_row_parts(t, row, gpu.data(), n);
        if (std::memcmp(cpu.data(), gpu.data(), bytes) != 0) ++byte_rows;
        wb::kv_dequantize_row(t, cpu.data(), y.data(), n);
        for (int i = 0; i < n; ++i) {
            const float v = value_part(t, cpu.data(), i);
            if (std::memcmp(&v, &y[size_t(i)], sizeof v) != 0) {
                ++value_rows;
                break;
            }
        }
    }
    check(byte_rows == 0, std::string(wb::kv_type_name(t)) + " blocks equal kv_store_row's on " +
                              std::to_string(n_rows) + " rows (" + std::to_string(byte_rows) + " rows differ)");
    check(value_rows == 0, std::string(wb::kv_type_name(t)) + " values equal kv_dequantize_row's (" +
                               std::to_string(value_rows) + " rows differ)");
}

void check_rotation() {
    for (int n_rot : {64, 128, 256}) {
        const int n = 1024;
        std::vector<float> a = wb::bell_floats(size_t(n), uint64_t(n_rot), 3.0f), b = a;
        wb::kv_rotate(a.data(), n, n_rot);
        const float scale = 1.0f / std::sqrt(float(n_rot));  // what the backend hands the kernels
        for (int r = 0; r < n; r += n_rot) wc::kv_rotate_run(b.data() + r, n_rot, scale);
        check(std::memcmp(a.data(), b.data(), sizeof(float) * size_t(n)) == 0,
              "rotation of " + std::to_string(n_rot) + " equals kv_rotate bit for bit");
    }
}

float dot_part(KvType t, const uint8_t* k, const wb::BlockQ8_0* q, int n) {
    if (t == KvType::Q8_0)
        return wc::kv_dot_row<wb::BlockQ8_0, wc::kv_int_q8_0>(reinterpret_cast<const wb::BlockQ8_0*>(k), q, n);
    return wc::kv_dot_row<wb::BlockQ4_0, wc::kv_int_q4_0>(reinterpret_cast<const wb::BlockQ4_0*>(k), q, n);
}

// sum over blocks of |d_k d_q| * sum |q_k q_q|: what the rounding errors of a dot in any order scale with.
double dot_bound(KvType t, const uint8_t* k, const wb::BlockQ8_0* q, int n) {
    double bound = 0.0;
    for (int b = 0; b < n / 32; ++b) {
        double s = 0.0;
        for (int i = 0; i < 32; ++i) {
            const int ki = t == KvType::Q8_0 ? wc::kv_int_q8_0(reinterpret_cast<const wb::BlockQ8_0*>(k)[b], i)
                                             : wc::kv_int_q4_0(reinterpret_cast<const wb::BlockQ4_0*>(k)[b], i);
            s += std::fabs(double(ki) * double(q[b].qs[i]));
        }
        const uint16_t dk = t == KvType::Q8_0 ? reinterpret_cast<const wb::BlockQ8_0*>(k)[b].d
                                              : reinterpret_cast<const wb::BlockQ4_0*>(k)[b].d;
        bound += std::fabs(double(wb::fp16_to_f32(dk)) * double(wb::fp16_to_f32(q[b].d))) * s;
    }
    return bound;
}

// Queries prepared both ways, then n_keys keys dotted with them by kv_dot_keys and by the GPU's order.
void check_dots(KvType t, int n, bool exact) {
    const int n_keys = 300, n_q = 20;
    const std::vector<float> keys = test_rows(n_keys, n, 31 + uint64_t(n)), qs = test_rows(n_q, n, 41 + uint64_t(n));
    const size_t kb = wb::kv_type_row_bytes(t, n);
    std::vector<uint8_t> k(kb * n_keys);
    for (int j = 0; j < n_keys; ++j) wb::kv_store_row(t, keys.data() + size_t(j) * size_t(n), k.data() + kb * size_t(j), n);
    const size_t qb = wb::kv_query_bytes(t, n);
    std::vector<uint8_t> q_cpu(qb), q_gpu(qb);
    std::vector<float> ref(static_cast<size_t>(n_keys));
    int query_diff = 0, dot_diff = 0;
    double worst = 0.0;
    for (int i = 0; i < n_q; ++i) {
        const float* qrow = qs.data() + size_t(i) * size_t(n);
        wb::kv_prepare_query(t, qrow, q_cpu.data(), n);
        quantize_row_parts(KvType::Q8_0, qrow, q_gpu.data(), n);
        if (std::memcmp(q_cpu.data(), q_gpu.data(), qb) != 0) ++query_diff;
        wb::kv_dot_keys(t, n, k.data(), kb, n_keys, q_cpu.data(), ref.data());
        for (int j = 0; j < n_keys; ++j) {
            const float got = dot_part(t, k.data() + kb * size_t(j), reinterpret_cast<const wb::BlockQ8_0*>(q_cpu.data()), n);
            if (std::memcmp(&got, &ref[size_t(j)], sizeof got) != 0) ++dot_diff;
            const auto* qb8 = reinterpret_cast<const wb::BlockQ8_0*>(q_cpu.data());
            const double scale = std::max(1e-30, dot_bound(t, k.data() + kb * size_t(j), qb8, n));
            worst = std::max(worst, std::fabs(double(got) - double(ref[size_t(j)])) / scale);
        }
    }
    const std::string what = std::string(wb::kv_type_name(t)) + " keys, head " + std::to_string(n) + ", " +
                             wb::quant_kernel_name() + " kernels: ";
    check(query_diff == 0, what + "query blocks equal kv_prepare_query's (" + std::to_string(query_diff) + " differ)");
    if (exact)
        check(dot_diff == 0, what + "dots equal kv_dot_keys bit for bit (" + std::to_string(dot_diff) + " of " +
                                 std::to_string(n_keys * n_q) + " differ)");
    else  // another order of the same float operations: a few roundings of the terms' magnitude
    {
        char buf[64];
        std::snprintf(buf, sizeof buf, "(worst %g)", worst);
        check(worst <= 1e-6, what + "dots within 1e-6 x sum|terms| of kv_dot_keys " + buf);
    }
}

}  // namespace

int main() {
    check_store_and_values(KvType::Q8_0);
    check_store_and_values(KvType::Q4_0);
    check_rotation();
    // The AVX2 and AVX-512 families share llama.cpp's AVX2 row dots for q8_0 / q4_0 keys.
    const bool simd = std::string(wb::quant_kernel_name()) != "scalar";
    for (KvType t : {KvType::Q8_0, KvType::Q4_0})
        for (int n : {64, 128, 256}) check_dots(t, n, simd);
    wb::quant_force_scalar(true);
    for (KvType t : {KvType::Q8_0, KvType::Q4_0}) check_dots(t, 128, false);
    wb::quant_force_scalar(false);
    std::printf(g_failures ? "test_kv_quant_parts: FAILED\n" : "test_kv_quant_parts: all checks passed\n");
    return g_failures ? 1 : 0;
}
