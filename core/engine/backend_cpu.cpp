#include "engine/backend_cpu.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <set>

#include "engine/backend_cpu_fma.h"
#include "engine/cpu_repack.h"
#include "engine/rope_shift.h"
#include "gguf/gguf_file.h"
#include "model/weights.h"
#include "quant/quant.h"
#include "util/error.h"
#include "util/exp_poly.h"
#include "util/fp16.h"

namespace wb {

namespace {

constexpr size_t kAlign = 64;

// Rows of W handled by one task of a batch's matmul (a few tokens take up to four times as many, see
// plan_matmuls): large enough to amortise the task hand-out, small enough to split evenly.
constexpr int64_t kRowsPerTask = 16;
static_assert(kRowsPerTask % kTile16Rows == 0, "a batch's tasks are whole runs of the 16-row tile (the last may be short)");


// SiLU with the polynomial exp (see util/exp_poly.h); `tail` elements, those past the last full run
// of 8 in a row, use the library exp as llama.cpp's scalar remainder loop does.
inline float silu(float x, bool tail) { return x / (1.0f + (tail ? std::exp(-x) : exp_poly(-x))); }

// Columns [c0, c1) of rows of `cols` values (the whole row, or one task's share of a fused matmul_glu:
// an element's result depends on its column, not on who computes it).
WB_FMA_CLONES void silu_mul(const float* gate, const float* up, float* out, int64_t rows, int64_t cols, int64_t c0,
                            int64_t c1) {
    const int64_t full = cols / 8 * 8;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = c0; c < c1; ++c) {
            const int64_t i = r * cols + c;
            out[i] = silu(gate[i], c >= full) * up[i];
        }
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
const std::array<uint16_t, 65536>& gelu_f16_table() {
    static const std::array<uint16_t, 65536> table = [] {
        std::array<uint16_t, 65536> t{};
        for (uint32_t i = 0; i < t.size(); ++i) t[i] = f32_to_fp16(gelu_tanh(fp16_to_f32(uint16_t(i))));
        return t;
    }();
    return table;
}

// out[i] = GELU(gate[i]) * up[i] for n values (out may be gate). The roundings to f16 and back go
// through the row conversions (F16C where the CPU has it, rounding exactly as util/fp16.h's scalar
// functions), a fraction of the cost of one scalar conversion each way per element.
void gelu_mul(const float* gate, const float* up, float* out, int64_t n) {
    constexpr int64_t kChunk = 256;
    const std::array<uint16_t, 65536>& table = gelu_f16_table();
    uint16_t h[kChunk];
    float g[kChunk];
    for (int64_t i = 0; i < n; i += kChunk) {
        const int64_t m = std::min(kChunk, n - i);
        quantize_row(GgmlType::F16, gate + i, h, m);
        for (int64_t j = 0; j < m; ++j) h[j] = table[h[j]];
        dequantize_row(GgmlType::F16, h, g, m);
        for (int64_t j = 0; j < m; ++j) {
            const float x = gate[i + j];
            out[i + j] = (x <= -10.0f ? 0.0f : x >= 10.0f ? x : g[j]) * up[i + j];
        }
    }
}

// The path llama.cpp's x86 CPU build takes for token t of an n_tok-token matmul (quant.h). It
// repacks and multiplies whole tensors: a fused tensor's row count decides, not that of the part in use.
DotOrder llama_cpp_dot_order(const Weight& w, int64_t n_tok, int64_t t) {
    return wb::llama_cpp_dot_order(w.type, w.src ? w.src->ne[1] : w.n_out, w.n_in, n_tok, t);
}

}  // namespace

CpuBackend::CpuBackend(int n_threads) : pool_(n_threads) {
    thread_buf_.resize(size_t(pool_.size()));
    thread_f16_.resize(size_t(pool_.size()));
}

CpuBackend::~CpuBackend() = default;

std::string CpuBackend::description() const {
    return "CPU, " + std::to_string(pool_.size()) + " threads, " + quant_kernel_name() +
           (quant_uses_vnni() ? "+vnni" : "") + " kernels";
}

// A matrix is repacked where the kernel family has a load-time layout for its decode order (the order
// of a one-token matmul) and its rows come in whole runs of 16. The embedding table itself is only
// looked up by rows, so it is repacked only as a tied output head: then embed reads its rows from the
// copy too (unrepack_row), and the mapping's pages of it go like the others'.
void CpuBackend::prepare_weights(ModelWeights& weights) {
    std::set<const void*> used;  // one use per copy and weight set (release_weights counts so)
    try {
        for (Weight* w : weights.all()) {
            if (!*w || w == &weights.token_embd || w->n_out % kTile16Rows != 0 || w->device) continue;
            const DotKernels k = dot_kernels(w->type, w->n_in, llama_cpp_dot_order(*w, 1, 0));
            if (!k.repack16 || !k.unrepack_row) continue;
            std::shared_ptr<const RepackedMatrix> m = repacked_matrix(*w, k, pool_, true);
            RepackedUse& use = repacked_[m->data];
            use.copy = std::move(m);
            if (used.insert(use.copy->data).second) ++use.users;
            w->device = use.copy->data;
            if (weights.token_embd && w->src == weights.token_embd.src && w->host == weights.token_embd.host)
                weights.token_embd.device = w->device;
        }
    } catch (...) {
        release_weights(weights);  // the copies made before the failure (out of memory)
        throw;
    }
}

std::vector<std::pair<GgmlType, uint64_t>> CpuBackend::repacked_weights() const {
    std::vector<std::pair<GgmlType, uint64_t>> out;
    for (const auto& [data, use] : repacked_) {
        const RepackedMatrix* m = use.copy.get();
        auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == m->type; });
        if (it == out.end()) it = out.insert(out.end(), {m->type, 0});
        it->second += m->bytes;
    }
    return out;
}

void CpuBackend::release_weights(ModelWeights& weights) {
    std::set<const void*> copies;  // a tied table and its output head are one use of one copy
    for (Weight* w : weights.all())
        if (w->device && repacked_.count(w->device)) {
            copies.insert(w->device);
            w->device = nullptr;
        }
    for (const void* p : copies)
        if (auto it = repacked_.find(p); --it->second.users == 0) repacked_.erase(it);
}

size_t CpuBackend::alloc_bytes(int64_t n_rows, int64_t n_cols) {
    const size_t bytes = (size_t(n_rows * n_cols) * sizeof(float) + kAlign - 1) / kAlign * kAlign;
    return std::max<size_t>(bytes, kAlign);
}

Tensor CpuBackend::alloc(int64_t n_rows, int64_t n_cols) {
    const size_t bytes = alloc_bytes(n_rows, n_cols);
    void* p = std::aligned_alloc(kAlign, bytes);
    if (!p) throw Error("out of memory allocating " + std::to_string(bytes) + " bytes of activations");
    tensor_bytes_ += bytes;
    return {static_cast<float*>(p), n_rows, n_cols};
}

void CpuBackend::free(Tensor& t) {
    if (t.data) tensor_bytes_ -= alloc_bytes(t.n_rows, t.n_cols);
    std::free(t.data);
    t = {};
}

void* CpuBackend::kv_alloc(size_t bytes) {
    return std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
}

void CpuBackend::kv_free(void* p) { std::free(p); }

void CpuBackend::embed(const Weight& table, const int32_t* ids, int32_t n, float scale, Tensor& out) {
    const size_t row_bytes = ggml_row_bytes(table.type, table.n_in);
    // A tied table repacked as the output head: its rows come back from the copy, byte for byte.
    const auto copy = table.device ? repacked_.find(table.device) : repacked_.end();
    std::vector<uint8_t> unrepacked(copy != repacked_.end() ? row_bytes : 0);
    for (int32_t i = 0; i < n; ++i) {
        if (ids[i] < 0 || ids[i] >= table.n_out)
            throw Error("token id " + std::to_string(ids[i]) + " is outside the vocabulary (0.." +
                        std::to_string(table.n_out - 1) + ")");
        float* row = out.data + int64_t(i) * out.n_cols;
        const uint8_t* bytes = static_cast<const uint8_t*>(table.host) + size_t(ids[i]) * row_bytes;
        if (copy != repacked_.end()) {
            const RepackedMatrix& m = *copy->second.copy;
            m.unrepack_row(table.n_in, m.data + size_t(ids[i] / kTile16Rows) * m.group_bytes, ids[i] % kTile16Rows, unrepacked.data());
            bytes = unrepacked.data();
        }
        dequantize_row(table.type, bytes, row, table.n_in);
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

void CpuBackend::plan_matmuls(const Tensor& x, const Weight* const* weights, Tensor* const* outs, int n,
                              MatmulJob* jobs) {
    if (n < 1 || n > kMaxJobs) throw Error("CPU backend: " + std::to_string(n) + " matmuls of one input at once");
    const int64_t n_tok = x.n_rows;
    for (int i = 0; i < n; ++i) {
        const Weight& w = *weights[i];
        MatmulJob& job = jobs[i];
        job.w = &w;
        job.out = outs[i];
        job.act_row = activation_row_bytes(w.type, w.n_in);
        // Convert the activations once per dot type (q/k/v usually share one).
        job.act = nullptr;
        for (int k = 0; k < i && !job.act; ++k)
            if (vec_dot_type(weights[k]->type) == vec_dot_type(w.type) && weights[k]->n_in == w.n_in)
                job.act = jobs[k].act;
        if (!job.act) {
            std::vector<uint8_t>& buf = act_buf_[i];
            if (buf.size() < job.act_row * size_t(n_tok)) buf.resize(job.act_row * size_t(n_tok));
            uint8_t* act = buf.data();
            // With many tokens the conversion is itself worth spreading out.
            pool_.parallel_for(n_tok, [&](int64_t t, int) {
                quantize_activations(w.type, x.data + t * x.n_cols, act + size_t(t) * job.act_row, w.n_in);
            });
            job.act = act;
        }
        // The order changes at most once over a batch (Q4_K: gemm, then gemv); tokens before split
        // take the first token's.
        const DotOrder first = llama_cpp_dot_order(w, n_tok, 0);
        const DotOrder last = llama_cpp_dot_order(w, n_tok, std::max<int64_t>(n_tok - 1, 0));
        job.split = n_tok;
        if (first != last)
            for (job.split = 1; job.split < n_tok && llama_cpp_dot_order(w, n_tok, job.split) == first;) ++job.split;
        job.first = dot_kernels(w.type, w.n_in, first);
        job.rest = first == last ? job.first : dot_kernels(w.type, w.n_in, last);
        // The repacked copy serves where both orders read its layout (else the mapping, still valid).
        job.repacked = nullptr;
        if (auto it = w.device ? repacked_.find(w.device) : repacked_.end(); it != repacked_.end()) {
            const RepackedMatrix& m = *it->second.copy;
            if (job.first.repack16 == m.layout && job.rest.repack16 == m.layout) {
                job.repacked = m.data;
                job.repacked_group = m.group_bytes;
            }
        }
        // Tokens go in groups of kDotTileCols through a tile kernel where the group's tokens share an
        // order that has one.
        const int64_t n_groups = n_tok / kDotTileCols;
        job.group_tiled.assign(size_t(n_groups), 0);
        for (int64_t gi = 0; gi < n_groups; ++gi) {
            const int64_t t0 = gi * kDotTileCols, t1 = t0 + kDotTileCols - 1;
            const DotKernels& k = job.kernels(t0);
            // repacked rows have a tile only through unpack16_repacked
            job.group_tiled[size_t(gi)] = (t1 < job.split || t0 >= job.split) && (job.repacked ? k.unpack16_repacked != nullptr : k.tile != nullptr);
        }
        // A batch keeps tasks of 16 rows (each walks all tokens with its rows in cache); a few tokens
        // take about 8 tasks a thread of at most 64 rows: fewer hand-outs (each a contended atomic
        // between the cores) for the same work. A matrix of more than 64 such tasks a thread (an
        // output head: Gemma 3's 262,144 rows made 4,096 tasks a token) takes 64 tasks a thread, each
        // a longer stream of rows. Which thread computes a row does not change it.
        job.rows_per_task = kRowsPerTask;
        if (n_tok < kDotTileCols) {
            const int64_t most = std::max<int64_t>(4 * kRowsPerTask, w.n_out / (64 * pool_.size()) / kRowsPerTask * kRowsPerTask);
            job.rows_per_task = std::clamp<int64_t>(w.n_out / (8 * pool_.size()) / kRowsPerTask * kRowsPerTask,
                                                    kRowsPerTask, most);
        }
        job.n_tasks = (w.n_out + job.rows_per_task - 1) / job.rows_per_task;
        pack_activations(i, jobs);
    }
}

// The groups of tokens wholly in the first order that take its tile go through tile_packed where it
// has one: their activations are interleaved once here instead of being met 8 rows apart by every
// weight row. Shared, like the activations, with an earlier job of the same packing and row length.
void CpuBackend::pack_activations(int i, MatmulJob* jobs) {
    MatmulJob& job = jobs[i];
    job.packed = nullptr;
    job.packed_groups = 0;
    if (!job.first.tile_packed || job.repacked) return;  // repacked rows go through the 16-row tile
    // Where the 16-row tile takes every row of every task (whole runs of 16, several groups of tokens:
    // matmul_rows), nothing would read the packing.
    const bool several_groups = job.group_tiled.size() >= 2 && job.group_tiled[1];
    if (job.first.tile16_unpacked && several_groups && job.w->n_out % kTile16Rows == 0 && job.rows_per_task % kTile16Rows == 0)
        return;
    const int64_t n_in = job.w->n_in;
    while (job.packed_groups < int64_t(job.group_tiled.size()) && job.group_tiled[size_t(job.packed_groups)] &&
           (job.packed_groups + 1) * kDotTileCols <= job.split)
        ++job.packed_groups;
    if (job.packed_groups == 0) return;
    job.packed_bytes = job.first.packed_x_bytes(n_in);
    for (int k = 0; k < i && !job.packed; ++k)
        if (jobs[k].packed && jobs[k].first.pack_x == job.first.pack_x && jobs[k].w->n_in == n_in &&
            jobs[k].packed_groups == job.packed_groups && jobs[k].act == job.act)
            job.packed = jobs[k].packed;
    if (job.packed) return;
    std::vector<uint8_t>& buf = packed_buf_[i];
    if (buf.size() < job.packed_bytes * size_t(job.packed_groups)) buf.resize(job.packed_bytes * size_t(job.packed_groups));
    uint8_t* packed = buf.data();
    const MatmulJob& j = job;
    pool_.parallel_for(job.packed_groups, [&](int64_t g, int) {
        j.first.pack_x(n_in, j.act + size_t(g * kDotTileCols) * j.act_row, j.act_row, packed + size_t(g) * j.packed_bytes);
    });
    job.packed = packed;
}

// A task owns a run of weight rows and walks all tokens with them, so those rows stay in cache while
// every token is multiplied by them (prefill). The tile gives every output exactly what vec_dot_rows
// would (quant.h), only faster: each weight block is unpacked once per group of tokens.
namespace {

// One matmul task's weight rows: where they are read from (the mapping, or the load-time copy in runs
// of 16) and, made at most once per task and order, the forms some tiles read instead: rows unpacked
// one by one (DotKernels::unpack_w) and 16 at a time (unpack16_w, or unpack16_repacked from the copy).
// The buffers are per thread and reused from task to task; each form remembers the kernels that wrote
// it, as a batch's two orders (MatmulJob::split) may differ.
class TaskRows {
public:
    TaskRows(int64_t n_in, const uint8_t* wdata, size_t w_row, const uint8_t* repacked, size_t repacked_group, int64_t nr)
        : n_in_(n_in), wdata_(wdata), w_row_(w_row), repacked_(repacked), repacked_group_(repacked_group), nr_(nr) {}

    const uint8_t* row(int64_t r) const { return wdata_ + size_t(r) * w_row_; }
    size_t w_row() const { return w_row_; }
    // Group g (rows 16g .. 16g + 15) of the load-time copy; nullptr where the rows are not repacked.
    const uint8_t* repacked(int64_t g) const { return repacked_ ? repacked_ + size_t(g) * repacked_group_ : nullptr; }

    // The first n rows unpacked by k.unpack_w, unpacked_w_bytes(n_in) bytes a row.
    const uint8_t* unpacked(const DotKernels& k, int64_t n) {
        thread_local std::vector<uint8_t> buf;
        if (unpacked_by_ != k.unpack_w) {
            unpacked_by_ = k.unpack_w;
            const size_t bytes = k.unpacked_w_bytes(n_in_);
            if (buf.size() < bytes * size_t(n)) buf.resize(bytes * size_t(n));
            for (int64_t r = 0; r < n; ++r) k.unpack_w(n_in_, row(r), buf.data() + size_t(r) * bytes);
        }
        return buf.data();
    }

    // The first n rows (a multiple of 16) in k's 16-row layout, unpacked16_w_bytes(n_in) bytes a run,
    // 64-byte aligned (DotKernels::unpack16_w).
    const uint8_t* unpacked16(const DotKernels& k, int64_t n) {
        thread_local std::vector<uint8_t> buf;
        if (unpacked16_by_ != &k) {
            unpacked16_by_ = &k;
            const size_t bytes = k.unpacked16_w_bytes(n_in_);
            const size_t need = bytes * size_t(n / kTile16Rows) + kAlign;
            if (buf.size() < need) buf.resize(need);
            const auto addr = reinterpret_cast<uintptr_t>(buf.data());
            unpacked16_ = buf.data() + (kAlign - addr % kAlign) % kAlign;
            for (int64_t r = 0; r < n; r += kTile16Rows) {
                uint8_t* u = unpacked16_ + size_t(r / kTile16Rows) * bytes;
                if (repacked_)
                    k.unpack16_repacked(n_in_, repacked(r / kTile16Rows), u);
                else
                    k.unpack16_w(n_in_, row(r), w_row_, u);
            }
        }
        return unpacked16_;
    }

    // Token x's rows from r_begin through the row kernels (the copy's 16-row one where repacked).
    void row_dots(const DotKernels& k, const uint8_t* x, int64_t r_begin, float* o) const {
        int64_t r = r_begin;
        if (repacked_) {
            for (; r < nr_; r += kTile16Rows) k.row16_repacked(n_in_, repacked(r / kTile16Rows), x, o + r);
            return;
        }
        if (k.rows8)
            for (; r + 8 <= nr_; r += 8) k.rows8(n_in_, row(r), w_row_, x, o + r);
        for (; r < nr_; ++r) o[r] = k.row(n_in_, row(r), x);
    }

private:
    int64_t n_in_;
    const uint8_t* wdata_;
    size_t w_row_;
    const uint8_t* repacked_;
    size_t repacked_group_;
    int64_t nr_;
    void (*unpacked_by_)(int64_t, const void*, void*) = nullptr;
    const DotKernels* unpacked16_by_ = nullptr;
    uint8_t* unpacked16_ = nullptr;
};

}  // namespace

void CpuBackend::matmul_rows(const MatmulJob& job, int64_t n_tok, int64_t r0, int64_t nr) const {
    const Weight& w = *job.w;
    const int64_t n_in = w.n_in;
    const size_t act_row = job.act_row;
    const uint8_t* act = job.act;
    float* out = job.out->data + r0;
    const int64_t out_cols = job.out->n_cols;
    // Repacked rows: r0 and nr are whole runs of 16 (prepare_weights, plan_matmuls).
    const size_t w_row = ggml_row_bytes(w.type, n_in);
    const uint8_t* repacked = job.repacked ? job.repacked + size_t(r0 / kTile16Rows) * job.repacked_group : nullptr;
    TaskRows rows(n_in, static_cast<const uint8_t*>(w.host) + size_t(r0) * w_row, w_row, repacked, job.repacked_group, nr);
    const int64_t nr_tiles = nr / kDotTileRows * kDotTileRows;
    const int64_t nr16 = nr / kTile16Rows * kTile16Rows;
    // Rows are unpacked once per task only where several groups of tokens meet them (with one group the
    // unpacking would cost what it saves), except that repacked rows have no other tile.
    const bool several_groups = n_tok >= 2 * kDotTileCols && job.group_tiled.size() >= 2 && job.group_tiled[1];
    int64_t t = 0;
    for (; t + kDotTileCols <= n_tok && job.group_tiled[size_t(t / kDotTileCols)]; t += kDotTileCols) {
        const DotKernels& k = job.kernels(t);
        const uint8_t* x = act + size_t(t) * act_row;
        float* o = out + t * out_cols;
        int64_t r_first = 0;  // the first row of the tiles after the 16-row one
        if (k.tile16_unpacked && (several_groups || job.repacked) && nr16 > 0) {
            const uint8_t* u = rows.unpacked16(k, nr16);
            const size_t bytes = k.unpacked16_w_bytes(n_in);
            for (int64_t r = 0; r < nr16; r += kTile16Rows)
                k.tile16_unpacked(n_in, u + size_t(r / kTile16Rows) * bytes, x, act_row, o + r, out_cols);
            r_first = nr16;
        }
        if (r_first >= nr_tiles) {
            // every row went through the 16-row tile
        } else if (k.tile_unpacked && several_groups && t / kDotTileCols >= job.packed_groups) {
            const uint8_t* u = rows.unpacked(k, nr_tiles);
            const size_t bytes = k.unpacked_w_bytes(n_in);
            for (int64_t r = r_first; r < nr_tiles; r += kDotTileRows)
                k.tile_unpacked(n_in, u + size_t(r) * bytes, x, act_row, o + r, out_cols);
        } else if (t / kDotTileCols < job.packed_groups) {
            const uint8_t* packed = job.packed + size_t(t / kDotTileCols) * job.packed_bytes;
            for (int64_t r = r_first; r < nr_tiles; r += kDotTileRows) k.tile_packed(n_in, rows.row(r), packed, o + r, out_cols);
        } else if (k.tile_rows) {
            k.tile_rows(n_in, rows.row(r_first), rows.w_row(), nr_tiles - r_first, x, act_row, o + r_first, out_cols);
        } else {
            for (int64_t r = r_first; r < nr_tiles; r += kDotTileRows)
                k.tile(n_in, rows.row(r), rows.w_row(), x, act_row, o + r, out_cols);
        }
        if (nr_tiles < nr)
            for (int64_t c = t; c < t + kDotTileCols; ++c)
                rows.row_dots(job.kernels(c), act + size_t(c) * act_row, nr_tiles, out + c * out_cols);
    }
    for (; t < n_tok; ++t) rows.row_dots(job.kernels(t), act + size_t(t) * act_row, 0, out + t * out_cols);
}

void CpuBackend::matmul(const Weight& w, const Tensor& x, Tensor& out) {
    const Weight* weights[1] = {&w};
    Tensor* outs[1] = {&out};
    run_matmuls(x, weights, outs, 1);
}

void CpuBackend::matmul_shared(const Tensor& x, const Weight* const* weights, Tensor* const* outs, int n) {
    if (n <= 0) return;
    if (n > kMaxJobs) return Backend::matmul_shared(x, weights, outs, n);
    run_matmuls(x, weights, outs, n);
}

// One parallel loop over the row tasks of every weight: one barrier instead of n.
void CpuBackend::run_matmuls(const Tensor& x, const Weight* const* weights, Tensor* const* outs, int n) {
    MatmulJob jobs[kMaxJobs];
    plan_matmuls(x, weights, outs, n, jobs);
    int64_t n_tasks = 0;
    for (int i = 0; i < n; ++i) n_tasks += jobs[i].n_tasks;
    pool_.parallel_for(n_tasks, [&](int64_t task, int) {
        int i = 0;
        while (task >= jobs[i].n_tasks) task -= jobs[i++].n_tasks;
        const int64_t r0 = task * jobs[i].rows_per_task;
        matmul_rows(jobs[i], x.n_rows, r0, std::min(jobs[i].rows_per_task, jobs[i].w->n_out - r0));
    });
}

// A task computes the same rows of both projections and then the activation on them: one parallel
// loop instead of two matmuls and a serial pass.
void CpuBackend::matmul_glu(const Weight& gate, const Weight& up, const Tensor& x, Activation act, Tensor& up_scratch,
                            Tensor& out) {
    if (gate.n_out != up.n_out || out.n_cols != gate.n_out || up_scratch.n_cols != out.n_cols)
        return Backend::matmul_glu(gate, up, x, act, up_scratch, out);
    const Weight* weights[2] = {&gate, &up};
    Tensor* outs[2] = {&out, &up_scratch};
    MatmulJob jobs[kMaxJobs];
    plan_matmuls(x, weights, outs, 2, jobs);
    const int64_t n_tok = x.n_rows, cols = out.n_cols;
    pool_.parallel_for(jobs[0].n_tasks, [&](int64_t task, int) {
        const int64_t r0 = task * jobs[0].rows_per_task, nr = std::min(jobs[0].rows_per_task, gate.n_out - r0);
        matmul_rows(jobs[0], n_tok, r0, nr);
        matmul_rows(jobs[1], n_tok, r0, nr);
        if (act == Activation::SILU) {
            silu_mul(out.data, up_scratch.data, out.data, n_tok, cols, r0, r0 + nr);
        } else {
            for (int64_t t = 0; t < n_tok; ++t) {
                float* o = out.data + t * cols + r0;
                gelu_mul(o, up_scratch.data + t * cols + r0, o, nr);
            }
        }
    });
}

void CpuBackend::rope(Tensor& x, const RopeParams& p, const int32_t* positions) {
    const int32_t half = p.n_rot / 2;
    const float* factors = p.freq_factors && *p.freq_factors ? static_cast<const float*>(p.freq_factors->host) : nullptr;
    std::vector<float> cos_t(static_cast<size_t>(half)), sin_t(static_cast<size_t>(half));
    for (int64_t r = 0; r < x.n_rows; ++r) {
        rope_angles(p, factors, positions[r], cos_t.data(), sin_t.data());
        rotate_heads(x.data + r * x.n_cols, p.n_head, p.head_dim, half, p.mode == RopeMode::NORMAL, cos_t.data(),
                     sin_t.data());
    }
}

void CpuBackend::kv_store(KvCache& kv, int32_t il, const Tensor& k, const Tensor& v, int32_t pos0) {
    const int64_t width = k.n_cols;
    const KvCacheConfig& c = kv.config();
    // A quantized cache stores k and v rotated, as llama.cpp does (kv_rotation_k / _v in kv/kv_types.h).
    const int32_t rot_k = kv_rotation_k(c.type_k, c.head_dim), rot_v = kv_rotation_v(c.type_v, c.head_dim);
    std::vector<float> row(size_t(rot_k || rot_v ? width : 0));
    for (int64_t r = 0; r < k.n_rows; ++r) {
        const float* kr = k.data + r * width;
        const float* vr = v.data + r * width;
        if (rot_k) {
            std::copy(kr, kr + width, row.begin());
            kv_rotate(row.data(), width, rot_k);
            kr = row.data();
        }
        kv_store_row(c.type_k, kr, kv.k_row(il, pos0 + int32_t(r)), width);
        if (rot_v) {
            std::copy(vr, vr + width, row.begin());
            kv_rotate(row.data(), width, rot_v);
            vr = row.data();
        }
        kv_store_row(c.type_v, vr, kv.v_row(il, pos0 + int32_t(r)), width);
    }
}

namespace {

// The shift's angle table: one for every row, each moves by the same number of positions.
struct ShiftAngles {
    std::vector<float> cos_t, sin_t;
};

// An f16 K (llama.cpp's in-place rope of the f16 view): each rotated pair widened, turned, rounded back.
void shift_f16_keys(KvCache& kv, int32_t il, int32_t dst, int32_t n, const RopeParams& p, const ShiftAngles& a) {
    const int32_t half = p.n_rot / 2;
    for (int32_t r = 0; r < n; ++r) {
        auto* k = static_cast<uint16_t*>(kv.k_row(il, dst + r));
        for (int32_t h = 0; h < p.n_head; ++h) {
            uint16_t* head = k + int64_t(h) * p.head_dim;
            for (int32_t i = 0; i < half; ++i) {
                int32_t ia = 0, ib = 0;
                rope_pair_index(p.mode != RopeMode::NORMAL, i, half, &ia, &ib);
                rope_shift_pair(head + ia, head + ib, a.cos_t[size_t(i)], a.sin_t[size_t(i)]);
            }
        }
    }
}

// A quantized K, as llama.cpp's build_rope_shift takes one: the row to f32 (ggml_cast), rotated back by
// the Hadamard runs it was stored with (kv_rotation_k), roped in f32, rotated forward again and quantized
// back by the type's from_float (ggml_cpy). Rows are read at src and written at dst, upwards, so an
// overlapping move (dst < src) reads every row before it is overwritten.
void shift_quantized_keys(KvCache& kv, int32_t il, int32_t src, int32_t dst, int32_t n, const RopeParams& p,
                          const ShiftAngles& a) {
    const KvCacheConfig& c = kv.config();
    const int64_t width = int64_t(c.n_head_kv) * c.head_dim;
    const int32_t rot = kv_rotation_k(c.type_k, c.head_dim);
    std::vector<float> row(static_cast<size_t>(width));
    for (int32_t r = 0; r < n; ++r) {
        kv_dequantize_row(c.type_k, kv.k_row(il, src + r), row.data(), width);
        kv_rotate(row.data(), width, rot);
        rotate_heads(row.data(), p.n_head, p.head_dim, p.n_rot / 2, p.mode == RopeMode::NORMAL, a.cos_t.data(),
                     a.sin_t.data());
        kv_rotate(row.data(), width, rot);
        kv_store_row(c.type_k, row.data(), kv.k_row(il, dst + r), width);
    }
}

}  // namespace

void CpuBackend::kv_shift(KvCache& kv, int32_t il, int32_t src, int32_t dst, int32_t n, const RopeParams& p) {
    if (dst > src || n < 0 || src + n > kv.n_tokens()) throw Error("kv_shift: rows out of range");
    if (int64_t(p.n_head) * p.head_dim != int64_t(kv.config().n_head_kv) * kv.config().head_dim)
        throw Error("kv_shift: the rope's heads do not match the cache's rows");
    const KvType type_k = kv.config().type_k;
    // llama.cpp ropes a quantized K through an f32 copy of the rotated dimensions, which it can write back
    // into the blocks only when they are the whole head (a contiguous view): its shift of a partial rope
    // over a quantized K does not run, and there is nothing to match.
    if (kv_type_is_quantized(type_k) && p.n_rot != p.head_dim)
        throw Error(std::string("context shift: a ") + kv_type_name(type_k) + " key cache can be re-rotated only when "
                    "the rope covers the whole head (" + std::to_string(p.n_rot) + " of " +
                    std::to_string(p.head_dim) + " dimensions here); use f16 keys, or the trim or stop policy");
    const float* factors = p.freq_factors && *p.freq_factors ? static_cast<const float*>(p.freq_factors->host) : nullptr;
    ShiftAngles a{std::vector<float>(size_t(p.n_rot / 2)), std::vector<float>(size_t(p.n_rot / 2))};
    rope_angles(p, factors, dst - src, a.cos_t.data(), a.sin_t.data());
    if (kv_type_is_quantized(type_k)) {
        shift_quantized_keys(kv, il, src, dst, n, p, a);
    } else {
        // Upwards: a row written at dst + r was read already when the ranges overlap (dst < src).
        if (src != dst)
            for (int32_t r = 0; r < n; ++r) std::memcpy(kv.k_row(il, dst + r), kv.k_row(il, src + r), kv.k_row_bytes());
        shift_f16_keys(kv, il, dst, n, p, a);
    }
    // V rows only move.
    if (src != dst)
        for (int32_t r = 0; r < n; ++r) std::memcpy(kv.v_row(il, dst + r), kv.v_row(il, src + r), kv.v_row_bytes());
}

void CpuBackend::glu(const Tensor& gate, const Tensor& up, Activation act, Tensor& out) {
    const int64_t n = gate.n_rows * gate.n_cols;
    if (act == Activation::SILU) {
        silu_mul(gate.data, up.data, out.data, gate.n_rows, gate.n_cols, 0, gate.n_cols);
    } else {
        gelu_mul(gate.data, up.data, out.data, n);
    }
}

void CpuBackend::add(Tensor& x, const Tensor& y) {
    const int64_t n = x.n_rows * x.n_cols;
    for (int64_t i = 0; i < n; ++i) x.data[i] += y.data[i];
}

void CpuBackend::add_bias(Tensor& x, const Weight& bias) {
    if (bias.type != GgmlType::F32 || bias.n_in != x.n_cols)
        throw Error("add_bias: the bias must be an F32 vector of " + std::to_string(x.n_cols));
    const auto* b = static_cast<const float*>(bias.host);
    for (int64_t r = 0; r < x.n_rows; ++r) {
        float* row = x.data + r * x.n_cols;
        for (int64_t i = 0; i < x.n_cols; ++i) row[i] += b[i];
    }
}

void CpuBackend::softcap(Tensor& x, float cap) {
    const float inv = 1.0f / cap;
    const int64_t n = x.n_rows * x.n_cols;
    for (int64_t i = 0; i < n; ++i) x.data[i] = std::tanh(x.data[i] * inv) * cap;
}

void CpuBackend::copy(const Tensor& src, Tensor& dst) {
    if (src.n_rows * src.n_cols != dst.n_rows * dst.n_cols) throw Error("copy: the tensors differ in size");
    std::memcpy(dst.data, src.data, size_t(src.n_rows * src.n_cols) * sizeof(float));
}

void CpuBackend::read(const Tensor& x, float* host) {
    std::memcpy(host, x.data, size_t(x.n_rows * x.n_cols) * sizeof(float));
}

void CpuBackend::read_top(const Tensor& row, int32_t k, int32_t* ids, float* values) {
    select_top_logits(row.data, int32_t(row.n_cols), k, ids, values);
}

void CpuBackend::read_columns(const Tensor& row, const int32_t* cols, int32_t n, float* values) {
    for (int32_t i = 0; i < n; ++i) values[i] = row.data[cols[i]];
}

}  // namespace wb
