#include "common.cuh"
#include "cuda_check.h"
#include "elementwise.cuh"

namespace wb::cuda {

namespace {

constexpr int kThreads = 256;

template <GluAct A>
__global__ void glu_kernel(GluArgs a) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= a.n) return;
    a.out[i] = glu_activation<A>(a.gate[i]) * a.up[i];
}

__global__ void add_kernel(AddArgs a) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < a.n) a.x[i] += a.y[i];
}

__global__ void add_bias_kernel(BiasArgs a) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < a.n_rows * a.n_cols) a.x[i] += a.bias[i % a.n_cols];
}

__global__ void softcap_kernel(SoftcapArgs a) {
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < a.n) a.x[i] = tanhf(a.x[i] * (1.0f / a.cap)) * a.cap;
}

void launch_glu(const GluArgs& a, cudaStream_t stream) {
    const unsigned blocks = unsigned(ceil_div(a.n, kThreads));
    if (a.act == GluAct::SILU)
        glu_kernel<GluAct::SILU><<<blocks, kThreads, 0, stream>>>(a);
    else
        glu_kernel<GluAct::GELU_TANH><<<blocks, kThreads, 0, stream>>>(a);
    WB_CUDA_CHECK_LAUNCH();
}

void launch_add(const AddArgs& a, cudaStream_t stream) {
    add_kernel<<<unsigned(ceil_div(a.n, kThreads)), kThreads, 0, stream>>>(a);
    WB_CUDA_CHECK_LAUNCH();
}

void launch_add_bias(const BiasArgs& a, cudaStream_t stream) {
    add_bias_kernel<<<unsigned(ceil_div(a.n_rows * a.n_cols, kThreads)), kThreads, 0, stream>>>(a);
    WB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void glu(const GluArgs& a, cudaStream_t stream) {
    if (a.n > 0) launch_glu(a, stream);
}

void add(const AddArgs& a, cudaStream_t stream) {
    if (a.n > 0) launch_add(a, stream);
}

void softcap(const SoftcapArgs& a, cudaStream_t stream) {
    if (a.n <= 0) return;
    softcap_kernel<<<unsigned(ceil_div(a.n, kThreads)), kThreads, 0, stream>>>(a);
    WB_CUDA_CHECK_LAUNCH();
}

void add_bias(const BiasArgs& a, cudaStream_t stream) {
    if (a.n_rows > 0 && a.n_cols > 0) launch_add_bias(a, stream);
}

cudaError_t kernel_image_status() {
    cudaFuncAttributes attr;
    return cudaFuncGetAttributes(&attr, add_kernel);
}

}  // namespace wb::cuda
