#include <cuda_fp16.h>

#include <algorithm>

#include "common.cuh"
#include "cuda_check.h"
#include "engine/rope_shift.h"
#include "kv_shift.cuh"

namespace wb::cuda {

namespace {

__device__ uint16_t* row_at(const KvShiftArgs& a, int32_t pos, bool v) {
    auto* block = static_cast<uint8_t*>(a.blocks[pos / a.block_tokens]);
    const int64_t slot = pos % a.block_tokens;
    return reinterpret_cast<uint16_t*>(v ? block + int64_t(a.block_tokens) * int64_t(a.k_row_bytes) +
                                               slot * int64_t(a.v_row_bytes)
                                         : block + slot * int64_t(a.k_row_bytes));
}

// A thread per element of a moved K row and per 16-bit word of a moved V row (whatever V's type: the
// CPU moves its bytes as they are): thread c copies V's word c, and K's element c when it is in the
// unrotated tail; the thread of element i < n_rot / 2 of a head turns that head's pair i (both of its
// elements) with the CPU's formula.
__global__ void kv_shift_kernel(KvShiftArgs a, int32_t r0, int32_t rows, int32_t per_row) {
    const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= int64_t(rows) * per_row) return;
    const int32_t r = r0 + int32_t(idx / per_row), c = int32_t(idx % per_row);
    if (a.src != a.dst && c < int32_t(a.v_row_bytes / 2)) row_at(a, a.dst + r, true)[c] = row_at(a, a.src + r, true)[c];
    if (c >= a.width) return;
    const int32_t h = c / a.head_dim, d = c % a.head_dim, half = a.n_rot / 2;
    const uint16_t* ks = row_at(a, a.src + r, false) + int64_t(h) * a.head_dim;
    uint16_t* kd = row_at(a, a.dst + r, false) + int64_t(h) * a.head_dim;
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
    const int32_t per_row = std::max(a.width, int32_t(a.v_row_bytes / 2));
    for (int32_t r0 = 0; r0 < a.n; r0 += chunk) {
        const int32_t rows = std::min(chunk, a.n - r0);
        kv_shift_kernel<<<unsigned(ceil_div(int64_t(rows) * per_row, kThreads)), kThreads, 0, stream>>>(a, r0, rows, per_row);
        WB_CUDA_CHECK_LAUNCH();
    }
}

}  // namespace wb::cuda
