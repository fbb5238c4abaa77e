#pragma once
// The CUDA backend: the Backend operations on one NVIDIA GPU.
//
// Weights are uploaded once per model (shared by the sessions that use it) and read in their GGUF
// types; activations, the KV cache blocks and scratch live in device memory. Everything runs on one
// stream; the host waits only in read(). A decode step is recorded once as a CUDA graph and replayed
// (decode_step_begin/end): the token and position of the step are written to device memory and the
// kernels read them from there, attention reads the paged block table from device memory.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "attention.cuh"
#include "device_buffer.h"
#include "engine/backend.h"
#include "matmul.cuh"
#include "norm.cuh"

namespace wb {

class CudaBackend final : public Backend {
public:
    // Picks the device (WB_CUDA_DEVICE, default 0) and checks it can run this build; wb::Error with
    // the reason (no driver, no device, compute capability too old, cuBLAS failing) otherwise.
    static std::unique_ptr<CudaBackend> create();
    ~CudaBackend() override;

    std::string name() const override { return "cuda"; }
    std::string description() const override;

    void prepare_weights(ModelWeights& weights) override;
    void release_weights(ModelWeights& weights) override;
    Tensor alloc(int64_t n_rows, int64_t n_cols) override;
    void free(Tensor& t) override;
    uint64_t tensor_bytes() const override { return tensor_bytes_; }
    DeviceMemory device_memory() const override;

    void embed(const Weight& table, const int32_t* ids, int32_t n, float scale, Tensor& out) override;
    void rms_norm(const Tensor& x, const Weight& gain, float eps, int64_t group, Tensor& out) override;
    void matmul(const Weight& w, const Tensor& x, Tensor& out) override;
    void matmul_shared(const Tensor& x, const Weight* const* weights, Tensor* const* outs, int n) override;
    void matmul_glu(const Weight& gate, const Weight& up, const Tensor& x, Activation act, Tensor& up_scratch,
                    Tensor& out) override;
    void rope(Tensor& x, const RopeParams& p, const int32_t* positions) override;
    void kv_store(KvCache& kv, int32_t il, const Tensor& k, const Tensor& v, int32_t pos0) override;
    void kv_shift(KvCache& kv, int32_t il, int32_t src, int32_t dst, int32_t n, const RopeParams& p) override;
    void attention(const Tensor& q, const KvCache& kv, int32_t il, int32_t pos0, const AttentionParams& p,
                   Tensor& out) override;
    void glu(const Tensor& gate, const Tensor& up, Activation act, Tensor& out) override;
    void add(Tensor& x, const Tensor& y) override;
    void add_bias(Tensor& x, const Weight& bias) override;
    void softcap(Tensor& x, float cap) override;
    void add_rms_norm(Tensor& x, const Tensor& y, const Weight& gain, float eps, Tensor& out) override;
    void copy(const Tensor& src, Tensor& dst) override;
    void read(const Tensor& x, float* host) override;
    void read_top(const Tensor& row, int32_t k, int32_t* ids, float* values) override;
    void synchronize() override;

    void check_kv_types(KvType type_k, KvType type_v) const override;
    // kv_shift.cu re-ropes f16 keys only so far: a quantized K is refused up front (check_context_policy).
    bool can_shift_kv(KvType type_k) const override { return type_k == KvType::F16; }
    void* kv_alloc(size_t bytes) override;
    void kv_free(void* p) override;

    bool decode_step_begin(const KvCache& kv, int32_t token, int32_t pos) override;
    void decode_step_end(bool completed) override;

private:
    // Device bytes alloc() holds (the memory ledger's scratch); alloc and free run on the session's thread.
    uint64_t tensor_bytes_ = 0;
    CudaBackend(int device, const cudaDeviceProp& props);

    // Device copy of the layer's block table of a cache, updated from KvCache::blocks() when it
    // changed (not while recording a graph: decode_step_begin has synced every layer then).
    struct KvMirror {
        void** table = nullptr;   // device: [n_layer][max_blocks]
        int32_t n_layer = 0;
        int32_t max_blocks = 0;
        std::vector<void*> host;  // what the device table holds now
    };
    void* const* block_table(const KvCache& kv, int32_t il);
    KvMirror& mirror_for(const KvCache& kv);
    void sync_layer(const KvCache& kv, KvMirror& m, int32_t il);
    void drop_mirrors();

    const void* device_copy(const Weight& w) const;
    // Launches a norm; for whole rows of a decode-sized batch also out's 8-bit copy for the matmuls.
    void launch_norm(cuda::RmsNormArgs& a, const Tensor& out);
    // The kernel arguments of out = W x, after the checks every matmul makes.
    cuda::MatmulArgs matmul_args(const Weight& w, const Tensor& x, Tensor& out) const;
    const int32_t* upload_ints(cuda::DeviceBuffer& buf, std::vector<int32_t>& last, const int32_t* host, int32_t n);
    void invalidate_graph();
    // Changes whenever a scratch buffer a recorded step may use is reallocated.
    uint64_t scratch_generation() const;
    bool recording() const { return step_ == StepMode::CAPTURE; }
    // Every operation but the matmuls (matmul, matmul_shared, matmul_glu) calls this first:
    // consecutive matmuls of the same input share one quantization of it (MatmulWorkspace::forget_q8),
    // and anything else may have changed it. Also the step boundaries, so a recorded step never relies
    // on work done outside it. Never throws.
    void end_matmul_run() { matmul_ws_.forget_q8(); }

    int device_ = 0;
    std::string device_name_;
    int cc_major_ = 0, cc_minor_ = 0;
    size_t total_mem_ = 0;
    cudaStream_t stream_ = nullptr;
    cuda::MatmulWorkspace matmul_ws_;
    cuda::AttentionWorkspace attn_ws_;
    cuda::DeviceBuffer ids_, positions_, capture_slots_, capture_;
    cuda::DeviceBuffer shift_angles_;    // kv_shift's cos and sin
    cuda::DeviceBuffer top_;             // read_top's k ids then k values (never in a recorded step)
    // What ids_ / positions_ / capture_slots_ hold, to skip re-uploads.
    std::vector<int32_t> last_ids_, last_positions_, last_capture_slots_;

    struct Upload {
        void* ptr = nullptr;
        size_t bytes = 0;
        int refs = 0;
    };
    std::unordered_map<const void*, Upload> uploads_;  // by host address of the tensor in the mapping

    std::unordered_map<size_t, std::vector<void*>> kv_pool_;  // freed KV blocks by size, for reuse
    std::unordered_map<void*, size_t> kv_sizes_;              // every KV block allocated, with its size
    std::unordered_map<const KvCache*, KvMirror> mirrors_;

    // Decode-step graph. The first decode step after an invalidation runs eagerly (it sizes every
    // scratch buffer), the next one is recorded, later ones replay it.
    enum class StepMode { NONE, WARMUP, CAPTURE };
    StepMode step_ = StepMode::NONE;
    bool graphs_enabled_ = true;       // WB_CUDA_GRAPHS=0 turns replay off (debugging, comparisons)
    int32_t* d_step_ = nullptr;        // device: {token, pos} of the current step
    const KvCache* step_kv_ = nullptr; // cache of the step in progress
    const KvCache* warm_kv_ = nullptr; // cache a warm-up step ran for
    const KvCache* graph_kv_ = nullptr;
    cudaGraphExec_t graph_ = nullptr;
    uint64_t graph_scratch_ = 0;       // scratch_generation() when graph_ was recorded
};

}  // namespace wb
