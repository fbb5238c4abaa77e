#pragma once
// The lattices ("grids") of the IQ1/IQ2/IQ3 weight types. They are part of the GGUF format: a block
// stores indices into them, so they must be exactly llama.cpp's tables (ggml-common.h). Each entry
// packs the magnitudes of 8 (IQ1/IQ2) or 4 (IQ3) consecutive values, one byte per value, element 0 in
// the lowest byte. The tables themselves are in iq_grids.cpp; tests check their SHA-256.
#include <cstdint>

#include "util/hd.h"

namespace wb {

extern const uint64_t kIq2xxsGrid[256];   // IQ2_XXS: bytes in {8, 25, 43}
extern const uint64_t kIq2xsGrid[512];    // IQ2_XS:  bytes in {8, 25, 43}
extern const uint64_t kIq2sGrid[1024];    // IQ2_S:   bytes in {8, 25, 43}
extern const uint32_t kIq3xxsGrid[256];   // IQ3_XXS: bytes in {4, 12, 20, 28, 36, 44, 52, 62}
extern const uint32_t kIq3sGrid[512];     // IQ3_S:   bytes in {1, 3, 5, ..., 15}
extern const uint64_t kIq1sGrid[2048];    // IQ1_S, IQ1_M: bytes are int8 in {-1, 0, 1}

#if defined(__CUDACC__)
// The device's copies, one per CUDA translation unit that includes this header (whole-program
// compilation has no extern __device__ data); about 33 KB each, read through the accessors below.
namespace iq_device {
static __device__ const uint64_t kIq2xxsGrid[256] = {
#include "quant/iq_grid_iq2xxs.inc"
};
static __device__ const uint64_t kIq2xsGrid[512] = {
#include "quant/iq_grid_iq2xs.inc"
};
static __device__ const uint64_t kIq2sGrid[1024] = {
#include "quant/iq_grid_iq2s.inc"
};
static __device__ const uint32_t kIq3xxsGrid[256] = {
#include "quant/iq_grid_iq3xxs.inc"
};
static __device__ const uint32_t kIq3sGrid[512] = {
#include "quant/iq_grid_iq3s.inc"
};
static __device__ const uint64_t kIq1sGrid[2048] = {
#include "quant/iq_grid_iq1s.inc"
};
}  // namespace iq_device
#endif

// The grids as the code that runs reads them: the host tables on the CPU, the device copies in a
// kernel (__CUDA_ARCH__ is defined only in nvcc's device pass).
#if defined(__CUDA_ARCH__)
#define WB_IQ_GRID_HERE(name) iq_device::name
#else
#define WB_IQ_GRID_HERE(name) name
#endif
WB_HD const uint64_t* iq2xxs_grid() { return WB_IQ_GRID_HERE(kIq2xxsGrid); }
WB_HD const uint64_t* iq2xs_grid() { return WB_IQ_GRID_HERE(kIq2xsGrid); }
WB_HD const uint64_t* iq2s_grid() { return WB_IQ_GRID_HERE(kIq2sGrid); }
WB_HD const uint32_t* iq3xxs_grid() { return WB_IQ_GRID_HERE(kIq3xxsGrid); }
WB_HD const uint32_t* iq3s_grid() { return WB_IQ_GRID_HERE(kIq3sGrid); }
WB_HD const uint64_t* iq1s_grid() { return WB_IQ_GRID_HERE(kIq1sGrid); }
#undef WB_IQ_GRID_HERE

// The sign byte of a 7-bit sign code (ksigns_iq2xs): IQ2_XXS, IQ2_XS and IQ3_XXS store 7 of every 8
// signs and make the eighth even the parity, so bit 7 is the parity of the other seven. Bit j set
// means value j of the 8 is negative.
WB_HD constexpr uint8_t iq_sign_byte(uint32_t code7) {
    const uint32_t c = code7 & 127;
    uint32_t parity = c ^ (c >> 4);
    parity ^= parity >> 2;
    parity ^= parity >> 1;
    return uint8_t(c | (parity & 1) << 7);
}

}  // namespace wb
