#include "device_buffer.h"

#include <string>

#include "cuda_check.h"
#include "util/error.h"

namespace wb::cuda {

DeviceBuffer::~DeviceBuffer() {
    // No throwing from a destructor: a failure here can only leak.
    if (ptr_) cudaFree(ptr_);
}

void DeviceBuffer::release() {
    if (ptr_) WB_CUDA_CHECK(cudaFree(ptr_));
    ptr_ = nullptr;
    bytes_ = 0;
    ++generation_;
}

void* DeviceBuffer::ensure(size_t bytes, cudaStream_t stream) {
    if (bytes <= bytes_) return ptr_;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    WB_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone)
        throw Error("CUDA backend: scratch buffer of " + std::to_string(bytes_) + " bytes must grow to " +
                    std::to_string(bytes) + " during graph capture (the warm-up step should have sized it)");
    WB_CUDA_CHECK(cudaStreamSynchronize(stream));
    release();
    // Grow by at least half again, so a slowly growing demand does not reallocate every call.
    const size_t want = bytes + bytes / 2;
    WB_CUDA_CHECK(cudaMalloc(&ptr_, want));
    bytes_ = want;
    return ptr_;
}

}  // namespace wb::cuda
