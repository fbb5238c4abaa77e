#include "random_llama.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "quant/quant.h"
#include "quant/quant_blocks.h"
#include "quant/quant_blocks_iq.h"
#include "util/error.h"
#include "util/fp16.h"

namespace wb {

namespace {

// splitmix64: a tiny, well-mixed generator; one independent stream per (tensor, chunk of rows) so
// the file is the same whatever the number of threads.
struct Rng {
    uint64_t s;
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    float uniform() { return float(next() >> 40) * (1.0f / 16777216.0f); }  // [0, 1)
    float normal() {  // Box-Muller
        const float u1 = std::max(uniform(), 1e-7f), u2 = uniform();
        return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853f * u2);
    }
};

uint64_t mix(uint64_t a, uint64_t b) { return Rng{a * 0x2545f4914f6cdd1dull + b}.next(); }

uint64_t name_hash(const std::string& s) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

// Overwrites the fp16 scale fields of a random K-quant block so its values have roughly the target
// spread and (for the types with minimums) about zero mean. The factors come from the value ranges
// of each format (uniform quants and 6-bit/8-bit scales).
void set_kquant_scales(GgmlType t, uint8_t* block, float sigma) {
    auto put16 = [](uint8_t* p, float v) {
        const uint16_t h = f32_to_fp16(v);
        std::memcpy(p, &h, 2);
    };
    switch (t) {
        case GgmlType::Q2_K: {
            const float d = sigma / 8.4f;
            put16(block + offsetof(BlockQ2_K, d), d);
            put16(block + offsetof(BlockQ2_K, dmin), 1.5f * d);
            break;
        }
        case GgmlType::Q3_K: put16(block + offsetof(BlockQ3_K, d), sigma / 42.0f); break;
        case GgmlType::Q4_K: {
            const float d = sigma / 145.0f;
            put16(block + offsetof(BlockQ4_K, d), d);
            put16(block + offsetof(BlockQ4_K, dmin), 7.5f * d);
            break;
        }
        case GgmlType::Q5_K: {
            const float d = sigma / 290.0f;
            put16(block + offsetof(BlockQ5_K, d), d);
            put16(block + offsetof(BlockQ5_K, dmin), 15.5f * d);
            break;
        }
        case GgmlType::Q6_K: put16(block + offsetof(BlockQ6_K, d), sigma / 1370.0f); break;
        default: break;
    }
}

// Legacy blocks as random bytes with a fitting scale (the fast path for large models).
void set_legacy_scale(GgmlType t, uint8_t* block, float sigma) {
    auto put16 = [&](size_t off, float v) {
        const uint16_t h = f32_to_fp16(v);
        std::memcpy(block + off, &h, 2);
    };
    switch (t) {
        case GgmlType::Q4_0: put16(0, sigma / 4.6f); break;
        case GgmlType::Q4_1: put16(0, sigma / 4.6f), put16(2, -7.5f * sigma / 4.6f); break;
        case GgmlType::Q5_0: put16(0, sigma / 9.2f); break;
        case GgmlType::Q5_1: put16(0, sigma / 9.2f), put16(2, -15.5f * sigma / 9.2f); break;
        case GgmlType::Q8_0: put16(0, sigma / 73.6f); break;
        default: break;
    }
}

bool is_kquant(GgmlType t) {
    return t == GgmlType::Q2_K || t == GgmlType::Q3_K || t == GgmlType::Q4_K || t == GgmlType::Q5_K ||
           t == GgmlType::Q6_K;
}

bool is_iq_grid(GgmlType t) {
    return t == GgmlType::IQ1_S || t == GgmlType::IQ1_M || t == GgmlType::IQ2_XXS || t == GgmlType::IQ2_XS ||
           t == GgmlType::IQ2_S || t == GgmlType::IQ3_XXS || t == GgmlType::IQ3_S;
}

bool is_iq_tq(GgmlType t) {
    return t == GgmlType::IQ4_NL || t == GgmlType::IQ4_XS || t == GgmlType::TQ1_0 || t == GgmlType::TQ2_0 ||
           is_iq_grid(t);
}

// Where a grid IQ block keeps its fp16 d (IQ1_M: in the top nibbles of its four scale words).
void set_iq_grid_d(GgmlType t, uint8_t* block, uint16_t d) {
    if (t == GgmlType::IQ1_M) {
        auto* b = reinterpret_cast<BlockIQ1_M*>(block);
        for (int k = 0; k < 4; ++k) b->scales[2 * k + 1] = uint8_t((b->scales[2 * k + 1] & 0x0F) | ((d >> (4 * k)) & 0xF) << 4);
    } else {
        std::memcpy(block, &d, 2);  // d is the first field of the other grid types
    }
}

// Random grid IQ blocks: every byte pattern is a valid block (any grid index, sign code, scale and
// shift), so the random bytes stay as they are, and d is sized from the block itself: its values at
// d = 1 have some rms (grid magnitudes and scales vary widely between types and blocks), which d
// brings to sigma.
void set_iq_grid_block(GgmlType t, uint8_t* block, float sigma) {
    set_iq_grid_d(t, block, f32_to_fp16(1.0f));
    float y[kQKK];
    dequantize_row(t, block, y, kQKK);
    double ss = 0.0;
    for (float v : y) ss += double(v) * v;
    const double rms = std::sqrt(ss / kQKK);
    set_iq_grid_d(t, block, f32_to_fp16(rms > 0.0 ? float(sigma / rms) : sigma));
}

// TQ1_0's packing of base-3 digits (most significant first) into a byte, as llama.cpp's quantizer
// writes it: the digits as a fraction of 3^5, rounded up to 256ths. A byte of 4 digits (qh) holds
// them in its leading 4 positions.
uint8_t tq1_pack(const int* trits, int count) {
    int v = 0;
    for (int n = 0; n < 5; ++n) v = 3 * v + (n < count ? trits[n] : 0);
    return uint8_t((v * 256 + 242) / 243);
}

// Random IQ4 / TQ blocks: the codes of the random bytes as they are for IQ4_NL / IQ4_XS (every byte
// is a valid code pair and scale), uniform codes 0..2 for the ternary types (TQ2_0's code 3 and
// TQ1_0 bytes llama.cpp's quantizer cannot produce would be invalid), and d set so the values have
// about the target spread: kvalues_iq4nl have an rms of 67.4, IQ4_XS group scales (ls - 32, uniform)
// one of 18.5, and uniform {-1, 0, 1} one of 0.816.
void set_iq_tq_block(GgmlType t, uint8_t* block, float sigma, Rng& rng) {
    auto put16 = [&](size_t off, float v) {
        const uint16_t h = f32_to_fp16(v);
        std::memcpy(block + off, &h, 2);
    };
    const auto trit = [&] { return int(rng.next() % 3); };
    switch (t) {
        case GgmlType::IQ4_NL: put16(offsetof(BlockIQ4_NL, d), sigma / 67.4f); break;
        case GgmlType::IQ4_XS: put16(offsetof(BlockIQ4_XS, d), sigma / (67.4f * 18.5f)); break;
        case GgmlType::TQ1_0: {
            auto* b = reinterpret_cast<BlockTQ1_0*>(block);
            int digits[5];
            for (uint8_t& q : b->qs) {
                for (int& d : digits) d = trit();
                q = tq1_pack(digits, 5);
            }
            for (uint8_t& q : b->qh) {
                for (int& d : digits) d = trit();
                q = tq1_pack(digits, 4);
            }
            put16(offsetof(BlockTQ1_0, d), sigma / 0.816f);
            break;
        }
        case GgmlType::TQ2_0: {
            auto* b = reinterpret_cast<BlockTQ2_0*>(block);
            for (uint8_t& q : b->qs) {
                q = 0;
                for (int l = 0; l < 4; ++l) q = uint8_t(q | trit() << (2 * l));
            }
            put16(offsetof(BlockTQ2_0, d), sigma / 0.816f);
            break;
        }
        default:
            if (is_iq_grid(t)) set_iq_grid_block(t, block, sigma);
            break;
    }
}

}  // namespace

void fill_random_rows(GgmlType type, int64_t n_in, int64_t n_rows, float sigma, float mean, uint64_t seed,
                      bool random_blocks, uint8_t* dst) {
    {
        const size_t row_bytes = ggml_row_bytes(type, n_in);
        const GgmlTypeTraits tr = ggml_type_traits(type);
        const int64_t kChunk = 64;  // rows per task
        const int64_t n_chunks = (n_rows + kChunk - 1) / kChunk;
        const unsigned n_threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
        auto work = [&](unsigned tid) {
            std::vector<float> row(static_cast<size_t>(n_in));
            for (int64_t c = tid; c < n_chunks; c += n_threads) {
                Rng rng{mix(seed, uint64_t(c))};
                for (int64_t r = c * kChunk; r < std::min(n_rows, (c + 1) * kChunk); ++r) {
                    uint8_t* out = dst + size_t(r) * row_bytes;
                    const bool quantized = tr.block_elems > 1;
                    if (quantized && (random_blocks || is_kquant(type) || is_iq_tq(type))) {
                        // The quantizer has no K-quant, IQ or TQ encoder: those weights are always
                        // random blocks.
                        for (size_t i = 0; i < row_bytes; i += 8) {
                            const uint64_t v = rng.next();
                            std::memcpy(out + i, &v, std::min<size_t>(8, row_bytes - i));
                        }
                        for (int64_t b = 0; b < n_in / tr.block_elems; ++b) {
                            uint8_t* block = out + size_t(b) * tr.block_bytes;
                            if (is_kquant(type))
                                set_kquant_scales(type, block, sigma);
                            else if (is_iq_tq(type))
                                set_iq_tq_block(type, block, sigma, rng);
                            else
                                set_legacy_scale(type, block, sigma);
                        }
                        continue;
                    }
                    for (auto& x : row) x = mean + sigma * rng.normal();
                    quantize_row(type, row.data(), out, n_in);
                }
            }
        };
        std::vector<std::thread> pool;
        for (unsigned t = 1; t < n_threads; ++t) pool.emplace_back(work, t);
        work(0);
        for (auto& th : pool) th.join();
    }
}

namespace {

// A matrix of n_rows rows of n_in values with standard deviation sigma (mean `mean` for norm gains).
GgufWriter::Fill random_matrix(GgmlType type, int64_t n_in, int64_t n_rows, float sigma, float mean, uint64_t seed,
                               bool random_blocks) {
    return [=](uint8_t* dst) { fill_random_rows(type, n_in, n_rows, sigma, mean, seed, random_blocks, dst); };
}

// GPT-2's byte-to-unicode map: printable bytes stand for themselves, the rest move to U+0100 ...
std::string byte_token(int b) {
    int cp = b;
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    if (!printable) {
        int n = 0;
        for (int x = 0; x < b; ++x) {
            const bool p = (x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF);
            if (!p) ++n;
        }
        cp = 256 + n;
    }
    std::string s;
    if (cp < 0x80) {
        s += char(cp);
    } else {
        s += char(0xC0 | (cp >> 6));
        s += char(0x80 | (cp & 0x3F));
    }
    return s;
}

void write_vocab(GgufWriter& w, int32_t n_vocab, const std::string& pre) {
    std::vector<std::string> tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    std::vector<int32_t> types = {3, 3, 3};  // CONTROL
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(byte_token(b));
        types.push_back(1);
    }
    // Merges of lower-case letter pairs ("t h" -> "th"), and of a space (Ġ) with a letter, so the
    // BPE path has work to do on ordinary text.
    std::vector<std::string> merges;
    const std::string space = byte_token(' ');
    for (char a = 'a'; a <= 'z'; ++a) {
        merges.push_back(space + " " + std::string(1, a));
        tokens.push_back(space + std::string(1, a));
        types.push_back(1);
    }
    for (char a = 'a'; a <= 'z'; ++a)
        for (char b = 'a'; b <= 'z' && int32_t(tokens.size()) < n_vocab; ++b) {
            merges.push_back(std::string(1, a) + " " + std::string(1, b));
            tokens.push_back(std::string(1, a) + std::string(1, b));
            types.push_back(1);
        }
    if (int32_t(tokens.size()) > n_vocab)
        throw Error("random model: n_vocab must be at least " + std::to_string(tokens.size()));
    while (int32_t(tokens.size()) < n_vocab) {
        tokens.push_back("<|reserved_" + std::to_string(tokens.size()) + "|>");
        types.push_back(5);  // UNUSED
    }
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string("tokenizer.ggml.pre", pre);
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", merges);
    w.set_u32("tokenizer.ggml.bos_token_id", 1);
    w.set_u32("tokenizer.ggml.eos_token_id", 2);
    w.set_u32("tokenizer.ggml.padding_token_id", 0);
    w.set_bool("tokenizer.ggml.add_bos_token", false);
}

// Gemma 3's SentencePiece layout (tokenizer model "llama", FACTS.md 7.4) in small: its special
// tokens, the 256 byte tokens <0x00>..<0xFF> (byte fallback), the escaped space U+2581, the lower-case
// letters, each letter after a space ("▁a") and the letter pairs, with scores that make the shorter
// merges win, then unused tokens up to n_vocab. Gemma's flags: BOS added, no dummy space prefix.
void write_spm_vocab(GgufWriter& w, int32_t n_vocab) {
    const std::string space = "\xE2\x96\x81";
    std::vector<std::string> tokens = {"<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>"};
    std::vector<int32_t> types = {3, 3, 3, 2, 3, 3, 3};  // CONTROL, UNKNOWN
    std::vector<float> scores(tokens.size(), -1000.0f);
    static constexpr char hex[] = "0123456789ABCDEF";
    for (int b = 0; b < 256; ++b) {
        tokens.push_back(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
        types.push_back(6);  // BYTE
        scores.push_back(0.0f);
    }
    auto piece = [&](const std::string& text) {
        tokens.push_back(text);
        types.push_back(1);  // NORMAL
        scores.push_back(-float(scores.size()));
    };
    piece(space);
    for (char a = 'a'; a <= 'z'; ++a) piece(std::string(1, a));
    for (char a = 'a'; a <= 'z'; ++a) piece(space + a);
    for (char a = 'a'; a <= 'z'; ++a)
        for (char b = 'a'; b <= 'z' && int32_t(tokens.size()) < n_vocab; ++b) piece(std::string(1, a) + b);
    if (int32_t(tokens.size()) > n_vocab)
        throw Error("random model: n_vocab must be at least " + std::to_string(tokens.size()));
    while (int32_t(tokens.size()) < n_vocab) {
        tokens.push_back("<unused" + std::to_string(tokens.size()) + ">");
        types.push_back(5);  // UNUSED
        scores.push_back(-1000.0f);
    }
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string("tokenizer.ggml.pre", "default");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_f32_array("tokenizer.ggml.scores", scores);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_u32("tokenizer.ggml.bos_token_id", 2);
    w.set_u32("tokenizer.ggml.eos_token_id", 1);
    w.set_u32("tokenizer.ggml.unknown_token_id", 3);
    w.set_u32("tokenizer.ggml.padding_token_id", 0);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    w.set_bool("tokenizer.ggml.add_eos_token", false);
    w.set_bool("tokenizer.ggml.add_space_prefix", false);
}

// Copies every tokenizer.* key of a real GGUF with its own value type (llama.cpp checks the types).
void copy_vocab(GgufWriter& w, const GgufFile& src) {
    bool any = false;
    for (const auto& [key, v] : src.metadata()) {
        if (key.rfind("tokenizer.", 0) != 0) continue;
        any = true;
        const GgufValueType e = v.elem_type;
        if (v.type == GgufValueType::STRING) w.set_string(key, v.s);
        else if (v.type == GgufValueType::BOOL) w.set_bool(key, v.i != 0);
        else if (v.type == GgufValueType::UINT32) w.set_u32(key, uint32_t(v.i));
        else if (v.type == GgufValueType::INT32) w.set_i32(key, int32_t(v.i));
        else if (v.type == GgufValueType::ARRAY && e == GgufValueType::STRING) w.set_string_array(key, v.strings);
        else if (v.type == GgufValueType::ARRAY && e == GgufValueType::INT32)
            w.set_i32_array(key, std::vector<int32_t>(v.ints.begin(), v.ints.end()));
        else if (v.type == GgufValueType::ARRAY && e == GgufValueType::FLOAT32)
            w.set_f32_array(key, std::vector<float>(v.floats.begin(), v.floats.end()));
        else throw Error("--vocab-from: cannot copy '" + key + "' of type " + gguf_value_type_name(v.type));
    }
    if (!any) throw Error("--vocab-from " + src.path() + ": the file has no tokenizer.* keys");
}

// rope_freqs.weight as the Llama 3.1 converter computes it (factor 8, low_freq_factor 1,
// high_freq_factor 4) against an original context of spec.rope_orig_ctx (8192 if unset): pairs of
// short wavelength keep their angle (1), long ones are slowed by the factor, a smooth ramp between.
GgufWriter::Fill llama31_rope_freqs(const RandomLlamaSpec& s, int32_t head_dim) {
    const double factor = 8.0, low = 1.0, high = 4.0, old_ctx = s.rope_orig_ctx > 0 ? s.rope_orig_ctx : 8192;
    std::vector<float> v(size_t(head_dim / 2));
    for (size_t i = 0; i < v.size(); ++i) {
        const double freq = 1.0 / std::pow(double(s.rope_base), 2.0 * double(i) / double(head_dim));
        const double wavelen = 2.0 * M_PI / freq;
        if (wavelen < old_ctx / high) {
            v[i] = 1.0f;
        } else if (wavelen > old_ctx / low) {
            v[i] = float(factor);
        } else {
            const double smooth = (old_ctx / wavelen - low) / (high - low);
            v[i] = float(1.0 / ((1.0 - smooth) / factor + smooth));
        }
    }
    return [v](uint8_t* dst) { std::memcpy(dst, v.data(), v.size() * sizeof(float)); };
}

}  // namespace

GgmlType RandomLlamaSpec::attn_v_type_of(int32_t il) const {
    if (il < 2 && attn_v_first2_type) return *attn_v_first2_type;
    const GgmlType base = attn_v_type.value_or(type);
    return more_bits(il) ? attn_v_more_type.value_or(base) : base;
}

void RandomLlamaSpec::apply_mix(const std::string& mix) {
    attn_v_type = attn_v_more_type = attn_v_first2_type = attn_output_type = std::nullopt;
    ffn_down_type = ffn_down_more_type = attn_qkv_type = std::nullopt;
    if (mix == "pure") return;
    output_type = GgmlType::Q6_K;
    if (mix == "Q3_K_M") {
        // attn_v: Q5_K in the first two layers, Q4_K after; attn_output and fused qkv Q4_K; ffn_down
        // Q5_K in the first sixteenth of the layers, Q4_K after (not Falcon).
        type = GgmlType::Q3_K;
        attn_v_first2_type = GgmlType::Q5_K;
        attn_v_type = attn_output_type = attn_qkv_type = GgmlType::Q4_K;
        ffn_down_type = GgmlType::Q4_K;
        if (n_layer >= 16) throw Error("--mix Q3_K_M: ffn_down's first-sixteenth rule is not modelled past 15 layers");
    } else if (mix == "Q4_K_M" || mix == "Q5_K_M") {
        // attn_v and ffn_down get Q6_K where use_more_bits says so; the fused qkv one step up.
        const bool q4 = mix == "Q4_K_M";
        type = q4 ? GgmlType::Q4_K : GgmlType::Q5_K;
        attn_v_more_type = ffn_down_more_type = GgmlType::Q6_K;
        attn_qkv_type = q4 ? GgmlType::Q5_K : GgmlType::Q6_K;
    } else {
        throw Error("unknown mix '" + mix + "' (pure|Q3_K_M|Q4_K_M|Q5_K_M)");
    }
}

GgmlType RandomLlamaSpec::ffn_down_type_of(int32_t il) const {
    const GgmlType base = ffn_down_type.value_or(type);
    return more_bits(il) ? ffn_down_more_type.value_or(base) : base;
}

RandomLlamaSpec RandomLlamaSpec::smollm2_135m() {
    RandomLlamaSpec s;
    s.name = "random-smollm2-135m";
    s.n_embd = 576;
    s.n_layer = 30;
    s.n_ff = 1536;
    s.n_head = 9;
    s.n_head_kv = 3;
    s.n_vocab = 49152;
    s.n_ctx = 8192;
    s.rope_base = 100000.0f;
    s.tied_output = true;
    s.type = GgmlType::Q4_1;
    s.embd_type = GgmlType::Q8_0;
    return s;
}

RandomLlamaSpec RandomLlamaSpec::llama2_7b() {
    RandomLlamaSpec s;
    s.name = "random-llama2-7b";
    s.n_embd = 4096;
    s.n_layer = 32;
    s.n_ff = 11008;
    s.n_head = 32;
    s.n_head_kv = 32;
    s.n_vocab = 32000;
    s.n_ctx = 4096;
    s.type = GgmlType::Q4_0;
    s.embd_type = GgmlType::Q4_0;
    s.output_type = GgmlType::Q6_K;
    s.random_blocks = true;
    return s;
}

RandomLlamaSpec RandomLlamaSpec::tiny() { return RandomLlamaSpec{}; }

RandomLlamaSpec RandomLlamaSpec::gemma3_270m() {
    RandomLlamaSpec s;
    s.arch = "gemma3";
    s.name = "random-gemma3-270m";
    s.n_embd = 640;
    s.n_layer = 18;
    s.n_ff = 2048;
    s.n_head = 4;
    s.n_head_kv = 1;
    s.head_dim = 256;
    s.n_vocab = 262144;
    s.n_ctx = 32768;
    s.rope_base = 1000000.0f;
    s.rope_base_swa = 10000.0f;
    s.norm_eps = 1e-6f;
    s.sliding_window = 512;
    s.swa_period = 6;
    s.tied_output = true;
    // The types of gemma-3-270m-Q4_K_M.gguf: llama.cpp's Q4_K_M recipe, where rows of 640 (not a
    // multiple of 256) fall back from Q4_K to Q5_0 and from Q6_K to Q8_0.
    s.embd_type = GgmlType::Q8_0;
    s.type = GgmlType::Q5_0;  // attn_q, attn_k, ffn_gate, ffn_up
    s.attn_v_type = GgmlType::Q5_0;
    s.attn_v_more_type = GgmlType::Q8_0;
    s.attn_output_type = GgmlType::Q4_K;
    s.ffn_down_type = GgmlType::Q4_K;
    s.ffn_down_more_type = GgmlType::Q6_K;
    return s;
}

RandomLlamaSpec RandomLlamaSpec::gemma3_tiny() {
    RandomLlamaSpec s = gemma3_270m();
    s.name = "random-gemma3-tiny";
    s.n_embd = 320;  // like 640: a multiple of 32, not of 256
    s.n_layer = 6;
    s.n_ff = 512;
    s.n_head = 2;
    s.n_head_kv = 1;
    s.n_vocab = 1024;
    s.n_ctx = 4096;
    s.sliding_window = 64;
    s.swa_period = 3;
    return s;
}

// The parity presets: attention scores spread by ~2 (q and k entries of 1.4 / sqrt(n_embd)) so that
// positions, and so RoPE and its scaling, decide what each token attends to; and logits spread by
// ~5 nats so that next-token distributions are peaked (a flat one proves little).
static void parity_tune(RandomLlamaSpec& s) {
    s.qk_sigma = 1.4f;
    s.output_norm_gain = 1.7f;
}

RandomLlamaSpec RandomLlamaSpec::llama31_tiny() {
    RandomLlamaSpec s;
    parity_tune(s);
    s.name = "random-llama31-tiny";
    s.rope_base = 500000.0f;
    s.rope_freqs = true;
    // Llama 3.1's factors are defined against its original context (8192); over the few hundred
    // positions of a test, 256 makes them matter as much as they do at 8k.
    s.rope_orig_ctx = 256;
    s.pre = "llama-bpe";
    return s;
}

RandomLlamaSpec RandomLlamaSpec::qwen2_tiny() {
    RandomLlamaSpec s;
    parity_tune(s);
    s.arch = "qwen2";
    s.name = "random-qwen2-tiny";
    s.rope_base = 1000000.0f;
    s.norm_eps = 1e-6f;
    s.qkv_bias = true;
    s.pre = "qwen2";
    return s;
}

RandomLlamaSpec RandomLlamaSpec::qwen2_yarn_tiny() {
    RandomLlamaSpec s = qwen2_tiny();
    s.name = "random-qwen2-yarn-tiny";
    s.rope_scaling = "yarn";
    s.rope_scaling_factor = 4.0f;
    s.rope_orig_ctx = 256;
    return s;
}

RandomLlamaSpec RandomLlamaSpec::qwen3_tiny() {
    RandomLlamaSpec s;
    parity_tune(s);
    s.arch = "qwen3";
    s.name = "random-qwen3-tiny";
    s.head_dim = 128;  // 4 heads of 128 on a 256-wide stream, as Qwen 3's heads are wider than n_embd / n_head
    s.rope_base = 1000000.0f;
    s.norm_eps = 1e-6f;
    s.pre = "qwen2";
    return s;
}

RandomLlamaSpec RandomLlamaSpec::phi3_tiny() {
    RandomLlamaSpec s;
    parity_tune(s);
    s.arch = "phi3";
    // Not "phi3" in the name: llama.cpp gives such models Phi-3's token attributes, which need its SPM
    // special tokens (this vocabulary is byte-level BPE).
    s.name = "random-phi-tiny";
    s.n_rot = 48;
    s.rope_orig_ctx = 512;
    s.rope_attn_factor = 1.1902f;  // sqrt(1 + ln(32) / ln(4096)): Phi-3.5's 128k over 4k
    s.n_head_kv = 4;               // Phi-3 mini has no grouped-query attention
    return s;
}

RandomLlamaSpec RandomLlamaSpec::gemma2_tiny() {
    RandomLlamaSpec s = gemma3_tiny();
    s.arch = "gemma2";
    s.name = "random-gemma2-tiny";
    s.n_head = 4;
    s.n_head_kv = 2;
    s.head_dim = 128;
    s.swa_period = 2;
    s.rope_base = 10000.0f;
    s.rope_base_swa = 10000.0f;
    s.qk_sigma = 1.4f;
    s.attn_softcap = 2.5f;
    s.final_softcap = 8.0f;
    return s;
}

RandomLlamaSpec RandomLlamaSpec::by_name(const std::string& shape) {
    if (shape == "tiny") return tiny();
    if (shape == "smollm2-135m") return smollm2_135m();
    if (shape == "llama2-7b") return llama2_7b();
    if (shape == "gemma3-270m") return gemma3_270m();
    if (shape == "gemma3-tiny") return gemma3_tiny();
    if (shape == "llama31-tiny") return llama31_tiny();
    if (shape == "qwen2-tiny") return qwen2_tiny();
    if (shape == "qwen2-yarn-tiny") return qwen2_yarn_tiny();
    if (shape == "qwen3-tiny") return qwen3_tiny();
    if (shape == "phi3-tiny") return phi3_tiny();
    if (shape == "gemma2-tiny") return gemma2_tiny();
    throw Error("unknown shape '" + shape + "' (" + shape_names() + ")");
}

const char* RandomLlamaSpec::shape_names() {
    return "tiny|smollm2-135m|llama2-7b|gemma3-270m|gemma3-tiny|llama31-tiny|qwen2-tiny|qwen2-yarn-tiny|qwen3-tiny|"
           "phi3-tiny|gemma2-tiny";
}

GgmlType parse_ggml_type(const std::string& name) {
    std::string upper;
    for (char c : name) upper += char(std::toupper(static_cast<unsigned char>(c)));
    std::string choices;
    for (uint32_t raw = 0; raw < 64; ++raw) {
        const GgmlTypeTraits tr = ggml_type_traits(raw);
        if (!tr.known || !tr.supported) continue;
        if (upper == tr.name) return GgmlType(raw);
        choices += (choices.empty() ? "" : ", ") + std::string(tr.name);
    }
    throw Error("unknown or unsupported tensor type '" + name + "' (choose from " + choices + ")");
}

namespace {

bool is_gemma(const RandomLlamaSpec& s) { return s.arch == "gemma2" || s.arch == "gemma3"; }

// The made-up vocabulary of the architecture's tokenizer model, unless a real one is copied
// (write_random_llama does that right after the metadata, from the file it already opened).
void write_any_vocab(GgufWriter& w, const RandomLlamaSpec& s) {
    const int32_t n = s.vocab_tokens > 0 ? s.vocab_tokens : s.n_vocab;
    if (!s.vocab_from.empty()) return;
    if (is_gemma(s)) write_spm_vocab(w, n);
    else write_vocab(w, n, s.pre);
}

// The {arch}.* hyperparameters and the vocabulary.
void write_metadata(GgufWriter& w, const RandomLlamaSpec& s) {
    const std::string a = s.arch;
    const int32_t head_dim = s.key_length();
    w.set_string("general.architecture", a);
    w.set_string("general.name", s.name);
    w.set_u32(a + ".context_length", uint32_t(s.n_ctx));
    w.set_u32(a + ".embedding_length", uint32_t(s.n_embd));
    w.set_u32(a + ".block_count", uint32_t(s.n_layer));
    w.set_u32(a + ".feed_forward_length", uint32_t(s.n_ff));
    w.set_u32(a + ".attention.head_count", uint32_t(s.n_head));
    w.set_u32(a + ".attention.head_count_kv", uint32_t(s.n_head_kv));
    if (s.head_dim > 0) {
        w.set_u32(a + ".attention.key_length", uint32_t(head_dim));
        w.set_u32(a + ".attention.value_length", uint32_t(head_dim));
    }
    w.set_f32(a + ".attention.layer_norm_rms_epsilon", s.norm_eps);
    w.set_f32(a + ".rope.freq_base", s.rope_base);
    if (s.rope_attn_factor != 1.0f) w.set_f32(a + ".rope.scaling.attn_factor", s.rope_attn_factor);
    if (s.attn_softcap > 0.0f) w.set_f32(a + ".attn_logit_softcapping", s.attn_softcap);
    if (s.final_softcap > 0.0f) w.set_f32(a + ".final_logit_softcapping", s.final_softcap);
    auto write_scaling = [&] {
        if (s.rope_scaling.empty()) return;
        w.set_string(a + ".rope.scaling.type", s.rope_scaling);
        w.set_f32(a + ".rope.scaling.factor", s.rope_scaling_factor);
    };
    if (is_gemma(s)) {
        write_scaling();
        // Gemma files carry no rope.dimension_count (every dim rotates) and no vocab_size.
        if (s.sliding_window > 0) {
            w.set_u32(a + ".attention.sliding_window", uint32_t(s.sliding_window));
            w.set_u32(a + ".attention.sliding_window_pattern", uint32_t(s.swa_period));
            w.set_f32(a + ".rope.freq_base_swa", s.rope_base_swa);
        }
        write_any_vocab(w, s);
        return;
    }
    w.set_u32(a + ".rope.dimension_count", uint32_t(s.n_rot > 0 ? s.n_rot : head_dim));
    w.set_u32(a + ".vocab_size", uint32_t(s.n_vocab));
    write_scaling();
    if (s.rope_orig_ctx > 0 && (!s.rope_scaling.empty() || s.arch == "phi3"))
        w.set_u32(a + ".rope.scaling.original_context_length", uint32_t(s.rope_orig_ctx));
    write_any_vocab(w, s);
}

// Phi-3's rope factors, as divisors of the angles: the short ones near 1, the long ones growing to 8
// on the slowest pairs (the shape of Phi-3.5's long factors).
GgufWriter::Fill phi3_rope_factors(int32_t half, bool long_factors) {
    std::vector<float> v(static_cast<size_t>(half));
    for (int32_t i = 0; i < half; ++i) {
        const float t = half > 1 ? float(i) / float(half - 1) : 0.0f;
        v[size_t(i)] = long_factors ? 1.0f + 7.0f * t * t : 1.0f + 0.5f * t;
    }
    return [v](uint8_t* dst) { std::memcpy(dst, v.data(), v.size() * sizeof(float)); };
}

// The spec's shape must make a model the loaders accept.
void check_spec(const RandomLlamaSpec& s) {
    if (!is_gemma(s) && s.arch != "llama" && s.arch != "qwen2" && s.arch != "qwen3" && s.arch != "phi3")
        throw Error("random model: unknown architecture '" + s.arch + "' (llama, qwen2, qwen3, phi3, gemma2, gemma3)");
    if (s.n_head <= 0 || s.n_head_kv <= 0 || s.n_head % s.n_head_kv != 0 || (s.head_dim <= 0 && s.n_embd % s.n_head != 0))
        throw Error("random model: kv heads must divide the heads, and heads the width unless head_dim is set");
    if (is_gemma(s) && s.sliding_window > 0 && s.swa_period < 1) throw Error("random model: swa_period must be >= 1");
}

// Adds random tensors, each from its own stream (the spec's seed mixed with the tensor's name).
//
// Spreads are chosen so activations stay O(1) through the layers (each projection preserves the
// variance of its input) and the logits spread over a few nats, like a trained model's: a flat
// distribution would make top-1 agreement a coin toss between near-equal logits. Gemma's extra norms
// (after the attention and FFN projections, per head on q and k for Gemma 3) keep its activations O(1)
// whatever the matrices' spreads; its embedding rows are multiplied by sqrt(n_embd) on input.
struct TensorAdder {
    GgufWriter& w;
    const RandomLlamaSpec& s;

    void operator()(const std::string& name, GgmlType type, int64_t n_in, int64_t n_out, float sigma, float mean) const {
        const std::vector<int64_t> ne = n_out == 1 ? std::vector<int64_t>{n_in} : std::vector<int64_t>{n_in, n_out};
        w.add_tensor(name, type, ne, random_matrix(type, n_in, n_out, sigma, mean, mix(s.seed, name_hash(name)), s.random_blocks));
    }
};

// The embedding, output head, extra tensors and rope factors (written before the layers).
void add_global_tensors(const TensorAdder& add, int32_t n_rot) {
    const RandomLlamaSpec& s = add.s;
    const bool gemma = is_gemma(s);
    // Gemma: input rows of RMS 1 after the sqrt(n_embd) scaling, like one layer's contribution (the
    // post-norms make each O(1)); the logit spread comes from the output norm's gain instead. With
    // the llama spreads, the current token's own embedding would dominate the final state and its
    // logit every distribution, leaving the layers nothing to decide.
    const float embd_sigma = gemma ? 0.4f / std::sqrt(float(s.n_embd)) : s.tied_output ? 3.0f / std::sqrt(float(s.n_embd)) : 1.0f;
    add("token_embd.weight", s.embd_type, s.n_embd, s.n_vocab, embd_sigma, 0.0f);
    add("output_norm.weight", GgmlType::F32, s.n_embd, 1, gemma ? 0.75f : 0.1f, gemma ? 7.5f : s.output_norm_gain);
    if (!s.tied_output) add("output.weight", s.output_type, s.n_embd, s.n_vocab, 3.0f / std::sqrt(float(s.n_embd)), 0.0f);
    for (const std::string& name : s.extra_tensors) add(name, GgmlType::F32, s.n_embd, 1, 0.1f, 0.0f);
    if (s.rope_freqs) add.w.add_tensor("rope_freqs.weight", GgmlType::F32, {n_rot / 2}, llama31_rope_freqs(s, n_rot));
    if (s.arch == "phi3") {
        add.w.add_tensor("rope_factors_long.weight", GgmlType::F32, {n_rot / 2}, phi3_rope_factors(n_rot / 2, true));
        add.w.add_tensor("rope_factors_short.weight", GgmlType::F32, {n_rot / 2}, phi3_rope_factors(n_rot / 2, false));
    }
}

// Phi-3's one matrix of q, k and v rows (q and k with the attention spread, v without).
void add_fused_qkv(const TensorAdder& add, const std::string& name, int64_t q_dim, int64_t kv_dim) {
    const RandomLlamaSpec& s = add.s;
    const GgmlType t = s.attn_qkv_type_of();
    const uint64_t seed = mix(s.seed, name_hash(name));
    const size_t row = ggml_row_bytes(t, s.n_embd);
    const float in_embd = 1.0f / std::sqrt(float(s.n_embd)), qk = s.qk_sigma * in_embd;
    const bool blocks = s.random_blocks;
    const int64_t n_embd = s.n_embd;
    add.w.add_tensor(name, t, {s.n_embd, q_dim + 2 * kv_dim}, [=](uint8_t* dst) {
        fill_random_rows(t, n_embd, q_dim + kv_dim, qk, 0.0f, seed, blocks, dst);
        fill_random_rows(t, n_embd, kv_dim, in_embd, 0.0f, seed + 1, blocks, dst + size_t(q_dim + kv_dim) * row);
    });
}

void add_layer_tensors(const TensorAdder& add, int32_t il, int32_t head_dim) {
    const RandomLlamaSpec& s = add.s;
    const bool gemma = is_gemma(s), qk_norm = s.arch == "qwen3" || s.arch == "gemma3", phi3 = s.arch == "phi3";
    const int64_t q_dim = int64_t(s.n_head) * head_dim, kv_dim = int64_t(s.n_head_kv) * head_dim;
    const float in_embd = 1.0f / std::sqrt(float(s.n_embd));
    const std::string p = "blk." + std::to_string(il) + ".";
    add(p + "attn_norm.weight", GgmlType::F32, s.n_embd, 1, 0.1f, 1.0f);
    if (phi3) {
        add_fused_qkv(add, p + "attn_qkv.weight", q_dim, kv_dim);
    } else {
        add(p + "attn_q.weight", s.type, s.n_embd, q_dim, s.qk_sigma * in_embd, 0.0f);
        add(p + "attn_k.weight", s.type, s.n_embd, kv_dim, s.qk_sigma * in_embd, 0.0f);
        add(p + "attn_v.weight", s.attn_v_type_of(il), s.n_embd, kv_dim, in_embd, 0.0f);
    }
    add(p + "attn_output.weight", s.attn_output_type_of(), q_dim, s.n_embd, 0.5f / std::sqrt(float(q_dim)), 0.0f);
    add(p + "ffn_norm.weight", GgmlType::F32, s.n_embd, 1, 0.1f, 1.0f);
    if (phi3) {
        add(p + "ffn_up.weight", s.type, s.n_embd, 2 * int64_t(s.n_ff), in_embd, 0.0f);  // gate rows, then up
    } else {
        add(p + "ffn_gate.weight", s.type, s.n_embd, s.n_ff, in_embd, 0.0f);
        add(p + "ffn_up.weight", s.type, s.n_embd, s.n_ff, in_embd, 0.0f);
    }
    add(p + "ffn_down.weight", s.ffn_down_type_of(il), s.n_ff, s.n_embd, 0.5f / std::sqrt(float(s.n_ff)), 0.0f);
    if (s.qkv_bias) {
        // Qwen 2's k bias is large in trained models (it shifts every key alike); here a spread
        // that moves the scores without drowning the q.k term.
        add(p + "attn_q.bias", GgmlType::F32, q_dim, 1, 0.1f, 0.0f);
        add(p + "attn_k.bias", GgmlType::F32, kv_dim, 1, 0.3f, 0.0f);
        add(p + "attn_v.bias", GgmlType::F32, kv_dim, 1, 0.1f, 0.0f);
    }
    if (qk_norm) {
        add(p + "attn_q_norm.weight", GgmlType::F32, head_dim, 1, 0.1f, 1.0f);
        add(p + "attn_k_norm.weight", GgmlType::F32, head_dim, 1, 0.1f, 1.0f);
    }
    if (gemma) {
        add(p + "post_attention_norm.weight", GgmlType::F32, s.n_embd, 1, 0.1f, 1.0f);
        add(p + "post_ffw_norm.weight", GgmlType::F32, s.n_embd, 1, 0.1f, 1.0f);
    }
}

}  // namespace

void write_random_llama(const RandomLlamaSpec& spec, const std::string& path) {
    RandomLlamaSpec s = spec;
    std::unique_ptr<GgufFile> src;  // the real vocabulary's file (--vocab-from)
    if (!s.vocab_from.empty()) {
        src = GgufFile::open(s.vocab_from, GgufTensorData::MAY_BE_TRUNCATED);
        const GgufValue* tokens = src->find("tokenizer.ggml.tokens");
        if (!tokens || tokens->strings.empty()) throw Error("--vocab-from " + s.vocab_from + ": no tokenizer.ggml.tokens");
        s.n_vocab = int32_t(tokens->strings.size());
    }
    check_spec(s);
    const int32_t head_dim = s.key_length(), n_rot = s.n_rot > 0 ? s.n_rot : head_dim;
    GgufWriter w;
    write_metadata(w, s);
    if (src) copy_vocab(w, *src);  // where write_metadata ends with a made-up vocabulary
    for (const auto& [key, v] : s.override_u32) w.set_u32(key, v);
    for (const auto& [key, v] : s.override_string) w.set_string(key, v);
    const TensorAdder add{w, s};
    add_global_tensors(add, n_rot);
    for (int32_t il = 0; il < s.n_layer; ++il) add_layer_tensors(add, il, head_dim);
    for (const std::string& name : s.omit_tensors)
        if (!w.remove_tensor(name)) throw Error("--omit-tensor " + name + ": the model has no tensor of that name");
    w.write(path);
}

std::vector<int32_t> random_tokens(size_t n, uint64_t seed, int32_t n_vocab) {
    std::vector<int32_t> t(n);
    for (auto& x : t) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x = int32_t((seed >> 33) % uint64_t(n_vocab));
    }
    return t;
}

}  // namespace wb
