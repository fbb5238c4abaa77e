// make_random_gguf: writes a random-weight GGUF model (llama, qwen2, qwen3, phi3, gemma2 or gemma3) of a given shape
// and type.
//
//   make_random_gguf OUT.gguf [--shape tiny|smollm2-135m|llama2-7b|gemma3-270m|gemma3-tiny] [--type T]
//                    [--embd-type T] [--output-type T] [--tied] [--untied] [--layers N] [--embd N]
//                    [--ff N] [--heads N] [--kv-heads N] [--head-dim N] [--vocab N] [--ctx N]
//                    [--window N] [--swa-period N] [--seed S] [--random-blocks] [--quantize]
//                    [--arch A] [--rope-freqs|--no-rope-freqs] [--rope-scaling none|linear|yarn|NAME]
//                    [--no-rope-scaling]   (no rope.scaling keys; none writes type none and the factor)
//                    [--qkv-bias|--no-qkv-bias] [--extra-tensor NAME]... [--rope-orig-ctx N]
//                    [--attn-softcap X] [--final-softcap X]   (0: not written, the loader's default)
//                    [--rope-factor X]   (rope.scaling.factor, written with --rope-scaling)
//                    [--omit-tensor NAME]... [--set-u32 KEY=N]... [--set-string KEY=TEXT]...
//                    [--vocab-tokens N]   (defective files for refusal tests: a tensor left out,
//                    metadata written over, a tokenizer vocabulary of N entries beside the embedding's)
//                    [--vocab-from FILE.gguf]   (a real vocabulary and chat template: the tokenizer.*
//                    keys of FILE, whose tensor data may be cut off; --vocab becomes its size)
//                    [--mix pure|Q3_K_M|Q4_K_M|Q5_K_M]   (types by role as llama.cpp's mixes choose
//                    them, or every layer matrix in --type with no role of its own: RandomLlamaSpec::apply_mix,
//                    applied after all the other options; the embedding and output keep their types
//                    unless the mix names one)
//
// The shape presets set every field (gemma3-270m: the architecture, metadata and tensor types of
// gemma-3-270m-Q4_K_M.gguf); later options override them. T is a GGUF type name (Q4_0, Q6_K, F16,
// ...); --type sets the matrices without a role-specific type (a gemma3 preset's attn_v, attn_output
// and ffn_down keep theirs). --window 0 turns Gemma's sliding window off. --random-blocks fills
// quantized tensors with random blocks (fast; the 7B preset's default), --quantize quantizes Gaussian
// floats instead (legacy types; K-quants are always blocks).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "random_llama.h"
#include "util/error.h"

namespace {

int to_int(const std::string& opt, const std::string& v) {
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n <= 0 || n > (1L << 30)) throw wb::Error(opt + " needs a positive integer, got '" + v + "'");
    return int(n);
}

// KEY=VALUE of --set-u32 / --set-string.
std::pair<std::string, std::string> key_value(const std::string& opt, const std::string& v) {
    const size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0) throw wb::Error(opt + " needs KEY=VALUE, got '" + v + "'");
    return {v.substr(0, eq), v.substr(eq + 1)};
}

}  // namespace

int main(int argc, char** argv) {
    try {
        if (argc < 2 || std::string(argv[1]) == "--help") {
            std::fprintf(stderr, "usage: make_random_gguf OUT.gguf [--shape %s] [--type T] ...\n"
                                 "(see the top of tests/tools/make_random_gguf.cpp)\n",
                         wb::RandomLlamaSpec::shape_names());
            return argc < 2 ? 2 : 0;
        }
        const std::string out = argv[1];
        wb::RandomLlamaSpec s = wb::RandomLlamaSpec::tiny();
        std::string mix;  // applied after every other option, on the final shape (apply_mix checks it)
        for (int i = 2; i < argc; ++i) {
            const std::string a = argv[i];
            auto next = [&]() -> std::string {
                if (i + 1 >= argc) throw wb::Error("option " + a + " needs a value");
                return argv[++i];
            };
            if (a == "--shape") s = wb::RandomLlamaSpec::by_name(next());
            else if (a == "--type") s.type = wb::parse_ggml_type(next());
            else if (a == "--embd-type") s.embd_type = wb::parse_ggml_type(next());
            else if (a == "--mix") mix = next();
            else if (a == "--output-type") s.output_type = wb::parse_ggml_type(next());
            else if (a == "--tied") s.tied_output = true;
            else if (a == "--untied") s.tied_output = false;
            else if (a == "--layers") s.n_layer = to_int(a, next());
            else if (a == "--embd") s.n_embd = to_int(a, next());
            else if (a == "--ff") s.n_ff = to_int(a, next());
            else if (a == "--heads") s.n_head = to_int(a, next());
            else if (a == "--kv-heads") s.n_head_kv = to_int(a, next());
            else if (a == "--head-dim") s.head_dim = to_int(a, next());
            else if (a == "--vocab") s.n_vocab = to_int(a, next());
            else if (a == "--window") {
                const std::string v = next();
                s.sliding_window = v == "0" ? 0 : to_int(a, v);
            } else if (a == "--swa-period") s.swa_period = to_int(a, next());
            else if (a == "--ctx") s.n_ctx = to_int(a, next());
            else if (a == "--seed") s.seed = std::strtoull(next().c_str(), nullptr, 10);
            else if (a == "--random-blocks") s.random_blocks = true;
            else if (a == "--quantize") s.random_blocks = false;
            else if (a == "--arch") s.arch = next();
            else if (a == "--rope-freqs") s.rope_freqs = true;
            else if (a == "--no-rope-freqs") s.rope_freqs = false;
            else if (a == "--rope-scaling") s.rope_scaling = next();
            else if (a == "--no-rope-scaling") s.rope_scaling.clear();
            else if (a == "--qkv-bias") s.qkv_bias = true;
            else if (a == "--no-qkv-bias") s.qkv_bias = false;
            else if (a == "--extra-tensor") s.extra_tensors.push_back(next());
            else if (a == "--omit-tensor") s.omit_tensors.push_back(next());
            else if (a == "--set-u32") {
                const auto [key, v] = key_value(a, next());
                s.override_u32.emplace_back(key, uint32_t(std::strtoul(v.c_str(), nullptr, 10)));
            } else if (a == "--set-string") s.override_string.push_back(key_value(a, next()));
            else if (a == "--vocab-tokens") s.vocab_tokens = to_int(a, next());
            else if (a == "--vocab-from") s.vocab_from = next();
            else if (a == "--rope-orig-ctx") s.rope_orig_ctx = to_int(a, next());
            else if (a == "--rope-factor") s.rope_scaling_factor = std::strtof(next().c_str(), nullptr);
            else if (a == "--attn-softcap") s.attn_softcap = std::strtof(next().c_str(), nullptr);
            else if (a == "--final-softcap") s.final_softcap = std::strtof(next().c_str(), nullptr);
            else throw wb::Error("unknown option '" + a + "'");
        }
        if (!mix.empty()) s.apply_mix(mix);
        const auto t0 = std::chrono::steady_clock::now();
        wb::write_random_llama(s, out);
        const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("wrote %s (%s %s, %d layers, %d wide) in %.1f s\n", out.c_str(), s.arch.c_str(), s.name.c_str(), s.n_layer,
                    s.n_embd, sec);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "make_random_gguf: error: %s\n", e.what());
        return 1;
    }
}
