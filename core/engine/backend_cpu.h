#pragma once
// The CPU backend: the reference the tests trust and the fallback without a usable GPU.
// Matmuls quantize the activations once (llama.cpp's scheme) and split the weight rows over a thread
// pool; attention splits its work over the same pool (backend_cpu_attention.cpp).
#include <atomic>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/backend.h"
#include "quant/quant.h"
#include "util/thread_pool.h"

namespace wb {

struct RepackedMatrix;  // engine/cpu_repack.h

class CpuBackend : public Backend {
public:
    explicit CpuBackend(int n_threads);
    ~CpuBackend() override;

    std::string name() const override { return "cpu"; }
    std::string description() const override;
    int n_threads() const { return pool_.size(); }

    // Repacks the matrices the kernel family has a load-time layout for (engine/cpu_repack.h); the
    // rest are read in place from the file mapping.
    void prepare_weights(ModelWeights& weights) override;
    void release_weights(ModelWeights& weights) override;
    Tensor alloc(int64_t n_rows, int64_t n_cols) override;
    void free(Tensor& t) override;
    uint64_t tensor_bytes() const override { return tensor_bytes_.load(); }
    std::vector<std::pair<GgmlType, uint64_t>> repacked_weights() const override;

    void embed(const Weight& table, const int32_t* ids, int32_t n, float scale, Tensor& out) override;
    void rms_norm(const Tensor& x, const Weight& gain, float eps, int64_t group, Tensor& out) override;
    void matmul(const Weight& w, const Tensor& x, Tensor& out) override;
    void rope(Tensor& x, const RopeParams& p, const int32_t* positions) override;
    void kv_store(KvCache& kv, int32_t il, const Tensor& k, const Tensor& v, int32_t pos0) override;
    void attention(const Tensor& q, const KvCache& kv, int32_t il, int32_t pos0, const AttentionParams& p,
                   Tensor& out) override;
    void kv_shift(KvCache& kv, int32_t il, int32_t src, int32_t dst, int32_t n, const RopeParams& p) override;
    void glu(const Tensor& gate, const Tensor& up, Activation act, Tensor& out) override;
    void matmul_shared(const Tensor& x, const Weight* const* weights, Tensor* const* outs, int n) override;
    void matmul_glu(const Weight& gate, const Weight& up, const Tensor& x, Activation act, Tensor& up_scratch,
                    Tensor& out) override;
    void add(Tensor& x, const Tensor& y) override;
    void add_bias(Tensor& x, const Weight& bias) override;
    void softcap(Tensor& x, float cap) override;
    void copy(const Tensor& src, Tensor& dst) override;
    void read(const Tensor& x, float* host) override;
    void read_top(const Tensor& row, int32_t k, int32_t* ids, float* values) override;  // no copy of the row
    void read_columns(const Tensor& row, const int32_t* cols, int32_t n, float* values) override;  // those only

    void* kv_alloc(size_t bytes) override;
    void kv_free(void* p) override;

private:
    // What alloc() holds, rounded as it allocates (kAlign).
    static size_t alloc_bytes(int64_t n_rows, int64_t n_cols);
    std::atomic<uint64_t> tensor_bytes_{0};

    // One weight's part of a matmul: its activations (converted to the weight's dot type) and, per
    // group of kDotTileCols tokens, whether the group goes through a tile kernel.
    // The kernels are resolved once per matmul: the order changes at most once over a batch (Q4_K:
    // gemm, then gemv), so tokens before `split` take `first` and the rest `rest`.
    struct MatmulJob {
        const Weight* w = nullptr;
        Tensor* out = nullptr;
        const uint8_t* act = nullptr;
        size_t act_row = 0;
        std::vector<char> group_tiled;
        // The activations of the first packed_groups groups of kDotTileCols tokens packed for the
        // first order's tile_packed, packed_bytes a group (none: packed_groups 0).
        const uint8_t* packed = nullptr;
        size_t packed_bytes = 0;
        int64_t packed_groups = 0;
        DotKernels first, rest;
        // The weight's rows repacked at load (RepackedMatrix::data; nullptr: read from the mapping),
        // in the layout of both orders' repack16.
        const uint8_t* repacked = nullptr;
        size_t repacked_group = 0;
        int64_t split = 0;
        int64_t rows_per_task = 16;
        int64_t n_tasks = 0;
        const DotKernels& kernels(int64_t t) const { return t < split ? first : rest; }
    };
    // Fills jobs[i] for weights[i] -> outs[i], converting x once per dot type (at most kMaxJobs).
    static constexpr int kMaxJobs = 3;
    void plan_matmuls(const Tensor& x, const Weight* const* weights, Tensor* const* outs, int n, MatmulJob* jobs);
    // Packs jobs[i]'s activations for its tile_packed where it has one (plan_matmuls' last step).
    void pack_activations(int i, MatmulJob* jobs);
    // matmul and matmul_shared. Not virtual, and matmul_shared / matmul_glu do not call matmul: a
    // subclass that overrides matmul to change its arithmetic must override those two as well (as
    // tests/gpu/gpu_reference_backend.h does, with the Backend defaults).
    void run_matmuls(const Tensor& x, const Weight* const* weights, Tensor* const* outs, int n);
    // Rows [r0, r0 + nr) of a job's output for every token.
    void matmul_rows(const MatmulJob& job, int64_t n_tok, int64_t r0, int64_t nr) const;

    // Attention (backend_cpu_attention.cpp): a task per (block of 4 tokens, kv head) for batches; a three-phase
    // schedule of the same arithmetic for one token.
    void attention_rows(const Tensor& q, const KvCache& kv, int32_t il, int32_t pos0, const AttentionParams& p,
                        Tensor& out);
    // Over a quantized cache: llama.cpp's flash-attention arithmetic (backend_cpu_attention_flash.cpp).
    void attention_flash(const Tensor& q, const KvCache& kv, int32_t il, int32_t pos0, const AttentionParams& p,
                         Tensor& out);
    void attention_decode(const Tensor& q, const KvCache& kv, int32_t il, int32_t pos, const AttentionParams& p,
                          Tensor& out);

    ThreadPool pool_;
    // The repacked copies this backend's weights point to (Weight::device), by that pointer, with the
    // number of prepared weight sets (sessions) using each: a comparison's second session on this
    // backend shares the chat session's copies, and its release must not free them.
    struct RepackedUse {
        std::shared_ptr<const RepackedMatrix> copy;
        int users = 0;
    };
    std::unordered_map<const void*, RepackedUse> repacked_;
    std::vector<uint8_t> act_buf_[kMaxJobs];         // activations converted to the weights' dot types
    std::vector<uint8_t> packed_buf_[kMaxJobs];      // and packed for a tile (MatmulJob::packed)
    std::vector<std::vector<float>> thread_buf_;     // per-thread scratch (attention scores, lanes)
    std::vector<std::vector<uint16_t>> thread_f16_;  // per-thread scratch (attention's f16 query head)
    std::vector<float> decode_buf_;                  // decode attention: rounded queries, scores
};

}  // namespace wb
