#pragma once
// Element-wise ops of the feed-forward block and the residual stream.
#include <cuda_runtime.h>

#include <cstdint>

namespace wb::cuda {

enum class GluAct { SILU, GELU_TANH };

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

void glu(const GluArgs& a, cudaStream_t stream);
void add(const AddArgs& a, cudaStream_t stream);

}  // namespace wb::cuda

namespace wb::cuda {

// cudaSuccess when this library holds machine code (or PTX) the current device can run; otherwise
// the error a launch would give (e.g. cudaErrorNoKernelImageForDevice for an unsupported GPU).
cudaError_t kernel_image_status();

}  // namespace wb::cuda
