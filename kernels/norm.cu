#include "common.cuh"
#include "cuda_check.h"
#include "norm.cuh"
#include "q8_quantize.cuh"

namespace wb::cuda {

namespace {

constexpr int kNormThreads = 256;

// One block per group. The sum of squares is kept in double like the CPU reference (float squares,
// double sum), so the two differ only in summation order, not in precision; it is a few thousand
// additions per row, far from being what a step's time is spent on.
__global__ void rms_norm_kernel(RmsNormArgs a) {
    const float* in = a.x + int64_t(blockIdx.x) * a.group;
    float* o = a.out + int64_t(blockIdx.x) * a.group;
    double sum = 0.0;
    if (a.residual) {
        // x += residual, element by element as the add kernel does, then the norm of the new x.
        const float* r = a.residual + int64_t(blockIdx.x) * a.group;
        float* xw = a.x_out + int64_t(blockIdx.x) * a.group;
        for (int64_t j = threadIdx.x; j < a.group; j += blockDim.x) {
            const float v = in[j] + r[j];
            xw[j] = v;
            sum += double(v * v);
        }
    } else {
        for (int64_t j = threadIdx.x; j < a.group; j += blockDim.x) sum += double(in[j] * in[j]);
    }
    __shared__ double partial[kNormThreads / kWarp];
#pragma unroll
    for (int off = kWarp / 2; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    if (threadIdx.x % kWarp == 0) partial[threadIdx.x / kWarp] = sum;
    __syncthreads();
    double total = 0.0;
    for (int w = 0; w < kNormThreads / kWarp; ++w) total += partial[w];
    const float inv = 1.0f / sqrtf(float(total / double(a.group)) + a.eps);
    // In-place safe (out = x, or out = residual): each element is read and written by the same thread,
    // and the writes come after the reduction.
    if (!a.q8) {
        for (int64_t j = threadIdx.x; j < a.group; j += blockDim.x) o[j] = in[j] * inv * a.gain[j];
        return;
    }
    // With the 8-bit copy: warp w's lanes hold elements 32w .. 32w + 31 of each run of 256, one part;
    // group is a multiple of 32, so a warp is wholly inside the row or wholly past it.
    const int64_t row = blockIdx.x;
    for (int64_t j0 = 0; j0 < a.group; j0 += blockDim.x) {
        const int64_t j = j0 + threadIdx.x;
        if (j0 + (threadIdx.x / kWarp) * kWarp >= a.group) break;  // whole warps
        const float v = in[j] * inv * a.gain[j];
        o[j] = v;
        const int64_t part = row * (a.group / kPart) + j / kPart;
        quantize_part_q8_warp(v, a.q8 + part * kPart, a.q8_scales + part);
    }
}

void launch_rms_norm(const RmsNormArgs& a, cudaStream_t stream) {
    rms_norm_kernel<<<unsigned(a.n_groups), kNormThreads, 0, stream>>>(a);
    WB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void rms_norm(const RmsNormArgs& a, cudaStream_t stream) {
    if (a.n_groups <= 0) return;
    launch_rms_norm(a, stream);
}

}  // namespace wb::cuda
