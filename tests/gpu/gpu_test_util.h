#pragma once
// Shared pieces of the GPU tests: the device check (skip code 77), creating both backends, moving
// test data in and out of backend tensors, and error measures with a PASS/FAIL line per check.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "bell_floats.h"
#include "engine/backend_cpu.h"
#include "util/error.h"

namespace wb::gputest {

constexpr int kSkip = 77;

inline int& failures() {
    static int n = 0;
    return n;
}

// Prints one result line; counts failures.
inline void report(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
    std::fflush(stdout);
    if (!ok) ++failures();
}

// True when the CUDA runtime sees a device. Checked directly, not through the plugin, so that a
// plugin that fails to load on a machine with a GPU is a test failure, never a skip.
inline bool cuda_device_present() {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

inline std::unique_ptr<Backend> make_cuda_backend() {
    return std::move(create_backend(BackendKind::CUDA, 0).backend);  // wb::Error says why it cannot load
}

inline bool on_host(const Backend& b) { return b.name() == "cpu"; }

// The backend works on its own non-blocking stream, which does not wait for the legacy stream that
// cudaMemcpy / cudaMemset use, and both may return before the device memory is written (pageable
// source, device memset). So the device is idle before a test writes a backend tensor (nothing still
// reads it) and after (the next operation sees the data).
inline void device_sync(const char* what) {
    const cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) throw Error(std::string(what) + ": " + cudaGetErrorString(err));
}

inline void upload(Backend& b, Tensor& t, const std::vector<float>& host) {
    const size_t bytes = size_t(t.n_rows * t.n_cols) * sizeof(float);
    if (host.size() * sizeof(float) < bytes) throw Error("upload: not enough host data");
    if (on_host(b)) {
        std::memcpy(t.data, host.data(), bytes);
        return;
    }
    b.synchronize();  // also tells the backend that memory changed behind its back (its matmul input cache)
    device_sync("upload");
    if (cudaMemcpy(t.data, host.data(), bytes, cudaMemcpyHostToDevice) != cudaSuccess) throw Error("upload failed");
    device_sync("upload");
}

// Fills a tensor with NaN, so an element an op fails to write shows up in the comparison.
inline void poison(Backend& b, Tensor& t) {
    const size_t bytes = size_t(t.n_rows * t.n_cols) * sizeof(float);
    if (on_host(b)) {
        std::memset(t.data, 0xFF, bytes);
        return;
    }
    b.synchronize();
    device_sync("poison");
    if (cudaMemset(t.data, 0xFF, bytes) != cudaSuccess) throw Error("poison failed");
    device_sync("poison");
}

inline std::vector<float> download(Backend& b, const Tensor& t) {
    std::vector<float> out(size_t(t.n_rows * t.n_cols));
    b.read(t, out.data());
    return out;
}

// A tensor allocated on a backend, freed with it.
struct OwnedTensor {
    Backend* backend = nullptr;
    Tensor t;
    OwnedTensor(Backend& b, int64_t rows, int64_t cols) : backend(&b), t(b.alloc(rows, cols)) {}
    ~OwnedTensor() { backend->free(t); }
    OwnedTensor(const OwnedTensor&) = delete;
    OwnedTensor& operator=(const OwnedTensor&) = delete;
};

struct ErrorStats {
    double rel_l2 = 0.0;   // ||got - ref|| / ||ref||
    double max_abs = 0.0;  // max |got - ref|
    size_t non_finite = 0; // elements of got that are NaN/inf where ref is finite
};

inline ErrorStats compare(const std::vector<float>& ref, const std::vector<float>& got) {
    ErrorStats s;
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < ref.size() && i < got.size(); ++i) {
        if (!std::isfinite(got[i]) && std::isfinite(ref[i])) {
            ++s.non_finite;
            continue;
        }
        const double d = double(got[i]) - double(ref[i]);
        num += d * d;
        den += double(ref[i]) * double(ref[i]);
        s.max_abs = std::max(s.max_abs, std::fabs(d));
    }
    s.rel_l2 = den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
    if (got.size() != ref.size()) s.non_finite += 1;
    return s;
}

// PASS when the relative error is within tol and every element was written.
inline void expect_close(const std::string& what, const std::vector<float>& ref, const std::vector<float>& got, double tol) {
    const ErrorStats s = compare(ref, got);
    char buf[256];
    std::snprintf(buf, sizeof buf, " (rel_l2 %.3g <= %.3g, max_abs %.3g, unwritten/non-finite %zu)", s.rel_l2, tol,
                  s.max_abs, s.non_finite);
    report(s.non_finite == 0 && s.rel_l2 <= tol, what + buf);
}

inline std::vector<float> random_floats(size_t n, uint64_t seed, float sigma = 1.0f) { return bell_floats(n, seed, sigma); }

inline int finish(const char* name) {
    if (failures() == 0) std::printf("%s: all checks passed\n", name);
    else std::printf("%s: %d check(s) FAILED\n", name, failures());
    return failures() == 0 ? 0 : 1;
}

}  // namespace wb::gputest
