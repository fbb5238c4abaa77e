#pragma once
// Weight matrices repacked once, at load, into a kernel family's own layout for the CPU backend's
// decode (DotKernels::repack16 in quant/quant.h: Q4_K, Q5_K, Q8_0, Q6_K, Q5_0, Q4_0, IQ4_NL and Q4_1 on a CPU with AVX-512 VNNI, where
// the file's layout held the decode below the memory's speed).
//
// One copy per matrix of a file for the whole process: every CpuBackend that prepares the same model
// (the server's parallel slots, a comparison's sessions) shares it, and it is freed when the last one
// releases it. Once a matrix is repacked, the backend reads only the copy (decode and prefill), so the
// file mapping's pages of it are given back to the system (madvise): the weights are not held twice.
// (Rows on the heap, as tests build them, get a copy of their own and keep their memory.)
#include <cstddef>
#include <cstdint>
#include <memory>

#include "model/weights.h"
#include "quant/quant.h"
#include "util/thread_pool.h"

namespace wb {

struct RepackedMatrix {
    uint8_t* data = nullptr;  // 64-byte aligned; group g (rows 16g .. 16g + 15) at data + g * group_bytes
    size_t mapped = 0;        // the bytes of data's own mapping (munmap), 0 where data is from the heap (free)
    size_t group_bytes = 0;
    size_t bytes = 0;
    GgmlType type = GgmlType::F32;  // of the matrix it was made from
    void (*layout)(int64_t, const void*, size_t, void*) = nullptr;  // the repack16 that wrote it
    void (*unrepack_row)(int64_t, const void*, int, void*) = nullptr;  // its DotKernels::unrepack_row

    RepackedMatrix() = default;
    RepackedMatrix(const RepackedMatrix&) = delete;
    RepackedMatrix& operator=(const RepackedMatrix&) = delete;
    ~RepackedMatrix();
};

// The repacked copy of w for kernels k (k.repack16 set; w.n_out a multiple of kTile16Rows): the one
// already made for the same rows and layout if another backend still holds it, else a new one,
// repacked on the pool's threads. give_back_mapping: whether the mapping's pages of w may be dropped
// (false for a matrix something still reads in place).
std::shared_ptr<const RepackedMatrix> repacked_matrix(const Weight& w, const DotKernels& k, ThreadPool& pool,
                                                      bool give_back_mapping);

// Bytes of all repacked copies alive in the process (the memory ledger's weights figure).
uint64_t repacked_bytes_total();

}  // namespace wb
