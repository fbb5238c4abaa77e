// The IQ grids (see iq_grids.h), transcribed from llama.cpp's ggml-common.h: the format's lattices,
// which GGUF files index and which therefore cannot be re-derived differently. The entries are in
// iq_grid_*.inc, which the CUDA kernels include too (iq_grids.h), so host and device read one table.
#include "quant/iq_grids.h"

namespace wb {

const uint64_t kIq2xxsGrid[256] = {
#include "quant/iq_grid_iq2xxs.inc"
};

const uint64_t kIq2xsGrid[512] = {
#include "quant/iq_grid_iq2xs.inc"
};

const uint64_t kIq2sGrid[1024] = {
#include "quant/iq_grid_iq2s.inc"
};

const uint32_t kIq3xxsGrid[256] = {
#include "quant/iq_grid_iq3xxs.inc"
};

const uint32_t kIq3sGrid[512] = {
#include "quant/iq_grid_iq3s.inc"
};

const uint64_t kIq1sGrid[2048] = {
#include "quant/iq_grid_iq1s.inc"
};

}  // namespace wb
