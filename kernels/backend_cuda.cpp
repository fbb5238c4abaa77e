#include "backend_cuda.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common.cuh"
#include "cuda_check.h"
#include "dequant_parts.h"
#include "elementwise.cuh"
#include "embed.cuh"
#include "gguf/gguf_file.h"
#include "kv_shift.cuh"
#include "kv_store.cuh"
#include "model/weights.h"
#include "norm.cuh"
#include "rope.cuh"
#include "top_k.cuh"
#include "util/error.h"

namespace wb {

namespace {

// Kept free for activations, KV blocks, cuBLAS and scratch when the weights are checked against the
// free memory: a model that just fits would fail at its first prompt instead of at load.
constexpr size_t kReserveBytes = size_t(512) << 20;
constexpr int kMinComputeMajor = 8;  // Ampere: the oldest architecture this build targets

std::string mib(size_t bytes) { return std::to_string((bytes + (1u << 19)) >> 20) + " MiB"; }

std::string runtime_version() {
    int v = 0;
    cudaRuntimeGetVersion(&v);
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

int choose_device(int count) {
    const char* env = std::getenv("WB_CUDA_DEVICE");
    if (!env || !*env) return 0;
    char* end = nullptr;
    const long d = std::strtol(env, &end, 10);
    if (*end != '\0' || d < 0 || d >= count)
        throw Error(std::string("WB_CUDA_DEVICE=") + env + " is not a device index (found " + std::to_string(count) +
                    " CUDA device" + (count == 1 ? "" : "s") + ")");
    return int(d);
}

}  // namespace

std::unique_ptr<CudaBackend> CudaBackend::create() {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaErrorInsufficientDriver)
        throw Error("the NVIDIA driver is missing or older than this build's CUDA runtime " + runtime_version());
    if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) throw Error("no CUDA device found");
    if (err != cudaSuccess) throw Error(std::string("CUDA initialisation failed: ") + cudaGetErrorString(err));

    const int device = choose_device(count);
    cudaDeviceProp props{};
    WB_CUDA_CHECK(cudaGetDeviceProperties(&props, device));
    if (props.major < kMinComputeMajor)
        throw Error("CUDA device " + std::to_string(device) + " (" + props.name + ") has compute capability " +
                    std::to_string(props.major) + "." + std::to_string(props.minor) + "; the CUDA backend needs " +
                    std::to_string(kMinComputeMajor) + ".0 or newer");
    WB_CUDA_CHECK(cudaSetDevice(device));
    const cudaError_t image = cuda::kernel_image_status();
    if (image != cudaSuccess)
        throw Error("the CUDA backend was not built for " + std::string(props.name) + " (compute " +
                    std::to_string(props.major) + "." + std::to_string(props.minor) + "): " +
                    cudaGetErrorString(image) + "; rebuild with WB_CUDA_ARCHS including " +
                    std::to_string(props.major * 10 + props.minor));
    return std::unique_ptr<CudaBackend>(new CudaBackend(device, props));
}

CudaBackend::CudaBackend(int device, const cudaDeviceProp& props)
    : device_(device), device_name_(props.name), cc_major_(props.major), cc_minor_(props.minor),
      total_mem_(props.totalGlobalMem) {
    WB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    const cublasStatus_t st = cublasCreate(&matmul_ws_.cublas);
    if (st != CUBLAS_STATUS_SUCCESS) {
        cudaStreamDestroy(stream_);
        throw Error(std::string("cuBLAS could not be initialised: ") + cublasGetStatusString(st));
    }
    WB_CUBLAS_CHECK(cublasSetStream(matmul_ws_.cublas, stream_));
    WB_CUDA_CHECK(cudaMalloc(&d_step_, 2 * sizeof(int32_t)));
    const char* graphs = std::getenv("WB_CUDA_GRAPHS");
    graphs_enabled_ = !(graphs && std::strcmp(graphs, "0") == 0);
}

CudaBackend::~CudaBackend() {
    // Destructors must not throw: errors here are ignored, the process is tearing this down anyway.
    cudaStreamSynchronize(stream_);
    if (graph_) cudaGraphExecDestroy(graph_);
    for (auto& [key, m] : mirrors_) cudaFree(m.table);
    for (auto& [ptr, bytes] : kv_sizes_) cudaFree(ptr);
    for (auto& [host, u] : uploads_) cudaFree(u.ptr);
    cudaFree(d_step_);
    cublasDestroy(matmul_ws_.cublas);
    cudaStreamDestroy(stream_);
}

std::string CudaBackend::description() const {
    return "CUDA, " + device_name_ + " (compute " + std::to_string(cc_major_) + "." + std::to_string(cc_minor_) + ", " +
           mib(total_mem_) + "), runtime " + runtime_version() + ", decode graphs " + (graphs_enabled_ ? "on" : "off");
}

// ---- memory ----

void CudaBackend::prepare_weights(ModelWeights& weights) {
    end_matmul_run();
    invalidate_graph();
    // A type without a kernel is refused here, when the model is loaded, rather than at the first prompt.
    for (const Weight* w : weights.all()) {
        if (!w->host) continue;
        try {
            cuda::dispatch_weight_type(w->type, [](auto) {});
        } catch (const Error&) {
            throw Error("the CUDA backend has no kernel for weight type " + ggml_type_name(w->type) + " (tensor '" +
                        (w->src ? w->src->name : std::string("?")) + "'); use the CPU backend for this model");
        }
    }
    // What is not on the device yet (a tied output shares the embedding's memory: counted once).
    size_t needed = 0;
    std::unordered_map<const void*, size_t> fresh;
    for (Weight* w : weights.all()) {
        if (!w->host || uploads_.count(w->host) || fresh.count(w->host)) continue;
        const size_t bytes = ggml_row_bytes(w->type, w->n_in) * size_t(w->n_out);
        fresh[w->host] = bytes;
        needed += bytes;
    }
    size_t free_bytes = 0, total_bytes = 0;
    WB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    if (needed + kReserveBytes > free_bytes)
        throw Error("the model's weights need " + mib(needed) + " of GPU memory (plus " + mib(kReserveBytes) +
                    " for activations and the KV cache) but only " + mib(free_bytes) + " of " + mib(total_bytes) +
                    " are free on CUDA device " + std::to_string(device_) + " (" + device_name_ + ")");
    try {
        for (auto& [host, bytes] : fresh) {
            Upload u;
            u.bytes = bytes;
            WB_CUDA_CHECK(cudaMalloc(&u.ptr, bytes));
            uploads_[host] = u;
            // On the backend's stream: a plain cudaMemcpy from pageable memory may return before the data
            // has landed, and it runs on the legacy stream, which this non-blocking stream does not wait for.
            WB_CUDA_CHECK(cudaMemcpyAsync(u.ptr, host, bytes, cudaMemcpyHostToDevice, stream_));
        }
        WB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    } catch (...) {
        // Undo this call's uploads: a later attempt must not find half-written copies, nor leak them.
        cudaStreamSynchronize(stream_);
        for (const auto& entry : fresh) {
            const auto it = uploads_.find(entry.first);
            if (it == uploads_.end()) continue;
            cudaFree(it->second.ptr);
            uploads_.erase(it);
        }
        throw;
    }
    for (Weight* w : weights.all()) {
        if (!w->host) continue;
        Upload& u = uploads_.at(w->host);
        ++u.refs;
        w->device = u.ptr;
    }
}

void CudaBackend::release_weights(ModelWeights& weights) {
    // Called from ~Session: never throws (see free()).
    end_matmul_run();
    invalidate_graph();
    cudaStreamSynchronize(stream_);
    for (Weight* w : weights.all()) {
        if (!w->host || !w->device) continue;
        const auto it = uploads_.find(w->host);
        w->device = nullptr;
        if (it == uploads_.end()) continue;
        if (--it->second.refs == 0) {
            cudaFree(it->second.ptr);
            uploads_.erase(it);
        }
    }
}

Tensor CudaBackend::alloc(int64_t n_rows, int64_t n_cols) {
    end_matmul_run();
    void* p = nullptr;
    const size_t bytes = std::max<size_t>(size_t(n_rows * n_cols) * sizeof(float), 256);
    const cudaError_t err = cudaMalloc(&p, bytes);
    if (err != cudaSuccess)
        throw Error("out of GPU memory allocating " + mib(bytes) + " of activations on " + device_name_ + " (" +
                    cudaGetErrorString(err) + ")");
    tensor_bytes_ += bytes;
    return {static_cast<float*>(p), n_rows, n_cols};
}

void CudaBackend::free(Tensor& t) {
    end_matmul_run();
    // A recorded step refers to the buffers by address; freeing any of them ends its validity, and
    // this is also where sessions end, so the block-table mirrors of their caches go too.
    // Called from destructors (~Session, during unwinding too): never throws. After a device fault
    // every call fails; the operation that hit it has already reported the error.
    invalidate_graph();
    drop_mirrors();
    cudaStreamSynchronize(stream_);
    if (t.data) tensor_bytes_ -= std::max<size_t>(size_t(t.n_rows * t.n_cols) * sizeof(float), 256);
    cudaFree(t.data);
    t = {};
}

DeviceMemory CudaBackend::device_memory() const {
    // Every cudaMalloc this backend makes is counted here, from the sizes it asked for: a buffer
    // added without a line below would make the ledger's device row wrong.
    DeviceMemory m;
    m.counted = true;
    for (const auto& [host, u] : uploads_) m.weights += u.bytes;
    for (const auto& [ptr, bytes] : kv_sizes_) m.kv_cache += bytes;
    m.scratch = tensor_bytes_ + 2 * sizeof(int32_t);  // d_step_
    for (const cuda::DeviceBuffer* b : {&ids_, &positions_, &capture_slots_, &capture_, &shift_angles_, &top_,
                                        &matmul_ws_.w16, &matmul_ws_.x16, &matmul_ws_.xq8, &matmul_ws_.xq8_scales,
                                        &attn_ws_.partial})
        m.scratch += b->size();
    for (const auto& [kv, mirror] : mirrors_) m.scratch += mirror.host.size() * sizeof(void*);
    return m;
}

void* CudaBackend::kv_alloc(size_t bytes) {
    auto& pool = kv_pool_[bytes];
    if (!pool.empty()) {
        void* p = pool.back();
        pool.pop_back();
        return p;
    }
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, bytes);
    if (err != cudaSuccess)
        throw Error("out of GPU memory for the KV cache: a block of " + mib(bytes) + " could not be allocated on " +
                    device_name_ + " (" + cudaGetErrorString(err) + "); use a smaller context");
    kv_sizes_[p] = bytes;
    return p;
}

void CudaBackend::kv_free(void* p) {
    // Kept for reuse rather than freed: cudaFree synchronises the device, and a chat truncates and
    // regrows its cache all the time. Queued kernels that still read the block finish before any
    // later kernel can overwrite it (one stream).
    const auto it = kv_sizes_.find(p);
    if (it != kv_sizes_.end()) kv_pool_[it->second].push_back(p);
}

// ---- KV block tables in device memory ----

CudaBackend::KvMirror& CudaBackend::mirror_for(const KvCache& kv) {
    const KvCacheConfig& c = kv.config();
    const int32_t max_blocks = (c.n_ctx + c.block_tokens - 1) / c.block_tokens;
    KvMirror& m = mirrors_[&kv];
    if (m.table && m.n_layer == c.n_layer && m.max_blocks == max_blocks) return m;
    if (recording()) throw Error("CUDA backend: a KV cache changed shape while a decode step was recorded");
    if (m.table) {
        invalidate_graph();
        WB_CUDA_CHECK(cudaStreamSynchronize(stream_));
        WB_CUDA_CHECK(cudaFree(m.table));
    }
    m.n_layer = c.n_layer;
    m.max_blocks = max_blocks;
    m.host.assign(size_t(c.n_layer) * size_t(max_blocks), nullptr);
    const size_t bytes = m.host.size() * sizeof(void*);
    WB_CUDA_CHECK(cudaMalloc(&m.table, bytes));
    WB_CUDA_CHECK(cudaMemsetAsync(m.table, 0, bytes, stream_));
    return m;
}

void CudaBackend::sync_layer(const KvCache& kv, KvMirror& m, int32_t il) {
    const std::vector<void*>& blocks = kv.blocks(il);
    void** host = m.host.data() + size_t(il) * size_t(m.max_blocks);
    bool same = true;
    for (int32_t b = 0; b < m.max_blocks && same; ++b)
        same = host[b] == (size_t(b) < blocks.size() ? blocks[size_t(b)] : nullptr);
    if (same) return;
    for (int32_t b = 0; b < m.max_blocks; ++b) host[b] = size_t(b) < blocks.size() ? blocks[size_t(b)] : nullptr;
    // From pageable memory: the call returns once the source is staged, so m.host may change next.
    WB_CUDA_CHECK(cudaMemcpyAsync(m.table + size_t(il) * size_t(m.max_blocks), host, size_t(m.max_blocks) * sizeof(void*),
                                  cudaMemcpyHostToDevice, stream_));
}

void* const* CudaBackend::block_table(const KvCache& kv, int32_t il) {
    KvMirror& m = mirror_for(kv);
    if (!recording()) sync_layer(kv, m, il);
    return m.table + size_t(il) * size_t(m.max_blocks);
}

void CudaBackend::drop_mirrors() {
    // Never throws (on free()'s path).
    if (mirrors_.empty()) return;
    cudaStreamSynchronize(stream_);
    for (auto& [key, m] : mirrors_) cudaFree(m.table);
    mirrors_.clear();
}

// ---- helpers ----

const void* CudaBackend::device_copy(const Weight& w) const {
    if (!w.device)
        throw Error("CUDA backend: a weight was used before prepare_weights uploaded it" +
                    (w.src ? " ('" + w.src->name + "')" : std::string()));
    return w.device;
}

const int32_t* CudaBackend::upload_ints(cuda::DeviceBuffer& buf, std::vector<int32_t>& last, const int32_t* host,
                                        int32_t n) {
    const void* before = buf.get();
    auto* d = buf.ensure_as<int32_t>(size_t(n), stream_);
    if (d != before) last.clear();  // a new allocation holds nothing yet
    if (last.size() == size_t(n) && std::memcmp(last.data(), host, size_t(n) * sizeof(int32_t)) == 0) return d;
    last.assign(host, host + n);
    WB_CUDA_CHECK(cudaMemcpyAsync(d, last.data(), size_t(n) * sizeof(int32_t), cudaMemcpyHostToDevice, stream_));
    return d;
}

uint64_t CudaBackend::scratch_generation() const {
    return attn_ws_.partial.generation() + matmul_ws_.w16.generation() + matmul_ws_.x16.generation() +
           matmul_ws_.xq8.generation() + matmul_ws_.xq8_scales.generation();
}

void CudaBackend::invalidate_graph() {
    // Never throws (on free()'s path).
    if (graph_) {
        cudaStreamSynchronize(stream_);
        cudaGraphExecDestroy(graph_);
    }
    graph_ = nullptr;
    graph_kv_ = nullptr;
    warm_kv_ = nullptr;
}

// ---- operations ----

void CudaBackend::embed(const Weight& table, const int32_t* ids, int32_t n, float scale, Tensor& out) {
    end_matmul_run();
    cuda::EmbedArgs a;
    if (recording()) {
        if (n != 1) throw Error("CUDA backend: a recorded decode step embeds one token");
        a.ids = d_step_;
    } else {
        for (int32_t i = 0; i < n; ++i)
            if (ids[i] < 0 || ids[i] >= table.n_out)
                throw Error("token id " + std::to_string(ids[i]) + " is outside the vocabulary (0.." +
                            std::to_string(table.n_out - 1) + ")");
        // The ids buffer is shared with nothing else, so a re-upload check by content is safe.
        a.ids = upload_ints(ids_, last_ids_, ids, n);
    }
    a.type = table.type;
    a.table = static_cast<const uint8_t*>(device_copy(table));
    a.row_bytes = ggml_row_bytes(table.type, table.n_in);
    a.n_cols = table.n_in;
    a.n_rows = table.n_out;
    a.n = n;
    a.scale = scale;
    a.out = out.data;
    cuda::embed(a, stream_);
}

void CudaBackend::rms_norm(const Tensor& x, const Weight& gain, float eps, int64_t group, Tensor& out) {
    end_matmul_run();
    if (gain.type != GgmlType::F32 || gain.n_in != group || x.n_cols % group != 0)
        throw Error("CUDA rms_norm: the gain must be F32 with one value per element of a group");
    if (out.n_rows * out.n_cols < x.n_rows * x.n_cols)
        throw Error("CUDA rms_norm: the output is smaller than the input");
    cuda::RmsNormArgs a;
    a.x = x.data;
    a.gain = static_cast<const float*>(device_copy(gain));
    a.out = out.data;
    a.n_groups = x.n_rows * (x.n_cols / group);
    a.group = group;
    a.eps = eps;
    launch_norm(a, out);
}

void CudaBackend::launch_norm(cuda::RmsNormArgs& a, const Tensor& out) {
    // Whole rows of a decode-sized batch: the next matmuls of out take the 8-bit GEMV, so the norm
    // kernel writes out's 8-bit parts too and they skip their quantize kernel.
    // The rows written are the input's (a.n_groups of them when groups are whole rows): a matmul of a
    // taller view of out misses the cache and quantizes for itself.
    const bool quantize =
        a.group == out.n_cols && a.group % cuda::kPart == 0 && a.n_groups <= cuda::kGemvMaxBatch;
    if (quantize) {
        const cuda::Q8Target t = cuda::q8_target(matmul_ws_, a.n_groups, a.group, stream_);
        a.q8 = t.q;
        a.q8_scales = t.scales;
    }
    cuda::rms_norm(a, stream_);
    if (quantize) cuda::remember_q8(matmul_ws_, out.data, a.n_groups, a.group);
}

cuda::MatmulArgs CudaBackend::matmul_args(const Weight& w, const Tensor& x, Tensor& out) const {
    if (x.n_cols != w.n_in || out.n_cols < w.n_out)
        throw Error("CUDA matmul: activations of width " + std::to_string(x.n_cols) + " for a weight of " +
                    std::to_string(w.n_in) + " x " + std::to_string(w.n_out));
    // The output never overlaps the input: the quantized copy of x is reused by the next matmul.
    if (out.data < x.data + x.n_rows * x.n_cols && x.data < out.data + out.n_rows * out.n_cols)
        throw Error("CUDA matmul: the output overlaps the input");
    if (recording() && x.n_rows > cuda::kGemvMaxBatch)
        throw Error("CUDA backend: a recorded decode step may not take the cuBLAS path");
    cuda::MatmulArgs a;
    a.type = w.type;
    a.w = static_cast<const uint8_t*>(device_copy(w));
    a.w_row_bytes = ggml_row_bytes(w.type, w.n_in);
    a.n_in = w.n_in;
    a.n_out = w.n_out;
    a.x = x.data;
    a.n_tok = int32_t(x.n_rows);
    a.out = out.data;
    a.out_stride = out.n_cols;
    return a;
}

void CudaBackend::matmul(const Weight& w, const Tensor& x, Tensor& out) {
    cuda::matmul(matmul_args(w, x, out), matmul_ws_, stream_);
}

void CudaBackend::matmul_shared(const Tensor& x, const Weight* const* weights, Tensor* const* outs, int n) {
    if (n <= 0) return;
    if (n > cuda::kMaxShared || !cuda::gemv_fusable(weights[0]->type, int32_t(x.n_rows)))
        return Backend::matmul_shared(x, weights, outs, n);
    // One launch per weight type (Gemma 3's q and k are Q5_0 where its v is Q8_0); a type without
    // the integer GEMV goes through matmul().
    bool done[cuda::kMaxShared] = {};
    for (int i = 0; i < n; ++i) {
        if (done[i]) continue;
        cuda::MatmulArgs a[cuda::kMaxShared];
        int m = 0;
        for (int k = i; k < n; ++k)
            if (!done[k] && weights[k]->type == weights[i]->type) {
                a[m++] = matmul_args(*weights[k], x, *outs[k]);
                done[k] = true;
            }
        if (cuda::gemv_fusable(weights[i]->type, int32_t(x.n_rows))) {
            cuda::matmul_shared(a, m, matmul_ws_, stream_);
        } else {
            for (int k = 0; k < m; ++k) cuda::matmul(a[k], matmul_ws_, stream_);
        }
    }
}

void CudaBackend::matmul_glu(const Weight& gate, const Weight& up, const Tensor& x, Activation act, Tensor& up_scratch,
                             Tensor& out) {
    if (up.type != gate.type || up.n_in != gate.n_in || up.n_out != gate.n_out ||
        !cuda::gemv_fusable(gate.type, int32_t(x.n_rows)))
        return Backend::matmul_glu(gate, up, x, act, up_scratch, out);
    const cuda::MatmulArgs a = matmul_args(gate, x, out);
    cuda::matmul_glu(a, static_cast<const uint8_t*>(device_copy(up)),
                     act == Activation::SILU ? cuda::GluAct::SILU : cuda::GluAct::GELU_TANH, matmul_ws_, stream_);
}

void CudaBackend::rope(Tensor& x, const RopeParams& p, const int32_t* positions) {
    end_matmul_run();
    cuda::RopeArgs a;
    if (recording()) {
        if (x.n_rows != 1) throw Error("CUDA backend: a recorded decode step ropes one row");
        a.positions = d_step_ + 1;
    } else {
        a.positions = upload_ints(positions_, last_positions_, positions, int32_t(x.n_rows));
    }
    a.x = x.data;
    a.n_rows = x.n_rows;
    a.row_stride = x.n_cols;
    a.n_head = p.n_head;
    a.head_dim = p.head_dim;
    a.n_rot = p.n_rot;
    a.freq_scale = p.freq_scale;
    a.theta_scale = std::pow(p.base, -2.0f / float(p.n_rot));  // the CPU backend's expression, bit for bit
    a.neox = p.mode == RopeMode::NEOX;
    if (p.freq_factors && *p.freq_factors) {
        if (p.freq_factors->type != GgmlType::F32 || p.freq_factors->n_in < p.n_rot / 2)
            throw Error("CUDA rope: the frequency factors must be an F32 vector of n_rot / 2");
        a.freq_factors = static_cast<const float*>(device_copy(*p.freq_factors));
    }
    a.ext_factor = p.ext_factor;
    a.mscale = rope_magnitude(p);
    if (p.ext_factor != 0.0f) rope_yarn_corr_dims(p, &a.corr_low, &a.corr_high);
    cuda::rope(a, stream_);
}

// The KV element types the kernels read and write: f16, q8_0 and q4_0 for K and V alike (kv_store.cu,
// attention.cu; kernels/kv_quant_parts.h holds the block arithmetic). A type KvType gains later is
// refused here by name until the kernels know its blocks.
void CudaBackend::check_kv_types(KvType type_k, KvType type_v) const {
    for (KvType t : {type_k, type_v})
        if (t != KvType::F16 && t != KvType::Q8_0 && t != KvType::Q4_0)
            throw Error(std::string("the CUDA backend has no kernels for a KV cache of type ") + kv_type_name(t) +
                        " (supported: f16, q8_0, q4_0); use the CPU backend for it");
}

// The cache's rows are n_head_kv * head_dim values of its types; a tensor or head layout of another
// width would read or write past them on the device, where the CPU backend would throw.
static void check_kv_width(const CudaBackend& b, const KvCache& kv, int64_t width, const char* what) {
    b.check_kv_types(kv.config().type_k, kv.config().type_v);
    const int64_t row = int64_t(kv.config().n_head_kv) * kv.config().head_dim;
    if (width != row)
        throw Error(std::string("CUDA ") + what + ": rows of " + std::to_string(width) + " values for a cache of rows of " +
                    std::to_string(row));
}

// The Hadamard runs of a quantized cache and the factor each value is multiplied by first, the CPU's
// expression (kv_rotate), so that both backends multiply by the same float.
static float rotation_scale(int32_t n_rot) { return n_rot > 0 ? 1.0f / std::sqrt(float(n_rot)) : 1.0f; }

void CudaBackend::kv_store(KvCache& kv, int32_t il, const Tensor& k, const Tensor& v, int32_t pos0) {
    end_matmul_run();
    check_kv_width(*this, kv, k.n_cols, "kv_store (k)");
    check_kv_width(*this, kv, v.n_cols, "kv_store (v)");
    if (v.n_rows != k.n_rows) throw Error("CUDA kv_store: k and v have different row counts");
    cuda::KvStoreArgs a;
    a.k = k.data;
    a.v = v.data;
    a.n_rows = k.n_rows;
    a.width = k.n_cols;
    a.blocks = block_table(kv, il);
    a.block_tokens = kv.config().block_tokens;
    a.pos0 = pos0;
    a.pos0_dev = recording() ? d_step_ + 1 : nullptr;
    const KvCacheConfig& c = kv.config();
    a.type_k = c.type_k;
    a.type_v = c.type_v;
    a.k_row_bytes = kv.k_row_bytes();
    a.v_row_bytes = kv.v_row_bytes();
    a.rot_k = kv_rotation_k(c.type_k, c.head_dim);
    a.rot_v = kv_rotation_v(c.type_v, c.head_dim);
    a.rot_k_scale = rotation_scale(a.rot_k);
    a.rot_v_scale = rotation_scale(a.rot_v);
    cuda::kv_store(a, stream_);
}

void CudaBackend::kv_shift(KvCache& kv, int32_t il, int32_t src, int32_t dst, int32_t n, const RopeParams& p) {
    end_matmul_run();
    if (recording()) throw Error("CUDA backend: a context shift inside a recorded decode step");
    if (dst > src || n < 0 || src + n > kv.n_tokens()) throw Error("CUDA kv_shift: rows out of range");
    check_kv_width(*this, kv, int64_t(p.n_head) * p.head_dim, "kv_shift");
    // A quantized K is stored rotated and in blocks, and re-roping it here is not implemented yet
    // (the CPU backend does it): can_shift_kv says so, so a session refuses the shift policy up front
    // and this is only a guard. A quantized V moves as bytes.
    if (kv.config().type_k != KvType::F16)
        throw Error(std::string("context shift needs an f16 key cache (this one is ") + kv_type_name(kv.config().type_k) +
                    "); use the trim or stop policy");
    // One angle for every moved row, computed on the host by the CPU backend's own function.
    const int32_t half = p.n_rot / 2;
    const float* factors = p.freq_factors && *p.freq_factors ? static_cast<const float*>(p.freq_factors->host) : nullptr;
    std::vector<float> cs(size_t(2 * half));
    rope_angles(p, factors, dst - src, cs.data(), cs.data() + half);
    auto* d_cs = shift_angles_.ensure_as<float>(cs.size(), stream_);
    WB_CUDA_CHECK(cudaMemcpyAsync(d_cs, cs.data(), cs.size() * sizeof(float), cudaMemcpyHostToDevice, stream_));
    cuda::KvShiftArgs a;
    a.blocks = block_table(kv, il);
    a.block_tokens = kv.config().block_tokens;
    a.width = p.n_head * p.head_dim;
    a.k_row_bytes = kv.k_row_bytes();
    a.v_row_bytes = kv.v_row_bytes();
    a.head_dim = p.head_dim;
    a.n_rot = p.n_rot;
    a.neox = p.mode != RopeMode::NORMAL;
    a.cos_sin = d_cs;
    a.src = src;
    a.dst = dst;
    a.n = n;
    cuda::kv_shift(a, stream_);
    // The pageable source of the angles is staged before cudaMemcpyAsync returns; the graph of a
    // decode step recorded before the shift reads the block table, which block_table() updated.
}

void CudaBackend::attention(const Tensor& q, const KvCache& kv, int32_t il, int32_t pos0, const AttentionParams& p,
                            Tensor& out) {
    end_matmul_run();
    check_kv_width(*this, kv, int64_t(p.n_head_kv) * p.head_dim, "attention");
    if (q.n_cols < int64_t(p.n_head) * p.head_dim || out.n_cols < int64_t(p.n_head) * p.head_dim || out.n_rows < q.n_rows)
        throw Error("CUDA attention: q or out narrower than the heads they hold");
    // A recorded step is replayed at other positions; only a one-token launch is position-independent.
    if (recording() && q.n_rows != 1) throw Error("CUDA backend: a recorded decode step attends from one token");
    const int32_t bt = kv.config().block_tokens;
    cuda::AttentionArgs a;
    a.q = q.data;
    a.q_stride = q.n_cols;
    a.out = out.data;
    a.out_stride = out.n_cols;
    a.blocks = block_table(kv, il);
    a.block_tokens = bt;
    a.n_q = int32_t(q.n_rows);
    a.n_head = p.n_head;
    a.n_head_kv = p.n_head_kv;
    a.head_dim = p.head_dim;
    const KvCacheConfig& c = kv.config();
    a.type_k = c.type_k;
    a.type_v = c.type_v;
    a.k_row_bytes = kv.k_row_bytes();
    a.v_row_bytes = kv.v_row_bytes();
    a.k_head_bytes = kv.k_head_bytes();
    a.v_head_bytes = kv.v_head_bytes();
    a.rot_k = kv_rotation_k(c.type_k, c.head_dim);
    a.rot_v = kv_rotation_v(c.type_v, c.head_dim);
    a.rot_k_scale = rotation_scale(a.rot_k);
    a.rot_v_scale = rotation_scale(a.rot_v);
    a.window = p.window;
    a.scale = p.scale;
    a.scale_q = p.scale_q;
    a.softcap = p.softcap;
    a.pos0 = pos0;
    a.pos0_dev = recording() ? d_step_ + 1 : nullptr;
    // One token: as many splits as the cache can ever have, so the launch (and a recorded graph) is
    // the same at every position; splits past the position return immediately.
    const int32_t keys = a.n_q == 1 ? kv.capacity() : pos0 + a.n_q;
    a.n_splits = (keys + bt - 1) / bt;
    size_t capture_floats = 0;
    if (p.capture_probs) {
        if (recording()) throw Error("CUDA backend: attention capture cannot be part of a recorded decode step");
        std::vector<int32_t> slots(size_t(p.n_head), -1);
        for (int32_t i = 0; i < p.n_capture_heads; ++i) {
            const int32_t h = p.capture_heads[i];
            if (h < 0 || h >= p.n_head) throw Error("attention capture: head " + std::to_string(h) + " does not exist");
            slots[size_t(h)] = i;
        }
        a.capture_slot = upload_ints(capture_slots_, last_capture_slots_, slots.data(), p.n_head);
        a.capture_keys = pos0 + a.n_q;
        a.capture_scores = p.capture_scores;
        capture_floats = size_t(p.n_capture_heads) * size_t(a.n_q) * size_t(a.capture_keys);
        a.capture = capture_.ensure_as<float>(capture_floats, stream_);
        WB_CUDA_CHECK(cudaMemsetAsync(a.capture, 0, capture_floats * sizeof(float), stream_));
    }
    cuda::attention(a, attn_ws_, stream_);
    if (p.capture_probs) {
        // The contract: the probabilities are in host memory when attention() returns.
        WB_CUDA_CHECK(cudaMemcpyAsync(p.capture_probs, a.capture, capture_floats * sizeof(float), cudaMemcpyDeviceToHost,
                                      stream_));
        WB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }
}

void CudaBackend::glu(const Tensor& gate, const Tensor& up, Activation act, Tensor& out) {
    end_matmul_run();
    cuda::GluArgs a;
    a.gate = gate.data;
    a.up = up.data;
    a.out = out.data;
    a.n = gate.n_rows * gate.n_cols;
    a.act = act == Activation::SILU ? cuda::GluAct::SILU : cuda::GluAct::GELU_TANH;
    cuda::glu(a, stream_);
}

void CudaBackend::add(Tensor& x, const Tensor& y) {
    end_matmul_run();
    cuda::add({x.data, y.data, x.n_rows * x.n_cols}, stream_);
}

void CudaBackend::add_bias(Tensor& x, const Weight& bias) {
    end_matmul_run();
    if (bias.type != GgmlType::F32 || bias.n_in != x.n_cols)
        throw Error("CUDA add_bias: the bias must be an F32 vector of " + std::to_string(x.n_cols));
    cuda::add_bias({x.data, static_cast<const float*>(device_copy(bias)), x.n_rows, x.n_cols}, stream_);
}

void CudaBackend::softcap(Tensor& x, float cap) {
    end_matmul_run();
    cuda::softcap({x.data, x.n_rows * x.n_cols, cap}, stream_);
}

void CudaBackend::add_rms_norm(Tensor& x, const Tensor& y, const Weight& gain, float eps, Tensor& out) {
    end_matmul_run();
    if (gain.type != GgmlType::F32 || gain.n_in != x.n_cols)
        throw Error("CUDA add_rms_norm: the gain must be F32 with one value per element of a row");
    if (y.n_rows != x.n_rows || y.n_cols != x.n_cols || out.n_rows != x.n_rows || out.n_cols != x.n_cols)
        throw Error("CUDA add_rms_norm: x, y and out must have the same shape");
    cuda::RmsNormArgs a;
    a.x = x.data;
    a.x_out = x.data;
    a.residual = y.data;
    a.gain = static_cast<const float*>(device_copy(gain));
    a.out = out.data;
    a.n_groups = x.n_rows;
    a.group = x.n_cols;
    a.eps = eps;
    launch_norm(a, out);
}

void CudaBackend::copy(const Tensor& src, Tensor& dst) {
    end_matmul_run();
    if (src.n_rows * src.n_cols != dst.n_rows * dst.n_cols) throw Error("CUDA copy: the tensors differ in size");
    WB_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, size_t(src.n_rows * src.n_cols) * sizeof(float),
                                  cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::read(const Tensor& x, float* host) {
    end_matmul_run();
    WB_CUDA_CHECK(cudaMemcpyAsync(host, x.data, size_t(x.n_rows * x.n_cols) * sizeof(float), cudaMemcpyDeviceToHost,
                                  stream_));
    WB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::read_top(const Tensor& row, int32_t k, int32_t* ids, float* values) {
    end_matmul_run();
    if (row.n_rows != 1 || k < 1 || k > row.n_cols)
        throw Error("read_top: k = " + std::to_string(k) + " of " + std::to_string(row.n_rows) + " row(s) of " +
                    std::to_string(row.n_cols) + " (expects one row and 1 <= k <= its length)");
    // One buffer, one copy: k ids, then k values.
    auto* d = top_.ensure_as<uint32_t>(2 * size_t(k), stream_);
    cuda::top_k({row.data, row.n_cols, k, reinterpret_cast<int32_t*>(d), reinterpret_cast<float*>(d + k)}, stream_);
    WB_CUDA_CHECK(cudaMemcpyAsync(ids, d, size_t(k) * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
    WB_CUDA_CHECK(cudaMemcpyAsync(values, d + k, size_t(k) * sizeof(float), cudaMemcpyDeviceToHost, stream_));
    WB_CUDA_CHECK(cudaStreamSynchronize(stream_));
    order_top_logits(ids, values, k);  // the device leaves the k pairs in no order
}

void CudaBackend::synchronize() {
    end_matmul_run();
    WB_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

// ---- decode-step graphs ----

bool CudaBackend::decode_step_begin(const KvCache& kv, int32_t token, int32_t pos) {
    end_matmul_run();
    if (!graphs_enabled_) return false;
    // Every layer's table must be current before a replay or a recording: neither touches the host.
    KvMirror& m = mirror_for(kv);
    for (int32_t il = 0; il < m.n_layer; ++il) sync_layer(kv, m, il);
    const int32_t step[2] = {token, pos};
    WB_CUDA_CHECK(cudaMemcpyAsync(d_step_, step, sizeof step, cudaMemcpyHostToDevice, stream_));
    // A scratch buffer that grew since the recording (a longer prompt came in between) was freed
    // and reallocated: the recording still points at the old memory.
    if (graph_ && graph_scratch_ != scratch_generation()) invalidate_graph();
    if (graph_ && graph_kv_ == &kv) {
        WB_CUDA_CHECK(cudaGraphLaunch(graph_, stream_));
        return true;
    }
    if (graph_) invalidate_graph();
    step_kv_ = &kv;
    if (warm_kv_ == &kv) {
        WB_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
        step_ = StepMode::CAPTURE;
    } else {
        step_ = StepMode::WARMUP;
    }
    return false;
}

void CudaBackend::decode_step_end(bool completed) {
    end_matmul_run();
    const StepMode mode = step_;
    step_ = StepMode::NONE;
    if (mode == StepMode::WARMUP) {
        warm_kv_ = completed ? step_kv_ : nullptr;
        return;
    }
    if (mode != StepMode::CAPTURE) return;
    cudaGraph_t graph = nullptr;
    const cudaError_t err = cudaStreamEndCapture(stream_, &graph);
    if (!completed || err != cudaSuccess) {
        if (graph) cudaGraphDestroy(graph);
        warm_kv_ = nullptr;
        // The step was recorded but never ran, so this one fails; later steps run eagerly rather
        // than failing the same way every other token.
        if (completed) graphs_enabled_ = false;
        if (completed) WB_CUDA_CHECK(err);
        return;
    }
    cudaGraphExec_t exec = nullptr;
    const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    if (inst != cudaSuccess) {
        warm_kv_ = nullptr;
        graphs_enabled_ = false;
        WB_CUDA_CHECK(inst);
    }
    graph_ = exec;
    graph_kv_ = step_kv_;
    graph_scratch_ = scratch_generation();
    // Recording did not execute anything: run the step now.
    WB_CUDA_CHECK(cudaGraphLaunch(graph_, stream_));
}

}  // namespace wb
