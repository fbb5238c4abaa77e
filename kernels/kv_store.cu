#include <cuda_fp16.h>

#include <string>

#include "common.cuh"
#include "cuda_check.h"
#include "kv_quant_parts.h"
#include "kv_store.cuh"
#include "util/error.h"

namespace wb::cuda {

namespace {

constexpr int kThreads = 256;

__device__ uint8_t* row_start(const KvStoreArgs& a, int32_t pos, bool v) {
    auto* block = static_cast<uint8_t*>(a.blocks[pos / a.block_tokens]);
    const int64_t slot = pos % a.block_tokens;
    return v ? block + int64_t(a.block_tokens) * int64_t(a.k_row_bytes) + slot * int64_t(a.v_row_bytes)
             : block + slot * int64_t(a.k_row_bytes);
}

// f16 K and V: one thread per element; round-to-nearest-even like the CPU backend's conversion.
__global__ void kv_store_f16_kernel(KvStoreArgs a) {
    const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= a.n_rows * a.width) return;
    const int64_t r = idx / a.width, c = idx % a.width;
    const int32_t pos = (a.pos0_dev ? *a.pos0_dev : a.pos0) + int32_t(r);
    reinterpret_cast<__half*>(row_start(a, pos, false))[c] = __float2half_rn(a.k[idx]);
    reinterpret_cast<__half*>(row_start(a, pos, true))[c] = __float2half_rn(a.v[idx]);
}

// One row x of width values into dst in type t, by the whole thread block: rotated in shared memory s
// (runs of rot values, the CPU's passes one after another), then converted (a thread per value for
// f16, per 32-value block for q8_0 / q4_0).
__device__ void store_row(const float* x, float* s, uint8_t* dst, KvType t, int32_t width, int32_t rot, float rot_scale) {
    for (int32_t i = threadIdx.x; i < width; i += blockDim.x) s[i] = rot ? kv_mul(x[i], rot_scale) : x[i];
    __syncthreads();
    for (int32_t len = 1; len < rot; len <<= 1) {
        const int32_t half = rot / 2;
        for (int32_t t2 = threadIdx.x; t2 < width / 2; t2 += blockDim.x) kv_butterfly(s + (t2 / half) * rot, len, t2 % half);
        __syncthreads();
    }
    if (t == KvType::F16) {
        for (int32_t i = threadIdx.x; i < width; i += blockDim.x) reinterpret_cast<__half*>(dst)[i] = __float2half_rn(s[i]);
    } else {
        for (int32_t b = threadIdx.x; b < width / kKvBlock; b += blockDim.x) {
            if (t == KvType::Q8_0)
                kv_quantize_q8_0(s + b * kKvBlock, reinterpret_cast<BlockQ8_0*>(dst)[b]);
            else
                kv_quantize_q4_0(s + b * kKvBlock, reinterpret_cast<BlockQ4_0*>(dst)[b]);
        }
    }
    __syncthreads();  // s is reused for the next row
}

// A quantized K or V: a thread block per row.
__global__ void __launch_bounds__(kThreads) kv_store_rows_kernel(KvStoreArgs a) {
    extern __shared__ float s[];
    const int64_t r = blockIdx.x;
    const int32_t pos = (a.pos0_dev ? *a.pos0_dev : a.pos0) + int32_t(r);
    const int32_t width = int32_t(a.width);
    store_row(a.k + r * a.width, s, row_start(a, pos, false), a.type_k, width, a.rot_k, a.rot_k_scale);
    store_row(a.v + r * a.width, s, row_start(a, pos, true), a.type_v, width, a.rot_v, a.rot_v_scale);
}

}  // namespace

void kv_store(const KvStoreArgs& a, cudaStream_t stream) {
    if (a.n_rows <= 0) return;
    if (a.type_k == KvType::F16 && a.type_v == KvType::F16) {
        kv_store_f16_kernel<<<unsigned(ceil_div(a.n_rows * a.width, kThreads)), kThreads, 0, stream>>>(a);
        WB_CUDA_CHECK_LAUNCH();
        return;
    }
    const size_t smem = size_t(a.width) * sizeof(float);
    if (smem > 48 * 1024 || a.width % kKvBlock != 0 || (a.rot_k && a.width % a.rot_k) || (a.rot_v && a.width % a.rot_v))
        throw Error("CUDA kv_store: rows of " + std::to_string(a.width) + " values do not fit a quantized cache's kernel");
    kv_store_rows_kernel<<<unsigned(a.n_rows), kThreads, smem, stream>>>(a);
    WB_CUDA_CHECK_LAUNCH();
}

}  // namespace wb::cuda
