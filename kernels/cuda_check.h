#pragma once
// Every CUDA runtime and cuBLAS call of the backend goes through these macros: a failure becomes a
// wb::Error that names the call, the file and the line, so it surfaces as an engine error (the CLI
// prints it, the app shows it) instead of a silent wrong answer or an abort.
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace wb::cuda {

void check_cuda(cudaError_t err, const char* expr, const char* file, int line);
void check_cublas(cublasStatus_t status, const char* expr, const char* file, int line);

}  // namespace wb::cuda

#define WB_CUDA_CHECK(expr) ::wb::cuda::check_cuda((expr), #expr, __FILE__, __LINE__)
#define WB_CUBLAS_CHECK(expr) ::wb::cuda::check_cublas((expr), #expr, __FILE__, __LINE__)
// After a kernel launch: launch-configuration errors are reported here, not at the next sync.
#define WB_CUDA_CHECK_LAUNCH() ::wb::cuda::check_cuda(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
