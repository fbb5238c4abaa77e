#pragma once
// The Backend interface: the operations a transformer forward pass is made of.
//
// Architectures (core/model/arch_*.cpp) are written once against this interface; backends (CPU here,
// CUDA in kernels/) implement the operations and know nothing about architectures. Activations are
// float32 matrices in backend memory; weights stay in their GGUF types and are read as they are.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gguf/ggml_type.h"
#include "kv/kv_cache.h"
#include "model/model_config.h"
#include "sampling/top_logits.h"
#include "util/error.h"

namespace wb {

struct Weight;
struct ModelWeights;

// A float32 matrix [n_rows][n_cols] in backend memory (device memory for a GPU backend); one row per
// token. A plain view: it does not own its memory.
struct Tensor {
    float* data = nullptr;
    int64_t n_rows = 0;
    int64_t n_cols = 0;

    // Rows [r0, r0 + n) of this tensor, sharing its memory.
    Tensor rows(int64_t r0, int64_t n) const { return {data + r0 * n_cols, n, n_cols}; }
    // The same memory seen as fewer/more rows of the same total size (e.g. [n, heads*dim] as [n*heads, dim]).
    Tensor reshaped(int64_t rows, int64_t cols) const { return {data, rows, cols}; }
};

// Rotary position embedding with ggml's (llama.cpp's) conventions. Pair i of a head at position p turns
// by theta_i = p * base^(-2i/n_rot) (built by repeated multiplication in float), divided by
// freq_factors[i] when the model has them (Llama 3.1's rope_freqs, Phi-3's long/short factors), then
// interpolated: theta = freq_scale * theta_i, or with YaRN (ext_factor != 0) a mix of the scaled and
// unscaled angle ramped between the correction dims; cos and sin are multiplied by attn_factor (and
// by YaRN's magnitude correction).
struct RopeParams {
    int32_t n_head = 0;       // heads in each row of the tensor
    int32_t head_dim = 0;     // width of one head
    int32_t n_rot = 0;        // leading dims of each head that rotate
    float base = 10000.0f;    // theta
    float freq_scale = 1.0f;  // 1 / the rope scaling factor (linear or YaRN)
    RopeMode mode = RopeMode::NORMAL;
    const Weight* freq_factors = nullptr;  // [n_rot / 2] F32 divisors of theta_i, or none
    float ext_factor = 0.0f;               // YaRN extrapolation mix (1 for YaRN models, else 0)
    float attn_factor = 1.0f;              // magnitude scale of cos and sin
    int32_t n_ctx_orig = 0;                // YaRN: the context the model was trained with before scaling
    float beta_fast = 32.0f, beta_slow = 1.0f;  // YaRN: rotations that bound the ramp (ggml's defaults)
};

// The magnitude of cos and sin: attn_factor, times YaRN's correction (1 + 0.1 ln(1 / freq_scale))
// when ext_factor != 0.
float rope_magnitude(const RopeParams& p);

// YaRN's correction dims: pairs below *low keep their unscaled angle, pairs above *high the scaled one,
// with a linear ramp between (ggml_rope_yarn_corr_dims).
void rope_yarn_corr_dims(const RopeParams& p, float* low, float* high);

// The cos and sin of the half = n_rot / 2 pairs of one position, as ggml's CPU rope computes them
// (factors: p.freq_factors' values in host memory, or null). The CPU backend uses it; a GPU test
// uses it as its reference.
void rope_angles(const RopeParams& p, const float* factors, int32_t pos, float* cos_out, float* sin_out);

struct AttentionParams {
    int32_t n_head = 0;       // query heads
    int32_t n_head_kv = 0;    // key/value heads; query head h reads kv head h / (n_head / n_head_kv)
    int32_t head_dim = 0;
    float scale = 1.0f;       // multiplies q.k before the softmax
    int32_t window = 0;       // > 0: a query at p sees keys at p - window + 1 .. p (sliding window)
    // true: scale multiplies q itself, before the backend rounds q for the product (the CPU backend
    // rounds q to f16), instead of q.k. The same math, another rounding: llama.cpp's graph scales q
    // for some architectures (Gemma 3) and q.k for others (llama), and the CPU backend follows each.
    bool scale_q = false;
    // > 0: scores are soft-capped before the softmax, s = softcap * tanh(s / softcap) (Gemma 2's
    // attention logit soft-capping; with scale_q the scale is already in q, else it follows the cap).
    float softcap = 0.0f;

    // Attention capture (the inspector's hooks). When capture_probs is set, the backend writes the
    // post-softmax probabilities it used for the listed query heads into host memory, laid out
    // [n_capture_heads][query rows][pos0 + query rows] (all keys from position 0; masked keys 0), and
    // the data is complete when attention() returns. The values must be the ones that weighted V —
    // captured inside the attention computation, never recomputed by a second implementation.
    float* capture_probs = nullptr;
    const int32_t* capture_heads = nullptr;
    int32_t n_capture_heads = 0;
    // Test hook (test_gpu_kv): the capture receives the scores instead, after the scale and the soft
    // cap and before the softmax, in the same layout (masked keys 0), so that a test can compare two
    // backends' scores bit for bit. Only over a quantized K or V (the flash paths); refused otherwise.
    bool capture_scores = false;
};

// Device memory a GPU backend holds, by kind: the bytes its own allocations asked for (cudaMalloc's
// sizes), not the driver's view of the device (which other processes and the runtime share).
struct DeviceMemory {
    bool counted = false;   // false: the backend has no device memory of its own (CPU)
    uint64_t weights = 0;   // uploaded weight tensors (a tensor shared by sessions or tied: once)
    uint64_t kv_cache = 0;  // KV cache blocks, those kept for reuse after a truncation included
    uint64_t scratch = 0;   // activations, matmul and attention workspaces, staging, block tables
    uint64_t total() const { return weights + kv_cache + scratch; }
};

class Backend : public KvAllocator {
public:
    ~Backend() override = default;

    virtual std::string name() const = 0;         // "cpu", "cuda"
    virtual std::string description() const = 0;  // for status lines: device, threads, kernels

    // Makes the weights usable by the operations (the CPU backend reads the file mapping as it is;
    // a GPU backend uploads them and fills Weight::device).
    virtual void prepare_weights(ModelWeights& weights) = 0;

    virtual Tensor alloc(int64_t n_rows, int64_t n_cols) = 0;
    virtual void free(Tensor& t) = 0;
    // Bytes the tensors alloc() handed out and free() has not taken back hold now (the sessions'
    // scratch activations; the memory ledger's measured figure). 0: this backend does not count them.
    virtual uint64_t tensor_bytes() const { return 0; }
    // Weight bytes this backend reads from copies in a layout of its own rather than from the file
    // mapping, by type (the CPU backend's load-time repacking, engine/cpu_repack.h); empty where none.
    // A GPU backend counts its copies in device_memory instead.
    virtual std::vector<std::pair<GgmlType, uint64_t>> repacked_weights() const { return {}; }
    // The device memory this backend holds by its own count of what it allocated (the memory
    // ledger's device row); counted == false for a backend without memory of its own (the CPU's).
    // Call on the thread that runs the backend's operations.
    virtual DeviceMemory device_memory() const { return {}; }

    // out[i] = table row ids[i] (dequantized) * scale. ids are host memory.
    virtual void embed(const Weight& table, const int32_t* ids, int32_t n, float scale, Tensor& out) = 0;
    // Normalises each run of `group` values of x by its RMS and multiplies by gain[0..group):
    // group = n_cols normalises whole rows, group = head_dim normalises each head (QK-norm).
    virtual void rms_norm(const Tensor& x, const Weight& gain, float eps, int64_t group, Tensor& out) = 0;
    // out[t] = W x[t] for every row t: out is [x.n_rows, W.n_out].
    virtual void matmul(const Weight& w, const Tensor& x, Tensor& out) = 0;
    // Rotates the heads of every row of x in place; positions (host) has x.n_rows entries.
    virtual void rope(Tensor& x, const RopeParams& p, const int32_t* positions) = 0;
    // The KV element types (kv/kv_types.h) this backend's kv_store and attention handle: wb::Error naming
    // them otherwise. Called before a cache is made, so a session refuses an unsupported type up front.
    virtual void check_kv_types(KvType type_k, KvType type_v) const {
        (void)type_k;
        (void)type_v;
    }
    // Whether kv_shift handles a key cache of type_k (a context shift re-ropes the stored keys; V rows
    // only move, so any V type works). check_context_policy asks it so that a session, the CLI and the
    // app refuse the shift policy up front rather than failing when the context fills.
    virtual bool can_shift_kv(KvType type_k) const {
        (void)type_k;
        return true;
    }
    // Writes k and v rows (positions pos0 ..) of layer il into the cache (blocks already reserved).
    virtual void kv_store(KvCache& kv, int32_t il, const Tensor& k, const Tensor& v, int32_t pos0) = 0;
    // Context shift (llama.cpp's K-shift, llama_kv_cache::build_rope_shift): the K and V rows of
    // positions [src, src + n) of layer il move to [dst, dst + n) (dst <= src; the ranges may overlap),
    // and every moved K head is turned by the angle of dst - src positions with the layer's rope p: the
    // stored f16 values widened to float, rotated (rope_shift_pair), rounded back to f16; a quantized K
    // row dequantized, its Hadamard rotation undone, rotated in f32, rotation redone, quantized again
    // (llama.cpp's quantized branch of the same graph). src == dst rotates in place by 0 (which still
    // scales by a magnitude other than 1, and requantizes a quantized K, as llama.cpp does).
    // The rows' blocks must be allocated (KvCache::ensure_rows). The default throws: a backend that
    // cannot shift says so, and the session reports it as an error.
    virtual void kv_shift(KvCache& /*kv*/, int32_t /*il*/, int32_t /*src*/, int32_t /*dst*/, int32_t /*n*/,
                          const RopeParams& /*p*/) {
        throw Error("the " + name() + " backend cannot shift the KV cache (context shift)");
    }
    // Causal attention of the query rows (positions pos0 ..) over the cache's keys 0 .. pos0 + row.
    virtual void attention(const Tensor& q, const KvCache& kv, int32_t il, int32_t pos0, const AttentionParams& p,
                           Tensor& out) = 0;
    // out = act(gate) * up, element-wise (out may be gate).
    virtual void glu(const Tensor& gate, const Tensor& up, Activation act, Tensor& out) = 0;
    // x += y, element-wise.
    virtual void add(Tensor& x, const Tensor& y) = 0;
    // x[r] += bias for every row r (bias: an F32 vector of x.n_cols; the q/k/v biases of Qwen 2).
    virtual void add_bias(Tensor& x, const Weight& bias) = 0;
    // x = cap * tanh(x * (1 / cap)), element-wise: Gemma 2's final logit soft-capping.
    virtual void softcap(Tensor& x, float cap) = 0;
    // dst = src, element-wise (same shape; the logit lens copies a residual row it then changes).
    virtual void copy(const Tensor& src, Tensor& dst) = 0;
    // Copies a tensor to host memory (x.n_rows * x.n_cols floats); waits for pending work.
    virtual void read(const Tensor& x, float* host) = 0;
    // The k largest values of a one-row tensor (a logits row) and their columns, into host memory,
    // in the order of select_top_logits: largest first, ties to the smaller column, NaN as -inf.
    // What a sampler with a top-k stage needs (SamplerChain::top_needed) without the whole row: a
    // GPU backend selects on the device and copies 8k bytes instead of the row. 1 <= k <= n_cols.
    virtual void read_top(const Tensor& row, int32_t k, int32_t* ids, float* values) {
        std::vector<float> host(size_t(row.n_cols));
        read(row, host.data());
        select_top_logits(host.data(), int32_t(row.n_cols), k, ids, values);
    }
    // values[i] = row[cols[i]] for i < n, into host memory (cols within [0, n_cols)): the logits of
    // the few tokens a grammar allows, without the rest of the row. The default reads the whole row;
    // the CPU backend reads only those columns.
    virtual void read_columns(const Tensor& row, const int32_t* cols, int32_t n, float* values) {
        std::vector<float> host(size_t(row.n_cols));
        read(row, host.data());
        for (int32_t i = 0; i < n; ++i) values[i] = host[size_t(cols[i])];
    }

    // ---- Fused forms, with defaults made of the operations above ----
    //
    // Each output element is computed with the arithmetic of the default (the CPU backend's results
    // are bit-identical; a GPU's may differ by how its compiler fuses multiply-adds); a backend
    // overrides one to do it in fewer passes (the CPU backend: one parallel loop for the products
    // instead of one per weight, each ending in a barrier; the CUDA backend: one kernel launch).

    // The projections of one input: *outs[i] = weights[i] x for i < n (q, k and v).
    virtual void matmul_shared(const Tensor& x, const Weight* const* weights, Tensor* const* outs, int n) {
        for (int i = 0; i < n; ++i) matmul(*weights[i], x, *outs[i]);
    }
    // The gated feed-forward input: out = act(W_gate x) * (W_up x). up_scratch, of out's shape, may
    // receive W_up x or be left untouched; its contents afterwards are unspecified.
    virtual void matmul_glu(const Weight& gate, const Weight& up, const Tensor& x, Activation act, Tensor& up_scratch,
                            Tensor& out) {
        matmul(gate, x, out);
        matmul(up, x, up_scratch);
        glu(out, up_scratch, act, out);
    }

    // The residual step and the next sub-layer's input: x += y, then out = rmsnorm(x) * gain over
    // whole rows. out may be y.
    virtual void add_rms_norm(Tensor& x, const Tensor& y, const Weight& gain, float eps, Tensor& out) {
        add(x, y);
        rms_norm(x, gain, eps, x.n_cols, out);
    }

    // ---- Optional, with defaults that do nothing (the CPU backend inherits them) ----

    // Waits until all queued work is done (a GPU backend's stream); used to time single layers.
    virtual void synchronize() {}

    // Undoes prepare_weights for a set of weights that will not be used again (a GPU backend frees
    // its copies); called when the Session that prepared them ends.
    virtual void release_weights(ModelWeights& /*weights*/) {}

    // Decode-step replay (CUDA graphs). Around every one-token forward pass the Session calls
    // decode_step_begin(kv, token, pos): true means the backend has replayed a recording of an
    // earlier step for this token and position (K/V stored, logits in the same buffer), and the
    // forward pass must not run; false means the caller runs the forward pass as usual and then
    // calls decode_step_end(completed) — the backend may have recorded that pass for later steps.
    // completed = false (the pass threw) discards a recording in progress.
    virtual bool decode_step_begin(const KvCache& /*kv*/, int32_t /*token*/, int32_t /*pos*/) { return false; }
    virtual void decode_step_end(bool /*completed*/) {}
};

enum class BackendKind { AUTO, CPU, CUDA };

struct BackendChoice {
    std::unique_ptr<Backend> backend;
    std::string note;  // why the GPU is not used, when AUTO fell back to the CPU; else empty
};

// Creates a backend. CPU always works; CUDA loads the plugin library at run time and throws wb::Error
// saying why when it cannot (no plugin, no driver, no device); AUTO tries CUDA and falls back to the
// CPU with the reason in note, also when the GPU cannot hold a KV cache of the given element types
// (check_kv_types). n_threads <= 0: all cores.
BackendChoice create_backend(BackendKind kind, int n_threads, KvType type_k = KvType::F16,
                             KvType type_v = KvType::F16);
BackendKind parse_backend_kind(const std::string& s);  // "cpu" | "cuda" | "auto"; wb::Error otherwise

}  // namespace wb
