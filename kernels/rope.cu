#include "common.cuh"
#include "cuda_check.h"
#include "rope.cuh"

namespace wb::cuda {

namespace {

// One block per row; a thread per (head, pair). The angle is built by repeated multiplication in
// float, exactly as the CPU backend (and ggml) builds it, then divided by the pair's frequency factor
// and scaled or YaRN-mixed as rope_angles does (engine/rope_angles.cpp); the rotation is written with
// the same fused multiply-adds.
__global__ void rope_kernel(RopeArgs a) {
    const int32_t half = a.n_rot / 2;
    float* row = a.x + int64_t(blockIdx.x) * a.row_stride;
    const float pos = float(a.positions[blockIdx.x]);
    for (int idx = threadIdx.x; idx < a.n_head * half; idx += blockDim.x) {
        const int h = idx / half, i = idx % half;
        float theta_base = pos;
        for (int k = 0; k < i; ++k) theta_base *= a.theta_scale;
        const float theta_extrap = a.freq_factors ? theta_base / a.freq_factors[i] : theta_base;
        const float theta_interp = a.freq_scale * theta_extrap;
        float theta = theta_interp;
        if (a.ext_factor != 0.0f) {
            const float y = (float(i) - a.corr_low) / fmaxf(0.001f, a.corr_high - a.corr_low);
            const float ramp_mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * a.ext_factor;
            theta = fmaf(theta_interp, 1.0f - ramp_mix, theta_extrap * ramp_mix);
        }
        float s, c;
        sincosf(theta, &s, &c);
        s *= a.mscale;
        c *= a.mscale;
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
