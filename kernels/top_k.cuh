#pragma once
// The best few entries of a logits row, selected on the device: the sampler's candidates
// (Backend::read_top) cross to the host as k pairs instead of the whole row.
#include <cuda_runtime.h>

#include <cstdint>

namespace wb::cuda {

struct TopKArgs {
    const float* row = nullptr;  // [n] device
    int64_t n = 0;               // < 2^31 (ids are int32)
    int32_t k = 0;               // 1 <= k <= n
    int32_t* ids = nullptr;      // [k] device out: the columns of the k best, in no particular order
    float* values = nullptr;     // [k] device out: their values, NaN written as -inf
};

// The k largest values of row and their columns, ties to the smaller column and NaN counted as -inf:
// exactly the set select_top_logits picks (the caller orders it). One block; no host synchronisation.
void top_k(const TopKArgs& a, cudaStream_t stream);

}  // namespace wb::cuda
