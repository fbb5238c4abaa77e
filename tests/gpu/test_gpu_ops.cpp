// Every CUDA backend operation against the CPU backend (the reference) on random inputs of several
// shapes, with the tolerance of each comparison stated in its PASS/FAIL line. Matmul and embedding
// are also checked against an exact double-precision product of the dequantized weights, and the
// GEMV of quantized weights (8-bit activations) against the host emulation of its integer arithmetic.
// Outputs are poisoned with NaN first, so an element a kernel forgets to write fails the check.
// Besides the general shapes, the shapes and types of Gemma 3 270M (Q4_K_M file): rows of 640 (not a
// multiple of 256: legacy types with idle lanes), the 262144-row Q8_0 embedding/output, head_dim 256
// with one kv head, QK-norm groups, NEOX rope with both bases, windows, and q scaled before its f16
// rounding (AttentionParams::scale_q), also with q where that rounding is visibly different.
//
// Without a CUDA device: prints "SKIPPED: no CUDA device" and returns 77.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "engine/backend_cpu.h"
#include "gguf/gguf_file.h"
#include "gpu_test_util.h"
#include "matmul.cuh"
#include "model/weights.h"
#include "q8_reference.h"
#include "quant/quant.h"
#include "random_llama.h"

using namespace wb;
using namespace wb::gputest;

namespace {

// A random weight matrix usable by both backends (prepared on each; the CPU reads it in place).
struct TestWeight {
    GgufTensor src;
    std::vector<uint8_t> data;
    ModelWeights mw;
    TestWeight(GgmlType type, int64_t n_in, int64_t n_out, uint64_t seed, float sigma, float mean = 0.0f) {
        data.resize(ggml_row_bytes(type, n_in) * size_t(n_out));
        fill_random_rows(type, n_in, n_out, sigma, mean, seed, false, data.data());
        src.name = "test." + ggml_type_name(type);
        src.type = type;
        src.ne[0] = n_in;
        src.ne[1] = n_out;
        src.n_bytes = data.size();
        src.data = data.data();
        Weight& w = mw.token_embd;
        w.src = &src;
        w.type = type;
        w.n_in = n_in;
        w.n_out = n_out;
        w.host = data.data();
    }
    TestWeight(const TestWeight&) = delete;
    TestWeight& operator=(const TestWeight&) = delete;
    const Weight& w() const { return mw.token_embd; }

    // Row r dequantized on the host (the exact reference's weights).
    std::vector<float> row(int64_t r) const {
        std::vector<float> y(size_t(w().n_in));
        dequantize_row(w().type, data.data() + size_t(r) * ggml_row_bytes(w().type, w().n_in), y.data(), w().n_in);
        return y;
    }
};

// Prepares a weight on the CUDA backend for the duration of a scope.
struct Prepared {
    Backend& cuda;
    TestWeight& tw;
    Prepared(Backend& c, TestWeight& t) : cuda(c), tw(t) { cuda.prepare_weights(tw.mw); }
    ~Prepared() { cuda.release_weights(tw.mw); }
};

const std::vector<GgmlType> kAllTypes = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                                         GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K,
                                         GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL,
                                         GgmlType::IQ4_XS, GgmlType::TQ1_0, GgmlType::TQ2_0, GgmlType::IQ2_XXS,
                                         GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
                                         GgmlType::IQ1_S, GgmlType::IQ1_M};

bool is_float_type(GgmlType t) { return t == GgmlType::F32 || t == GgmlType::F16 || t == GgmlType::BF16; }

void test_embed(Backend& cpu, Backend& cuda) {
    const std::vector<int32_t> ids = {0, 299, 17, 17, 150, 1};
    const int32_t n = int32_t(ids.size());
    for (GgmlType type : kAllTypes) {
        TestWeight tw(type, 512, 300, 11 + uint64_t(type), 0.7f);
        Prepared prep(cuda, tw);
        OwnedTensor oc(cpu, n, 512), og(cuda, n, 512);
        poison(cuda, og.t);
        cpu.embed(tw.w(), ids.data(), n, 1.5f, oc.t);
        cuda.embed(tw.w(), ids.data(), n, 1.5f, og.t);
        // The same block formulas on both sides: equal up to a fused multiply-add's last bit.
        expect_close("embed " + ggml_type_name(type), download(cpu, oc.t), download(cuda, og.t), 1e-6);
    }
    // Gemma 3 270M's table: 262144 rows of 640 Q8_0, scaled by sqrt(640); ids at both ends.
    const std::vector<int32_t> gids = {2, 262143, 131072, 105, 262143, 0, 77777};
    const int32_t gn = int32_t(gids.size());
    TestWeight tw(GgmlType::Q8_0, 640, 262144, 5, 0.02f);
    Prepared prep(cuda, tw);
    OwnedTensor oc(cpu, gn, 640), og(cuda, gn, 640);
    poison(cuda, og.t);
    cpu.embed(tw.w(), gids.data(), gn, std::sqrt(640.0f), oc.t);
    cuda.embed(tw.w(), gids.data(), gn, std::sqrt(640.0f), og.t);
    expect_close("embed Q8_0 640 x 262144 (gemma3), scale sqrt(640)", download(cpu, oc.t), download(cuda, og.t), 1e-6);
}

// W x[t] for every token with the GPU's GEMV arithmetic on the host (tests/gpu/q8_reference.h).
std::vector<float> q8_product(const TestWeight& tw, const std::vector<float>& x, int32_t nt) {
    const Weight& w = tw.w();
    const size_t row_bytes = ggml_row_bytes(w.type, w.n_in);
    const Q8Activations xa = quantize_activations_q8(x.data(), nt, w.n_in);
    std::vector<float> out(size_t(nt * w.n_out));
    for (int32_t t = 0; t < nt; ++t)
        for (int64_t r = 0; r < w.n_out; ++r)
            out[size_t(t * w.n_out + r)] = dot_row_q8(w.type, tw.data.data() + size_t(r) * row_bytes, xa, t);
    return out;
}

// One weight against the CPU backend and an exact double product, for each token count.
void matmul_case(Backend& cpu, Backend& cuda, GgmlType type, int64_t n_in, int64_t n_out, const std::vector<int32_t>& n_toks,
                 const std::string& label = "") {
    TestWeight tw(type, n_in, n_out, 100 + uint64_t(type) * 7 + uint64_t(n_in), 1.0f / std::sqrt(float(n_in)));
    Prepared prep(cuda, tw);
    // The exact reference needs the dequantized rows once per shape.
    std::vector<std::vector<float>> rows;
    for (int64_t r = 0; r < n_out; ++r) rows.push_back(tw.row(r));
    for (int32_t nt : n_toks) {
        const std::vector<float> x = random_floats(size_t(nt * n_in), uint64_t(nt) * 31 + uint64_t(n_out));
        OwnedTensor xc(cpu, nt, n_in), xg(cuda, nt, n_in), oc(cpu, nt, n_out), og(cuda, nt, n_out);
        upload(cpu, xc.t, x);
        upload(cuda, xg.t, x);
        poison(cuda, og.t);
        cpu.matmul(tw.w(), xc.t, oc.t);
        cuda.matmul(tw.w(), xg.t, og.t);
        const std::vector<float> got = download(cuda, og.t);

        std::vector<float> exact(size_t(nt * n_out));
        for (int32_t t = 0; t < nt; ++t)
            for (int64_t r = 0; r < n_out; ++r) {
                double acc = 0.0;
                for (int64_t i = 0; i < n_in; ++i) acc += double(rows[size_t(r)][size_t(i)]) * double(x[size_t(t * n_in + i)]);
                exact[size_t(t * n_out + r)] = float(acc);
            }
        const std::string what = "matmul " + ggml_type_name(type) + " " + std::to_string(n_in) + "x" + std::to_string(n_out) +
                                 " tokens " + std::to_string(nt) + label;
        // GEMV (<= 32 tokens): float weights in float32 throughout; quantized weights with 8-bit
        // activations (about 0.5 % relative error against exact), checked tightly against the host
        // emulation of the same integer arithmetic. The cuBLAS path rounds both operands to f16
        // (F32 weights stay f32).
        const bool gemv = nt <= cuda::kGemvMaxBatch;
        const bool q8 = gemv && cuda::has_int_part(type);
        const double exact_tol = q8 ? 2e-2 : gemv || type == GgmlType::F32 ? 2e-5 : 3e-3;
        expect_close(what + " vs exact", exact, got, exact_tol);
        if (q8) expect_close(what + " vs q8 emulation", q8_product(tw, x, nt), got, 2e-5);
        // The CPU rounds activations to 8 bits for quantized types (llama.cpp's scheme).
        expect_close(what + " vs cpu", download(cpu, oc.t), got, is_float_type(type) ? 3e-3 : 3e-2);
    }
}

void test_matmul(Backend& cpu, Backend& cuda) {
    struct Shape {
        int64_t n_in, n_out;
    };
    const std::vector<Shape> shapes = {{256, 96}, {512, 1000}, {1536, 576}};
    // Decode, one and several GEMV token groups up to kGemvMaxBatch (32), then cuBLAS.
    const std::vector<int32_t> n_toks = {1, 3, 8, 9, 32, 33, 64};
    for (GgmlType type : kAllTypes)
        for (const Shape& s : shapes) matmul_case(cpu, cuda, type, s.n_in, s.n_out, n_toks);

    // Gemma 3 270M's matrices with the types of its Q4_K_M file. Rows of 640 are 20 legacy blocks:
    // lanes 20..31 of each GEMV warp have no part to work on.
    struct GemmaCase {
        GgmlType type;
        int64_t n_in, n_out;
        const char* role;
    };
    const std::vector<GemmaCase> gemma = {
        {GgmlType::Q5_0, 640, 1024, "attn_q"},   {GgmlType::Q5_0, 640, 256, "attn_k"},
        {GgmlType::Q8_0, 640, 256, "attn_v"},    {GgmlType::Q5_0, 640, 256, "attn_v"},
        {GgmlType::Q4_K, 1024, 640, "attn_output"}, {GgmlType::Q5_0, 640, 2048, "ffn_gate/up"},
        {GgmlType::Q6_K, 2048, 640, "ffn_down"}, {GgmlType::Q4_K, 2048, 640, "ffn_down"},
    };
    for (const GemmaCase& g : gemma) matmul_case(cpu, cuda, g.type, g.n_in, g.n_out, n_toks, std::string(" (gemma3 ") + g.role + ")");
    // The tied output matrix: 262144 rows (65536 GEMV blocks), one decode token and one small batch.
    matmul_case(cpu, cuda, GgmlType::Q8_0, 640, 262144, {1, 9}, " (gemma3 output)");
}

// Consecutive matmuls of the same input share its 8-bit quantization (MatmulWorkspace::forget_q8).
// Each product here must still see the input as it is at that moment: after another matmul wrote
// over it, after an add changed it in place, and with another weight type in between.
void test_matmul_input_reuse(Backend& cuda) {
    constexpr int64_t n = 256;
    TestWeight wa(GgmlType::Q4_0, n, n, 901, 0.06f), wb(GgmlType::Q6_K, n, n, 902, 0.06f);
    TestWeight wf(GgmlType::F16, n, n, 905, 0.06f);
    Prepared pa(cuda, wa), pb(cuda, wb), pf(cuda, wf);
    for (int32_t nt : {1, 5}) {
        std::vector<float> x = random_floats(size_t(nt * n), 903);
        const std::vector<float> y = random_floats(size_t(nt * n), 904);
        OwnedTensor xg(cuda, nt, n), yg(cuda, nt, n), o1(cuda, nt, n), o2(cuda, nt, n), o3(cuda, nt, n);
        upload(cuda, xg.t, x);
        upload(cuda, yg.t, y);
        const std::string tag = " (tokens " + std::to_string(nt) + ")";

        cuda.matmul(wa.w(), xg.t, o1.t);  // quantizes x
        cuda.matmul(wb.w(), xg.t, o2.t);  // reuses it, another weight type
        expect_close("reuse: first product" + tag, q8_product(wa, x, nt), download(cuda, o1.t), 2e-5);
        expect_close("reuse: second product of the same input" + tag, q8_product(wb, x, nt), download(cuda, o2.t), 2e-5);

        cuda.matmul(wa.w(), xg.t, o1.t);  // quantizes x
        cuda.matmul(wf.w(), o1.t, xg.t);  // a float-weight GEMV (no quantization) writes over x
        cuda.matmul(wa.w(), xg.t, o3.t);
        const std::vector<float> x2 = download(cuda, xg.t);
        expect_close("reuse: input rewritten by a float-weight matmul" + tag, q8_product(wa, x2, nt), download(cuda, o3.t), 2e-5);

        cuda.matmul(wa.w(), yg.t, o1.t);
        cuda.add(yg.t, o1.t);  // changes the quantized input in place
        cuda.matmul(wa.w(), yg.t, o2.t);
        const std::vector<float> y2 = download(cuda, yg.t);
        expect_close("reuse: input changed by add" + tag, q8_product(wa, y2, nt), download(cuda, o2.t), 2e-5);
    }
    // A NaN in the input of the 8-bit GEMV reaches every output row, as it does in float.
    std::vector<float> x = random_floats(size_t(n), 906);
    x[37] = NAN;
    OwnedTensor xg(cuda, 1, n), og(cuda, 1, n);
    upload(cuda, xg.t, x);
    upload(cuda, og.t, std::vector<float>(size_t(n), 0.0f));  // finite before: NaN must come from the kernel
    cuda.matmul(wa.w(), xg.t, og.t);
    const std::vector<float> got = download(cuda, og.t);
    report(std::all_of(got.begin(), got.end(), [](float v) { return std::isnan(v); }), "GEMV Q4_0: a NaN input gives NaN outputs");
}

// The fused forms (one launch for q/k/v, one for gate/up with the activation) against the separate
// operations on the GPU: the same arithmetic per element, so equal up to the compiler's fused
// multiply-adds. Mixed types and prefill batches take the separate operations (defaults).
void test_fused_matmuls(Backend& cuda) {
    // Rows of 768 (whole K-quant super-blocks); a q of 70 rows leaves the last block of its rows
    // part-idle in the middle of the launch.
    constexpr int64_t n_in = 768, q_dim = 70, kv_dim = 192, n_ff = 1536;
    struct Qkv {
        GgmlType q, k, v;
    };
    for (const Qkv& types : {Qkv{GgmlType::Q4_1, GgmlType::Q4_1, GgmlType::Q4_1}, Qkv{GgmlType::Q5_0, GgmlType::Q5_0, GgmlType::Q8_0},
                             Qkv{GgmlType::Q6_K, GgmlType::Q6_K, GgmlType::Q6_K}}) {
        TestWeight wq(types.q, n_in, q_dim, 911, 0.04f), wk(types.k, n_in, kv_dim, 912, 0.04f), wv(types.v, n_in, kv_dim, 913, 0.04f);
        Prepared pq(cuda, wq), pk(cuda, wk), pv(cuda, wv);
        for (int32_t nt : {1, 4, 12}) {
            const std::vector<float> x = random_floats(size_t(nt * n_in), 914 + uint64_t(nt));
            OwnedTensor xg(cuda, nt, n_in), q0(cuda, nt, q_dim), k0(cuda, nt, kv_dim), v0(cuda, nt, kv_dim);
            OwnedTensor q1(cuda, nt, q_dim), k1(cuda, nt, kv_dim), v1(cuda, nt, kv_dim);
            upload(cuda, xg.t, x);
            for (OwnedTensor* o : {&q1, &k1, &v1}) poison(cuda, o->t);
            // The fused form first, so it quantizes the input itself.
            const Weight* ws[3] = {&wq.w(), &wk.w(), &wv.w()};
            Tensor* outs[3] = {&q1.t, &k1.t, &v1.t};
            cuda.matmul_shared(xg.t, ws, outs, 3);
            cuda.matmul(wq.w(), xg.t, q0.t);
            cuda.matmul(wk.w(), xg.t, k0.t);
            cuda.matmul(wv.w(), xg.t, v0.t);
            const std::string what = "matmul_shared " + ggml_type_name(types.q) + "/" + ggml_type_name(types.k) + "/" +
                                     ggml_type_name(types.v) + " tokens " + std::to_string(nt);
            expect_close(what + " q vs matmul", download(cuda, q0.t), download(cuda, q1.t), 1e-6);
            expect_close(what + " k vs matmul", download(cuda, k0.t), download(cuda, k1.t), 1e-6);
            expect_close(what + " v vs matmul", download(cuda, v0.t), download(cuda, v1.t), 1e-6);
        }
    }
    for (GgmlType type : {GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q4_K})
        for (Activation act : {Activation::SILU, Activation::GELU_TANH}) {
            TestWeight wg(type, n_in, n_ff, 921, 0.04f), wu(type, n_in, n_ff, 922, 0.04f);
            Prepared pg(cuda, wg), pu(cuda, wu);
            for (int32_t nt : {1, 4, 12}) {
                const std::vector<float> x = random_floats(size_t(nt * n_in), 923 + uint64_t(nt));
                OwnedTensor xg(cuda, nt, n_in), g0(cuda, nt, n_ff), u0(cuda, nt, n_ff), g1(cuda, nt, n_ff), u1(cuda, nt, n_ff);
                upload(cuda, xg.t, x);
                poison(cuda, g1.t);
                cuda.matmul(wg.w(), xg.t, g0.t);
                cuda.matmul(wu.w(), xg.t, u0.t);
                cuda.glu(g0.t, u0.t, act, g0.t);
                cuda.matmul_glu(wg.w(), wu.w(), xg.t, act, u1.t, g1.t);
                expect_close("matmul_glu " + ggml_type_name(type) + (act == Activation::SILU ? " silu" : " gelu") + " tokens " +
                                 std::to_string(nt) + " vs matmul, matmul, glu",
                             download(cuda, g0.t), download(cuda, g1.t), 1e-5);
            }
        }
}

void test_rms_norm(Backend& cpu, Backend& cuda) {
    struct Case {
        int64_t rows, cols, group;
        bool in_place;
        float eps = 1e-5f;
    };
    const std::vector<Case> cases = {
        {3, 576, 576, false}, {2, 576, 64, false}, {5, 4096, 4096, true}, {1, 2048, 256, true},
        // Gemma 3 270M (eps 1e-6): rows of 640, q heads (4 x 256) and the k head normalised per head.
        {7, 640, 640, false, 1e-6f}, {7, 1024, 256, false, 1e-6f}, {7, 256, 256, false, 1e-6f}, {1, 640, 640, true, 1e-6f},
    };
    for (const Case& c : cases) {
        TestWeight gain(GgmlType::F32, c.group, 1, uint64_t(c.cols + c.group), 0.2f, 1.0f);
        Prepared prep(cuda, gain);
        const std::vector<float> x = random_floats(size_t(c.rows * c.cols), uint64_t(c.cols), 3.0f);
        OwnedTensor xc(cpu, c.rows, c.cols), xg(cuda, c.rows, c.cols), oc(cpu, c.rows, c.cols), og(cuda, c.rows, c.cols);
        upload(cpu, xc.t, x);
        upload(cuda, xg.t, x);
        poison(cuda, og.t);
        Tensor& outc = c.in_place ? xc.t : oc.t;
        Tensor& outg = c.in_place ? xg.t : og.t;
        cpu.rms_norm(xc.t, gain.w(), c.eps, c.group, outc);
        cuda.rms_norm(xg.t, gain.w(), c.eps, c.group, outg);
        expect_close("rms_norm " + std::to_string(c.rows) + "x" + std::to_string(c.cols) + " group " + std::to_string(c.group) +
                         (c.in_place ? " in place" : "") + (c.eps != 1e-5f ? " eps 1e-6" : ""),
                     download(cpu, outc), download(cuda, outg), 1e-6);
    }
}

// The residual add fused with the next norm (one kernel) against the CPU's add then rms_norm: the new
// x and the normalised output, also with the output written over the residual (Gemma's xn).
void test_add_rms_norm(Backend& cpu, Backend& cuda) {
    for (int64_t cols : {576, 640, 4096})
        for (bool out_is_y : {false, true}) {
            constexpr int64_t rows = 3;
            TestWeight gain(GgmlType::F32, cols, 1, uint64_t(cols) + 7, 0.2f, 1.0f);
            Prepared prep(cuda, gain);
            const std::vector<float> x = random_floats(size_t(rows * cols), uint64_t(cols) + 1, 3.0f);
            const std::vector<float> y = random_floats(size_t(rows * cols), uint64_t(cols) + 2, 0.5f);
            OwnedTensor xc(cpu, rows, cols), yc(cpu, rows, cols), oc(cpu, rows, cols);
            OwnedTensor xg(cuda, rows, cols), yg(cuda, rows, cols), og(cuda, rows, cols);
            upload(cpu, xc.t, x);
            upload(cpu, yc.t, y);
            upload(cuda, xg.t, x);
            upload(cuda, yg.t, y);
            poison(cuda, og.t);
            Tensor& outc = out_is_y ? yc.t : oc.t;
            Tensor& outg = out_is_y ? yg.t : og.t;
            cpu.add(xc.t, yc.t);
            cpu.rms_norm(xc.t, gain.w(), 1e-6f, cols, outc);
            cuda.add_rms_norm(xg.t, yg.t, gain.w(), 1e-6f, outg);
            const std::string what = "add_rms_norm " + std::to_string(rows) + "x" + std::to_string(cols) + (out_is_y ? " (out = y)" : "");
            expect_close(what + ": x + y", download(cpu, xc.t), download(cuda, xg.t), 0.0);
            expect_close(what + ": rmsnorm(x + y)", download(cpu, outc), download(cuda, outg), 1e-6);
        }
}

// A whole-row norm of a decode-sized batch also writes its output's 8-bit parts, which the next
// matmuls use instead of quantizing it again: their products must equal the host emulation of the
// GEMV on the norm's float output, for rms_norm and add_rms_norm (also with out = y), and a later
// add must not leave them stale.
void test_norm_feeds_gemv(Backend& cuda) {
    constexpr int64_t cols = 640, n_out = 300;
    TestWeight gain(GgmlType::F32, cols, 1, 931, 0.2f, 1.0f), w(GgmlType::Q5_0, cols, n_out, 932, 0.04f);
    Prepared pg(cuda, gain), pw(cuda, w);
    for (int32_t rows : {1, 5}) {
        const std::string tag = " (" + std::to_string(rows) + " rows)";
        OwnedTensor x(cuda, rows, cols), y(cuda, rows, cols), out(cuda, rows, cols), prod(cuda, rows, n_out);
        upload(cuda, x.t, random_floats(size_t(rows * cols), 933, 2.0f));
        upload(cuda, y.t, random_floats(size_t(rows * cols), 934, 0.5f));

        cuda.rms_norm(x.t, gain.w(), 1e-6f, cols, out.t);
        cuda.matmul(w.w(), out.t, prod.t);
        expect_close("rms_norm then GEMV" + tag, q8_product(w, download(cuda, out.t), rows), download(cuda, prod.t), 2e-5);

        cuda.add_rms_norm(x.t, y.t, gain.w(), 1e-6f, y.t);  // out = y, as Gemma's residual step
        cuda.matmul(w.w(), y.t, prod.t);
        expect_close("add_rms_norm (out = y) then GEMV" + tag, q8_product(w, download(cuda, y.t), rows),
                     download(cuda, prod.t), 2e-5);

        cuda.rms_norm(x.t, gain.w(), 1e-6f, cols, out.t);
        cuda.add(out.t, x.t);  // changes the normalised output after its parts were written
        cuda.matmul(w.w(), out.t, prod.t);
        expect_close("rms_norm, add, then GEMV" + tag, q8_product(w, download(cuda, out.t), rows), download(cuda, prod.t), 2e-5);
    }
}

// The rope of `rows` rows of p's heads at scattered positions, CPU against CUDA.
void check_rope(Backend& cpu, Backend& cuda, const RopeParams& p, int64_t rows, const std::string& tag) {
    const int64_t cols = int64_t(p.n_head) * p.head_dim;
    std::vector<int32_t> pos(static_cast<size_t>(rows));
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t((i * 977 + 13) % 4000);
    const std::vector<float> x = random_floats(size_t(rows * cols), uint64_t(cols + rows));
    OwnedTensor xc(cpu, rows, cols), xg(cuda, rows, cols);
    upload(cpu, xc.t, x);
    upload(cuda, xg.t, x);
    cpu.rope(xc.t, p, pos.data());
    cuda.rope(xg.t, p, pos.data());
    expect_close(std::string("rope ") + (p.mode == RopeMode::NEOX ? "neox" : "normal") + " heads " +
                     std::to_string(p.n_head) + " dim " + std::to_string(p.head_dim) + " rot " + std::to_string(p.n_rot) +
                     " base " + std::to_string(int64_t(p.base)) + tag,
                 download(cpu, xc.t), download(cuda, xg.t), 1e-5);
}

void test_rope(Backend& cpu, Backend& cuda) {
    struct Case {
        RopeParams p;
        int64_t rows;
    };
    const std::vector<Case> cases = {
        {{9, 64, 64, 100000.0f, 1.0f, RopeMode::NORMAL}, 5},
        {{3, 64, 64, 100000.0f, 1.0f, RopeMode::NORMAL}, 1},
        {{4, 128, 64, 10000.0f, 0.5f, RopeMode::NEOX}, 7},
        {{8, 256, 256, 1000000.0f, 1.0f, RopeMode::NEOX}, 3},
        // Gemma 3 270M: q (4 heads) and k (1 head) of 256, NEOX, global base 1e6 and local base 1e4.
        {{4, 256, 256, 1000000.0f, 1.0f, RopeMode::NEOX}, 6},
        {{1, 256, 256, 1000000.0f, 1.0f, RopeMode::NEOX}, 6},
        {{4, 256, 256, 10000.0f, 1.0f, RopeMode::NEOX}, 6},
        {{1, 256, 256, 10000.0f, 1.0f, RopeMode::NEOX}, 6},
    };
    for (const Case& c : cases) check_rope(cpu, cuda, c.p, c.rows, "");
    // Llama 3.1's frequency factors (NORMAL pairs, divisors between 1 and 8) and YaRN (a Qwen-style
    // NEOX head with factor 4 over an original context of 4096), alone and together.
    TestWeight factors(GgmlType::F32, 32, 1, 77, 2.0f, 4.5f);
    Prepared prepared(cuda, factors);
    RopeParams llama31{8, 64, 64, 500000.0f, 1.0f, RopeMode::NORMAL};
    llama31.freq_factors = &factors.w();
    check_rope(cpu, cuda, llama31, 5, " rope_freqs");
    RopeParams yarn{4, 64, 64, 1000000.0f, 0.25f, RopeMode::NEOX};
    yarn.ext_factor = 1.0f;
    yarn.attn_factor = 0.8f;
    yarn.n_ctx_orig = 4096;
    check_rope(cpu, cuda, yarn, 6, " yarn");
    yarn.freq_factors = &factors.w();
    check_rope(cpu, cuda, yarn, 6, " yarn rope_freqs");
}

void test_softcap(Backend& cpu, Backend& cuda) {
    const int64_t rows = 3, cols = 1000;
    const std::vector<float> x = random_floats(size_t(rows * cols), 41, 40.0f);
    OwnedTensor xc(cpu, rows, cols), xg(cuda, rows, cols);
    upload(cpu, xc.t, x);
    upload(cuda, xg.t, x);
    cpu.softcap(xc.t, 30.0f);
    cuda.softcap(xg.t, 30.0f);
    expect_close("softcap 30", download(cpu, xc.t), download(cuda, xg.t), 1e-5);
}

void test_add_bias(Backend& cpu, Backend& cuda) {
    for (int64_t rows : {1, 7}) {
        const int64_t cols = 320;
        TestWeight bias(GgmlType::F32, cols, 1, uint64_t(rows) + 5, 0.5f, 0.1f);
        Prepared prepared(cuda, bias);
        const std::vector<float> x = random_floats(size_t(rows * cols), uint64_t(rows) + 6);
        OwnedTensor xc(cpu, rows, cols), xg(cuda, rows, cols);
        upload(cpu, xc.t, x);
        upload(cuda, xg.t, x);
        cpu.add_bias(xc.t, bias.w());
        cuda.add_bias(xg.t, bias.w());
        expect_close("add_bias rows " + std::to_string(rows), download(cpu, xc.t), download(cuda, xg.t), 0.0);
    }
}

void test_glu_add(Backend& cpu, Backend& cuda) {
    // Gemma 3 270M's FFN width (GELU only); the general case below covers both activations.
    {
        const int64_t rows = 9, cols = 2048;
        const std::vector<float> g = random_floats(size_t(rows * cols), 15, 4.0f), u = random_floats(size_t(rows * cols), 16);
        OwnedTensor gc(cpu, rows, cols), uc(cpu, rows, cols), gg(cuda, rows, cols), ug(cuda, rows, cols), og(cuda, rows, cols);
        upload(cpu, gc.t, g);
        upload(cpu, uc.t, u);
        upload(cuda, gg.t, g);
        upload(cuda, ug.t, u);
        poison(cuda, og.t);
        cpu.glu(gc.t, uc.t, Activation::GELU_TANH, gc.t);
        cuda.glu(gg.t, ug.t, Activation::GELU_TANH, og.t);
        expect_close("glu gelu_tanh 9x2048 (gemma3 FFN)", download(cpu, gc.t), download(cuda, og.t), 2e-3);
    }
    const int64_t rows = 3, cols = 1536;
    const std::vector<float> g = random_floats(size_t(rows * cols), 5, 3.0f), u = random_floats(size_t(rows * cols), 6);
    for (Activation act : {Activation::SILU, Activation::GELU_TANH}) {
        OwnedTensor gc(cpu, rows, cols), uc(cpu, rows, cols), gg(cuda, rows, cols), ug(cuda, rows, cols), og(cuda, rows, cols);
        upload(cpu, gc.t, g);
        upload(cpu, uc.t, u);
        upload(cuda, gg.t, g);
        upload(cuda, ug.t, u);
        poison(cuda, og.t);
        cpu.glu(gc.t, uc.t, act, gc.t);  // in place, as the forward pass calls it
        cuda.glu(gg.t, ug.t, act, og.t);
        // SiLU: the same formula, exp differing in the last bits. GELU: the CPU follows llama.cpp and
        // looks the result up in a table of f16 values indexed by the f16-rounded input (two f16
        // roundings, ~3e-4 each); the GPU evaluates the formula in float.
        const double tol = act == Activation::SILU ? 1e-6 : 2e-3;
        expect_close(std::string("glu ") + (act == Activation::SILU ? "silu" : "gelu_tanh"), download(cpu, gc.t),
                     download(cuda, og.t), tol);
    }
    OwnedTensor xc(cpu, rows, cols), yc(cpu, rows, cols), xg(cuda, rows, cols), yg(cuda, rows, cols);
    upload(cpu, xc.t, g);
    upload(cpu, yc.t, u);
    upload(cuda, xg.t, g);
    upload(cuda, yg.t, u);
    cpu.add(xc.t, yc.t);
    cuda.add(xg.t, yg.t);
    expect_close("add", download(cpu, xc.t), download(cuda, xg.t), 1e-7);
}

// Attention parameters with scale 1/sqrt(head_dim), set by name (AttentionParams grows fields).
AttentionParams attention_params(int32_t n_head, int32_t n_head_kv, int32_t head_dim, int32_t window, bool scale_q = false) {
    AttentionParams p;
    p.n_head = n_head;
    p.n_head_kv = n_head_kv;
    p.head_dim = head_dim;
    p.scale = 1.0f / std::sqrt(float(head_dim));
    p.window = window;
    p.scale_q = scale_q;
    return p;
}

// K/V stored by each backend into its own cache, then attention over it, in the batches of a chat:
// a prefill crossing a block boundary, one decode step, a longer continuation, and (with a window)
// more steps after the cache has released the blocks the window left behind (null table entries).
void test_attention(Backend& cpu, Backend& cuda) {
    struct Case {
        int32_t n_head, n_head_kv, head_dim, window;
        bool scale_q = false;
        float softcap = 0.0f;
    };
    // The last two: Gemma 3 270M's heads (4 / 1 of 256) with q scaled before its f16 rounding, global
    // and with a window that releases blocks.
    const std::vector<Case> cases = {{9, 3, 64, 0},   {32, 32, 128, 0},     {8, 1, 256, 0},      {16, 1, 64, 0},
                                     {4, 2, 80, 0},   {9, 3, 64, 100},      {4, 1, 256, 0, true}, {4, 1, 256, 100, true},
                                     // Gemma 2's soft-capped scores (a cap low enough to bend these
                                     // random scores), with q scaled and a window.
                                     {8, 4, 256, 100, true, 2.0f}};
    for (const Case& c : cases) {
        KvCacheConfig kc;
        kc.n_layer = 2;
        kc.n_head_kv = c.n_head_kv;
        kc.head_dim = c.head_dim;
        kc.n_ctx = 1024;
        if (c.window > 0) {
            kc.layer_is_swa = {true, true};
            kc.sliding_window = c.window;
        }
        KvCache kv_cpu(kc, cpu), kv_gpu(kc, cuda);
        AttentionParams ap = attention_params(c.n_head, c.n_head_kv, c.head_dim, c.window, c.scale_q);
        ap.softcap = c.softcap;
        const std::string name = "attention heads " + std::to_string(c.n_head) + "/" + std::to_string(c.n_head_kv) + " dim " +
                                 std::to_string(c.head_dim) + (c.window ? " window " + std::to_string(c.window) : "") +
                                 (c.scale_q ? " scale_q" : "") + (c.softcap > 0 ? " softcap" : "");
        const int64_t q_dim = int64_t(c.n_head) * c.head_dim, kv_dim = int64_t(c.n_head_kv) * c.head_dim;
        int32_t pos0 = 0;
        const int32_t il = 1;  // the second layer: block tables are per layer
        // 351 positions stored: a window of 100 has released block 0 before the last two batches.
        for (int32_t n : {150, 1, 200, 1, 60}) {
            kv_cpu.reserve(pos0 + n);
            kv_gpu.reserve(pos0 + n);
            const std::vector<float> q = random_floats(size_t(n * q_dim), uint64_t(pos0 * 3 + 1), 1.5f);
            const std::vector<float> k = random_floats(size_t(n * kv_dim), uint64_t(pos0 * 3 + 2), 1.5f);
            const std::vector<float> v = random_floats(size_t(n * kv_dim), uint64_t(pos0 * 3 + 3));
            OwnedTensor qc(cpu, n, q_dim), kc_(cpu, n, kv_dim), vc(cpu, n, kv_dim), oc(cpu, n, q_dim);
            OwnedTensor qg(cuda, n, q_dim), kg(cuda, n, kv_dim), vg(cuda, n, kv_dim), og(cuda, n, q_dim);
            upload(cpu, qc.t, q);
            upload(cpu, kc_.t, k);
            upload(cpu, vc.t, v);
            upload(cuda, qg.t, q);
            upload(cuda, kg.t, k);
            upload(cuda, vg.t, v);
            poison(cuda, og.t);
            cpu.kv_store(kv_cpu, il, kc_.t, vc.t, pos0);
            cuda.kv_store(kv_gpu, il, kg.t, vg.t, pos0);
            // Capture the probabilities of the first and the last head (the inspector's hook).
            const std::vector<int32_t> heads = {0, c.n_head - 1};
            const size_t n_cap = heads.size() * size_t(n) * size_t(pos0 + n);
            std::vector<float> cap_cpu(n_cap), cap_gpu(n_cap, std::nanf(""));
            AttentionParams apc = ap, apg = ap;
            apc.capture_heads = apg.capture_heads = heads.data();
            apc.n_capture_heads = apg.n_capture_heads = int32_t(heads.size());
            apc.capture_probs = cap_cpu.data();
            apg.capture_probs = cap_gpu.data();
            cpu.attention(qc.t, kv_cpu, il, pos0, apc, oc.t);
            cuda.attention(qg.t, kv_gpu, il, pos0, apg, og.t);
            const std::string at = " pos0 " + std::to_string(pos0) + " rows " + std::to_string(n);
            // The CPU rounds the probabilities to f16 before weighting V; the GPU keeps them in f32.
            expect_close(name + at, download(cpu, oc.t), download(cuda, og.t), 2e-3);
            expect_close(name + at + " captured probabilities", cap_cpu, cap_gpu, 1e-4);
            // Each captured row is a distribution over the visible keys: sums to 1, exact zeros elsewhere.
            double worst_sum = 0.0;
            size_t masked_nonzero = 0;
            for (size_t hr = 0; hr < heads.size() * size_t(n); ++hr) {
                const int32_t pos = pos0 + int32_t(hr % size_t(n));
                const int32_t first = c.window > 0 ? std::max(0, pos - c.window + 1) : 0;
                double sum = 0.0;
                for (int32_t j = 0; j < pos0 + n; ++j) {
                    const float pj = cap_gpu[hr * size_t(pos0 + n) + size_t(j)];
                    sum += pj;
                    if ((j < first || j > pos) && pj != 0.0f) ++masked_nonzero;
                }
                worst_sum = std::max(worst_sum, std::fabs(sum - 1.0));
            }
            report(worst_sum <= 1e-4 && masked_nonzero == 0, name + at + " captured rows sum to 1 (worst |sum - 1| " +
                                                                 std::to_string(worst_sum) + "), masked keys 0 (" +
                                                                 std::to_string(masked_nonzero) + " not)");
            pos0 += n;
            kv_cpu.set_n_tokens(pos0);
            kv_gpu.set_n_tokens(pos0);
        }
        // The stored f16 rows must be identical, bit for bit (both round to nearest even).
        size_t diff = 0;
        std::vector<uint16_t> rowg(static_cast<size_t>(kv_dim));
        for (int32_t p = std::max(0, pos0 - (c.window ? c.window : pos0)); p < pos0; ++p)
            for (int kind = 0; kind < 2; ++kind) {
                const void* src_c = kind == 0 ? kv_cpu.k_row(il, p) : kv_cpu.v_row(il, p);
                const void* src_g = kind == 0 ? kv_gpu.k_row(il, p) : kv_gpu.v_row(il, p);
                cudaMemcpy(rowg.data(), src_g, size_t(kv_dim) * 2, cudaMemcpyDeviceToHost);
                if (std::memcmp(rowg.data(), src_c, size_t(kv_dim) * 2) != 0) ++diff;
            }
        report(diff == 0, name + " KV rows stored bit-identical (" + std::to_string(diff) + " rows differ)");
        if (c.window > 0)
            report(kv_gpu.blocks(il)[0] == nullptr && kv_gpu.blocks(il)[1] == nullptr,
                   name + " released the blocks outside the window");
    }
}

// AttentionParams::scale_q where it changes the result: q so small that q * scale (1/16) lies deep in
// f16's subnormal range (steps of 6e-8), keys near f16's largest values (|k| 5e4 .. 6e4) for O(1)
// scores. Rounding q*scale keeps about 4 significant bits there, rounding q about 8, so the two
// conventions give visibly different softmaxes. The GPU must follow the CPU in both; the CPU's two
// results must differ by well over the tolerances, or this case could not tell a kernel that ignores
// scale_q from one that honours it. Measured on the CPU with a float emulation of the kernel: the
// conventions differ by rel_l2 1.1e-2 (output) and 1.2e-2 (probabilities); the emulation honouring
// scale_q is 1.9e-4 and 8e-8 from the CPU, one ignoring it 1.1e-2 and 1.2e-2.
void test_attention_scale_q(Backend& cpu, Backend& cuda) {
    const int32_t n_head = 4, n_head_kv = 1, head_dim = 256, n = 40;
    KvCacheConfig kc;
    kc.n_layer = 1;
    kc.n_head_kv = n_head_kv;
    kc.head_dim = head_dim;
    kc.n_ctx = 256;
    KvCache kv_cpu(kc, cpu), kv_gpu(kc, cuda);
    const int64_t q_dim = int64_t(n_head) * head_dim, kv_dim = int64_t(n_head_kv) * head_dim;
    kv_cpu.reserve(n);
    kv_gpu.reserve(n);
    const std::vector<float> q = random_floats(size_t(n * q_dim), 901, 1.5e-5f);
    std::vector<float> k = random_floats(size_t(n * kv_dim), 902);  // |x| <= 3.47: |k| in 5e4 .. 6e4 < f16 max
    for (float& x : k) x = std::copysign(5e4f + 1e4f * std::min(1.0f, std::fabs(x) / 3.5f), x);
    const std::vector<float> v = random_floats(size_t(n * kv_dim), 903);
    OwnedTensor qc(cpu, n, q_dim), kc_(cpu, n, kv_dim), vc(cpu, n, kv_dim);
    OwnedTensor qg(cuda, n, q_dim), kg(cuda, n, kv_dim), vg(cuda, n, kv_dim);
    upload(cpu, qc.t, q);
    upload(cpu, kc_.t, k);
    upload(cpu, vc.t, v);
    upload(cuda, qg.t, q);
    upload(cuda, kg.t, k);
    upload(cuda, vg.t, v);
    cpu.kv_store(kv_cpu, 0, kc_.t, vc.t, 0);
    cuda.kv_store(kv_gpu, 0, kg.t, vg.t, 0);
    kv_cpu.set_n_tokens(n);
    kv_gpu.set_n_tokens(n);

    // Prefill rows (all n) and one decode row (the last), each with both conventions.
    std::vector<float> out_c[2], out_g[2], cap_c[2], cap_g[2];
    const std::vector<int32_t> heads = {0, 1, 2, 3};
    for (int conv = 0; conv < 2; ++conv) {
        AttentionParams apc = attention_params(n_head, n_head_kv, head_dim, 0, conv == 1), apg = apc;
        for (const bool decode : {false, true}) {
            const int32_t rows = decode ? 1 : n, pos0 = decode ? n - 1 : 0;
            OwnedTensor oc(cpu, rows, q_dim), og(cuda, rows, q_dim);
            poison(cuda, og.t);
            const size_t n_cap = heads.size() * size_t(rows) * size_t(pos0 + rows);
            std::vector<float> cc(n_cap), cg(n_cap, std::nanf(""));
            apc.capture_heads = apg.capture_heads = heads.data();
            apc.n_capture_heads = apg.n_capture_heads = int32_t(heads.size());
            apc.capture_probs = cc.data();
            apg.capture_probs = cg.data();
            const Tensor qrc = qc.t.rows(pos0, rows), qrg = qg.t.rows(pos0, rows);
            cpu.attention(qrc, kv_cpu, 0, pos0, apc, oc.t);
            cuda.attention(qrg, kv_gpu, 0, pos0, apg, og.t);
            const std::vector<float> oc_h = download(cpu, oc.t), og_h = download(cuda, og.t);
            out_c[conv].insert(out_c[conv].end(), oc_h.begin(), oc_h.end());
            out_g[conv].insert(out_g[conv].end(), og_h.begin(), og_h.end());
            cap_c[conv].insert(cap_c[conv].end(), cc.begin(), cc.end());
            cap_g[conv].insert(cap_g[conv].end(), cg.begin(), cg.end());
        }
    }
    const ErrorStats conv_diff = compare(out_c[0], out_c[1]), conv_cap = compare(cap_c[0], cap_c[1]);
    char buf[240];
    std::snprintf(buf, sizeof buf,
                  "attention scale_q, q*scale in f16's subnormal range: the CPU's two conventions differ (output rel_l2 "
                  "%.3g >= 5e-3, probabilities %.3g >= 1e-3)",
                  conv_diff.rel_l2, conv_cap.rel_l2);
    report(conv_diff.rel_l2 >= 5e-3 && conv_cap.rel_l2 >= 1e-3, buf);
    for (int conv = 0; conv < 2; ++conv) {
        const std::string what = std::string("attention ") + (conv ? "scale_q (f16(q*scale))" : "scaled dot (f16(q)*scale)") +
                                 ", subnormal q*scale, prefill + decode vs cpu";
        expect_close(what, out_c[conv], out_g[conv], 2e-3);
        expect_close(what + " captured probabilities", cap_c[conv], cap_g[conv], 1e-4);
    }
}

// Decode steps through the CUDA graph path (Backend::decode_step_begin/end), as Session runs them:
// each step stores K/V on a sliding-window layer (Gemma 3's local layers: the cache releases its
// old blocks as the window moves on, leaving null entries in the block table) and on a global layer
// and attends on both; from the third step on, the backend replays its recording with the position
// read from device memory. Halfway, a long eager prefill makes the attention scratch grow: the
// recording, which points at the old scratch, must be dropped and made again. Every step's output
// is compared with the CPU backend.
void test_decode_graph(Backend& cpu, Backend& cuda) {
    const int32_t n_head = 4, n_head_kv = 1, head_dim = 256, window = 100;
    KvCacheConfig kc;
    kc.n_layer = 2;
    kc.n_head_kv = n_head_kv;
    kc.head_dim = head_dim;
    kc.n_ctx = 1024;
    kc.layer_is_swa = {true, false};
    kc.sliding_window = window;
    KvCache kv_cpu(kc, cpu), kv_gpu(kc, cuda);
    const int64_t q_dim = int64_t(n_head) * head_dim, kv_dim = int64_t(n_head_kv) * head_dim;
    // The window layer scales q (Gemma 3's convention), the global one the dot: both in one recording.
    const AttentionParams ap[2] = {attention_params(n_head, n_head_kv, head_dim, window, true),
                                   attention_params(n_head, n_head_kv, head_dim, 0)};

    // Fixed tensors, as a recorded step needs: new data is written into them before every step.
    const int32_t max_rows = 200;
    OwnedTensor qc(cpu, max_rows, q_dim), kc_(cpu, max_rows, kv_dim), vc(cpu, max_rows, kv_dim);
    OwnedTensor qg(cuda, max_rows, q_dim), kg(cuda, max_rows, kv_dim), vg(cuda, max_rows, kv_dim);
    OwnedTensor oc0(cpu, max_rows, q_dim), oc1(cpu, max_rows, q_dim), og0(cuda, max_rows, q_dim), og1(cuda, max_rows, q_dim);
    Tensor* outs_c[2] = {&oc0.t, &oc1.t};
    Tensor* outs_g[2] = {&og0.t, &og1.t};

    int32_t pos = 0, replays = 0, steps = 0;
    double worst = 0.0;
    size_t bad = 0;
    // One batch of n rows at pos; decode = through decode_step_begin/end.
    auto batch = [&](int32_t n, bool decode) {
        kv_cpu.reserve(pos + n);
        kv_gpu.reserve(pos + n);
        const std::vector<float> q = random_floats(size_t(n * q_dim), uint64_t(pos * 3 + 7), 1.5f);
        const std::vector<float> k = random_floats(size_t(n * kv_dim), uint64_t(pos * 3 + 8), 1.5f);
        const std::vector<float> v = random_floats(size_t(n * kv_dim), uint64_t(pos * 3 + 9));
        Tensor tq_c = qc.t.rows(0, n), tk_c = kc_.t.rows(0, n), tv_c = vc.t.rows(0, n);
        Tensor tq_g = qg.t.rows(0, n), tk_g = kg.t.rows(0, n), tv_g = vg.t.rows(0, n);
        upload(cpu, tq_c, q);
        upload(cpu, tk_c, k);
        upload(cpu, tv_c, v);
        upload(cuda, tq_g, q);
        upload(cuda, tk_g, k);
        upload(cuda, tv_g, v);
        for (int il = 0; il < 2; ++il) {
            Tensor o = outs_c[il]->rows(0, n);
            cpu.kv_store(kv_cpu, il, tk_c, tv_c, pos);
            cpu.attention(tq_c, kv_cpu, il, pos, ap[il], o);
        }
        auto run_gpu = [&] {
            for (int il = 0; il < 2; ++il) {
                Tensor o = outs_g[il]->rows(0, n);
                cuda.kv_store(kv_gpu, il, tk_g, tv_g, pos);
                cuda.attention(tq_g, kv_gpu, il, pos, ap[il], o);
            }
        };
        if (decode) {
            ++steps;
            if (cuda.decode_step_begin(kv_gpu, 0, pos)) {
                ++replays;
            } else {
                run_gpu();
                cuda.decode_step_end(true);
            }
        } else {
            run_gpu();
        }
        for (int il = 0; il < 2; ++il) {
            const ErrorStats st = compare(download(cpu, outs_c[il]->rows(0, n)), download(cuda, outs_g[il]->rows(0, n)));
            worst = std::max(worst, st.rel_l2);
            if (st.non_finite > 0 || st.rel_l2 > 2e-3) ++bad;
        }
        pos += n;
        kv_cpu.set_n_tokens(pos);
        kv_gpu.set_n_tokens(pos);
    };

    batch(140, false);
    while (pos < 300) batch(1, true);
    batch(max_rows, false);  // 300 .. 499: the attention scratch outgrows what the recording used
    while (pos < 540) batch(1, true);

    char buf[200];
    std::snprintf(buf, sizeof buf, " (%zu of %d batches over 2e-3, worst rel_l2 %.3g; %d of %d steps replayed)", bad,
                  2 * (steps + 2), worst, replays, steps);
    // Two steps of each run of decode steps are eager (warm-up, recording); the rest must replay.
    // Replaying right after the prefill would mean the stale recording was kept (WB_CUDA_GRAPHS=0: none).
    const char* env = std::getenv("WB_CUDA_GRAPHS");
    const int32_t expected = env && std::strcmp(env, "0") == 0 ? 0 : steps - 4;
    report(bad == 0 && replays == expected, "decode steps via graph replay, window layer + global layer" + std::string(buf));
    report(kv_gpu.blocks(0)[0] == nullptr && kv_gpu.blocks(0)[2] == nullptr && kv_gpu.blocks(1)[0] != nullptr,
           "decode steps via graph replay: the window layer released its old blocks");
}

// A logits row of a named kind: "normal" (a model's spread), "ties" (three values), "nan" (NaN and
// +-inf sprinkled in), "masked" (-inf but for one in 50), "zeros" (-0, +0 and -1: ties across signs),
// "tiny" (signed zeros and denormals, which must not merge with zero).
std::vector<float> logits_row(const std::string& kind, int64_t n, uint64_t seed) {
    std::vector<float> row = random_floats(size_t(n), seed, 3.0f);
    uint64_t state = seed;
    for (int64_t i = 0; i < n; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const uint32_t r = uint32_t(state >> 33);
        float& v = row[size_t(i)];
        if (kind == "ties") v = float(r % 3);
        else if (kind == "masked" && r % 50 != 0) v = -INFINITY;
        else if (kind == "zeros") v = r % 3 == 0 ? -0.0f : (r % 3 == 1 ? 0.0f : -1.0f);
        else if (kind == "tiny") v = r % 4 == 0 ? -0.0f : (r % 4 == 1 ? 0.0f : (r % 4 == 2 ? 1e-41f : -1e-42f));
        else if (kind == "nan" && i % 37 == 0) v = i % 3 == 0 ? NAN : (i % 3 == 1 ? -INFINITY : INFINITY);
    }
    return row;
}

// read_top against select_top_logits on the same row: the same columns in the same order and the
// same value bits, for the vocabularies of SmolLM2 and Gemma 3, ties past the k-th place, NaN, masks.
// The cases take both of the kernel's paths: the pre-filtered one (a model's rows, small k) and the
// passes over the whole row (k above the 1024 thread maxima, or more than 4096 entries passing).
void test_read_top(Backend& cuda) {
    struct Case {
        std::string kind;
        int64_t n;
        std::vector<int32_t> ks;
    };
    const Case cases[] = {
        {"normal", 49152, {1, 3, 40, 104, 1024}},
        {"normal", 262144, {1, 64}},
        {"normal", 1025, {1, 1025}},
        {"normal", 1, {1}},
        {"ties", 5000, {7, 1000, 5000}},
        {"ties", 262144, {40}},
        {"nan", 49152, {40, 300}},
        {"masked", 49152, {40, 1024}},
        {"zeros", 3000, {1, 500, 2500}},
        {"tiny", 3000, {1, 1000, 2000}},
    };
    uint64_t seed = 900;
    for (const Case& c : cases) {
        const std::vector<float> row = logits_row(c.kind, c.n, ++seed);
        OwnedTensor t(cuda, 1, c.n);
        upload(cuda, t.t, row);
        for (int32_t k : c.ks) {
            std::vector<int32_t> want_ids(static_cast<size_t>(k)), got_ids(static_cast<size_t>(k), -1);
            std::vector<float> want(static_cast<size_t>(k)), got(static_cast<size_t>(k), 0.0f);
            select_top_logits(row.data(), int32_t(c.n), k, want_ids.data(), want.data());
            cuda.read_top(t.t, k, got_ids.data(), got.data());
            int32_t bad = 0;
            for (int32_t i = 0; i < k; ++i)
                if (got_ids[size_t(i)] != want_ids[size_t(i)] || std::memcmp(&got[size_t(i)], &want[size_t(i)], sizeof(float)) != 0)
                    ++bad;
            report(bad == 0, "read_top " + c.kind + " n=" + std::to_string(c.n) + " k=" + std::to_string(k) + " (" +
                                 std::to_string(bad) + " entries differ)");
        }
    }
    // A k beyond the row is an error with a message, and the backend keeps working.
    OwnedTensor t(cuda, 1, 10);
    upload(cuda, t.t, logits_row("normal", 10, 5));
    std::vector<int32_t> ids(11);
    std::vector<float> values(11);
    bool threw = false;
    try {
        cuda.read_top(t.t, 11, ids.data(), values.data());
    } catch (const Error&) {
        threw = true;
    }
    cuda.read_top(t.t, 10, ids.data(), values.data());
    report(threw, "read_top k > n is refused with an error");
}

// --backend auto (the default) picks the GPU for every cache type it has kernels for (f16, q8_0 and
// q4_0 for K and V): a quantized cache no longer sends the session to the CPU.
void test_auto_backend_and_kv_types() {
    for (KvType tk : {KvType::F16, KvType::Q8_0, KvType::Q4_0})
        for (KvType tv : {KvType::F16, KvType::Q8_0, KvType::Q4_0}) {
            BackendChoice c = create_backend(BackendKind::AUTO, 0, tk, tv);
            report(c.note.empty() && c.backend->description().rfind("CPU", 0) != 0,
                   std::string("auto with K ") + kv_type_name(tk) + " V " + kv_type_name(tv) + " picks the GPU (" +
                       c.backend->description() + (c.note.empty() ? "" : "; note: " + c.note) + ")");
        }
}

}  // namespace

int main() {
    if (!cuda_device_present()) {
        std::printf("SKIPPED: no CUDA device\n");
        return kSkip;
    }
    try {
        CpuBackend cpu(0);
        std::unique_ptr<Backend> cuda = make_cuda_backend();
        std::printf("cpu:  %s\ncuda: %s\n", cpu.description().c_str(), cuda->description().c_str());
        test_embed(cpu, *cuda);
        test_rms_norm(cpu, *cuda);
        test_add_rms_norm(cpu, *cuda);
        test_norm_feeds_gemv(*cuda);
        test_rope(cpu, *cuda);
        test_add_bias(cpu, *cuda);
        test_softcap(cpu, *cuda);
        test_glu_add(cpu, *cuda);
        test_matmul(cpu, *cuda);
        test_matmul_input_reuse(*cuda);
        test_fused_matmuls(*cuda);
        test_attention(cpu, *cuda);
        test_attention_scale_q(cpu, *cuda);
        test_decode_graph(cpu, *cuda);
        test_read_top(*cuda);
        test_auto_backend_and_kv_types();
    } catch (const std::exception& e) {
        report(false, std::string("exception: ") + e.what());
    }
    return finish("test_gpu_ops");
}
