// The angles of rotary position embedding, computed as ggml's CPU rope computes them (so that the
// CPU backend's q and k agree with llama.cpp's bit for bit, scaled models included).
#include <algorithm>
#include <cmath>

#include "engine/backend.h"

namespace wb {

namespace {

// The pair index whose wavelength turns n_rotations times over the original context.
float yarn_corr_dim(int32_t n_dims, int32_t n_ctx_orig, float n_rotations, float base) {
    return float(n_dims) * std::log(float(n_ctx_orig) / (n_rotations * 2.0f * float(M_PI))) / (2.0f * std::log(base));
}

}  // namespace

void rope_yarn_corr_dims(const RopeParams& p, float* low, float* high) {
    *low = std::max(0.0f, std::floor(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_fast, p.base)));
    *high = std::min(float(p.n_rot - 1), std::ceil(yarn_corr_dim(p.n_rot, p.n_ctx_orig, p.beta_slow, p.base)));
}

float rope_magnitude(const RopeParams& p) {
    // The fused multiply-add is the one the reference's compiler forms (see rope_angles).
    return p.ext_factor != 0.0f ? p.attn_factor * std::fma(0.1f, std::log(1.0f / p.freq_scale), 1.0f) : p.attn_factor;
}

void rope_angles(const RopeParams& p, const float* factors, int32_t pos, float* cos_out, float* sin_out) {
    const int32_t half = p.n_rot / 2;
    const float theta_scale = std::pow(p.base, -2.0f / float(p.n_rot));
    // YaRN's magnitude correction (1 + 0.1 ln(factor)) on top of the model's attention factor. The
    // fused multiply-adds in rope_magnitude and in the mix below are the ones the reference's compiler forms (ggml's
    // CPU code is built for the host with contraction on; the unfused forms differ in the last bit).
    const float mscale = rope_magnitude(p);
    float corr_low = 0.0f, corr_high = 0.0f;
    if (p.ext_factor != 0.0f) rope_yarn_corr_dims(p, &corr_low, &corr_high);
    // theta_i = pos * theta_scale^i, by repeated multiplication in float: the rounding accumulates
    // along the head exactly as in the reference.
    float theta_base = float(pos);
    for (int32_t i = 0; i < half; ++i) {
        const float theta_extrap = factors ? theta_base / factors[i] : theta_base;
        const float theta_interp = p.freq_scale * theta_extrap;
        float theta = theta_interp;
        if (p.ext_factor != 0.0f) {
            // Pairs below corr_low keep the unscaled angle (extrapolate), above corr_high the scaled
            // one (interpolate), with a linear ramp between.
            const float y = (float(i) - corr_low) / std::max(0.001f, corr_high - corr_low);
            const float ramp_mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * p.ext_factor;
            theta = std::fma(theta_interp, 1.0f - ramp_mix, theta_extrap * ramp_mix);
        }
        cos_out[i] = std::cos(theta) * mscale;
        sin_out[i] = std::sin(theta) * mscale;
        theta_base *= theta_scale;
    }
}

}  // namespace wb
