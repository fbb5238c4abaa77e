// The CPU backend's attention over the f16 KV cache.
//
// The arithmetic follows llama.cpp's CPU attention (no flash attention) step by step, so the two agree
// bit for bit: models with large activations turn any last-bit difference into a visibly different
// logit a few layers on. There, kq = K.q and out = V^T.p are matmuls over the f16 cache with q and p
// rounded to f16; a batch of several tokens takes its batched (tinyBLAS) kernel, which needs whole runs
// of 8 (kq) / rows in fours (out), and one token takes ggml_vec_dot_f16: two accumulation orders, both
// reproduced (F16DotOrder in quant/quant.h).
//
// Two schedules of that same arithmetic:
//  - attention_rows: a task per (block of 4 tokens, kv head), for batches (prefill), where there are plenty;
//  - attention_decode: one token has only n_head_kv such tasks, too few and too uneven to keep the
//    threads busy, so it runs in three phases split by key runs and by output dims instead.
// Both convert each f16 K/V row once for all query heads of its group (grouped-query attention).
// The per-value operations and their order are the same in both, so they give identical results.
#include <algorithm>
#include <cmath>

#include "engine/backend_cpu.h"
#include "engine/backend_cpu_fma.h"
#include "kv/kv_cache.h"
#include "quant/quant.h"
#include "util/exp_poly.h"
#include "util/error.h"
#include "util/fp16.h"

namespace wb {

namespace {

// s[j] = exp(s[j] - max) for a softmax. Every key is exponentiated in the reference's vector loop (its
// rows are padded to whole runs of 8 with masked keys), hence the polynomial exp throughout.
WB_FMA_CLONES void exp_shifted(float* s, int32_t n, float max) {
    for (int32_t j = 0; j < n; ++j) s[j] = exp_poly(s[j] - max);
}

// The slot of capture_probs query head h writes to, -1 for none (the inspector's hooks).
int32_t capture_slot(const AttentionParams& p, int32_t h) {
    for (int32_t i = 0; p.capture_probs && i < p.n_capture_heads; ++i)
        if (p.capture_heads[i] == h) return i;
    return -1;
}

// The keys query position pos sees: [first, pos].
int32_t first_key(const AttentionParams& p, int32_t pos) { return p.window > 0 ? std::max(0, pos - p.window + 1) : 0; }

// q rounded to f16 the way the reference feeds it to kq: with scale_q, the scale multiplies q before
// that rounding (and the scores are then not scaled).
void round_query(const AttentionParams& p, const float* q, float* scratch, uint16_t* q16, int64_t hd) {
    if (p.scale_q) {
        for (int64_t i = 0; i < hd; ++i) scratch[i] = q[i] * p.scale;
        quantize_row(GgmlType::F16, scratch, q16, hd);
    } else {
        quantize_row(GgmlType::F16, q, q16, hd);
    }
}

// The largest of s[0..n): exact in any order, so in 8 independent lanes (one chain of n dependent
// comparisons took half of the softmax's time at depth 4096). A NaN is passed over as the one chain
// passed over it. Only the sign of a zero maximum may differ from the one chain's, which changes
// nothing: s - max then differs at most in the sign of a zero, and the exp of either is 1.
float max_of(const float* s, int32_t n) {
    float lane[8];
    std::fill(lane, lane + 8, -INFINITY);
    int32_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; ++l) lane[l] = std::max(lane[l], s[j + l]);
    float m = -INFINITY;
    for (float x : lane) m = std::max(m, x);
    for (; j < n; ++j) m = std::max(m, s[j]);
    return m;
}

// Softmax of the scores of keys [first, pos] in place (scores[j - first]), returning 1 / sum. The sum
// as llama.cpp forms it: over the cache in runs of 8 keys counted from key 0 (keys outside the window
// count 0), each run summed in float in the 8-lane tree, the runs in double.
float softmax_in_place(float* scores, int32_t first, int32_t pos) {
    const int32_t n_keys = pos - first + 1;
    const float max_s = max_of(scores, n_keys);
    exp_shifted(scores, n_keys, max_s);
    double sum = 0.0;
    for (int32_t run = first / 8 * 8; run <= pos; run += 8) {
        if (run >= first && run + 7 <= pos) {  // a whole run of seen keys: summed where it lies
            sum += sum_f16_dot_lanes(F16DotOrder::kLanes8, scores + (run - first));
            continue;
        }
        float e[8];
        for (int32_t l = 0; l < 8; ++l) {
            const int32_t j = run + l;
            e[l] = j >= first && j <= pos ? scores[j - first] : 0.0f;
        }
        sum += sum_f16_dot_lanes(F16DotOrder::kLanes8, e);
    }
    return float(1.0 / sum);
}

// The softmax output itself goes to the capture (V is weighted by these values rounded to f16, the
// precision of the reference's matmul input). row has max_keys entries; keys outside [first, pos] are 0.
void capture_row(float* row, int64_t max_keys, const float* scores, int32_t first, int32_t pos, float inv) {
    std::fill(row, row + max_keys, 0.0f);
    for (int32_t j = first; j <= pos; ++j) row[j] = scores[j - first] * inv;
}

// Gemma 2's attention soft-capping as llama.cpp's graph applies it to the raw q.k products (three
// ops: a scale by the float reciprocal, tanh, a scale by the cap), before the softmax's scale.
void soft_cap_scores(float* s, int32_t n, float cap) {
    if (cap <= 0.0f) return;
    const float inv = 1.0f / cap;
    for (int32_t j = 0; j < n; ++j) s[j] = std::tanh(s[j] * inv) * cap;
}

// x[i] = x[i] * scale rounded to f16 (as a float): the softmax probabilities as they weight V. The
// row conversions (F16C where the CPU has it) round exactly as util/fp16.h's scalar functions, at a
// fraction of their cost over thousands of keys.
void scale_round_f16(float* x, int32_t n, float scale) {
    constexpr int32_t kChunk = 256;
    uint16_t h[kChunk];
    for (int32_t i = 0; i < n; i += kChunk) {
        const int32_t m = std::min(kChunk, n - i);
        for (int32_t j = 0; j < m; ++j) x[i + j] *= scale;
        quantize_row(GgmlType::F16, x + i, h, m);
        dequantize_row(GgmlType::F16, h, x + i, m);
    }
}

// One (row, head) of a batched attention task: row holds the scores of keys [first, last], of which
// the query at pos sees [first_key(pos), pos]. Those become the softmax's probabilities rounded to
// f16 (captured first where the head is captured), the others 0.
void softmax_of_row(const AttentionParams& p, float* row, int32_t first, int32_t last, int32_t pos, float score_scale,
                    int32_t slot, int64_t q_row, int64_t n_rows, int64_t max_keys) {
    const int32_t row_first = first_key(p, pos);
    float* s = row + (row_first - first);
    soft_cap_scores(s, pos - row_first + 1, p.softcap);
    for (int32_t j = 0; j <= pos - row_first; ++j) s[j] *= score_scale;
    const float inv = softmax_in_place(s, row_first, pos);
    if (slot >= 0) capture_row(p.capture_probs + (int64_t(slot) * n_rows + q_row) * max_keys, max_keys, s, row_first, pos, inv);
    scale_round_f16(s, pos - row_first + 1, inv);
    std::fill(row, s, 0.0f);
    std::fill(row + (pos - first + 1), row + (last - first + 1), 0.0f);
}

// Keys of one position run along a KV block: [j, j + n) with n up to the end of j's block or to last.
int32_t run_in_block(const KvCache& kv, int32_t j, int32_t last) {
    const int32_t bt = kv.config().block_tokens;
    return std::min(last - j + 1, bt - j % bt);
}

// Rows of attention_rows' tasks: up to kRowsPerTask consecutive query rows, whose heads of a group
// share every K and V row, converted from f16 once for all of them.
constexpr int32_t kRowsPerTask = 4;

// What all the tasks of one attention_rows call share.
struct RowsJob {
    const Tensor& q;
    const KvCache& kv;
    int32_t il, pos0;
    const AttentionParams& p;
    Tensor& out;
    int32_t group;
    int64_t hd, max_keys;
    F16DotOrder kq_order, out_order;
    int64_t n_lanes, row_halves;  // lanes of the output dot; one position's K (or V), all kv heads, in halves
    float score_scale;
};

// The rows of a task (query rows r0 .. r0 + nr - 1) that see key j: those whose window
// [first_key(pos), pos] holds it, consecutive since both ends grow with pos: [*lo, *hi). Returns the
// last key from j on that the same rows see.
int32_t rows_seeing(const AttentionParams& p, int32_t pos_r0, int32_t nr, int32_t j, int32_t* lo, int32_t* hi) {
    int32_t a = 0;
    while (a < nr && pos_r0 + a < j) ++a;
    int32_t b = a;
    while (b < nr && first_key(p, pos_r0 + b) <= j) ++b;
    int32_t end = pos_r0 + nr - 1;
    if (a < nr) end = std::min(end, pos_r0 + a);                   // row a sees no key after its own
    if (b < nr) end = std::min(end, first_key(p, pos_r0 + b) - 1);  // row b starts seeing there
    *lo = a;
    *hi = b;
    return end;
}

// One task of attention_rows: query rows [r0, r0 + nr) and kv head kvh. The keys [first, last] of the
// block are those of its first row's window up to its last row; each (row, head) gets its scores over
// all of them, then its softmax over the keys it sees (the rest of its row set to 0). V is weighted
// only over the rows that see each key, so a key a row does not see leaves that row's lanes exactly
// as they are (even where V is infinite: 0 * inf would be NaN) and each row's output does not depend
// on how the batch is cut into blocks. Each (head, key) product and each output lane sees exactly the
// operations of one head of one row at a time.
void attention_rows_task(const RowsJob& job, int64_t r0, int32_t nr, int32_t kvh, float* scores, uint16_t* q16) {
    const AttentionParams& p = job.p;
    const int32_t group = job.group;
    const int64_t hd = job.hd, max_keys = job.max_keys, n_lanes = job.n_lanes;
    const int32_t gr = group * kRowsPerTask;
    const int32_t g = group * nr;  // heads of the task, row by row: head i of row rr is rr * group + i
    const int32_t pos_r0 = job.pos0 + int32_t(r0);
    const int32_t first = first_key(p, pos_r0);
    const int32_t last = pos_r0 + nr - 1;
    float* lanes = scores + gr * max_keys;
    float* qf = lanes + gr * n_lanes * hd;
    float* scratch = qf + gr * hd;  // a scaled query
    for (int32_t rr = 0; rr < nr; ++rr)
        for (int32_t i = 0; i < group; ++i) {
            round_query(p, job.q.data + (r0 + rr) * job.q.n_cols + int64_t(kvh * group + i) * hd, scratch, q16, hd);
            dequantize_row(GgmlType::F16, q16, qf + (rr * group + i) * hd, hd);  // exact, as fp16_to_f32
        }

    // scores_j = scale * q.k_j, then a numerically stable softmax per (row, head) over the keys
    // that row sees; the probabilities are left rounded to f16, the precision they weight V with.
    for (int32_t j = first; j <= last;) {
        const int32_t run = run_in_block(job.kv, j, last);
        const auto* k = static_cast<const uint16_t*>(job.kv.k_row(job.il, j)) + int64_t(kvh) * hd;
        dot_f16_keys(job.kq_order, hd, k, job.row_halves, run, qf, hd, g, scores + (j - first), max_keys);
        j += run;
    }
    for (int32_t rr = 0; rr < nr; ++rr)
        for (int32_t i = 0; i < group; ++i) {
            const int64_t capture_row_index = r0 + rr;  // in capture_probs' [slot][query row] layout
            softmax_of_row(p, scores + (rr * group + i) * max_keys, first, last, pos_r0 + rr, job.score_scale,
                           capture_slot(p, kvh * group + i), capture_row_index, job.q.n_rows, max_keys);
        }

    // out[d] = sum_j p_j v_j[d]. Key j goes to lane j % n_lanes of every output dim (the lanes the
    // reference's dot over the cache gives it); each lane row is one fused multiply-add per key.
    std::fill(lanes, lanes + g * n_lanes * hd, 0.0f);
    for (int32_t j = first; j <= last;) {
        int32_t lo = 0, hi = 0;
        const int32_t seen_to = rows_seeing(p, pos_r0, nr, j, &lo, &hi);
        const int32_t run = std::min(run_in_block(job.kv, j, last), seen_to - j + 1);
        const auto* v = static_cast<const uint16_t*>(job.kv.v_row(job.il, j)) + int64_t(kvh) * hd;
        if (hi > lo)
            fma_f16_keys(hd, v, job.row_halves, run, j % n_lanes, int(n_lanes), scores + lo * group * max_keys + (j - first),
                         max_keys, (hi - lo) * group, lanes + lo * group * n_lanes * hd, n_lanes * hd);
        j += run;
    }
    for (int32_t rr = 0; rr < nr; ++rr)
        for (int32_t i = 0; i < group; ++i) {
            float* o = job.out.data + (r0 + rr) * job.out.n_cols + int64_t(kvh * group + i) * hd;
            sum_f16_dot_lanes_by_dim(job.out_order, lanes + int64_t(rr * group + i) * n_lanes * hd, hd, hd, o);
        }
}

// The decode's scores take the keys in steps of 16 for all kv heads (6 KiB of SmolLM2's cache, in the
// L1 cache while the heads take it in turn).
constexpr int32_t kKeyStep = 16;

// One token: ggml_vec_dot_f16's order for both of the decode's products.
constexpr F16DotOrder kDecodeOrder = F16DotOrder::kStep32;
constexpr int kDecodeLanes = f16_dot_lanes(kDecodeOrder);

// What the decode's tasks share: the queries rounded to f16 (as floats) [n_head][hd] and the scores,
// then probabilities, [n_head][n_keys] of keys [first, pos].
struct DecodeJob {
    const KvCache& kv;
    int32_t il, first, pos, n_keys, group, n_head_kv;
    int64_t hd, row_halves;  // one position's K (or V) row, all kv heads, in halves
    const float* qf;
    float* scores;
};

// Phase 1's task: the scores of keys [lo, hi] for every query head, each key's row dotted with its
// group's heads, all kv heads of a step of keys in turn, so that the task reads the cache front to back.
void decode_scores(const DecodeJob& job, int32_t lo, int32_t hi) {
    for (int32_t j = lo; j <= hi;) {
        const int32_t run = std::min(kKeyStep, run_in_block(job.kv, j, hi));
        for (int32_t kvh = 0; kvh < job.n_head_kv; ++kvh) {
            const auto* k = static_cast<const uint16_t*>(job.kv.k_row(job.il, j)) + int64_t(kvh) * job.hd;
            dot_f16_keys(kDecodeOrder, job.hd, k, job.row_halves, run, job.qf + int64_t(kvh) * job.group * job.hd, job.hd,
                         job.group, job.scores + int64_t(kvh) * job.group * job.n_keys + (j - job.first), job.n_keys);
        }
        j += run;
    }
}

// Phase 3's task: output dims [d0, d0 + dims) of kv head kvh's query heads, out = V^T p. Key j goes to
// lane j % 32 of each dim, keys in ascending order, then each dim's lanes are summed in the order's
// tree. lanes: [group][kDecodeLanes][dims] of scratch.
void decode_values(const DecodeJob& job, int32_t kvh, int64_t d0, int64_t dims, float* lanes, float* out) {
    const int32_t group = job.group;
    std::fill(lanes, lanes + group * kDecodeLanes * dims, 0.0f);
    const float* probs = job.scores + int64_t(kvh) * group * job.n_keys;
    for (int32_t j = job.first; j <= job.pos;) {
        const int32_t run = run_in_block(job.kv, j, job.pos);
        const auto* v = static_cast<const uint16_t*>(job.kv.v_row(job.il, j)) + int64_t(kvh) * job.hd + d0;
        fma_f16_keys(dims, v, job.row_halves, run, j % kDecodeLanes, kDecodeLanes, probs + (j - job.first), job.n_keys,
                     group, lanes, kDecodeLanes * dims);
        j += run;
    }
    for (int32_t g = 0; g < group; ++g)
        sum_f16_dot_lanes_by_dim(kDecodeOrder, lanes + int64_t(g) * kDecodeLanes * dims, dims, dims,
                                 out + int64_t(kvh * group + g) * job.hd + d0);
}

}  // namespace

void CpuBackend::attention(const Tensor& q, const KvCache& kv, int32_t il, int32_t pos0, const AttentionParams& p,
                           Tensor& out) {
    if (kv_type_is_quantized(kv.config().type_k) || kv_type_is_quantized(kv.config().type_v))
        attention_flash(q, kv, il, pos0, p, out);
    else if (p.capture_scores && p.capture_probs)
        throw Error("attention: capture_scores needs a quantized K or V (the flash path)");
    else if (q.n_rows == 1)
        attention_decode(q, kv, il, pos0, p, out);
    else
        attention_rows(q, kv, il, pos0, p, out);
}

void CpuBackend::attention_rows(const Tensor& q, const KvCache& kv, int32_t il, int32_t pos0, const AttentionParams& p,
                                Tensor& out) {
    const int32_t group = p.n_head / p.n_head_kv;
    const int64_t hd = p.head_dim;
    const F16DotOrder out_order = hd % 4 == 0 ? F16DotOrder::kLanes8 : F16DotOrder::kStep32;
    const RowsJob job{q, kv, il, pos0, p, out, group, hd, pos0 + q.n_rows,
                      hd % 8 == 0 ? F16DotOrder::kLanes8 : F16DotOrder::kStep32, out_order, f16_dot_lanes(out_order),
                      int64_t(kv.k_row_bytes() / sizeof(uint16_t)), p.scale_q ? 1.0f : p.scale};
    // per thread: the heads' scores, then probabilities [gr][max_keys]; their value lanes
    // [gr][n_lanes][hd]; the queries rounded to f16 (as floats) [gr][hd]; a scaled query [hd]. And
    // the f16 query [hd].
    const int32_t gr = group * kRowsPerTask;
    const size_t buf_floats = size_t(gr * (job.max_keys + job.n_lanes * hd + hd) + hd);
    for (auto& b : thread_buf_)
        if (b.size() < buf_floats) b.resize(buf_floats);
    for (auto& b : thread_f16_)
        if (b.size() < size_t(hd)) b.resize(size_t(hd));
    const int64_t n_blocks = (q.n_rows + kRowsPerTask - 1) / kRowsPerTask;
    // A task per (block of query rows, kv head): attention_rows_task.
    pool_.parallel_for(n_blocks * p.n_head_kv, [&](int64_t task, int thread) {
        const int64_t r0 = task / p.n_head_kv * kRowsPerTask;
        attention_rows_task(job, r0, int32_t(std::min<int64_t>(kRowsPerTask, q.n_rows - r0)),
                            int32_t(task % p.n_head_kv), thread_buf_[size_t(thread)].data(),
                            thread_f16_[size_t(thread)].data());
    });
}

void CpuBackend::attention_decode(const Tensor& q, const KvCache& kv, int32_t il, int32_t pos, const AttentionParams& p,
                                  Tensor& out) {
    const int32_t group = p.n_head / p.n_head_kv;
    const int64_t hd = p.head_dim;
    const int32_t first = first_key(p, pos);
    const int32_t n_keys = pos - first + 1;
    const float score_scale = p.scale_q ? 1.0f : p.scale;

    // Output dims per phase-3 task: a 64-byte line of a V row where the head dim allows, so that one
    // task reads each line (with 16 dims, two tasks read every line from memory, each using half).
    const int64_t dims = hd % 32 == 0 ? 32 : hd % 16 == 0 ? 16 : hd;

    // Shared: DecodeJob's queries and scores. Per thread: phase 3's lanes; the set-up below uses
    // thread 0's as the scaled q.
    decode_buf_.resize(size_t(p.n_head * hd + int64_t(p.n_head) * n_keys));
    const DecodeJob job{kv, il, first, pos, n_keys, group, p.n_head_kv, hd, int64_t(kv.k_row_bytes() / sizeof(uint16_t)),
                        decode_buf_.data(), decode_buf_.data() + p.n_head * hd};
    const size_t thread_floats = size_t(std::max<int64_t>(group * kDecodeLanes * dims, hd));
    for (auto& b : thread_buf_)
        if (b.size() < thread_floats) b.resize(thread_floats);
    for (auto& b : thread_f16_)
        if (b.size() < size_t(hd)) b.resize(size_t(hd));
    for (int32_t h = 0; h < p.n_head; ++h) {
        round_query(p, q.data + int64_t(h) * hd, thread_buf_[0].data(), thread_f16_[0].data(), hd);
        dequantize_row(GgmlType::F16, thread_f16_[0].data(), decode_buf_.data() + h * hd, hd);  // exact, as fp16_to_f32
    }

    // Phase 1, scores (decode_scores): a task per run of keys, about a quarter of a thread's share, so
    // uneven tasks still even out. (A task per kv head and run read one 128-byte piece of every row.)
    const int32_t chunk = std::clamp<int32_t>((n_keys / (4 * n_threads()) + 15) / 16 * 16, 16, 256);
    const int32_t n_chunks = (n_keys + chunk - 1) / chunk;
    pool_.parallel_for(n_chunks, [&](int64_t task, int) {
        const int32_t lo = first + int32_t(task) * chunk;
        decode_scores(job, lo, std::min(pos, lo + chunk - 1));
    });

    // Phase 2, softmax: a task per query head. The probabilities are left rounded to f16, the precision
    // the reference weights V with.
    pool_.parallel_for(p.n_head, [&](int64_t h, int) {
        float* s = job.scores + h * n_keys;
        soft_cap_scores(s, n_keys, p.softcap);
        for (int32_t j = 0; j < n_keys; ++j) s[j] *= score_scale;
        const float inv = softmax_in_place(s, first, pos);
        if (const int32_t slot = capture_slot(p, int32_t(h)); slot >= 0)
            capture_row(p.capture_probs + int64_t(slot) * (pos + 1), pos + 1, s, first, pos, inv);
        scale_round_f16(s, n_keys, inv);
    });

    // Phase 3, out = V^T p (decode_values): a task per (kv head, slice of output dims).
    const int64_t n_slices = hd / dims;
    pool_.parallel_for(p.n_head_kv * n_slices, [&](int64_t task, int thread) {
        decode_values(job, int32_t(task / n_slices), (task % n_slices) * dims, dims, thread_buf_[size_t(thread)].data(),
                      out.data);
    });
}

}  // namespace wb
