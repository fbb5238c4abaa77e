#pragma once
// Rotary position embedding, NORMAL (adjacent pairs) and NEOX (halves) layouts, in place.
#include <cuda_runtime.h>

#include <cstdint>

namespace wb::cuda {

struct RopeArgs {
    float* x = nullptr;                // device: [n_rows][row_stride]
    int64_t n_rows = 0;
    int64_t row_stride = 0;
    int32_t n_head = 0;
    int32_t head_dim = 0;
    int32_t n_rot = 0;
    float freq_scale = 1.0f;
    float theta_scale = 1.0f;          // base^(-2/n_rot), computed on the host as the CPU does
    bool neox = false;
    const float* freq_factors = nullptr;  // device: [n_rot / 2] divisors of the angles, or null
    float ext_factor = 0.0f;           // YaRN mix (RopeParams)
    float mscale = 1.0f;               // cos/sin magnitude, YaRN's correction included
    float corr_low = 0.0f, corr_high = 0.0f;  // YaRN ramp (rope_yarn_corr_dims)
    const int32_t* positions = nullptr;  // device: [n_rows]
};

void rope(const RopeArgs& a, cudaStream_t stream);

}  // namespace wb::cuda
