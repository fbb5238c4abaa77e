#pragma once
// Internal wiring between the public API (quant.cpp) and the kernel families (quant_scalar.cpp,
// quant_avx2.cpp). Not for use outside core/quant, except tests.
#include <cstddef>
#include <cstdint>

#include "gguf/ggml_type.h"
#include "quant/quant.h"

namespace wb {

// One weight row dotted with its prepared activations (see vec_dot in quant.h).
using VecDotFn = float (*)(int64_t n, const void* w_row, const void* x_prepared);
// A kDotTileRows x kDotTileCols tile of row dots (vec_dot_tile in quant.h).
using DotTileFn = void (*)(int64_t n, const void* w, size_t w_stride, const void* x, size_t x_stride, float* out,
                           int64_t out_stride);
// The tile over n_rows weight rows w_stride apart at once (DotKernels::tile_rows in quant.h).
using DotTileRowsFn = void (*)(int64_t n, const void* w, size_t w_stride, int64_t n_rows, const void* x, size_t x_stride,
                               float* out, int64_t out_stride);
// A tile over activations packed for it, and its packing (DotKernels::tile_packed in quant.h).
struct PackedTile {
    size_t (*bytes)(int64_t n) = nullptr;
    void (*pack)(int64_t n, const void* x, size_t x_stride, void* packed) = nullptr;
    void (*tile)(int64_t n, const void* w, const void* packed, float* out, int64_t out_stride) = nullptr;
};
// A tile over a weight row unpacked for it, and its unpacking (DotKernels::tile_unpacked in quant.h).
struct UnpackedTile {
    size_t (*bytes)(int64_t n) = nullptr;
    void (*unpack)(int64_t n, const void* w, void* unpacked) = nullptr;
    void (*tile)(int64_t n, const void* unpacked, const void* x, size_t x_stride, float* out, int64_t out_stride) = nullptr;
};
// A tile over 16 weight rows unpacked together, and its unpacking (DotKernels::tile16_unpacked in quant.h).
struct Rows16Tile {
    size_t (*bytes)(int64_t n) = nullptr;
    void (*unpack)(int64_t n, const void* w, size_t w_stride, void* unpacked) = nullptr;
    void (*tile)(int64_t n, const void* unpacked, const void* x, size_t x_stride, float* out, int64_t out_stride) = nullptr;
};
// 16 weight rows repacked at load into the family's own layout, and the kernels that read it
// (DotKernels::repack16 in quant.h). One layout per type: every order's entry has the same bytes and
// repack, and row16 / unpack16 of that order.
struct Repacked16 {
    size_t (*bytes)(int64_t n) = nullptr;
    void (*repack)(int64_t n, const void* w, size_t w_stride, void* out) = nullptr;
    void (*row16)(int64_t n, const void* repacked, const void* x, float* out) = nullptr;
    void (*unpack16)(int64_t n, const void* repacked, void* unpacked) = nullptr;
    void (*unrepack_row)(int64_t n, const void* repacked, int r, void* row) = nullptr;
};
// 8 weight rows w_stride apart against one activation row (DotKernels::rows8 in quant.h).
using DotRows8Fn = void (*)(int64_t n, const void* w, size_t w_stride, const void* x, float* out);
using F16ToF32Fn = void (*)(const uint16_t* x, float* y, int64_t n);
using F32ToF16Fn = void (*)(const float* x, uint16_t* y, int64_t n);
using F16DotFn = float (*)(int64_t n, const uint16_t* x, const uint16_t* y);
using F16FmaRowFn = void (*)(float a, const uint16_t* x, float* y, int64_t n);
using F16DotKeysFn = void (*)(F16DotOrder order, int64_t n, const uint16_t* k, int64_t k_stride, int64_t n_keys,
                              const float* q, int64_t q_stride, int g, float* out, int64_t out_stride);
using RowQuantFn = void (*)(const float* x, void* dst, int64_t n);
using F16FmaKeysFn = void (*)(int64_t n, const uint16_t* v, int64_t v_stride, int64_t n_keys, int64_t lane0,
                              int n_lanes, const float* p, int64_t p_stride, int g, float* lanes, int64_t lanes_stride);

// Slots cover every raw GgmlType value up to TQ2_0 (35), the highest one with kernels.
constexpr int kKernelSlots = 36;
// static: internal to each object, for the reason of util/hd.h's WB_HD.
static constexpr int slot(GgmlType t) { return int(t); }
constexpr int kDotOrders = 5;  // the DotOrder values (quant.h)

// One kernel family. F16 row conversion is here too because attention converts its F16 KV cache
// rows on every token.
struct KernelTable {
    const char* name = nullptr;
    bool vnni = false;  // some tiles take AVX-VNNI (quant_avx2.cpp); outputs are the same either way
    VecDotFn dot[kKernelSlots] = {};  // DotOrder::kRow, indexed by slot(weight type); nullptr = no kernel
    F16ToF32Fn f16_to_f32 = nullptr;
    F32ToF16Fn f32_to_f16 = nullptr;
    // Attention's F16 products (see dot_f16_f16 / fma_f16_row in quant.h): both families give
    // bit-identical results, the orders being fixed and every term a correctly rounded FMA.
    F16DotFn dot_f16_lanes8 = nullptr;
    F16DotFn dot_f16_step32 = nullptr;
    F16FmaRowFn fma_f16_row = nullptr;
    DotTileFn dot_tile[kKernelSlots] = {};  // tiles of dot (vec_dot_tile); nullptr = a loop over dot
    DotTileRowsFn dot_tile_rows[kKernelSlots] = {};  // dot_tile over several rows; nullptr = a loop over it
    F16DotKeysFn dot_f16_keys = nullptr;  // the decode attention's runs of keys (quant.h)
    F16FmaKeysFn fma_f16_keys = nullptr;
    // The other orders, [int(order)][slot]: a type's kernel in llama.cpp's float order of that path
    // (nullptr = the path rounds as the row dot does, so dot and dot_tile serve it), and its tile
    // (nullptr with a kernel = a loop over the kernel). Row kRow is unused.
    VecDotFn dot_ordered[kDotOrders][kKernelSlots] = {};
    DotTileFn dot_tile_ordered[kDotOrders][kKernelSlots] = {};
    // Tiles over packed activations, [int(order)][slot] (any order, kRow included); empty = none.
    PackedTile packed_tile[kDotOrders][kKernelSlots] = {};
    // Tiles over unpacked weight rows, [int(order)][slot] (any order, kRow included); empty = none.
    UnpackedTile unpacked_tile[kDotOrders][kKernelSlots] = {};
    // Tiles over 16 weight rows unpacked together, [int(order)][slot]; empty = none.
    Rows16Tile rows16_tile[kDotOrders][kKernelSlots] = {};
    // The row kernel over 8 rows at once, [int(order)][slot] (any order, kRow included); nullptr = none.
    DotRows8Fn dot_rows8[kDotOrders][kKernelSlots] = {};
    // 16 rows repacked at load, [int(order)][slot]; empty = none.
    Repacked16 repacked16[kDotOrders][kKernelSlots] = {};

    // The activation quantizers (bit-identical in both families; quantize_row_q8_* below).
    RowQuantFn quantize_q8_0 = nullptr;
    RowQuantFn quantize_q8_1 = nullptr;
    RowQuantFn quantize_q8_k = nullptr;

    // Out of line (quant.cpp): an inline member would be a weak symbol that the ISA-specific files
    // compile too (util/hd.h says why that must not happen); they are only called to build tables.
    VecDotFn& dot_in(DotOrder o, GgmlType t);
    DotTileFn& tile_in(DotOrder o, GgmlType t);
    PackedTile& packed_in(DotOrder o, GgmlType t);
    UnpackedTile& unpacked_in(DotOrder o, GgmlType t);
    Rows16Tile& rows16_in(DotOrder o, GgmlType t);
    DotRows8Fn& rows8_in(DotOrder o, GgmlType t);
    Repacked16& repacked16_in(DotOrder o, GgmlType t);
};

// The lane-sum trees of the two F16DotOrder orders (shared by both families).
float sum_lanes8(const float* l);
float sum_lanes32(const float* l);

// Portable kernels for every supported weight type.
KernelTable scalar_kernels();
// The grid IQ types (IQ1_S .. IQ3_S; quant_scalar_iq.cpp, quant_avx2_iq.cpp), added to a family's table;
// the AVX2 family's also brings the tiled-order tiles of these types and of IQ4_XS.
void add_iq_grid_scalar_kernels(KernelTable& t);
#if defined(WB_QUANT_AVX2)
void add_iq_grid_avx2_kernels(KernelTable& t);
// The activation quantizers (quant_avx2_act.cpp).
void add_activation_avx2_kernels(KernelTable& t);
// F32 and BF16 weights (quant_avx2_float.cpp).
void add_float_avx2_kernels(KernelTable& t);
// The tiles over packed activations (quant_avx2_packed.cpp), and the in-place tiles built on them.
void add_packed_avx2_kernels(KernelTable& t);
// Their AVX-512 forms (quant_avx512_k.cpp), for the avx512 family.
void add_packed_avx512_kernels(KernelTable& t);
// The AVX-512 tiles over 16 rows unpacked together (quant_avx512_rows16.cpp), for the avx512 family.
void add_rows16_avx512_kernels(KernelTable& t);
// Q4_K repacked at load for decode (quant_avx512_repack.cpp), for the avx512 family.
void add_repack_avx512_kernels(KernelTable& t);
// The AVX-512 decode kernels over 8 rows (quant_avx512_rows8.cpp), for the avx512 family.
void add_rows8_avx512_kernels(KernelTable& t);
// The AVX-512 forms of the decode attention's f16 products (quant_avx512_attn.cpp), for the avx512 family.
void add_attention_avx512_kernels(KernelTable& t);
// The row kernels over 8 rows (quant_avx2_rows.cpp).
void add_rows_avx2_kernels(KernelTable& t);
#endif

#if defined(WB_QUANT_AVX2)
// The scalar table with the entries quant_avx2.cpp provides replaced; only valid to use on a CPU with
// AVX2, FMA and F16C. With allow_vnni, the tiles that have an AVX-VNNI form take it where the CPU has
// AVX-VNNI (CPUID; none of them needs AVX-512).
KernelTable avx2_kernels(bool allow_vnni = true);
// The tiles that have a VNNI form, in its EVEX encoding on 256-bit registers (AVX-512 VNNI + VL, for
// CPUs without AVX-VNNI), added to the avx512 family's table (quant_avx2.cpp).
void add_vnni_tiles_evex(KernelTable& t);
// The AVX2 table with the AVX-512 kernels put in (quant_avx512_*.cpp; built in quant_avx512_iq.cpp);
// only valid on a CPU with AVX-512 F, BW, VL and VNNI too.
KernelTable avx512_kernels();
#endif

// Activation quantizers, the scalar family's (the AVX2 family's give identical blocks, so AVX2 and scalar
// dots see identical inputs).
void quantize_row_q8_0(const float* x, void* dst, int64_t n);
void quantize_row_q8_1(const float* x, void* dst, int64_t n);
void quantize_row_q8_k(const float* x, void* dst, int64_t n);

// Reference weight quantizers (llama.cpp's round-to-nearest rules).
void quantize_row_q4_0(const float* x, void* dst, int64_t n);
void quantize_row_q4_1(const float* x, void* dst, int64_t n);
void quantize_row_q5_0(const float* x, void* dst, int64_t n);
void quantize_row_q5_1(const float* x, void* dst, int64_t n);

// Tests: true makes every dot go through the scalar family, so both families can be compared on one
// machine. Thread-safe, takes effect on the next call.
void quant_force_scalar(bool on);
// Tests: true makes the dots go through the plain AVX2 family (no AVX-512 kernels, no AVX-VNNI tiles)
// where the best one is wider, so both are checked on a CPU that has both; quant_force_scalar wins over it.
void quant_force_avx2(bool on);

}  // namespace wb
