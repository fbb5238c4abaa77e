#pragma once
// A growable device allocation for scratch space (prefill f16 tiles, attention partials, uploaded ids).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace wb::cuda {

class DeviceBuffer {
public:
    DeviceBuffer() = default;
    ~DeviceBuffer();
    DeviceBuffer(const DeviceBuffer&) = delete;
    DeviceBuffer& operator=(const DeviceBuffer&) = delete;

    // At least `bytes` of device memory (the contents are not kept when it grows). Growing waits for
    // the stream first, since queued kernels may still read the old allocation, and is refused with a
    // wb::Error while the stream is being captured into a graph (the graph would keep the old pointer;
    // a warm-up step sizes every buffer before capture).
    void* ensure(size_t bytes, cudaStream_t stream);
    template <typename T>
    T* ensure_as(size_t count, cudaStream_t stream) {
        return static_cast<T*>(ensure(count * sizeof(T), stream));
    }
    void* get() const { return ptr_; }
    size_t size() const { return bytes_; }
    // Counts the reallocations: a recorded CUDA graph that baked in get() is stale once it changes.
    uint64_t generation() const { return generation_; }
    void release();

private:
    void* ptr_ = nullptr;
    size_t bytes_ = 0;
    uint64_t generation_ = 0;
};

}  // namespace wb::cuda
