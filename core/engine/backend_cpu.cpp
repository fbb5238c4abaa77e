#include "engine/backend_cpu.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "model/weights.h"
#include "quant/quant.h"
#include "util/error.h"
#include "util/exp_poly.h"
#include "util/fp16.h"

namespace wb {

namespace {

constexpr size_t kAlign = 64;

// Rows of W handled by one task of a matmul: large enough to amortise the task hand-out, small enough
// that a decode matmul (one token) still splits evenly over the threads.
constexpr int64_t kRowsPerTask = 16;

// The element-wise loops below lean on fused multiply-adds (exp_poly, rope). Built for the generic
// x86-64 baseline, std::fma would be a libm call per element; target_clones adds an FMA build of each
// such function and picks it at load time on CPUs that have FMA. Results are identical either way
// (std::fma is exact in both).
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define WB_FMA_CLONES __attribute__((target_clones("fma", "default")))
#else
#define WB_FMA_CLONES
#endif

// SiLU with the polynomial exp (see util/exp_poly.h); `tail` elements, those past the last full run
// of 8 in a row, use the library exp as llama.cpp's scalar remainder loop does.
inline float silu(float x, bool tail) { return x / (1.0f + (tail ? std::exp(-x) : exp_poly(-x))); }

WB_FMA_CLONES void silu_mul(const float* gate, const float* up, float* out, int64_t rows, int64_t cols) {
    const int64_t full = cols / 8 * 8;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) {
            const int64_t i = r * cols + c;
            out[i] = silu(gate[i], c >= full) * up[i];
        }
}

// s[j] = exp(s[j] - max) for a softmax. Every key is exponentiated in the reference's vector loop (its
// rows are padded to whole runs of 8 with masked keys), hence the polynomial exp throughout.
WB_FMA_CLONES void exp_shifted(float* s, int32_t n, float max) {
    for (int32_t j = 0; j < n; ++j) s[j] = exp_poly(s[j] - max);
}

// Rotates every head of one row by precomputed angles. Written with explicit fused multiply-adds, in
// the form llama.cpp's CPU build (which the compiler contracts to FMA) evaluates, so the rotated values
// agree bit for bit: x0*cos - x1*sin == fma(x0, cos, -(x1*sin)), x0*sin + x1*cos == fma(x0, sin, x1*cos).
// NORMAL rotates neighbours (2i, 2i+1); NEOX rotates (i, i + n_rot/2).
WB_FMA_CLONES void rotate_heads(float* row, int32_t n_head, int32_t head_dim, int32_t half, bool normal,
                                const float* cos_t, const float* sin_t) {
    for (int32_t h = 0; h < n_head; ++h) {
        float* v = row + int64_t(h) * head_dim;
        for (int32_t i = 0; i < half; ++i) {
            const int32_t a = normal ? 2 * i : i;
            const int32_t b = normal ? 2 * i + 1 : i + half;
            const float x0 = v[a], x1 = v[b];
            v[a] = std::fma(x0, cos_t[i], -(x1 * sin_t[i]));
            v[b] = std::fma(x0, sin_t[i], x1 * cos_t[i]);
        }
    }
}

// GELU(tanh) in float. The inner 1 + 0.044715 x^2 is one fused multiply-add, the form llama.cpp's CPU
// build (contracted to FMA by the compiler) evaluates: with it all 65536 entries of the table below
// equal the reference's.
float gelu_tanh(float x) {
    constexpr float kSqrt2OverPi = 0.7978845608028654f;
    return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * std::fma(0.044715f * x, x, 1.0f)));
}

// GELU(tanh) as llama.cpp's CPU backend evaluates it, so the two agree bit for bit: the reference does
// not compute GELU per element but rounds the input to f16 and looks the result up in a table of f16
// values (one per f16 input, each the float tanh formula above rounded to f16); inputs <= -10 give 0
// and inputs >= 10 pass through unchanged. The table is built once, on first use (thread-safe static).
float gelu_tanh_f16_table(float x) {
    static const std::array<uint16_t, 65536> table = [] {
        std::array<uint16_t, 65536> t{};
        for (uint32_t i = 0; i < t.size(); ++i) t[i] = f32_to_fp16(gelu_tanh(fp16_to_f32(uint16_t(i))));
        return t;
    }();
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return fp16_to_f32(table[f32_to_fp16(x)]);
}

// The path llama.cpp's x86 CPU build takes for token t of an n_tok-token matmul, as a DotOrder (see
// quant.h), where the paths round differently (K-quants):
//  - Q4_K with a row count divisible by 8 is repacked: the tokens of a batch go in groups of 4
//    through its gemm (the first n_tok - n_tok % 4), the rest through its gemv;
//  - other K-quants (and Q4_K otherwise) go through its tiled matmul when the batch has 8 tokens or
//    more, and through the row dot products when it has fewer.
DotOrder llama_cpp_dot_order(const Weight& w, int64_t n_tok, int64_t t) {
    switch (w.type) {
        case GgmlType::Q4_K:
            if (w.n_out % 8 == 0) return t < n_tok - n_tok % 4 ? DotOrder::kGemm : DotOrder::kGemv;
            [[fallthrough]];
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K: return n_tok >= 8 ? DotOrder::kTiled : DotOrder::kRow;
        default: return DotOrder::kRow;
    }
}

}  // namespace

CpuBackend::CpuBackend(int n_threads) : pool_(n_threads) {
    thread_buf_.resize(size_t(pool_.size()));
    thread_f16_.resize(size_t(pool_.size()));
}

CpuBackend::~CpuBackend() = default;

std::string CpuBackend::description() const {
    return "CPU, " + std::to_string(pool_.size()) + " threads, " + quant_kernel_name() + " kernels";
}

void CpuBackend::prepare_weights(ModelWeights&) {
    // The weights are used in place from the read-only file mapping: nothing to copy.
}

Tensor CpuBackend::alloc(int64_t n_rows, int64_t n_cols) {
    const size_t bytes = (size_t(n_rows * n_cols) * sizeof(float) + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, std::max<size_t>(bytes, kAlign));
    if (!p) throw Error("out of memory allocating " + std::to_string(bytes) + " bytes of activations");
    return {static_cast<float*>(p), n_rows, n_cols};
}

void CpuBackend::free(Tensor& t) {
    std::free(t.data);
    t = {};
}

void* CpuBackend::kv_alloc(size_t bytes) {
    return std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
}

void CpuBackend::kv_free(void* p) { std::free(p); }

void CpuBackend::embed(const Weight& table, const int32_t* ids, int32_t n, float scale, Tensor& out) {
    const size_t row_bytes = ggml_row_bytes(table.type, table.n_in);
    for (int32_t i = 0; i < n; ++i) {
        if (ids[i] < 0 || ids[i] >= table.n_out)
            throw Error("token id " + std::to_string(ids[i]) + " is outside the vocabulary (0.." +
                        std::to_string(table.n_out - 1) + ")");
        float* row = out.data + int64_t(i) * out.n_cols;
        dequantize_row(table.type, static_cast<const uint8_t*>(table.host) + size_t(ids[i]) * row_bytes, row, table.n_in);
        if (scale != 1.0f)
            for (int64_t j = 0; j < table.n_in; ++j) row[j] *= scale;
    }
}

void CpuBackend::rms_norm(const Tensor& x, const Weight& gain, float eps, int64_t group, Tensor& out) {
    const auto* g = static_cast<const float*>(gain.host);
    const int64_t n_groups = x.n_rows * (x.n_cols / group);
    for (int64_t r = 0; r < n_groups; ++r) {
        const float* in = x.data + r * group;
        float* o = out.data + r * group;
        // Squares rounded to float, summed in double: exactly llama.cpp's arithmetic, so the two agree
        // bit for bit (rows are up to a few thousand wide; the double sum keeps them accurate).
        double sum = 0.0;
        for (int64_t j = 0; j < group; ++j) sum += double(in[j] * in[j]);
        const float inv = 1.0f / std::sqrt(float(sum / double(group)) + eps);
        for (int64_t j = 0; j < group; ++j) o[j] = in[j] * inv * g[j];
    }
}

void CpuBackend::matmul(const Weight& w, const Tensor& x, Tensor& out) {
    const int64_t n_tok = x.n_rows;
    const int64_t n_in = w.n_in;
    const size_t act_row = activation_row_bytes(w.type, n_in);
    if (act_buf_.size() < act_row * size_t(n_tok)) act_buf_.resize(act_row * size_t(n_tok));
    uint8_t* act = act_buf_.data();

    // Convert every activation row once; with many tokens this is itself worth spreading out.
    pool_.parallel_for(n_tok, [&](int64_t t, int) {
        quantize_activations(w.type, x.data + t * x.n_cols, act + size_t(t) * act_row, n_in);
    });

    const size_t w_row = ggml_row_bytes(w.type, n_in);
    const auto* wdata = static_cast<const uint8_t*>(w.host);
    const int64_t n_out = w.n_out;
    const int64_t n_tasks = (n_out + kRowsPerTask - 1) / kRowsPerTask;
    const auto order = [&](int64_t t) { return llama_cpp_dot_order(w, n_tok, t); };
    // A task owns a run of weight rows and walks all tokens with them, so those rows stay in cache
    // while every token is multiplied by them (prefill) .
    pool_.parallel_for(n_tasks, [&](int64_t task, int) {
        const int64_t r0 = task * kRowsPerTask;
        const int64_t nr = std::min(kRowsPerTask, n_out - r0);
        for (int64_t t = 0; t < n_tok; ++t)
            vec_dot_rows(w.type, n_in, wdata + size_t(r0) * w_row, w_row, nr, act + size_t(t) * act_row,
                         out.data + t * out.n_cols + r0, order(t));
    });
}

void CpuBackend::rope(Tensor& x, const RopeParams& p, const int32_t* positions) {
    const int32_t half = p.n_rot / 2;
    // Angles as ggml computes them: theta_i = pos * base^(-2i/n_rot), built by repeated multiplication
    // in float so the rounding matches the reference implementation.
    const float theta_scale = std::pow(p.base, -2.0f / float(p.n_rot));
    std::vector<float> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
    for (int64_t r = 0; r < x.n_rows; ++r) {
        float theta = float(positions[r]) * p.freq_scale;
        for (int32_t i = 0; i < half; ++i) {
            cos_t[size_t(i)] = std::cos(theta);
            sin_t[size_t(i)] = std::sin(theta);
            theta *= theta_scale;
        }
        rotate_heads(x.data + r * x.n_cols, p.n_head, p.head_dim, half, p.mode == RopeMode::NORMAL, cos_t.data(),
                     sin_t.data());
    }
}

void CpuBackend::kv_store(KvCache& kv, int32_t il, const Tensor& k, const Tensor& v, int32_t pos0) {
    const int64_t width = k.n_cols;
    for (int64_t r = 0; r < k.n_rows; ++r) {
        auto* kd = static_cast<uint16_t*>(kv.k_row(il, pos0 + int32_t(r)));
        auto* vd = static_cast<uint16_t*>(kv.v_row(il, pos0 + int32_t(r)));
        quantize_row(GgmlType::F16, k.data + r * width, kd, width);
        quantize_row(GgmlType::F16, v.data + r * width, vd, width);
    }
}

void CpuBackend::attention(const Tensor& q, const KvCache& kv, int32_t il, int32_t pos0, const AttentionParams& p,
                           Tensor& out) {
    const int32_t group = p.n_head / p.n_head_kv;
    const int64_t hd = p.head_dim;
    const int64_t n_tasks = q.n_rows * p.n_head;
    const int64_t max_keys = pos0 + q.n_rows;

    // The arithmetic follows llama.cpp's CPU attention (no flash attention) step by step, so the two
    // agree bit for bit: this model family's large activations turn any last-bit difference into a
    // visibly different logit a few layers on. There, kq = K.q and out = V^T.p are matmuls over the
    // f16 cache with q and p rounded to f16; a batch of several tokens takes its batched (tinyBLAS)
    // kernel, which needs whole runs of 8 (kq) / rows in fours (out), and one token takes
    // ggml_vec_dot_f16: two accumulation orders, both reproduced (F16DotOrder).
    const bool batched = q.n_rows > 1;
    const F16DotOrder kq_order = batched && hd % 8 == 0 ? F16DotOrder::kLanes8 : F16DotOrder::kStep32;
    const F16DotOrder out_order = batched && hd % 4 == 0 ? F16DotOrder::kLanes8 : F16DotOrder::kStep32;
    const int64_t n_lanes = f16_dot_lanes(out_order);
    // per thread: scores[max_keys], out lanes[n_lanes * hd], lane gather[n_lanes], scaled q[hd];
    // q in f16[hd]
    const size_t buf_floats = size_t(max_keys + n_lanes * hd + n_lanes + hd);
    for (auto& b : thread_buf_)
        if (b.size() < buf_floats) b.resize(buf_floats);
    for (auto& b : thread_f16_)
        if (b.size() < size_t(hd)) b.resize(size_t(hd));

    // Capture (hooks): the slot of capture_probs a query head writes to, -1 for none.
    auto capture_slot = [&p](int32_t h) {
        for (int32_t i = 0; p.capture_probs && i < p.n_capture_heads; ++i)
            if (p.capture_heads[i] == h) return i;
        return -1;
    };

    pool_.parallel_for(n_tasks, [&](int64_t task, int thread) {
        const int64_t r = task / p.n_head;
        const int32_t h = int32_t(task % p.n_head);
        const int32_t kvh = h / group;
        const int32_t pos = pos0 + int32_t(r);
        const int32_t first = p.window > 0 ? std::max(0, pos - p.window + 1) : 0;
        const float* qv = q.data + r * q.n_cols + int64_t(h) * hd;
        float* scores = thread_buf_[size_t(thread)].data();
        float* lanes = scores + max_keys;
        float* gather = lanes + n_lanes * hd;
        uint16_t* q16 = thread_f16_[size_t(thread)].data();

        // The keys are f16, so q is rounded to f16 too: the dot is then a product of two f16 vectors
        // accumulated in f32, the same arithmetic as llama.cpp's CPU path and a GPU's f16 attention.
        // With scale_q the scale multiplies q before that rounding and the scores are not scaled.
        if (p.scale_q) {
            float* qs = gather + n_lanes;
            for (int64_t i = 0; i < hd; ++i) qs[i] = qv[i] * p.scale;
            quantize_row(GgmlType::F16, qs, q16, hd);
        } else {
            quantize_row(GgmlType::F16, qv, q16, hd);
        }
        const float score_scale = p.scale_q ? 1.0f : p.scale;

        // scores_j = scale * q.k_j over the visible keys, then a numerically stable softmax.
        float max_s = -INFINITY;
        for (int32_t j = first; j <= pos; ++j) {
            const auto* krow = static_cast<const uint16_t*>(kv.k_row(il, j)) + int64_t(kvh) * hd;
            const float s = score_scale * dot_f16_f16(kq_order, hd, krow, q16);
            scores[j - first] = s;
            max_s = std::max(max_s, s);
        }
        const int32_t n_keys = pos - first + 1;
        exp_shifted(scores, n_keys, max_s);
        // The sum as llama.cpp forms it: over the cache in runs of 8 keys counted from key 0 (keys
        // outside the window count 0), each run summed in float in the 8-lane tree, the runs in double.
        double sum = 0.0;
        for (int32_t run = first / 8 * 8; run <= pos; run += 8) {
            float e[8];
            for (int32_t l = 0; l < 8; ++l) {
                const int32_t j = run + l;
                e[l] = j >= first && j <= pos ? scores[j - first] : 0.0f;
            }
            sum += sum_f16_dot_lanes(F16DotOrder::kLanes8, e);
        }
        const float inv = float(1.0 / sum);
        if (const int32_t slot = capture_slot(h); slot >= 0) {
            // The softmax output itself (V is weighted by these values rounded to f16 below, the
            // precision of the reference's matmul input).
            float* row = p.capture_probs + (int64_t(slot) * q.n_rows + r) * max_keys;
            std::fill(row, row + max_keys, 0.0f);
            for (int32_t j = first; j <= pos; ++j) row[j] = scores[j - first] * inv;
        }

        // out[d] = sum_j p_j v_j[d] with p_j rounded to f16 like the values it weights. Key j goes
        // to lane j % n_lanes of every output dim (the lanes the reference's dot over the cache
        // gives it); each lane row is one fused multiply-add per key.
        std::fill(lanes, lanes + n_lanes * hd, 0.0f);
        for (int32_t j = first; j <= pos; ++j) {
            const float pj = fp16_to_f32(f32_to_fp16(scores[j - first] * inv));
            const auto* vsrc = static_cast<const uint16_t*>(kv.v_row(il, j)) + int64_t(kvh) * hd;
            fma_f16_row(pj, vsrc, lanes + (j % n_lanes) * hd, hd);
        }
        float* o = out.data + r * out.n_cols + int64_t(h) * hd;
        for (int64_t d = 0; d < hd; ++d) {
            for (int64_t l = 0; l < n_lanes; ++l) gather[l] = lanes[l * hd + d];
            o[d] = sum_f16_dot_lanes(out_order, gather);
        }
    });
}

void CpuBackend::glu(const Tensor& gate, const Tensor& up, Activation act, Tensor& out) {
    const int64_t n = gate.n_rows * gate.n_cols;
    if (act == Activation::SILU) {
        silu_mul(gate.data, up.data, out.data, gate.n_rows, gate.n_cols);
    } else {
        for (int64_t i = 0; i < n; ++i) out.data[i] = gelu_tanh_f16_table(gate.data[i]) * up.data[i];
    }
}

void CpuBackend::add(Tensor& x, const Tensor& y) {
    const int64_t n = x.n_rows * x.n_cols;
    for (int64_t i = 0; i < n; ++i) x.data[i] += y.data[i];
}

void CpuBackend::read(const Tensor& x, float* host) {
    std::memcpy(host, x.data, size_t(x.n_rows * x.n_cols) * sizeof(float));
}

}  // namespace wb
