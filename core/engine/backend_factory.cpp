// Backend selection. The CUDA backend is a plugin (libwhitebox-cuda.so) loaded with dlopen, so the
// same binaries start on machines without the NVIDIA driver or cuBLAS and run on the CPU there.
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "engine/backend_cpu.h"
#include "util/error.h"

namespace wb {

namespace {

constexpr const char* kCudaPluginName = "libwhitebox-cuda.so";
// The plugin's one exported function: returns a new backend, or null with *error set.
constexpr const char* kCudaPluginEntry = "wb_cuda_create_backend";
using CreateFn = Backend* (*)(int n_threads, char* error, size_t error_size);

std::string executable_dir() {
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return ".";
    std::string p(buf, size_t(n));
    return p.substr(0, p.find_last_of('/'));
}

// Next to the executable (build tree), then ../lib/whitebox (installed layout), then the loader's path.
std::vector<std::string> plugin_candidates() {
    const std::string dir = executable_dir();
    return {dir + "/" + kCudaPluginName, dir + "/../kernels/" + kCudaPluginName,
            dir + "/../lib/whitebox/" + kCudaPluginName, kCudaPluginName};
}

std::unique_ptr<Backend> load_cuda(int n_threads) {
    std::string last_error = "the CUDA plugin (" + std::string(kCudaPluginName) + ") was not built or installed";
    for (const std::string& path : plugin_candidates()) {
        void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char* why = dlerror();
            // A plugin that exists but cannot load (missing libcudart/cuBLAS) is the interesting reason.
            // Both that and a plugin that is not there say "No such file or directory", so look at the
            // file itself (or, for the loader's search, at whether the message names the plugin).
            const std::string msg = why ? why : "";
            const bool plugin_missing =
                path.find('/') != std::string::npos
                    ? access(path.c_str(), F_OK) != 0
                    : msg.empty() || (msg.rfind(path + ":", 0) == 0 && msg.find("No such file") != std::string::npos);
            if (!plugin_missing) last_error = msg;
            continue;
        }
        auto create = reinterpret_cast<CreateFn>(dlsym(lib, kCudaPluginEntry));
        if (!create) throw Error(path + " is not a WhiteBox CUDA plugin (no " + kCudaPluginEntry + ")");
        char error[512] = {0};
        Backend* b = create(n_threads, error, sizeof error);
        if (!b) throw Error(std::string("CUDA backend unavailable: ") + error);
        return std::unique_ptr<Backend>(b);
    }
    throw Error("CUDA backend unavailable: " + last_error);
}

}  // namespace

BackendKind parse_backend_kind(const std::string& s) {
    if (s == "auto") return BackendKind::AUTO;
    if (s == "cpu") return BackendKind::CPU;
    if (s == "cuda") return BackendKind::CUDA;
    throw Error("unknown backend '" + s + "' (expected cpu, cuda or auto)");
}

BackendChoice create_backend(BackendKind kind, int n_threads, KvType type_k, KvType type_v) {
    BackendChoice choice;
    if (kind == BackendKind::CUDA) {
        choice.backend = load_cuda(n_threads);
        return choice;
    }
    if (kind == BackendKind::AUTO) {
        try {
            std::unique_ptr<Backend> gpu = load_cuda(n_threads);
            // "auto" means "wherever it runs": a cache the GPU cannot hold runs on the CPU rather than
            // failing when the session is made.
            gpu->check_kv_types(type_k, type_v);
            choice.backend = std::move(gpu);
            return choice;
        } catch (const Error& e) {
            choice.note = std::string(e.what()) + "; running on the CPU";
        }
    }
    choice.backend = std::make_unique<CpuBackend>(n_threads);
    return choice;
}

}  // namespace wb
