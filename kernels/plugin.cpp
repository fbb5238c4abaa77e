// The plugin's one exported symbol, looked up by core/engine/backend_factory.cpp after dlopen.
// No exception may cross this C boundary: failures come back as null plus a message.
#include <cstdio>
#include <exception>

#include "backend_cuda.h"

extern "C" __attribute__((visibility("default"))) wb::Backend* wb_cuda_create_backend(int /*n_threads*/, char* error,
                                                                                       size_t error_size) {
    try {
        return wb::CudaBackend::create().release();
    } catch (const std::exception& e) {
        if (error && error_size > 0) std::snprintf(error, error_size, "%s", e.what());
    } catch (...) {
        if (error && error_size > 0) std::snprintf(error, error_size, "unknown error creating the CUDA backend");
    }
    return nullptr;
}
