#pragma once
// whitebox-cli's command line: one command word followed by flags.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/context_policy.h"
#include "kv/kv_types.h"
#include "sampling/sampling_limits.h"
#include "sampling/sampling_params.h"

namespace wb {
class Tokenizer;
}

namespace wb::cli {

struct CliOptions {
    std::string command;               // info | tokenize | generate | chat | template | bench | perplexity | serve
    std::string model;                 // -m; empty = the default model in the cache
    std::string prompt;                // -p TEXT (tokenize, generate)
    bool prompt_given = false;
    int32_t n_predict = 128;           // -n: tokens to generate (generate/chat) or to decode (bench)
    int32_t bench_prompt = 512;        // bench -p: prompt tokens (0: decode only)
    int32_t bench_depth = 0;           // bench -d: tokens already in the context when timing starts
    int32_t repetitions = 3;           // bench -r
    std::string bench_capture = "none";  // bench --capture: observer attached while decoding
    bool chat = false;                 // generate --chat: wrap the prompt in the model's chat template
    std::string chat_template_file;    // --chat-template FILE: a Jinja template instead of the model's
    std::string chat_format;           // --chat-format NAME: a built-in format instead of any template
    std::string messages_file;         // template --messages FILE.json
    std::string tools_file;            // template --tools FILE.json
    bool add_generation_prompt = false;  // template --add-generation-prompt
    std::optional<std::string> bos_token, eos_token;  // template --bos-token / --eos-token
    std::string system;                // --system TEXT
    bool system_given = false;
    std::string backend = "auto";      // --backend cpu|cuda|auto
    int32_t threads = 0;               // --threads; 0 = all cores
    int32_t ctx = 0;                   // --ctx; 0 = model default (capped)
    ContextPolicy context_policy = ContextPolicy::STOP;  // --context-policy stop|shift|trim (generate, chat)
    std::optional<int32_t> keep;       // --keep N: tokens a shift keeps (-1: the whole prompt); default: the
                                       // chat template's prefix with the system prompt, else the BOS
    KvType cache_type_k = KvType::F16; // --cache-type-k f16|q8_0|q4_0
    KvType cache_type_v = KvType::F16; // --cache-type-v f16|q8_0|q4_0
    bool json = false;                 // --json
    int32_t top_candidates = 0;        // --top-candidates N: per-token candidates in generate --json
    std::string dump_attention;        // --dump-attention FILE: captured attention as JSON
    std::string export_trace;          // generate --export-trace FILE: the reply's sampler trace (docs/trace-format.md)
    std::string replay;                // generate --replay FILE: rerun a trace file's prompt, settings and seed
    std::string compare_model;         // generate --compare-model FILE: per-token KL and top-1 flips against it
    int32_t logit_lens = 0;            // --logit-lens K: per-layer top K of the logit lens in generate --json
    bool trace_attention = false;      // --trace-attention: the captured attention rows in --export-trace's file
    bool head_stats = false;           // --head-stats: per-head attention statistics in generate --json
    std::vector<int32_t> layers;       // --layers L,...: layers to capture (default all)
    std::vector<int32_t> heads;        // --heads H,...: query heads to capture (default all)
    SamplingParams sampling;           // --temp, --top-k, ... (--temp 0 = greedy)
    std::vector<std::pair<std::string, float>> logit_bias_text;  // --logit-bias 'TEXT'+B: resolved per model
    bool dry_breakers_given = false;   // the first --dry-sequence-breaker replaces the defaults
    std::string grammar_flag;          // which of --grammar / --grammar-file / --json-schema set sampling.grammar
    std::string text_file;             // perplexity -f FILE
    int32_t top_k = 0;                 // perplexity --top K: the K most likely tokens per position in --json
    std::string save_logits;           // perplexity --save-logits FILE
    std::string kl_base;               // perplexity --kl-base FILE
    std::string host = "127.0.0.1";    // serve --host
    int32_t port = 8080;               // serve --port (0: any free port)
    std::string api_key;               // serve --api-key KEY
    int32_t parallel = 1;              // serve --parallel N: sessions generating at once
    int32_t queue = 16;                // serve --queue N: requests that may wait (one more gets 429)
    int32_t max_body_kib = 4096;       // serve --max-body KIB: larger request bodies get 413
    int32_t request_timeout_s = 30;    // serve --request-timeout S: a request arriving slower gets 408
    std::string remote;                // generate/chat --remote URL: an OpenAI-compatible server runs the model
    std::string remote_model;          // --remote-model NAME (default: the first the server lists)
    std::vector<std::string> flags;    // every flag given, in order (--remote sends only the sampling ones given)
};

// Parses argv; wb::Error with a one-line message on anything unknown or malformed.
CliOptions parse_cli(int argc, char** argv);

std::string usage_text();

// The flags for the samplers that follow llama.cpp (sampler_options.cpp): true if a was one.
// A flag's value as an integer or a finite number in [lo, hi]; else wb::Error naming the flag.
int32_t to_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi);
float to_float(const std::string& flag, const std::string& v, float lo, float hi);
// The same against a sampling setting's range (sampling/sampling_limits.h, shared with trace files).
int32_t to_int(const std::string& flag, const std::string& v, SettingRange r);
float to_float(const std::string& flag, const std::string& v, SettingRange r);
bool parse_sampler_flag(const std::string& a, const std::function<std::string()>& next, CliOptions& o);

// Checks --logit-bias ids against the model's vocabulary and adds the ids of the text entries.
void resolve_logit_bias(const CliOptions& o, const Tokenizer& tok, SamplingParams& p);

}  // namespace wb::cli
