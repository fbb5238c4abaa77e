#include "embed.cuh"

#include "common.cuh"
#include "cuda_check.h"
#include "dequant_parts.h"

namespace wb::cuda {

namespace {

// One thread per 32-element part of an output row. The host validates ids before an eager launch;
// inside a replayed CUDA graph the id comes from device memory, so a bad one yields zeros rather
// than an out-of-bounds read.
template <GgmlType T>
__global__ void embed_kernel(EmbedArgs a) {
    const int64_t n_parts = a.n_cols / kPart;
    const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= int64_t(a.n) * n_parts) return;
    const int64_t t = idx / n_parts, part = idx % n_parts;
    const int32_t id = a.ids[t];
    float* o = a.out + t * a.n_cols + part * kPart;
    float y[kPart];
    if (id < 0 || id >= a.n_rows) {
        for (int i = 0; i < kPart; ++i) o[i] = 0.0f;
        return;
    }
    dequantize_row_part<T>(a.table + size_t(id) * a.row_bytes, part, y);
#pragma unroll
    for (int i = 0; i < kPart; ++i) o[i] = y[i] * a.scale;
}

template <GgmlType T>
void launch_embed(const EmbedArgs& a, cudaStream_t stream) {
    constexpr int kThreads = 128;
    const int64_t total = int64_t(a.n) * (a.n_cols / kPart);
    embed_kernel<T><<<unsigned(ceil_div(total, kThreads)), kThreads, 0, stream>>>(a);
    WB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void embed(const EmbedArgs& a, cudaStream_t stream) {
    if (a.n <= 0) return;
    if (a.n_cols % kPart != 0)
        throw Error("CUDA embed: row length " + std::to_string(a.n_cols) + " is not a multiple of 32");
    dispatch_weight_type(a.type, [&](auto tc) { launch_embed<decltype(tc)::value>(a, stream); });
}

}  // namespace wb::cuda
