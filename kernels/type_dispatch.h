#pragma once
// The dispatch from a runtime GgmlType to code instantiated for it at compile time: the CUDA launchers
// pick their kernel templates with it, and the GPU tests' host reference its integer dot products.
// Plain C++, so host-only code can include it.
#include <type_traits>

#include "gguf/ggml_type.h"
#include "util/error.h"

namespace wb::cuda {

// Calls fn(std::integral_constant<GgmlType, T>{}) for the weight type t, so a launcher can pick the
// kernel instantiated for T; wb::Error for a type without a CUDA kernel.
template <typename Fn>
void dispatch_weight_type(GgmlType t, Fn&& fn) {
    using T = GgmlType;
    switch (t) {
        case T::F32: fn(std::integral_constant<T, T::F32>{}); return;
        case T::F16: fn(std::integral_constant<T, T::F16>{}); return;
        case T::BF16: fn(std::integral_constant<T, T::BF16>{}); return;
        case T::Q4_0: fn(std::integral_constant<T, T::Q4_0>{}); return;
        case T::Q4_1: fn(std::integral_constant<T, T::Q4_1>{}); return;
        case T::Q5_0: fn(std::integral_constant<T, T::Q5_0>{}); return;
        case T::Q5_1: fn(std::integral_constant<T, T::Q5_1>{}); return;
        case T::Q8_0: fn(std::integral_constant<T, T::Q8_0>{}); return;
        case T::Q2_K: fn(std::integral_constant<T, T::Q2_K>{}); return;
        case T::Q3_K: fn(std::integral_constant<T, T::Q3_K>{}); return;
        case T::Q4_K: fn(std::integral_constant<T, T::Q4_K>{}); return;
        case T::Q5_K: fn(std::integral_constant<T, T::Q5_K>{}); return;
        case T::Q6_K: fn(std::integral_constant<T, T::Q6_K>{}); return;
        case T::IQ4_NL: fn(std::integral_constant<T, T::IQ4_NL>{}); return;
        case T::IQ4_XS: fn(std::integral_constant<T, T::IQ4_XS>{}); return;
        case T::TQ1_0: fn(std::integral_constant<T, T::TQ1_0>{}); return;
        case T::TQ2_0: fn(std::integral_constant<T, T::TQ2_0>{}); return;
        case T::IQ2_XXS: fn(std::integral_constant<T, T::IQ2_XXS>{}); return;
        case T::IQ2_XS: fn(std::integral_constant<T, T::IQ2_XS>{}); return;
        case T::IQ2_S: fn(std::integral_constant<T, T::IQ2_S>{}); return;
        case T::IQ3_XXS: fn(std::integral_constant<T, T::IQ3_XXS>{}); return;
        case T::IQ3_S: fn(std::integral_constant<T, T::IQ3_S>{}); return;
        case T::IQ1_S: fn(std::integral_constant<T, T::IQ1_S>{}); return;
        case T::IQ1_M: fn(std::integral_constant<T, T::IQ1_M>{}); return;
        default: break;
    }
    throw Error("the CUDA backend has no kernel for weight type " + ggml_type_name(t));
}

}  // namespace wb::cuda
