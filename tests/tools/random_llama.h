#pragma once
// Random-weight llama-architecture GGUF models of any shape and weight type, for GPU parity tests and
// benchmarks at sizes nobody wants to download (tests/tools/make_random_gguf.cpp is the command line).
// The files load with Model::load: full llama metadata and a small byte-level BPE vocabulary padded
// with reserved tokens to the requested size.
#include <cstdint>
#include <string>

#include "gguf/ggml_type.h"

namespace wb {

struct RandomLlamaSpec {
    std::string name = "random-llama";
    int32_t n_embd = 256;
    int32_t n_layer = 2;
    int32_t n_ff = 512;
    int32_t n_head = 4;
    int32_t n_head_kv = 2;
    int32_t n_vocab = 1024;  // >= 1024: three specials, 256 byte tokens, letter-pair merges, reserved fill
    int32_t n_ctx = 2048;    // llama.context_length
    float rope_base = 10000.0f;
    float norm_eps = 1e-5f;
    bool tied_output = false;         // no output.weight: logits use token_embd
    GgmlType type = GgmlType::Q4_0;   // attention and FFN matrices
    GgmlType embd_type = GgmlType::Q8_0;
    GgmlType output_type = GgmlType::Q6_K;  // output.weight when not tied
    uint64_t seed = 1;
    // Quantized tensors as random blocks (random quants, scales sized for the target spread) instead
    // of Gaussian floats run through the quantizer: ~50x faster, for multi-gigabyte benchmark models.
    bool random_blocks = false;

    // Shapes of real models (tensor types as their common GGUF files have them).
    static RandomLlamaSpec smollm2_135m();  // 30 layers, 576 wide, GQA 9/3, tied Q8_0 embedding, Q4_1
    static RandomLlamaSpec llama2_7b();     // 32 layers, 4096 wide, Q4_0 with a Q6_K output
    static RandomLlamaSpec tiny();          // 2 layers, 256 wide: fast tests
};

// Fills dst with n_rows random rows of n_in values of `type` (spread sigma around mean): Gaussian
// floats through quantize_row, or random blocks with fitting scales (always for K-quants, which have
// no quantizer here). Deterministic in seed; used for the model tensors and by the GPU op tests.
void fill_random_rows(GgmlType type, int64_t n_in, int64_t n_rows, float sigma, float mean, uint64_t seed,
                      bool random_blocks, uint8_t* dst);

// Writes the model; wb::Error on a bad spec or an I/O failure.
void write_random_llama(const RandomLlamaSpec& spec, const std::string& path);

// "Q4_K" -> GgmlType::Q4_K (case-insensitive); wb::Error naming the choices otherwise.
GgmlType parse_ggml_type(const std::string& name);

}  // namespace wb
