#pragma once
// Random-weight GGUF models of any shape and weight type, for GPU parity tests and benchmarks at sizes
// nobody wants to download (tests/tools/make_random_gguf.cpp is the command line). Two architectures:
//  - llama: full llama metadata and a small byte-level BPE vocabulary (gpt2) padded with reserved
//    tokens to the requested size;
//  - gemma3: Gemma 3's metadata (key_length, sliding window and its layer pattern, the local layers'
//    rope base), its extra tensors (q/k norms, post-attention and post-FFN norms), a tied embedding,
//    and a small SentencePiece vocabulary (tokenizer model "llama": Gemma's special tokens, 256 byte
//    tokens, letters and letter pairs with merge scores) padded with unused tokens.
// The files load with Model::load.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gguf/ggml_type.h"

namespace wb {

struct RandomLlamaSpec {
    std::string arch = "llama";  // "llama", "qwen2", "qwen3", "phi3", "gemma2" or "gemma3"
    std::string name = "random-llama";
    int32_t n_embd = 256;
    int32_t n_layer = 2;
    int32_t n_ff = 512;
    int32_t n_head = 4;
    int32_t n_head_kv = 2;
    int32_t n_vocab = 1024;  // >= 1024: three specials, 256 byte tokens, letter-pair merges, reserved fill
    int32_t n_ctx = 2048;    // {arch}.context_length
    int32_t head_dim = 0;    // key/value length; 0 = n_embd / n_head (written as attention.key_length
                             // and value_length when set)
    float rope_base = 10000.0f;
    float norm_eps = 1e-5f;
    // gemma3 only: local (sliding-window) layers. Layer il is local iff il % swa_period < swa_period - 1
    // (gemma3.attention.sliding_window_pattern); their rope base is rope_base_swa. sliding_window 0 = no
    // window (every layer global; the pattern and rope_base_swa keys are then not written).
    int32_t sliding_window = 0;
    int32_t swa_period = 6;
    float rope_base_swa = 10000.0f;
    bool tied_output = false;         // no output.weight: logits use token_embd
    // llama family: rope_freqs.weight as Llama 3.1's converter computes it (factor 8, low/high
    // frequency factors 1 and 4, original context 8192), rope scaling metadata ("" = no keys written;
    // "none", "linear" or "yarn" written as the type, with rope_scaling_factor over rope_orig_ctx
    // tokens), and q/k/v biases
    // (qwen2's; on by default there). qwen3 always has per-head q/k norms.
    int32_t n_rot = 0;                // rope.dimension_count; 0 = the whole head (Phi-4-mini rotates 3/4)
    float rope_attn_factor = 1.0f;    // rope.scaling.attn_factor, written when not 1 (long-context Phi-3)
    float attn_softcap = 0.0f;        // {arch}.attn_logit_softcapping, written when > 0 (gemma2)
    float final_softcap = 0.0f;       // {arch}.final_logit_softcapping, written when > 0 (gemma2)
    bool rope_freqs = false;
    std::string rope_scaling;
    float rope_scaling_factor = 1.0f;
    int32_t rope_orig_ctx = 0;
    bool qkv_bias = false;
    std::vector<std::string> extra_tensors;  // F32 vectors [n_embd] of these names (refusal tests)
    // Defects for refusal tests: tensors left out, metadata written over after the rest (a u32 or a
    // string), and a tokenizer vocabulary of vocab_tokens entries (0: n_vocab, as the embedding).
    std::vector<std::string> omit_tensors;
    std::vector<std::pair<std::string, uint32_t>> override_u32;
    std::vector<std::pair<std::string, std::string>> override_string;
    int32_t vocab_tokens = 0;
    // A real vocabulary: every tokenizer.* key (tokens, merges or scores, token types, special ids,
    // flags, chat template) copied from this GGUF's metadata (its tensor data may be cut off), and
    // n_vocab set to its size. Empty: the small made-up vocabulary of the architecture.
    std::string vocab_from;
    float output_norm_gain = 1.0f;    // mean of output_norm (llama family): larger = more peaked logits
    std::string pre = "smollm";       // tokenizer.ggml.pre of the byte-level vocabulary (llama family)
    GgmlType type = GgmlType::Q4_0;   // attention and FFN matrices
    GgmlType embd_type = GgmlType::Q8_0;
    GgmlType output_type = GgmlType::Q6_K;  // output.weight when not tied
    // Types by role, instead of `type`, as llama.cpp's mixed quantizations (Q4_K_M ...) choose them.
    // The *_more types go to the layers the quantizer gives more bits (use_more_bits: the first and
    // last eighth of the layers and every third in between); unset = the role's type.
    std::optional<GgmlType> attn_v_type, attn_v_more_type, attn_output_type, ffn_down_type, ffn_down_more_type;
    std::optional<GgmlType> attn_v_first2_type;  // attn_v of layers 0 and 1 (Q3_K_M's rule), before *_more
    std::optional<GgmlType> attn_qkv_type;       // Phi-3's fused attn_qkv; unset = `type`
    uint64_t seed = 1;
    // Spread of attn_q / attn_k entries in units of 1/sqrt(n_embd) (llama only; gemma3 normalises q
    // and k). The attention scores then spread by about qk_sigma^2 (q.k over head_dim terms, scaled by
    // 1/sqrt(head_dim)). Wider scores make the model chaotic: see tests/gpu/test_gpu_model.cpp.
    float qk_sigma = 0.5f;
    // Quantized tensors as random blocks (random quants, scales sized for the target spread) instead
    // of Gaussian floats run through the quantizer: ~50x faster, for multi-gigabyte benchmark models.
    bool random_blocks = false;

    // Shapes of real models (tensor types as their common GGUF files have them).
    static RandomLlamaSpec smollm2_135m();  // 30 layers, 576 wide, GQA 9/3, tied Q8_0 embedding, Q4_1
    static RandomLlamaSpec llama2_7b();     // 32 layers, 4096 wide, Q4_0 with a Q6_K output
    static RandomLlamaSpec tiny();          // 2 layers, 256 wide: fast tests
    // Gemma 3 270M as gemma-3-270m-Q4_K_M.gguf has it: 18 layers, 640 wide, 4/1 heads of 256, FFN 2048,
    // window 512 (5 local : 1 global), rope bases 1e6 / 1e4, 262144 tokens, tied Q8_0 embedding,
    // attn_q/attn_k/ffn_gate/ffn_up Q5_0, attn_v Q8_0 / Q5_0, attn_output Q4_K, ffn_down Q6_K / Q4_K.
    static RandomLlamaSpec gemma3_270m();
    // The same architecture and type mix at test size: 6 layers (period 3: layers 2 and 5 global), 256
    // wide, 2/1 heads of 256, FFN 512, window 64, 1024 tokens.
    static RandomLlamaSpec gemma3_tiny();
    // Test-size models of the other llama-family architectures (2 layers, 256 wide, 1024 tokens):
    //  - llama31-tiny: Llama 3.1's rope_freqs.weight, theta 500000, the llama-bpe pre-tokenizer name;
    //  - qwen2-tiny: NEOX rope, q/k/v biases, theta 1e6, the qwen2 pre-tokenizer name;
    //  - qwen2-yarn-tiny: the same with YaRN rope scaling (factor 4 over 256 tokens);
    //  - qwen3-tiny: NEOX rope, heads of 128 (key_length != n_embd / n_head), q/k norms.
    static RandomLlamaSpec llama31_tiny();
    static RandomLlamaSpec qwen2_tiny();
    static RandomLlamaSpec qwen2_yarn_tiny();
    static RandomLlamaSpec qwen3_tiny();
    //  - phi3-tiny: fused attn_qkv and gate/up, NEOX rope over 48 of 64 dims with long/short factors
    //    (the long ones apply: original context 512 < the tests' 1024), rope.scaling.attn_factor;
    //  - gemma2-tiny: Gemma 2 at test size: alternating window of 64, soft-capped attention scores
    //    and logits (caps low enough to bend random scores), no q/k norms.
    static RandomLlamaSpec phi3_tiny();
    static RandomLlamaSpec gemma2_tiny();
    // A preset by name (shape_names()); wb::Error otherwise.
    static RandomLlamaSpec by_name(const std::string& shape);
    static const char* shape_names();  // "tiny|smollm2-135m|..." for usage lines

    int32_t key_length() const { return head_dim > 0 ? head_dim : n_embd / n_head; }
    // llama.cpp's use_more_bits(i_layer, n_layer) (llama-quant.cpp).
    bool more_bits(int32_t il) const { return il < n_layer / 8 || il >= 7 * n_layer / 8 || (il - n_layer / 8) % 3 == 2; }
    GgmlType attn_v_type_of(int32_t il) const;
    GgmlType attn_output_type_of() const { return attn_output_type.value_or(type); }
    GgmlType attn_qkv_type_of() const { return attn_qkv_type.value_or(type); }
    // Sets the types by role as llama.cpp's quantizer chooses them for a dense model in the mixed
    // file types "Q3_K_M", "Q4_K_M" and "Q5_K_M" (llama_tensor_get_type in llama-quant.cpp), or
    // "pure": every layer matrix in `type`, no role overrides (a shape's own mix is dropped). The
    // embedding keeps embd_type; output.weight gets Q6_K in the mixes and keeps output_type in "pure".
    // Call it on the final shape (Q3_K_M checks the layer count). wb::Error for another name.
    void apply_mix(const std::string& mix);
    GgmlType ffn_down_type_of(int32_t il) const;
};

// Fills dst with n_rows random rows of n_in values of `type` (spread sigma around mean): Gaussian
// floats through quantize_row, or random blocks with fitting scales (always for the K-quant, IQ and
// TQ types, which have no quantizer here). Deterministic in seed; used for the model tensors and by the GPU op tests.
void fill_random_rows(GgmlType type, int64_t n_in, int64_t n_rows, float sigma, float mean, uint64_t seed,
                      bool random_blocks, uint8_t* dst);

// Writes the model (either architecture); wb::Error on a bad spec or an I/O failure.
void write_random_llama(const RandomLlamaSpec& spec, const std::string& path);

// n token ids in [0, n_vocab), deterministic in seed (a 64-bit LCG): prompts for random models.
std::vector<int32_t> random_tokens(size_t n, uint64_t seed, int32_t n_vocab);

// "Q4_K" -> GgmlType::Q4_K (case-insensitive); wb::Error naming the choices otherwise.
GgmlType parse_ggml_type(const std::string& name);

}  // namespace wb
