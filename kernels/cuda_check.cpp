#include "cuda_check.h"

#include <string>

#include "util/error.h"

namespace wb::cuda {

void check_cuda(cudaError_t err, const char* expr, const char* file, int line) {
    if (err == cudaSuccess) return;
    throw Error(std::string("CUDA error ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ") in " +
                expr + " at " + file + ":" + std::to_string(line));
}

void check_cublas(cublasStatus_t status, const char* expr, const char* file, int line) {
    if (status == CUBLAS_STATUS_SUCCESS) return;
    throw Error(std::string("cuBLAS error ") + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) +
                ") in " + expr + " at " + file + ":" + std::to_string(line));
}

}  // namespace wb::cuda
