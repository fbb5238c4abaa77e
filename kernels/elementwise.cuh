#pragma once
// Element-wise ops of the feed-forward block and the residual stream.
#include <cuda_runtime.h>

#include <cstdint>

namespace wb::cuda {

enum class GluAct { SILU, GELU_TANH };

#if defined(__CUDACC__)
// act(g) of a gated feed-forward: the CPU backend's formulas (silu = x / (1 + e^-x); GELU with the
// tanh approximation). Also applied by the fused gate/up GEMV (matmul.cu).
template <GluAct A>
__device__ __forceinline__ float glu_activation(float g) {
    if constexpr (A == GluAct::SILU) {
        return g / (1.0f + expf(-g));
    } else {
        constexpr float kSqrt2OverPi = 0.7978845608028654f;
        return 0.5f * g * (1.0f + tanhf(kSqrt2OverPi * g * (1.0f + 0.044715f * g * g)));
    }
}
#endif

struct GluArgs {
    const float* gate = nullptr;
    const float* up = nullptr;
    float* out = nullptr;  // may equal gate
    int64_t n = 0;
    GluAct act = GluAct::SILU;
};

struct AddArgs {
    float* x = nullptr;  // x += y
    const float* y = nullptr;
    int64_t n = 0;
};

struct BiasArgs {
    float* x = nullptr;  // x[r][c] += bias[c]
    const float* bias = nullptr;
    int64_t n_rows = 0;
    int64_t n_cols = 0;
};

struct SoftcapArgs {
    float* x = nullptr;  // x = cap * tanh(x / cap)
    int64_t n = 0;
    float cap = 0.0f;
};

void glu(const GluArgs& a, cudaStream_t stream);
void softcap(const SoftcapArgs& a, cudaStream_t stream);
void add(const AddArgs& a, cudaStream_t stream);
void add_bias(const BiasArgs& a, cudaStream_t stream);

}  // namespace wb::cuda

namespace wb::cuda {

// cudaSuccess when this library holds machine code (or PTX) the current device can run; otherwise
// the error a launch would give (e.g. cudaErrorNoKernelImageForDevice for an unsupported GPU).
cudaError_t kernel_image_status();

}  // namespace wb::cuda
