#pragma once
// The CPU backend with the CUDA backend's arithmetic where it differs from the CPU's: the reference of
// the whole-model GPU tests (test_gpu_model). Random-weight models amplify any difference in rounding
// (see test_gpu_model.cpp), so the reference rounds where the GPU rounds:
//   - matmul, at most 32 tokens (the GPU's GEMV): quantized weights with the GEMV's 8-bit activations
//     and integer part dots, run on the host by the very functions the kernel runs
//     (tests/gpu/q8_reference.h); float weights in float32;
//   - matmul, more tokens (the GPU's cuBLAS path): float32 products of both operands rounded to f16
//     (F32 weights: unrounded);
//   - attention over an f16 cache: q rounded to f16 (after the scale where scale_q), float32 scores
//     and softmax, and the probabilities weighting V unrounded (the CPU backend rounds them to f16, as
//     llama.cpp does); over a quantized K or V, the CPU backend's own (llama.cpp's flash attention),
//     whose scores the GPU is meant to form bit for bit over a quantized K without a soft cap (checked
//     on a device by test_gpu_kv, not here) and whose f32 accumulation of a quantized V it shares up
//     to order (an f16 V beside a quantized K is accumulated in f16 there);
//   - glu: the formulas in float32 (the CPU backend takes llama.cpp's exp approximation for SiLU and
//     its f16 table for GELU).
// What remains is the order of float sums, fused multiply-adds and expf's last bits. Every operation
// is also compared with the production CPU backend in test_gpu_ops.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/backend_cpu.h"
#include "kv/kv_cache.h"
#include "matmul.cuh"
#include "model/weights.h"
#include "q8_parts.h"
#include "q8_reference.h"
#include "quant/quant.h"
#include "util/fp16.h"
#include "util/thread_pool.h"

namespace wb::gputest {

// Batches above this many tokens take the GPU's cuBLAS path.
constexpr int64_t kGpuGemvMaxTokens = cuda::kGemvMaxBatch;

class GpuReferenceBackend : public CpuBackend {
public:
    GpuReferenceBackend() : CpuBackend(0), pool_(0), rows_(size_t(pool_.size())) {}
    std::string description() const override {
        return "CPU reference with the GPU's arithmetic (" + CpuBackend::description() + ")";
    }

    void matmul(const Weight& w, const Tensor& x, Tensor& out) override {
        const int64_t n_in = w.n_in, n_tok = x.n_rows;
        const size_t row_bytes = ggml_row_bytes(w.type, n_in);
        const auto* wdata = static_cast<const uint8_t*>(w.host);
        constexpr int64_t kRows = 16;
        if (n_tok <= kGpuGemvMaxTokens && cuda::has_int_part(w.type)) {
            const Q8Activations xa = quantize_activations_q8(x.data, n_tok, n_in);
            pool_.parallel_for((w.n_out + kRows - 1) / kRows, [&](int64_t task, int) {
                for (int64_t r = task * kRows; r < std::min(w.n_out, (task + 1) * kRows); ++r)
                    for (int64_t t = 0; t < n_tok; ++t)
                        out.data[t * out.n_cols + r] = dot_row_q8(w.type, wdata + size_t(r) * row_bytes, xa, t);
            });
            return;
        }
        const bool f16_operands = n_tok > kGpuGemvMaxTokens && w.type != GgmlType::F32;
        xs_.assign(x.data, x.data + n_tok * n_in);
        if (f16_operands)
            for (float& v : xs_) v = fp16_to_f32(f32_to_fp16(v));
        pool_.parallel_for((w.n_out + kRows - 1) / kRows, [&](int64_t task, int thread) {
            std::vector<float>& row = rows_[size_t(thread)];
            row.resize(size_t(n_in));
            for (int64_t r = task * kRows; r < std::min(w.n_out, (task + 1) * kRows); ++r) {
                dequantize_row(w.type, wdata + size_t(r) * row_bytes, row.data(), n_in);
                if (f16_operands)
                    for (float& v : row) v = fp16_to_f32(f32_to_fp16(v));
                for (int64_t t = 0; t < n_tok; ++t) out.data[t * out.n_cols + r] = dot(row.data(), xs_.data() + t * n_in, n_in);
            }
        });
    }

    // The fused forms as their defaults: through the matmul and glu above.
    void matmul_shared(const Tensor& x, const Weight* const* weights, Tensor* const* outs, int n) override {
        Backend::matmul_shared(x, weights, outs, n);
    }
    void matmul_glu(const Weight& gate, const Weight& up, const Tensor& x, Activation act, Tensor& up_scratch,
                    Tensor& out) override {
        Backend::matmul_glu(gate, up, x, act, up_scratch, out);
    }

    // The GPU's attention math over the CPU's KV cache (K rows then V rows per block, f16). With a
    // capture request (the tests here capture nothing) or a quantized cache the production CPU
    // attention runs instead.
    void attention(const Tensor& q, const KvCache& kv, int32_t il, int32_t pos0, const AttentionParams& p,
                   Tensor& out) override {
        if (p.capture_probs || kv_type_is_quantized(kv.config().type_k) || kv_type_is_quantized(kv.config().type_v))
            return CpuBackend::attention(q, kv, il, pos0, p, out);
        const int32_t D = p.head_dim, bt = kv.config().block_tokens, group = p.n_head / p.n_head_kv;
        const int64_t width = int64_t(p.n_head_kv) * D;
        const std::vector<void*>& blocks = kv.blocks(il);
        const float q_scale = p.scale_q ? p.scale : 1.0f, score_scale = p.scale_q ? 1.0f : p.scale;
        pool_.parallel_for(q.n_rows * p.n_head, [&](int64_t task, int) {
            const int64_t r = task / p.n_head;
            const int32_t h = int32_t(task % p.n_head), kvh = h / group;
            const int32_t pos = pos0 + int32_t(r);
            const int32_t first = p.window > 0 ? std::max(0, pos - p.window + 1) : 0;
            auto row = [&](int32_t j, bool value) {
                return static_cast<const uint16_t*>(blocks[size_t(j / bt)]) + int64_t((value ? bt : 0) + j % bt) * width +
                       int64_t(kvh) * D;
            };
            std::vector<float> qv(static_cast<size_t>(D)), e(static_cast<size_t>(pos) + 1);
            for (int32_t d = 0; d < D; ++d)
                qv[size_t(d)] = fp16_to_f32(f32_to_fp16(q.data[r * q.n_cols + int64_t(h) * D + d] * q_scale));
            float m = -INFINITY;
            for (int32_t j = first; j <= pos; ++j) {
                const uint16_t* k = row(j, false);
                float acc = 0.0f;
                for (int32_t d = 0; d < D; ++d) acc += qv[size_t(d)] * fp16_to_f32(k[d]);
                e[size_t(j)] = acc * score_scale;
                m = std::max(m, e[size_t(j)]);
            }
            float l = 0.0f;
            for (int32_t j = first; j <= pos; ++j) l += (e[size_t(j)] = std::exp(e[size_t(j)] - m));
            float* o = out.data + r * out.n_cols + int64_t(h) * D;
            std::fill(o, o + D, 0.0f);
            for (int32_t j = first; j <= pos; ++j) {
                const uint16_t* v = row(j, true);
                for (int32_t d = 0; d < D; ++d) o[d] += e[size_t(j)] * fp16_to_f32(v[d]);
            }
            for (int32_t d = 0; d < D; ++d) o[d] /= l;
        });
    }

    void glu(const Tensor& gate, const Tensor& up, Activation act, Tensor& out) override {
        const int64_t n = gate.n_rows * gate.n_cols;
        constexpr float kSqrt2OverPi = 0.79788456080286535588f;
        for (int64_t i = 0; i < n; ++i) {
            const float g = gate.data[i];
            const float a = act == Activation::SILU ? g / (1.0f + std::exp(-g))
                                                    : 0.5f * g * (1.0f + std::tanh(kSqrt2OverPi * g * (1.0f + 0.044715f * g * g)));
            out.data[i] = a * up.data[i];
        }
    }

private:
    // Float dot product in 8 interleaved sums (the rows are multiples of 32 long).
    static float dot(const float* a, const float* b, int64_t n) {
        float acc[8] = {};
        for (int64_t i = 0; i < n; i += 8)
            for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
        return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    }

    ThreadPool pool_;
    std::vector<std::vector<float>> rows_;  // per thread: one dequantized weight row
    std::vector<float> xs_;                 // the activations, rounded as the GPU rounds them
};

}  // namespace wb::gputest
