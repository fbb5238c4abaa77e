#include "common.cuh"
#include "cuda_check.h"
#include "rope.cuh"

namespace wb::cuda {

namespace {

// One block per row; a thread per (head, pair). The angle is built by repeated multiplication in
// float, exactly as the CPU backend (and ggml) builds it, so the angles agree bit for bit; the
// rotation is written with the same fused multiply-adds.
__global__ void rope_kernel(RopeArgs a) {
    const int32_t half = a.n_rot / 2;
    float* row = a.x + int64_t(blockIdx.x) * a.row_stride;
    const float pos = float(a.positions[blockIdx.x]) * a.freq_scale;
    for (int idx = threadIdx.x; idx < a.n_head * half; idx += blockDim.x) {
        const int h = idx / half, i = idx % half;
        float theta = pos;
        for (int k = 0; k < i; ++k) theta *= a.theta_scale;
        float s, c;
        sincosf(theta, &s, &c);
        float* v = row + int64_t(h) * a.head_dim;
        const int ia = a.neox ? i : 2 * i;
        const int ib = a.neox ? i + half : 2 * i + 1;
        const float x0 = v[ia], x1 = v[ib];
        v[ia] = fmaf(x0, c, -(x1 * s));
        v[ib] = fmaf(x0, s, x1 * c);
    }
}

void launch_rope(const RopeArgs& a, cudaStream_t stream) {
    rope_kernel<<<unsigned(a.n_rows), 128, 0, stream>>>(a);
    WB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void rope(const RopeArgs& a, cudaStream_t stream) {
    if (a.n_rows <= 0 || a.n_rot <= 0) return;
    launch_rope(a, stream);
}

}  // namespace wb::cuda
