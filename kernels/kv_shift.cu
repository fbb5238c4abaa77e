#include <cuda_fp16.h>

#include "common.cuh"
#include "cuda_check.h"
#include "engine/rope_shift.h"
#include "kv_shift.cuh"

namespace wb::cuda {

namespace {

__device__ uint16_t* row_at(const KvShiftArgs& a, int32_t pos, bool v) {
    auto* block = static_cast<uint16_t*>(a.blocks[pos / a.block_tokens]);
    return block + (int64_t(v ? a.block_tokens : 0) + pos % a.block_tokens) * a.width;
}

// A thread per element of a moved row: it copies V, and K's unrotated tail; the thread of element i
// < n_rot / 2 of a head turns that head's pair i (both of its elements) with the CPU's formula.
__global__ void kv_shift_kernel(KvShiftArgs a, int32_t r0, int32_t rows) {
    const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= int64_t(rows) * a.width) return;
    const int32_t r = r0 + int32_t(idx / a.width), c = int32_t(idx % a.width);
    const int32_t h = c / a.head_dim, d = c % a.head_dim, half = a.n_rot / 2;
    const uint16_t* ks = row_at(a, a.src + r, false) + int64_t(h) * a.head_dim;
    uint16_t* kd = row_at(a, a.dst + r, false) + int64_t(h) * a.head_dim;
    if (a.src != a.dst) row_at(a, a.dst + r, true)[c] = row_at(a, a.src + r, true)[c];
    if (d >= a.n_rot) {
        kd[d] = ks[d];
    } else if (d < half) {
        int32_t ia = 0, ib = 0;
        rope_pair_index(a.neox, d, half, &ia, &ib);
        uint16_t x0 = ks[ia], x1 = ks[ib];
        rope_shift_pair(&x0, &x1, a.cos_sin[d], a.cos_sin[half + d]);
        kd[ia] = x0;
        kd[ib] = x1;
    }
}

}  // namespace

void kv_shift(const KvShiftArgs& a, cudaStream_t stream) {
    if (a.n <= 0) return;
    // Overlapping ranges: in chunks of at most src - dst rows, so that no launch writes a row another
    // of its threads still reads (rows before the chunk were read by an earlier launch on the stream).
    const int32_t chunk = a.src == a.dst ? a.n : std::min(a.n, a.src - a.dst);
    constexpr int kThreads = 256;
    for (int32_t r0 = 0; r0 < a.n; r0 += chunk) {
        const int32_t rows = std::min(chunk, a.n - r0);
        kv_shift_kernel<<<unsigned(ceil_div(int64_t(rows) * a.width, kThreads)), kThreads, 0, stream>>>(a, r0, rows);
        WB_CUDA_CHECK_LAUNCH();
    }
}

}  // namespace wb::cuda
