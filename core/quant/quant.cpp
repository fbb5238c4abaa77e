// Public quant API: argument checks and the choice of kernel family. The kernels themselves live in
// quant_scalar.cpp (portable), quant_avx2*.cpp (x86-64 with AVX2/FMA/F16C) and quant_avx512_iq.cpp
// (the avx512 family: AVX2's with a few kernels replaced, on CPUs with AVX-512 F/BW/VL/VNNI).
#include "quant/quant.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "quant/quant_blocks.h"
#include "quant/quant_blocks_iq.h"
#include "quant/quant_internal.h"
#include "util/error.h"

#if defined(WB_QUANT_AVX2)
#include <cpuid.h>
#endif

namespace wb {

VecDotFn& KernelTable::dot_in(DotOrder o, GgmlType t) { return dot_ordered[int(o)][slot(t)]; }
DotTileFn& KernelTable::tile_in(DotOrder o, GgmlType t) { return dot_tile_ordered[int(o)][slot(t)]; }
PackedTile& KernelTable::packed_in(DotOrder o, GgmlType t) { return packed_tile[int(o)][slot(t)]; }
UnpackedTile& KernelTable::unpacked_in(DotOrder o, GgmlType t) { return unpacked_tile[int(o)][slot(t)]; }
Rows16Tile& KernelTable::rows16_in(DotOrder o, GgmlType t) { return rows16_tile[int(o)][slot(t)]; }
DotRows8Fn& KernelTable::rows8_in(DotOrder o, GgmlType t) { return dot_rows8[int(o)][slot(t)]; }
Repacked16& KernelTable::repacked16_in(DotOrder o, GgmlType t) { return repacked16[int(o)][slot(t)]; }

namespace {

std::atomic<bool> g_force_scalar{false};
std::atomic<bool> g_force_avx2{false};

const KernelTable& scalar_table() {
    static const KernelTable table = scalar_kernels();
    return table;
}

#if defined(WB_QUANT_AVX2)
// F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know "f16c".
bool cpu_has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

bool cpu_has_avx2() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
}
#endif

// Decided once: the CPU does not change under a running process.
const KernelTable& avx2_table() {
    static const KernelTable table = [] {
#if defined(WB_QUANT_AVX2)
        if (cpu_has_avx2()) return avx2_kernels(false);  // the plain AVX2 family: quant_force_avx2's
#endif
        return scalar_kernels();
    }();
    return table;
}

const KernelTable& best_table() {
    static const KernelTable table = [] {
#if defined(WB_QUANT_AVX2)
        if (cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
            return avx512_kernels();
        if (cpu_has_avx2()) return avx2_kernels(true);  // with the AVX-VNNI tiles where the CPU has AVX-VNNI
#endif
        return scalar_kernels();
    }();
    return table;
}

const KernelTable& kernels() {
    if (g_force_scalar.load(std::memory_order_relaxed)) return scalar_table();
    return g_force_avx2.load(std::memory_order_relaxed) ? avx2_table() : best_table();
}

[[noreturn]] void throw_unsupported(const char* op, GgmlType t) {
    throw Error(std::string(op) + ": tensor type " + ggml_type_name(t) +
                " is not supported by the CPU kernels (supported: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, "
                "Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS, "
                "TQ1_0, TQ2_0)");
}

// A row must hold whole blocks: a partial block would read or write past the end of the row.
void check_length(const char* op, GgmlType t, int64_t n) {
    const int64_t block = ggml_type_traits(t).block_elems;
    if (n >= 0 && block > 0 && n % block == 0) return;
    throw Error(std::string(op) + ": a row of " + std::to_string(n) + " elements is not a whole number of " +
                ggml_type_name(t) + " blocks (" + std::to_string(block) + " elements each)");
}

using RowFromFloatFn = void (*)(const float* x, void* dst, int64_t n);
using RowToFloatFn = void (*)(const void* src, float* y, int64_t n);

template <class Block, int Elems>
void dequantize_blocks(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const Block*>(src);
    for (int64_t i = 0; i < n / Elems; ++i) dequantize_block(b[i], y + i * Elems);
}

template <class Block>
void dequantize_iq_blocks(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const Block*>(src);
    for (int64_t i = 0; i < n / kQKK; ++i) dequantize_iq_block(b[i], y + i * kQKK);
}

void f32_to_f32(const void* src, float* y, int64_t n) { std::memcpy(y, src, size_t(n) * sizeof(float)); }
void f16_to_f32(const void* src, float* y, int64_t n) { kernels().f16_to_f32(static_cast<const uint16_t*>(src), y, n); }
void bf16_to_f32_row(const void* src, float* y, int64_t n) {
    const auto* b = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_f32(b[i]);
}

// Q8_1 and Q8_K are activation types, not weight types; dequantizing them serves tests that check the
// dot kernels against plain float math.
RowToFloatFn dequantizer(GgmlType t) {
    switch (t) {
        case GgmlType::F32: return f32_to_f32;
        case GgmlType::F16: return f16_to_f32;
        case GgmlType::BF16: return bf16_to_f32_row;
        case GgmlType::Q4_0: return dequantize_blocks<BlockQ4_0, kQK>;
        case GgmlType::Q4_1: return dequantize_blocks<BlockQ4_1, kQK>;
        case GgmlType::Q5_0: return dequantize_blocks<BlockQ5_0, kQK>;
        case GgmlType::Q5_1: return dequantize_blocks<BlockQ5_1, kQK>;
        case GgmlType::Q8_0: return dequantize_blocks<BlockQ8_0, kQK>;
        case GgmlType::Q8_1: return dequantize_blocks<BlockQ8_1, kQK>;
        case GgmlType::Q2_K: return dequantize_blocks<BlockQ2_K, kQKK>;
        case GgmlType::Q3_K: return dequantize_blocks<BlockQ3_K, kQKK>;
        case GgmlType::Q4_K: return dequantize_blocks<BlockQ4_K, kQKK>;
        case GgmlType::Q5_K: return dequantize_blocks<BlockQ5_K, kQKK>;
        case GgmlType::Q6_K: return dequantize_blocks<BlockQ6_K, kQKK>;
        case GgmlType::Q8_K: return dequantize_blocks<BlockQ8_K, kQKK>;
        case GgmlType::IQ1_S: return dequantize_iq_blocks<BlockIQ1_S>;
        case GgmlType::IQ1_M: return dequantize_iq_blocks<BlockIQ1_M>;
        case GgmlType::IQ2_XXS: return dequantize_iq_blocks<BlockIQ2_XXS>;
        case GgmlType::IQ2_XS: return dequantize_iq_blocks<BlockIQ2_XS>;
        case GgmlType::IQ2_S: return dequantize_iq_blocks<BlockIQ2_S>;
        case GgmlType::IQ3_XXS: return dequantize_iq_blocks<BlockIQ3_XXS>;
        case GgmlType::IQ3_S: return dequantize_iq_blocks<BlockIQ3_S>;
        case GgmlType::IQ4_NL: return dequantize_blocks<BlockIQ4_NL, kQK>;
        case GgmlType::IQ4_XS: return dequantize_blocks<BlockIQ4_XS, kQKK>;
        case GgmlType::TQ1_0: return dequantize_blocks<BlockTQ1_0, kQKK>;
        case GgmlType::TQ2_0: return dequantize_blocks<BlockTQ2_0, kQKK>;
        default: return nullptr;
    }
}

void f32_from_f32(const float* x, void* dst, int64_t n) { std::memcpy(dst, x, size_t(n) * sizeof(float)); }
void f16_from_f32(const float* x, void* dst, int64_t n) { kernels().f32_to_f16(x, static_cast<uint16_t*>(dst), n); }
void bf16_from_f32(const float* x, void* dst, int64_t n) {
    auto* b = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) b[i] = f32_to_bf16(x[i]);
}

RowFromFloatFn quantizer(GgmlType t) {
    switch (t) {
        case GgmlType::F32: return f32_from_f32;
        case GgmlType::F16: return f16_from_f32;
        case GgmlType::BF16: return bf16_from_f32;
        case GgmlType::Q4_0: return quantize_row_q4_0;
        case GgmlType::Q4_1: return quantize_row_q4_1;
        case GgmlType::Q5_0: return quantize_row_q5_0;
        case GgmlType::Q5_1: return quantize_row_q5_1;
        case GgmlType::Q8_0: return kernels().quantize_q8_0;
        case GgmlType::Q8_1: return kernels().quantize_q8_1;
        case GgmlType::Q8_K: return kernels().quantize_q8_k;
        default: return nullptr;
    }
}

VecDotFn dot_kernel_in(const KernelTable& k, GgmlType t) {
    const uint32_t id = uint32_t(t);
    const VecDotFn fn = id < uint32_t(kKernelSlots) ? k.dot[id] : nullptr;
    if (!fn) throw_unsupported("vec_dot", t);
    return fn;
}

VecDotFn dot_kernel(GgmlType t) { return dot_kernel_in(kernels(), t); }

}  // namespace

void dequantize_row(GgmlType t, const void* src, float* y, int64_t n) {
    const RowToFloatFn fn = dequantizer(t);
    if (!fn) throw_unsupported("dequantize_row", t);
    check_length("dequantize_row", t, n);
    fn(src, y, n);
}

namespace {

// How llama.cpp's x86 CPU build (AVX2, F16C, FMA) multiplies a matrix of each weight type: the one
// list of the types with kernels, the type their activations are converted to (its vec_dot_type),
// and the batch path that decides the float order of a matmul (see DotOrder in quant.h).
enum class Batch : uint8_t {
    kRow,        // every token through the row dot, or a path that rounds as the row dot does
    kTiled,      // its tiled matmul for batches of 8 tokens or more
    kLlamafile,  // llamafile's tinyBLAS for batches of 2 tokens or more
    // tinyBLAS's float kernel for F32 x F32, F16 x F16 and BF16 x BF16, which also needs a row length
    // divisible by its 8 lanes and a row count divisible by 4 (else it declines and every token takes
    // the row dot)
    kLlamafileFloat,
};

struct TypePath {
    GgmlType weight;
    GgmlType activations;
    Batch batch;
    bool repacked;  // repacked (gemm/gemv) when the whole tensor's row count is divisible by 8
};

constexpr TypePath kTypePaths[] = {
    {GgmlType::F32, GgmlType::F32, Batch::kLlamafileFloat, false},
    {GgmlType::F16, GgmlType::F16, Batch::kLlamafileFloat, false},
    {GgmlType::BF16, GgmlType::BF16, Batch::kLlamafileFloat, false},
    // Q4_0, Q5_0 and Q8_0 also go through tinyBLAS from 2 tokens; its one 8-lane accumulator is
    // their row dot's order.
    {GgmlType::Q4_0, GgmlType::Q8_0, Batch::kRow, true},
    {GgmlType::Q5_0, GgmlType::Q8_0, Batch::kRow, false},
    {GgmlType::Q8_0, GgmlType::Q8_0, Batch::kRow, false},
    {GgmlType::Q4_1, GgmlType::Q8_1, Batch::kRow, false},
    {GgmlType::Q5_1, GgmlType::Q8_1, Batch::kRow, false},
    {GgmlType::IQ4_NL, GgmlType::Q8_0, Batch::kLlamafile, true},
    {GgmlType::Q2_K, GgmlType::Q8_K, Batch::kTiled, false},
    {GgmlType::Q3_K, GgmlType::Q8_K, Batch::kTiled, false},
    {GgmlType::Q4_K, GgmlType::Q8_K, Batch::kTiled, true},
    {GgmlType::Q5_K, GgmlType::Q8_K, Batch::kTiled, false},
    {GgmlType::Q6_K, GgmlType::Q8_K, Batch::kTiled, false},
    {GgmlType::IQ1_S, GgmlType::Q8_K, Batch::kTiled, false},
    {GgmlType::IQ1_M, GgmlType::Q8_K, Batch::kTiled, false},
    {GgmlType::IQ2_XXS, GgmlType::Q8_K, Batch::kTiled, false},
    {GgmlType::IQ2_XS, GgmlType::Q8_K, Batch::kTiled, false},
    {GgmlType::IQ2_S, GgmlType::Q8_K, Batch::kTiled, false},
    {GgmlType::IQ3_XXS, GgmlType::Q8_K, Batch::kTiled, false},
    {GgmlType::IQ3_S, GgmlType::Q8_K, Batch::kTiled, false},
    {GgmlType::IQ4_XS, GgmlType::Q8_K, Batch::kTiled, false},
    {GgmlType::TQ1_0, GgmlType::Q8_K, Batch::kRow, false},
    {GgmlType::TQ2_0, GgmlType::Q8_K, Batch::kRow, false},
};

const TypePath& type_path(const char* op, GgmlType t) {
    for (const TypePath& p : kTypePaths)
        if (p.weight == t) return p;
    throw_unsupported(op, t);
}

}  // namespace

GgmlType vec_dot_type(GgmlType weight_type) { return type_path("vec_dot_type", weight_type).activations; }

DotOrder llama_cpp_dot_order(GgmlType weight_type, int64_t tensor_rows, int64_t n_in, int64_t n_tok, int64_t tok) {
    const TypePath& p = type_path("llama_cpp_dot_order", weight_type);
    if (p.repacked && tensor_rows % 8 == 0) return tok < n_tok - n_tok % 4 ? DotOrder::kGemm : DotOrder::kGemv;
    switch (p.batch) {
        case Batch::kTiled: return n_tok >= 8 ? DotOrder::kTiled : DotOrder::kRow;
        case Batch::kLlamafile: return n_tok >= 2 ? DotOrder::kLlamafile : DotOrder::kRow;
        case Batch::kLlamafileFloat:
            return n_tok >= 2 && n_in % 8 == 0 && tensor_rows % 4 == 0 ? DotOrder::kLlamafile : DotOrder::kRow;
        case Batch::kRow: break;
    }
    return DotOrder::kRow;
}

size_t activation_row_bytes(GgmlType weight_type, int64_t n) {
    const GgmlType act = vec_dot_type(weight_type);
    check_length("activation_row_bytes", act, n);
    return ggml_row_bytes(act, n);
}

void quantize_activations(GgmlType weight_type, const float* x, void* dst, int64_t n) {
    const GgmlType act = vec_dot_type(weight_type);
    check_length("quantize_activations", act, n);
    quantizer(act)(x, dst, n);
}

float vec_dot(GgmlType weight_type, int64_t n, const void* w_row, const void* x_prepared) {
    const VecDotFn fn = dot_kernel(weight_type);
    check_length("vec_dot", weight_type, n);
    return fn(n, w_row, x_prepared);
}

namespace {

bool has_slot(GgmlType t) { return uint32_t(t) < uint32_t(kKernelSlots); }

// The row kernel of an order (see DotOrder) in family k: the order's own kernel where k has one.
VecDotFn order_kernel(const KernelTable& k, GgmlType weight_type, DotOrder order) {
    if (order != DotOrder::kRow && has_slot(weight_type))
        if (const VecDotFn fn = k.dot_ordered[int(order)][slot(weight_type)]) return fn;
    return dot_kernel_in(k, weight_type);
}
VecDotFn order_kernel(GgmlType weight_type, DotOrder order) { return order_kernel(kernels(), weight_type, order); }

// The tile kernel of an order in family k, nullptr where k has none.
DotTileFn tile_kernel(const KernelTable& k, GgmlType weight_type, DotOrder order) {
    if (!has_slot(weight_type)) return nullptr;
    const int s = slot(weight_type);
    if (order != DotOrder::kRow && k.dot_ordered[int(order)][s]) return k.dot_tile_ordered[int(order)][s];
    return k.dot_tile[s];
}
DotTileFn tile_kernel(GgmlType weight_type, DotOrder order) { return tile_kernel(kernels(), weight_type, order); }

// The order whose kernels serve `order` in family k: itself where k has a kernel of its own for it,
// else kRow (see order_kernel).
int served_order(const KernelTable& k, GgmlType weight_type, DotOrder order) {
    const bool own = order != DotOrder::kRow && k.dot_ordered[int(order)][slot(weight_type)];
    return own ? int(order) : int(DotOrder::kRow);
}

// The tile over packed activations of the order whose tile tile_kernel gives; empty where none.
PackedTile packed_tile_kernel(const KernelTable& k, GgmlType weight_type, DotOrder order) {
    if (!has_slot(weight_type)) return {};
    return k.packed_tile[served_order(k, weight_type, order)][slot(weight_type)];
}

}  // namespace

void vec_dot_rows(GgmlType weight_type, int64_t n, const void* w, size_t w_row_stride, int64_t n_rows,
                  const void* x_prepared, float* out, DotOrder order) {
    const VecDotFn fn = order_kernel(weight_type, order);
    check_length("vec_dot_rows", weight_type, n);
    const auto* row = static_cast<const uint8_t*>(w);
    for (int64_t r = 0; r < n_rows; ++r) out[r] = fn(n, row + size_t(r) * w_row_stride, x_prepared);
}

bool has_dot_tile(GgmlType weight_type, DotOrder order) { return tile_kernel(weight_type, order) != nullptr; }

DotKernels dot_kernels(GgmlType weight_type, int64_t n, DotOrder order) {
    const KernelTable& table = kernels();  // one family for all three, even if a test switches it meanwhile
    DotKernels k;
    k.row = order_kernel(table, weight_type, order);
    check_length("dot_kernels", weight_type, n);
    k.tile = tile_kernel(table, weight_type, order);
    if (k.tile && has_slot(weight_type) && k.tile == table.dot_tile[slot(weight_type)])
        k.tile_rows = table.dot_tile_rows[slot(weight_type)];  // the multi-row form of that same tile
    if (has_slot(weight_type)) k.rows8 = table.dot_rows8[served_order(table, weight_type, order)][slot(weight_type)];
    const PackedTile packed = packed_tile_kernel(table, weight_type, order);
    if (k.tile && packed.tile) {
        k.packed_x_bytes = packed.bytes;
        k.pack_x = packed.pack;
        k.tile_packed = packed.tile;
    }
    const UnpackedTile unpacked = has_slot(weight_type) ? table.unpacked_tile[served_order(table, weight_type, order)][slot(weight_type)]
                                                        : UnpackedTile{};
    if (k.tile && unpacked.tile) {
        k.unpacked_w_bytes = unpacked.bytes;
        k.unpack_w = unpacked.unpack;
        k.tile_unpacked = unpacked.tile;
    }
    const Rows16Tile rows16 =
        has_slot(weight_type) ? table.rows16_tile[served_order(table, weight_type, order)][slot(weight_type)] : Rows16Tile{};
    if (k.tile && rows16.tile) {
        k.unpacked16_w_bytes = rows16.bytes;
        k.unpack16_w = rows16.unpack;
        k.tile16_unpacked = rows16.tile;
    }
    const Repacked16 repacked =
        has_slot(weight_type) ? table.repacked16[served_order(table, weight_type, order)][slot(weight_type)] : Repacked16{};
    if (repacked.row16) {
        k.repacked16_bytes = repacked.bytes;
        k.repack16 = repacked.repack;
        k.row16_repacked = repacked.row16;
        k.unrepack_row = repacked.unrepack_row;
        if (k.tile16_unpacked) k.unpack16_repacked = repacked.unpack16;
    }
    return k;
}

void vec_dot_tile(GgmlType weight_type, int64_t n, const void* w, size_t w_row_stride, const void* x_prepared,
                  size_t x_row_stride, float* out, int64_t out_stride, DotOrder order) {
    const VecDotFn fn = order_kernel(weight_type, order);
    check_length("vec_dot_tile", weight_type, n);
    if (const DotTileFn tile = tile_kernel(weight_type, order))
        return tile(n, w, w_row_stride, x_prepared, x_row_stride, out, out_stride);
    const auto* wr = static_cast<const uint8_t*>(w);
    const auto* xr = static_cast<const uint8_t*>(x_prepared);
    for (int c = 0; c < kDotTileCols; ++c)
        for (int r = 0; r < kDotTileRows; ++r)
            out[c * out_stride + r] = fn(n, wr + size_t(r) * w_row_stride, xr + size_t(c) * x_row_stride);
}

void quantize_row(GgmlType t, const float* x, void* dst, int64_t n) {
    const RowFromFloatFn fn = quantizer(t);
    if (!fn)
        throw Error("quantize_row: no quantizer for tensor type " + ggml_type_name(t) +
                    " (available: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q8_K)");
    check_length("quantize_row", t, n);
    fn(x, dst, n);
}

float sum_lanes8(const float* l) { return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7])); }

float sum_lanes32(const float* l) {
    float a[8];
    for (int i = 0; i < 8; ++i) a[i] = (l[i] + l[16 + i]) + (l[8 + i] + l[24 + i]);
    float t[4];
    for (int i = 0; i < 4; ++i) t[i] = a[i] + a[i + 4];
    return (t[0] + t[1]) + (t[2] + t[3]);
}

float dot_f16_f16(F16DotOrder order, int64_t n, const uint16_t* x, const uint16_t* y) {
    const KernelTable& k = kernels();
    return order == F16DotOrder::kLanes8 ? k.dot_f16_lanes8(n, x, y) : k.dot_f16_step32(n, x, y);
}

void fma_f16_row(float a, const uint16_t* x, float* y, int64_t n) { kernels().fma_f16_row(a, x, y, n); }

void dot_f16_keys(F16DotOrder order, int64_t n, const uint16_t* k, int64_t k_stride, int64_t n_keys, const float* q,
                  int64_t q_stride, int g, float* out, int64_t out_stride) {
    kernels().dot_f16_keys(order, n, k, k_stride, n_keys, q, q_stride, g, out, out_stride);
}

void fma_f16_keys(int64_t n, const uint16_t* v, int64_t v_stride, int64_t n_keys, int64_t lane0, int n_lanes,
                  const float* p, int64_t p_stride, int g, float* lanes, int64_t lanes_stride) {
    kernels().fma_f16_keys(n, v, v_stride, n_keys, lane0, n_lanes, p, p_stride, g, lanes, lanes_stride);
}

float sum_f16_dot_lanes(F16DotOrder order, const float* lanes) {
    return order == F16DotOrder::kLanes8 ? sum_lanes8(lanes) : sum_lanes32(lanes);
}

void sum_f16_dot_lanes_by_dim(F16DotOrder order, const float* lanes, int64_t lane_stride, int64_t n, float* out) {
    const auto lane = [lanes, lane_stride](int l) { return lanes + l * lane_stride; };
    if (order == F16DotOrder::kLanes8) {  // sum_lanes8's tree
        const float *l0 = lane(0), *l1 = lane(1), *l2 = lane(2), *l3 = lane(3);
        const float *l4 = lane(4), *l5 = lane(5), *l6 = lane(6), *l7 = lane(7);
        for (int64_t d = 0; d < n; ++d)
            out[d] = ((l0[d] + l4[d]) + (l2[d] + l6[d])) + ((l1[d] + l5[d]) + (l3[d] + l7[d]));
        return;
    }
    // sum_lanes32's tree: a_i = (l_i + l_16+i) + (l_8+i + l_24+i), t_i = a_i + a_i+4, (t0 + t1) + (t2 + t3).
    constexpr int64_t kChunk = 64;
    float a[8][kChunk];
    for (int64_t d0 = 0; d0 < n; d0 += kChunk) {
        const int64_t m = std::min(kChunk, n - d0);
        for (int i = 0; i < 8; ++i) {
            const float *x = lane(i) + d0, *y = lane(16 + i) + d0, *z = lane(8 + i) + d0, *w = lane(24 + i) + d0;
            for (int64_t d = 0; d < m; ++d) a[i][d] = (x[d] + y[d]) + (z[d] + w[d]);
        }
        for (int64_t d = 0; d < m; ++d)
            out[d0 + d] = ((a[0][d] + a[4][d]) + (a[1][d] + a[5][d])) + ((a[2][d] + a[6][d]) + (a[3][d] + a[7][d]));
    }
}

const char* quant_kernel_name() { return kernels().name; }

void quant_force_scalar(bool on) { g_force_scalar.store(on, std::memory_order_relaxed); }

void quant_force_avx2(bool on) { g_force_avx2.store(on, std::memory_order_relaxed); }

bool quant_uses_vnni() { return kernels().vnni; }

}  // namespace wb
