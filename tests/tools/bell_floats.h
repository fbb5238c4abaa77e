#pragma once
// Reproducible bell-shaped test inputs (activations, query rows): a sum of four uniforms, scaled to
// standard deviation sigma. Cheap and deterministic per seed; enough for kernels' test data.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace wb {

inline std::vector<float> bell_floats(size_t n, uint64_t seed, float sigma = 1.0f) {
    std::vector<float> v(n);
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (auto& x : v) {
        float acc = 0.0f;
        for (int k = 0; k < 4; ++k) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            acc += float(s >> 40) * (1.0f / 16777216.0f) - 0.5f;
        }
        x = sigma * acc * 1.732f;  // four uniforms of variance 1/12 each: sd 1/sqrt(3)
    }
    return v;
}

}  // namespace wb
