#pragma once
// RMSNorm of whole rows or of each head (group) of a row.
#include <cuda_runtime.h>

#include <cstdint>

namespace wb::cuda {

struct Q8Scale;

struct RmsNormArgs {
    const float* x = nullptr;     // device: n_groups runs of `group` values, contiguous
    // Optional residual step first: x += residual (same layout), written back to x; then x is
    // normalised. x is then written, so it must be writable memory (x_out: the same address).
    const float* residual = nullptr;
    float* x_out = nullptr;
    const float* gain = nullptr;  // device: [group]
    float* out = nullptr;         // may equal x
    int64_t n_groups = 0;
    int64_t group = 0;
    float eps = 1e-5f;
    // Optional: out also quantized to 8-bit parts as the matmul's quantize kernel would (group a
    // multiple of 32): q8 [n_groups][group], q8_scales [n_groups][group / 32].
    int8_t* q8 = nullptr;
    Q8Scale* q8_scales = nullptr;
};

void rms_norm(const RmsNormArgs& a, cudaStream_t stream);

}  // namespace wb::cuda
