// The CPU backend's attention over a quantized KV cache (q8_0 / q4_0 keys or values).
//
// llama.cpp stores a quantized V only with flash attention on (its non-flash path keeps V transposed,
// which block formats cannot hold), so with a quantized cache its CPU backend runs
// ggml_compute_forward_flash_attn_ext_f16_one_chunk, and this file follows that function step by step
// for each (query row, query head):
//  - a quantized cache holds k and v rotated by a Hadamard matrix (kv_rotation_k / _v), so q is rotated
//    like k and the output rotated back like v (llama.cpp's graph does both around this operation);
//  - q (scaled first when AttentionParams::scale_q, as the Gemma graph scales it) is converted to the
//    key type's dot type: q8_0 for q8_0 / q4_0 keys, f16 for f16 keys (kv_prepare_query);
//  - s_j = the type's row dot of key j with it (kv_dot_keys), times the scale (the scale is divided by
//    the soft cap first, and s becomes cap * tanh(s), when the model caps its scores);
//  - an online softmax over the visible keys in ascending order with the running maximum M and sum S:
//    a new maximum rescales the accumulator by expf(M_old - M) (and its key weighs 1), else the key
//    weighs expf(s - M); S = S * ms + vs;
//  - the accumulator: f32 (vector fma of the dequantized value row) for a quantized V, f16 for an f16
//    V (ggml_vec_mad_f16: each update rounded back to f16); the output is it times 1 / S.
// Masked keys are skipped by llama.cpp (their mask is -inf), so only keys [first, pos] take part. None
// of the split-KV or tiled paths applies: llama.cpp takes them only for f16 / f32 caches of one type.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/backend_cpu.h"
#include "kv/kv_cache.h"
#include "util/fp16.h"

namespace wb {

namespace {

// The state of one query head's online softmax and its output accumulator.
struct OnlineSoftmax {
    float m = -INFINITY;  // running maximum of the scores
    float s = 0.0f;       // running sum of exp(score - m)
};

// One query head's scores over keys [first, pos] (scores[j - first]), scaled (and capped) as
// llama.cpp's flash attention does it.
void key_scores(const KvCache& kv, int32_t il, int32_t kvh, int32_t first, int32_t pos, const void* q_prep,
                const AttentionParams& p, float* scores) {
    const KvCacheConfig& c = kv.config();
    const int32_t bt = c.block_tokens;
    for (int32_t j = first; j <= pos;) {
        const int32_t run = std::min(pos - j + 1, bt - j % bt);
        const auto* k = static_cast<const uint8_t*>(kv.k_row(il, j)) + size_t(kvh) * kv.k_head_bytes();
        kv_dot_keys(c.type_k, c.head_dim, k, kv.k_row_bytes(), run, q_prep, scores + (j - first));
        j += run;
    }
    float scale = p.scale_q ? 1.0f : p.scale;
    if (p.softcap > 0.0f) scale /= p.softcap;
    for (int32_t j = 0; j <= pos - first; ++j) {
        float s = scores[j] * scale;
        if (p.softcap > 0.0f) s = p.softcap * std::tanh(s);
        scores[j] = s;
    }
}

// The online softmax step for score s: returns the factor the accumulator is rescaled by (1: none) and
// sets *vs to the key's weight.
float softmax_step(OnlineSoftmax& st, float s, float* vs) {
    float ms = 1.0f;
    *vs = 1.0f;
    if (s > st.m) {
        const float m_old = st.m;
        st.m = s;
        ms = std::exp(m_old - st.m);
    } else {
        *vs = std::exp(s - st.m);
    }
    st.s = std::fma(st.s, ms, *vs);  // contracted, as GCC builds llama.cpp's S = S*ms + vs with FMA enabled
    return ms;
}

// V accumulated in f32 (quantized V): acc = acc * ms when the maximum moved, then acc += vs * v.
void accumulate_f32(const KvCache& kv, int32_t il, int32_t kvh, int32_t first, int32_t pos, const float* scores,
                    OnlineSoftmax& st, float* acc, float* vrow) {
    const KvCacheConfig& c = kv.config();
    const int64_t hd = c.head_dim;
    std::fill(acc, acc + hd, 0.0f);
    for (int32_t j = first; j <= pos; ++j) {
        float vs;
        const float ms = softmax_step(st, scores[j - first], &vs);
        if (ms != 1.0f)
            for (int64_t d = 0; d < hd; ++d) acc[d] *= ms;
        const auto* v = static_cast<const uint8_t*>(kv.v_row(il, j)) + size_t(kvh) * kv.v_head_bytes();
        kv_dequantize_row(c.type_v, v, vrow, hd);
        for (int64_t d = 0; d < hd; ++d) acc[d] = std::fma(vrow[d], vs, acc[d]);
    }
}

// V accumulated in f16 (f16 V beside quantized K), every update rounded back to f16 as
// ggml_vec_scale_f16 / ggml_vec_mad_f16 store it; acc receives the f32 values of the f16 accumulator.
void accumulate_f16(const KvCache& kv, int32_t il, int32_t kvh, int32_t first, int32_t pos, const float* scores,
                    OnlineSoftmax& st, float* acc) {
    const int64_t hd = kv.config().head_dim;
    std::fill(acc, acc + hd, 0.0f);  // always holds values representable in f16
    for (int32_t j = first; j <= pos; ++j) {
        float vs;
        const float ms = softmax_step(st, scores[j - first], &vs);
        if (ms != 1.0f)
            for (int64_t d = 0; d < hd; ++d) acc[d] = fp16_to_f32(f32_to_fp16(acc[d] * ms));
        const auto* v = reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(kv.v_row(il, j)) +
                                                          size_t(kvh) * kv.v_head_bytes());
        for (int64_t d = 0; d < hd; ++d) acc[d] = fp16_to_f32(f32_to_fp16(std::fma(fp16_to_f32(v[d]), vs, acc[d])));
    }
}

}  // namespace

void CpuBackend::attention_flash(const Tensor& q, const KvCache& kv, int32_t il, int32_t pos0,
                                 const AttentionParams& p, Tensor& out) {
    const KvCacheConfig& c = kv.config();
    const int32_t group = p.n_head / p.n_head_kv;
    const int64_t hd = p.head_dim;
    const int64_t max_keys = pos0 + q.n_rows;
    // per thread: scores [max_keys], the scaled query [hd], the accumulator [hd], a value row [hd]; and
    // the prepared query (bytes, in the f16 scratch)
    const size_t buf_floats = size_t(max_keys + 3 * hd);
    const size_t q_halves = (kv_query_bytes(c.type_k, hd) + 1) / 2;
    for (auto& b : thread_buf_)
        if (b.size() < buf_floats) b.resize(buf_floats);
    for (auto& b : thread_f16_)
        if (b.size() < q_halves) b.resize(q_halves);

    pool_.parallel_for(q.n_rows * p.n_head, [&](int64_t task, int thread) {
        const int64_t r = task / p.n_head;
        const int32_t h = int32_t(task % p.n_head);
        const int32_t kvh = h / group;
        const int32_t pos = pos0 + int32_t(r);
        const int32_t first = p.window > 0 ? std::max(0, pos - p.window + 1) : 0;
        float* scores = thread_buf_[size_t(thread)].data();
        float* qs = scores + max_keys;
        float* acc = qs + hd;
        float* vrow = acc + hd;
        void* q_prep = thread_f16_[size_t(thread)].data();

        const float* qh = q.data + r * q.n_cols + int64_t(h) * hd;
        for (int64_t i = 0; i < hd; ++i) qs[i] = p.scale_q ? qh[i] * p.scale : qh[i];
        kv_rotate(qs, hd, kv_rotation_k(c.type_k, c.head_dim));  // q in the rotated space of the keys
        kv_prepare_query(c.type_k, qs, q_prep, hd);
        key_scores(kv, il, kvh, first, pos, q_prep, p, scores);

        OnlineSoftmax st;
        if (c.type_v == KvType::F16)
            accumulate_f16(kv, il, kvh, first, pos, scores, st, acc);
        else
            accumulate_f32(kv, il, kvh, first, pos, scores, st, acc, vrow);
        const float inv = st.s == 0.0f ? 0.0f : 1.0f / st.s;
        float* o = out.data + r * out.n_cols + int64_t(h) * hd;
        for (int64_t d = 0; d < hd; ++d) o[d] = acc[d] * inv;
        kv_rotate(o, hd, kv_rotation_v(c.type_v, c.head_dim));  // back from the rotated space of the values

        // The inspector's row: the weights the keys ended with, exp(s_j - M) / S with the final maximum
        // and sum (the accumulator applied them through the running rescaling, so these are the same
        // weights up to that rounding; flash attention never forms the row itself).
        for (int32_t i = 0; p.capture_probs && i < p.n_capture_heads; ++i) {
            if (p.capture_heads[i] != h) continue;
            float* row = p.capture_probs + (int64_t(i) * q.n_rows + r) * max_keys;  // [head slot][row][max_keys]
            std::fill(row, row + max_keys, 0.0f);
            for (int32_t j = first; j <= pos; ++j)
                row[j] = p.capture_scores ? scores[j - first] : std::exp(scores[j - first] - st.m) * inv;
        }
    });
}

}  // namespace wb
