#pragma once
// Row-level kernels for every weight type WhiteBox computes with (CPU).
//
// A matmul row is dot(weight_row, activations). Like llama.cpp, quantized weight types do not dot with
// float activations directly: the activation row is first quantized once into the type's "vec_dot
// type" (Q8_0, Q8_1 or Q8_K), so the inner loop is an integer dot product. F16 and BF16 weights dot
// with activations rounded to F16, resp. BF16, as llama.cpp's CPU backend does; F32 weights with F32 ones.
//
// Kernels are chosen at run time: AVX2+FMA(+F16C) when the CPU has them, portable scalar code otherwise.
//
// Every function throws wb::Error naming the type when given a type it has no kernel for, or a row
// length that is not a whole number of blocks.
#include <cstddef>
#include <cstdint>

#include "gguf/ggml_type.h"

namespace wb {

// y[0..n) = the n values of a row in type t. n must be a multiple of the type's block size.
// Besides the weight types this accepts the activation types Q8_1 and Q8_K (used by tests).
void dequantize_row(GgmlType t, const void* src, float* y, int64_t n);

// Type the activations are converted to before dotting with weights of type t (F16 for F16 weights,
// BF16 for BF16, F32 for F32).
GgmlType vec_dot_type(GgmlType weight_type);

// Bytes needed to hold n activations converted to vec_dot_type(weight_type).
size_t activation_row_bytes(GgmlType weight_type, int64_t n);

// Converts n float activations into vec_dot_type(weight_type) (a plain copy for F32, rounding to
// nearest even for F16 and BF16).
void quantize_activations(GgmlType weight_type, const float* x, void* dst, int64_t n);

// dot(weight row of type t, activations prepared by quantize_activations for t), n elements.
float vec_dot(GgmlType weight_type, int64_t n, const void* w_row, const void* x_prepared);

// out[r] = vec_dot(weight_type, n, w + r * w_row_stride, x_prepared) for r in [0, n_rows): a run of
// consecutive matrix rows against one activation row. The matmul's inner loop: the kernel is looked up
// and the arguments checked once per run instead of once per row.
//
// order selects among the float accumulation orders of llama.cpp's x86 matmul paths, which differ
// for some types (an order a type has no path for, or whose path rounds as its row dot does, means
// kRow):
//  - kRow: its row dot product (ggml_vec_dot_*): for K-quants and the 256-element IQ types batches
//    of fewer than 8 tokens, for IQ4_NL, F32, F16 and BF16 single tokens, and every batch of the
//    other types (F16: ggml_vec_dot_f16, the F16DotOrder::kStep32 order below over f16 activations;
//    F32: the same lanes and tree, then a tail of rounded products added in order and the last 0-3
//    fused, as GCC builds ggml_vec_dot_f32; BF16: the same lanes, the four accumulators added and
//    their 8 lanes summed in kLanes8's tree, the tail in double);
//  - kTiled: its tiled matmul of K-quants and the 256-element IQ types (IQ1_S .. IQ4_XS), for every
//    token of a batch of 8 or more;
//  - kGemv, kGemm: matrices of Q4_0, Q4_K or IQ4_NL with a row count divisible by 8, which it
//    repacks and multiplies with a gemm for the tokens of a batch in groups of 4 (the first
//    n_tok - n_tok % 4) and a gemv for the rest (Q4_0 and IQ4_NL: one order, as both kernels fold
//    each block's exact sum in with one FMA);
//  - kLlamafile: llamafile's tinyBLAS, its matmul for batches of 2 tokens or more of the 32-element
//    types it does not repack, and of F32, F16 and BF16 matrices whose rows are a multiple of 8 long
//    and whose row count is a multiple of 4. Its one 8-lane accumulator is the row order of
//    Q4_0/Q5_0/Q8_0; IQ4_NL, whose row dot alternates two accumulators, and the float types (the
//    F16DotOrder::kLanes8 order over their activations) have kernels of their own.
enum class DotOrder { kRow, kTiled, kGemv, kGemm, kLlamafile };

// The order llama.cpp's x86 build uses for token tok (0-based) of an n_tok-token matmul of a weight
// matrix of type weight_type, n_in columns and tensor_rows rows. tensor_rows is the row count of the
// whole tensor in the file: llama.cpp multiplies a fused tensor (Phi-3's attn_qkv) whole and decides
// on its shape, even where only some of its rows are in use. Throws naming an unsupported type.
DotOrder llama_cpp_dot_order(GgmlType weight_type, int64_t tensor_rows, int64_t n_in, int64_t n_tok, int64_t tok);
void vec_dot_rows(GgmlType weight_type, int64_t n, const void* w, size_t w_row_stride, int64_t n_rows,
                  const void* x_prepared, float* out, DotOrder order = DotOrder::kRow);

// A tile of kDotTileRows weight rows times kDotTileCols activation rows in one order:
//   out[c * out_stride + r] = the vec_dot_rows value of row r and activation row c in that order.
// Every output is computed with exactly the operations of the row kernel, in the same order; the tile
// only reuses each unpacked weight block for several tokens, which is what makes a batch (prefill)
// faster than one dot at a time. Valid for every type and order; has_dot_tile says whether the kernel
// family in use has a tile kernel for them (else it is a loop over the row kernel).
constexpr int kDotTileRows = 1, kDotTileCols = 8;
bool has_dot_tile(GgmlType weight_type, DotOrder order = DotOrder::kRow);
void vec_dot_tile(GgmlType weight_type, int64_t n, const void* w, size_t w_row_stride, const void* x_prepared,
                  size_t x_row_stride, float* out, int64_t out_stride, DotOrder order = DotOrder::kRow);

// The kernels behind vec_dot_rows and vec_dot_tile for a type, row length and order, looked up and
// checked once: a matmul resolves them once per weight instead of once per call (a decode task is a
// few rows, a prefill tile a few blocks, so the per-call look-up was a visible share of the time).
// Same results as those two functions; throws as they do.
struct DotKernels {
    float (*row)(int64_t n, const void* w_row, const void* x_prepared) = nullptr;
    // Where the family has one, row over 8 weight rows w_stride apart at once: out[r] = row(n, w + r *
    // w_stride, x) for r < 8, bit for bit, faster (a decode matmul is one token against every row);
    // nullptr where none.
    void (*rows8)(int64_t n, const void* w, size_t w_stride, const void* x_prepared, float* out) = nullptr;
    // out[c * out_stride + r] for the kDotTileRows x kDotTileCols tile; nullptr where the family has no
    // tile kernel (has_dot_tile false)
    void (*tile)(int64_t n, const void* w, size_t w_stride, const void* x, size_t x_stride, float* out,
                 int64_t out_stride) = nullptr;
    // The tile for n_rows weight rows w_stride apart (out[c * out_stride + r], r < n_rows): exactly the
    // outputs of n_rows calls of tile, with the work on the activations shared; nullptr where the family
    // has no such kernel (then a loop over tile).
    void (*tile_rows)(int64_t n, const void* w, size_t w_stride, int64_t n_rows, const void* x, size_t x_stride,
                      float* out, int64_t out_stride) = nullptr;
    // Where the family has one, the tile over the tile's kDotTileCols activation rows packed for it:
    // pack_x(n, x, x_stride, packed) writes packed_x_bytes(n) bytes (4-byte aligned), once per group of
    // tokens and matmul; then tile_packed(n, w, packed, out, out_stride) gives exactly the outputs of
    // tile(n, w, ., x, x_stride, out, out_stride), faster (the packing, done once, interleaves the
    // tokens so one vector serves several; quant_avx2_packed.cpp). All three nullptr where none.
    size_t (*packed_x_bytes)(int64_t n) = nullptr;
    void (*pack_x)(int64_t n, const void* x, size_t x_stride, void* packed) = nullptr;
    void (*tile_packed)(int64_t n, const void* w, const void* packed, float* out, int64_t out_stride) = nullptr;
    // Where the family has one, the tile over a weight row unpacked for it: unpack_w(n, w, unpacked)
    // writes unpacked_w_bytes(n) bytes (4-byte aligned), once per row and prefill task; then
    // tile_unpacked(n, unpacked, x, x_stride, out, out_stride) gives exactly the outputs of tile(n, w, .,
    // x, x_stride, out, out_stride), faster when a row meets several groups of tokens (the decode of
    // its blocks is done once; quant_avx2_iq.cpp). All three nullptr where none.
    size_t (*unpacked_w_bytes)(int64_t n) = nullptr;
    void (*unpack_w)(int64_t n, const void* w, void* unpacked) = nullptr;
    void (*tile_unpacked)(int64_t n, const void* unpacked, const void* x, size_t x_stride, float* out,
                          int64_t out_stride) = nullptr;
    // Where the family has one, the tile over kTile16Rows weight rows unpacked together:
    // unpack16_w(n, w, w_stride, unpacked) writes unpacked16_w_bytes(n) bytes for rows w .. w + 15 *
    // w_stride (unpacked 64-byte aligned: the layout is whole cache lines of 4-byte fields), once per
    // prefill task; then tile16_unpacked(n, unpacked, x, x_stride, out, out_stride)
    // gives out[c * out_stride + r] for r < 16 and c < kDotTileCols, exactly the outputs of tile for
    // each of the 16 rows, faster (the rows sit in the lanes of a vector and their blocks are decoded
    // once for all the groups of tokens; quant_avx512_rows16.cpp). All three nullptr where none.
    size_t (*unpacked16_w_bytes)(int64_t n) = nullptr;
    void (*unpack16_w)(int64_t n, const void* w, size_t w_stride, void* unpacked) = nullptr;
    void (*tile16_unpacked)(int64_t n, const void* unpacked, const void* x, size_t x_stride, float* out,
                            int64_t out_stride) = nullptr;
    // Where the family has one, a layout of kTile16Rows weight rows repacked once, at load, for the
    // decode (quant_avx512_repack.cpp; Q4_K, Q5_K, Q8_0, Q6_K, Q5_0, Q4_0, IQ4_NL, Q4_1): repack16(n, w, w_stride, out) writes repacked16_bytes(n)
    // bytes for rows w .. w + 15 * w_stride (out 64-byte aligned); then row16_repacked(n, repacked, x,
    // out) gives out[r] = row(n, w + r * w_stride, x) for r < 16, bit for bit, and unpack16_repacked(n,
    // repacked, unpacked) writes exactly what unpack16_w(n, w, w_stride, unpacked) does (nullptr where
    // this order has no 16-row tile). Every order of a type shares the layout (the same repack16). All
    // nullptr where none. unrepack_row(n, repacked, r, row) writes row r (< 16) back in the file's
    // layout, byte for byte (the repacking loses nothing): what reads a row by itself (an embedding
    // lookup in a tied table) reads the copy too, so the mapping's pages can go.
    size_t (*repacked16_bytes)(int64_t n) = nullptr;
    void (*repack16)(int64_t n, const void* w, size_t w_stride, void* out) = nullptr;
    void (*row16_repacked)(int64_t n, const void* repacked, const void* x, float* out) = nullptr;
    void (*unpack16_repacked)(int64_t n, const void* repacked, void* unpacked) = nullptr;
    void (*unrepack_row)(int64_t n, const void* repacked, int r, void* row) = nullptr;
};
constexpr int kTile16Rows = 16;
DotKernels dot_kernels(GgmlType weight_type, int64_t n, DotOrder order = DotOrder::kRow);

// Plain quantizers (reference, round-to-nearest) for building test data and random-weight models.
// Supported for F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q8_K; K-quant, IQ and TQ
// weights are written by tests block by block.
void quantize_row(GgmlType t, const float* x, void* dst, int64_t n);

// ---- F16 attention products (the CPU backend's attention over the F16 KV cache) ----
//
// A model with large activations amplifies last-bit differences (through the Q8 quantization of the
// next matmul's activations), so attention reproduces the two float accumulation orders llama.cpp's
// CPU build uses for its F16 products, and agrees with it bit for bit. Every term is a fused
// multiply-add into one of several f32 lanes; the lanes are summed at the end in a fixed tree.
enum class F16DotOrder {
    // 8 lanes, element i in lane i % 8; lanes summed ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
    // llama.cpp's batched matmul (llamafile tinyBLAS), used when a batch has several tokens.
    kLanes8,
    // 32 lanes, element i in lane i % 32 (four 8-wide accumulators over runs of 32 elements); the
    // accumulators are summed (a0+a2)+(a1+a3), then the 8 lanes of that ((t0+t1)+(t2+t3)) with
    // t_i = l_i + l_{i+4}; elements past the last whole run of 32 are added in double.
    // llama.cpp's ggml_vec_dot_f16, used for a single token.
    kStep32,
};

// Number of lanes of an order (8 or 32).
constexpr int f16_dot_lanes(F16DotOrder order) { return order == F16DotOrder::kLanes8 ? 8 : 32; }

// sum_i x[i] * y[i] over two f16 vectors in the given order.
float dot_f16_f16(F16DotOrder order, int64_t n, const uint16_t* x, const uint16_t* y);

// y[i] = fma(a, x[i], y[i]) for i < n, x in f16: one term added to n independent lanes. Used to build
// the lanes of dot products whose other operand is strided (attention's softmax-weighted values).
void fma_f16_row(float a, const uint16_t* x, float* y, int64_t n);

// The same products for a run of keys against the query heads that share them (grouped-query
// attention), one call per run so each f16 key row is converted once for all of them:
//   out[i * out_stride + j] = dot_f16_f16(order, n, k + j * k_stride, f16 of q + i * q_stride)
// for j < n_keys, i < g, where the q vectors hold values already rounded to f16 (as floats).
void dot_f16_keys(F16DotOrder order, int64_t n, const uint16_t* k, int64_t k_stride, int64_t n_keys, const float* q,
                  int64_t q_stride, int g, float* out, int64_t out_stride);

// fma_f16_row for a run of value rows v_j = v + j * v_stride (j < n_keys) and the g query heads that
// share them: row j goes to lane (lane0 + j) % n_lanes of each head's lanes, a [n_lanes][n] block at
// lanes + i * lanes_stride, weighted by p[i * p_stride + j]. Keys are added in ascending j, so each
// lane accumulates in the same order as one fma_f16_row call per key would.
void fma_f16_keys(int64_t n, const uint16_t* v, int64_t v_stride, int64_t n_keys, int64_t lane0, int n_lanes,
                  const float* p, int64_t p_stride, int g, float* lanes, int64_t lanes_stride);

// Sums the lanes of a kLanes8/kStep32 dot (lanes[f16_dot_lanes(order)]) in that order's tree.
float sum_f16_dot_lanes(F16DotOrder order, const float* lanes);

// sum_f16_dot_lanes for n dims at once, the lanes stored by lane: out[d] is the tree sum over lanes l of
// lanes[l * lane_stride + d], each d with the same additions in the same order as sum_f16_dot_lanes of
// its gathered lanes (so the same bits), but written over d so that the compiler adds several dims per
// instruction: attention's outputs gathered each dim's lanes one by one and made a call per dim.
void sum_f16_dot_lanes_by_dim(F16DotOrder order, const float* lanes, int64_t lane_stride, int64_t n, float* out);

// Name of the kernel family in use ("avx512", "avx2" or "scalar"), for bench output.
const char* quant_kernel_name();
// Whether the kernels in use include AVX-VNNI tiles (same results), for bench output ("+vnni").
bool quant_uses_vnni();

}  // namespace wb
