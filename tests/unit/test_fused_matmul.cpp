// The fused matmul forms of the Backend interface (matmul_shared: q/k/v of one input; matmul_glu: the
// gated feed-forward input) on the CPU backend must give exactly what their definitions give: the
// separate matmuls and glu, bit for bit (the CPU backend only runs them in one parallel loop). Checked
// for token counts that take every path (one token, a few, tiles of 8 with a remainder), for weight
// types with different dot orders (Q4_K's gemm/gemv, the tiled K-quants), for q/k/v of mixed types
// (Gemma's Q5_0/Q5_0/Q8_0) and both activations.
// And the plain matmul itself: every output equals the row dot of its weight row and token in the order
// llama.cpp uses for that token (vec_dot_rows), bit for bit, whichever kernels the backend took for it
// (tiles over packed activations, tiles over unpacked weight rows, the 8-row decode kernels, tails).
// Plain executable (label unit): PASS/FAIL lines, exit status 1 on any failure.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bell_floats.h"
#include "engine/backend_cpu.h"
#include "model/weights.h"
#include "quant/quant.h"
#include "random_llama.h"

using namespace wb;

namespace {

int g_failures = 0;

void report(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
    if (!ok) ++g_failures;
}

// A random weight matrix in host memory (what the CPU backend reads).
struct TestWeight {
    std::vector<uint8_t> data;
    Weight w;
    TestWeight(GgmlType type, int64_t n_in, int64_t n_out, uint64_t seed) {
        data.resize(ggml_row_bytes(type, n_in) * size_t(n_out));
        fill_random_rows(type, n_in, n_out, 1.0f / std::sqrt(float(n_in)), 0.0f, seed, true, data.data());
        w.type = type;
        w.n_in = n_in;
        w.n_out = n_out;
        w.host = data.data();
    }
};

struct HostTensor {
    std::vector<float> v;
    Tensor t;
    HostTensor(int64_t rows, int64_t cols) : v(size_t(rows * cols), NAN), t{v.data(), rows, cols} {}
};

bool same(const HostTensor& a, const HostTensor& b) {
    return std::memcmp(a.v.data(), b.v.data(), a.v.size() * sizeof(float)) == 0;
}

void check_shared(CpuBackend& be, GgmlType tq, GgmlType tk, GgmlType tv, int64_t n_tok) {
    constexpr int64_t n_in = 512, q_dim = 512, kv_dim = 128;
    TestWeight wq(tq, n_in, q_dim, 1), wk(tk, n_in, kv_dim, 2), wv(tv, n_in, kv_dim, 3);
    HostTensor x(n_tok, n_in);
    x.v = bell_floats(size_t(n_tok * n_in), uint64_t(n_tok));
    x.t.data = x.v.data();
    HostTensor q0(n_tok, q_dim), k0(n_tok, kv_dim), v0(n_tok, kv_dim), q1(n_tok, q_dim), k1(n_tok, kv_dim), v1(n_tok, kv_dim);
    be.matmul(wq.w, x.t, q0.t);
    be.matmul(wk.w, x.t, k0.t);
    be.matmul(wv.w, x.t, v0.t);
    const Weight* ws[3] = {&wq.w, &wk.w, &wv.w};
    Tensor* outs[3] = {&q1.t, &k1.t, &v1.t};
    be.matmul_shared(x.t, ws, outs, 3);
    report(same(q0, q1) && same(k0, k1) && same(v0, v1),
           "matmul_shared " + ggml_type_name(tq) + "/" + ggml_type_name(tk) + "/" + ggml_type_name(tv) + ", " +
               std::to_string(n_tok) + " tokens: bit-identical to three matmuls");
}

void check_glu(CpuBackend& be, GgmlType type, Activation act, int64_t n_tok) {
    constexpr int64_t n_in = 256, n_ff = 700;  // 700: not a multiple of the 16-row tasks or of 8 (SiLU's tail)
    TestWeight wg(type, n_in, n_ff, 4), wu(type, n_in, n_ff, 5);
    HostTensor x(n_tok, n_in);
    x.v = bell_floats(size_t(n_tok * n_in), uint64_t(n_tok) + 100);
    x.t.data = x.v.data();
    HostTensor g0(n_tok, n_ff), u0(n_tok, n_ff), g1(n_tok, n_ff), u1(n_tok, n_ff);
    be.matmul(wg.w, x.t, g0.t);
    be.matmul(wu.w, x.t, u0.t);
    be.glu(g0.t, u0.t, act, g0.t);
    be.matmul_glu(wg.w, wu.w, x.t, act, u1.t, g1.t);
    report(same(g0, g1), "matmul_glu " + ggml_type_name(type) + (act == Activation::SILU ? " silu, " : " gelu, ") +
                             std::to_string(n_tok) + " tokens: bit-identical to two matmuls and glu");
}

// CpuBackend::matmul against the row dots, output by output (memcmp). n_out not a multiple of 8 or of
// the 16-row tasks leaves tails; n_tok 21 gives two whole groups of 8 and five tokens after them.
void check_rows(CpuBackend& be, GgmlType type, int64_t n_in, int64_t n_out, int64_t n_tok) {
    TestWeight w(type, n_in, n_out, 6);
    HostTensor x(n_tok, n_in), got(n_tok, n_out);
    x.v = bell_floats(size_t(n_tok * n_in), uint64_t(n_tok) + 200);
    x.t.data = x.v.data();
    be.matmul(w.w, x.t, got.t);
    const size_t row_bytes = ggml_row_bytes(type, n_in);
    std::vector<uint8_t> act(activation_row_bytes(type, n_in));
    int64_t wrong = 0, first_r = -1, first_t = -1;
    for (int64_t t = 0; t < n_tok; ++t) {
        quantize_activations(type, x.v.data() + t * n_in, act.data(), n_in);
        const DotOrder order = llama_cpp_dot_order(type, n_out, n_in, n_tok, t);
        std::vector<float> want(static_cast<size_t>(n_out));
        vec_dot_rows(type, n_in, w.data.data(), row_bytes, n_out, act.data(), want.data(), order);
        for (int64_t r = 0; r < n_out; ++r)
            if (std::memcmp(&want[size_t(r)], &got.v[size_t(t * n_out + r)], sizeof(float)) != 0 && wrong++ == 0) {
                first_r = r;
                first_t = t;
            }
    }
    report(wrong == 0, "matmul " + ggml_type_name(type) + " " + std::to_string(n_in) + " x " + std::to_string(n_out) + ", " +
                           std::to_string(n_tok) + " tokens: every output the row dot of its order" +
                           (wrong ? " (" + std::to_string(wrong) + " differ, first row " + std::to_string(first_r) +
                                        " token " + std::to_string(first_t) + ")"
                                  : ""));
}

}  // namespace

int main() {
    using T = GgmlType;
    try {
        CpuBackend be(2);
        for (int64_t n_tok : {1, 3, 8, 21}) {
            check_shared(be, T::Q4_1, T::Q4_1, T::Q4_1, n_tok);
            check_shared(be, T::Q5_0, T::Q5_0, T::Q8_0, n_tok);
            check_shared(be, T::Q4_K, T::Q4_K, T::Q6_K, n_tok);
            check_shared(be, T::F16, T::Q8_0, T::Q8_0, n_tok);
            check_glu(be, T::Q4_1, Activation::SILU, n_tok);
            check_glu(be, T::Q5_0, Activation::GELU_TANH, n_tok);
            check_glu(be, T::Q4_K, Activation::SILU, n_tok);
            check_glu(be, T::Q6_K, Activation::GELU_TANH, n_tok);
        }
        for (int64_t n_tok : {1, 8, 21, 40})
            for (T type : {T::Q4_K, T::Q5_K, T::Q6_K, T::Q8_0, T::Q4_1, T::Q5_1, T::IQ4_XS, T::IQ2_XS, T::IQ3_S, T::IQ1_M})
                check_rows(be, type, 512, 700, n_tok);
    } catch (const std::exception& e) {
        report(false, std::string("exception: ") + e.what());
    }
    std::printf(g_failures ? "test_fused_matmul: %d FAILED\n" : "test_fused_matmul: all passed\n", g_failures);
    return g_failures ? 1 : 0;
}
