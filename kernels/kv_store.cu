#include <cuda_fp16.h>

#include "common.cuh"
#include "cuda_check.h"
#include "kv_store.cuh"

namespace wb::cuda {

namespace {

// One thread per element; round-to-nearest-even to f16 like the CPU backend's conversion.
__global__ void kv_store_kernel(KvStoreArgs a) {
    const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= a.n_rows * a.width) return;
    const int64_t r = idx / a.width, c = idx % a.width;
    const int32_t pos0 = a.pos0_dev ? *a.pos0_dev : a.pos0;
    const int32_t pos = pos0 + int32_t(r);
    auto* block = static_cast<__half*>(a.blocks[pos / a.block_tokens]);
    const int64_t slot = pos % a.block_tokens;
    block[slot * a.width + c] = __float2half_rn(a.k[idx]);
    block[(a.block_tokens + slot) * a.width + c] = __float2half_rn(a.v[idx]);
}

void launch_kv_store(const KvStoreArgs& a, cudaStream_t stream) {
    constexpr int kThreads = 256;
    kv_store_kernel<<<unsigned(ceil_div(a.n_rows * a.width, kThreads)), kThreads, 0, stream>>>(a);
    WB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void kv_store(const KvStoreArgs& a, cudaStream_t stream) {
    if (a.n_rows <= 0) return;
    launch_kv_store(a, stream);
}

}  // namespace wb::cuda
