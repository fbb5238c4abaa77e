#pragma once
// The element step of a context shift (Backend::kv_shift), shared by the CPU backend and the CUDA
// kernel (WB_HD): one rotated pair of a stored f16 key turned by the angle (c, s) of the shift and
// stored back as f16. It is ggml's rope of an f16 tensor (rotate_pairs<ggml_fp16_t>): widen both
// values to float, x0*c - x1*s and x0*s + x1*c in the fused form the reference's compiler builds
// (as rotate_heads does for the forward rope), round each to f16 to nearest even.
#include <cmath>
#include <cstdint>

#include "util/fp16.h"
#include "util/hd.h"

namespace wb {

WB_HD void rope_shift_pair(uint16_t* a, uint16_t* b, float c, float s) {
    const float x0 = fp16_to_f32(*a), x1 = fp16_to_f32(*b);
    *a = f32_to_fp16(fmaf(x0, c, -(x1 * s)));
    *b = f32_to_fp16(fmaf(x0, s, x1 * c));
}

// Element indices of pair i of a head: NORMAL rotates neighbours (2i, 2i+1), NEOX (i, i + n_rot/2).
WB_HD void rope_pair_index(bool neox, int32_t i, int32_t half, int32_t* ia, int32_t* ib) {
    *ia = neox ? i : 2 * i;
    *ib = neox ? i + half : 2 * i + 1;
}

}  // namespace wb
