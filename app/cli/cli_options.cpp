#include "cli/cli_options.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "engine/trace_inspection.h"
#include "util/error.h"

namespace wb::cli {

int32_t to_int(const std::string& flag, const std::string& v, int64_t lo, int64_t hi) {
    errno = 0;
    char* end = nullptr;
    const long long x = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || errno != 0 || x < lo || x > hi)
        throw Error(flag + " expects an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v +
                    "'");
    return int32_t(x);
}

float to_float(const std::string& flag, const std::string& v, float lo, float hi) {
    errno = 0;
    char* end = nullptr;
    const float x = std::strtof(v.c_str(), &end);
    if (v.empty() || *end != '\0' || errno != 0 || !std::isfinite(x) || x < lo || x > hi)
        throw Error(flag + " expects a number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v +
                    "'");
    return x;
}

int32_t to_int(const std::string& flag, const std::string& v, SettingRange r) {
    return to_int(flag, v, int64_t(r.lo), int64_t(r.hi));
}

float to_float(const std::string& flag, const std::string& v, SettingRange r) {
    return to_float(flag, v, float(r.lo), float(r.hi));
}

namespace {

uint64_t to_u64(const std::string& flag, const std::string& v) {
    errno = 0;
    char* end = nullptr;
    const unsigned long long x = std::strtoull(v.c_str(), &end, 10);
    if (v.empty() || v[0] == '-' || *end != '\0' || errno != 0)
        throw Error(flag + " expects a non-negative integer, got '" + v + "'");
    return uint64_t(x);
}

// "0,3,5" -> {0, 3, 5}
std::vector<int32_t> to_int_list(const std::string& flag, const std::string& v) {
    std::vector<int32_t> out;
    size_t start = 0;
    while (start <= v.size()) {
        const size_t comma = std::min(v.find(',', start), v.size());
        out.push_back(to_int(flag, v.substr(start, comma - start), 0, 1 << 20));
        start = comma + 1;
    }
    return out;
}

// A KV cache type name, or wb::Error naming the flag and the accepted names.
KvType cache_type(const std::string& flag, const std::string& v) {
    try {
        return kv_type_from_name(v);
    } catch (const Error& e) {
        throw Error(flag + ": " + e.what());
    }
}

// --replay takes the prompt and every sampling setting from its file; a flag that would change them
// (or the output) is refused rather than silently overridden.
void check_replay_flags(const CliOptions& o) {
    static const std::vector<std::string> allowed = {"-m", "--model", "--replay", "--export-trace", "--backend",
                                                     "--threads", "--ctx", "--cache-type-k", "--cache-type-v",
                                                     "--context-policy", "--keep", "--dump-attention", "--layers",
                                                     "--heads"};
    for (const std::string& f : o.flags)
        if (f.rfind("-", 0) == 0 && std::find(allowed.begin(), allowed.end(), f) == allowed.end())
            throw Error("--replay takes the prompt, settings and seed from the trace file: " + f +
                        " cannot be used with it");
    // The export would replace the trace being replayed by the new run's.
    const auto canonical = [](const std::string& path) {
        std::error_code ec;
        const std::filesystem::path c = std::filesystem::weakly_canonical(path, ec);
        return ec ? std::filesystem::path(path) : c;
    };
    if (!o.export_trace.empty() && canonical(o.export_trace) == canonical(o.replay))
        throw Error("--export-trace " + o.export_trace + " is the file --replay reads; export to another file");
}

}  // namespace

std::string usage_text() {
    return R"(usage: whitebox-cli COMMAND [options]
commands:
  info     [-m MODEL] [--json]            metadata, tensor table with types, memory estimate
  tokenize [-m MODEL] -p TEXT [--json]    token ids and pieces
  generate [-m MODEL] -p TEXT [-n N] [--chat [template]] [--system TEXT] [sampling] [--json [--top-candidates N]
           [--logit-lens K] [--head-stats]]
           [--dump-attention FILE [--layers L,...] [--heads H,...]] [--export-trace FILE [--trace-attention]]
           [--compare-model FILE]  the reply through a second model file: per-token KL and top-1 flips
  generate [-m MODEL] --replay FILE [--export-trace FILE]   rerun a trace file's prompt, settings and seed;
           prints where the new trace first differs (exit 1) or that it is the same
  chat     [-m MODEL] [template] [--system TEXT] [sampling]   interactive terminal chat (/reset, /exit)
           generate and chat: --remote URL [--api-key KEY] [--remote-model NAME]: the model of an
           OpenAI-compatible server (WhiteBox serve, llama.cpp's server, vLLM, Ollama, ...) streamed here;
           URL with or without /v1; generate --chat or chat use /v1/chat/completions, generate alone
           /v1/completions; -n and the sampling flags given (--temp --top-k --top-p --min-p --typical-p
           --repeat-penalty --repeat-last-n --frequency-penalty --presence-penalty --seed --stop) are sent
           generate and chat: --context-policy stop|shift|trim (a full context: end the reply (default);
           drop the oldest half after --keep N tokens and go on (llama.cpp's context shift); chat: drop
           whole old turns and recompute) --keep N (-1: the whole prompt; default: the system prompt)
  template [-m MODEL | --template FILE] --messages FILE.json [--tools FILE.json] [--add-generation-prompt]
           [--bos-token S] [--eos-token S]   print exactly the rendered prompt (messages: a JSON list of
           {"role", "content", "tool_calls"...} as Hugging Face takes them; tools: a JSON list of schemas)
template: the model's own tokenizer.chat_template (Jinja, rendered as Hugging Face does) unless
          --chat-template FILE   a Jinja template file instead
          --chat-format NAME     a built-in format instead: chatml, llama2, llama3, gemma, mistral
          (a file without a template uses the built-in format of its family and says so)
  bench    [-m MODEL] [-p 512] [-n 128] [-d 0] [-r 3] [--capture none|empty|attention|candidates|layers] [--json]
           prefill -p tokens and decode -n tokens with -d tokens already in the context (llama-bench's
           -p/-n/-d; -p 0: decode only); --json gives every repetition
  perplexity [-m MODEL] -f TEXT_FILE [--ctx 512] [--json [--top K]] [--save-logits FILE] [--kl-base FILE]
           perplexity in windows of --ctx (the second half of each scored, as llama-perplexity);
           --save-logits / --kl-base: KL divergence and top-token agreement against another run
  serve    [-m MODEL] [--host 127.0.0.1] [--port 8080] [--api-key KEY] [--parallel 1] [--queue 16]
           [--max-body 4096] [--request-timeout 30] [--ctx N] [template] [sampling]
           an OpenAI-compatible HTTP API (GET /v1/models, POST /v1/chat/completions and /v1/completions,
           GET /health, /metrics); --port 0 picks a free port; a host other than loopback needs --api-key;
           the sampling flags are the defaults of requests that do not set them; --max-body in KiB;
           --request-timeout: seconds for a request's line, headers and body to arrive (else 408),
             and for a client to read the rest of a finished reply (else it is cut)
common: --backend cpu|cuda|auto  --threads N  --ctx N  --version  --help
        --cache-type-k T --cache-type-v T   KV cache element types of keys / values: f16 (default), q8_0,
           q4_0 (llama.cpp's block formats; on the CPU and CUDA backends alike)
sampling: --temp T (0 = greedy) --top-k K --top-p P --min-p P --typical-p P --repeat-penalty R
          --repeat-last-n N --frequency-penalty F --presence-penalty P --seed S --stop STR (repeatable)
          --dry-multiplier M --dry-base B --dry-allowed-length N --dry-penalty-last-n N (-1 = all)
          --dry-sequence-breaker STR (repeatable; none = no breakers) --xtc-probability P --xtc-threshold T
          --mirostat 0|1|2 --mirostat-lr ETA --mirostat-ent TAU --top-nsigma N
          --logit-bias ID(+|-)BIAS or 'TEXT'(+|-)BIAS (repeatable; -inf bans)
          --samplers LIST (';'-separated; default penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature)
          --grammar GBNF, --grammar-file F (llama.cpp's GBNF, from root), --json-schema FILE|JSON: the reply
             must match (one of the three)
          --ignore-eos
-m defaults to the default model in the cache ($WHITEBOX_MODELS or ~/.cache/whitebox/models).
)";
}

namespace {

using NextFn = std::function<std::string()>;

void check_command(const std::string& c) {
    if (c != "info" && c != "tokenize" && c != "generate" && c != "chat" && c != "template" && c != "bench" &&
        c != "perplexity" && c != "serve")
        throw Error("unknown command '" + c +
                    "' (expected info, tokenize, generate, chat, template, bench, perplexity or serve)");
}

// The model and what it is given: the prompt, its length, the chat template and the conversation.
bool parse_input_flag(const std::string& a, const NextFn& next, CliOptions& o) {
    if (a == "-m" || a == "--model") o.model = next();
    else if (a == "-p" || a == "--prompt") {
        const std::string v = next();
        if (o.command == "bench") o.bench_prompt = to_int(a, v, 0, 1 << 20);
        else { o.prompt = v; o.prompt_given = true; }
    }
    else if (a == "-n" || a == "--n-predict") o.n_predict = to_int(a, next(), sampling_range::max_tokens);
    else if (a == "--chat") o.chat = true;
    else if (a == "--chat-template" || (a == "--template" && o.command == "template")) o.chat_template_file = next();
    else if (a == "--messages") o.messages_file = next();
    else if (a == "--tools") o.tools_file = next();
    else if (a == "--add-generation-prompt") o.add_generation_prompt = true;
    else if (a == "--bos-token") o.bos_token = next();
    else if (a == "--eos-token") o.eos_token = next();
    else if (a == "--chat-format") o.chat_format = next();
    else if (a == "--system") { o.system = next(); o.system_given = true; }
    else return false;
    return true;
}

// How the engine runs: the backend, threads, the context and its cache.
bool parse_engine_flag(const std::string& a, const NextFn& next, CliOptions& o) {
    if (a == "--backend") o.backend = next();
    else if (a == "--threads" || a == "-t") o.threads = to_int(a, next(), 1, 1024);
    else if (a == "--ctx" || a == "-c") o.ctx = to_int(a, next(), 16, 1 << 24);
    else if (a == "--context-policy") o.context_policy = parse_context_policy(next());
    else if (a == "--keep") o.keep = to_int(a, next(), -1, 1 << 24);
    else if (a == "--cache-type-k") o.cache_type_k = cache_type(a, next());
    else if (a == "--cache-type-v") o.cache_type_v = cache_type(a, next());
    else return false;
    return true;
}

// What generate writes besides the reply (JSON, inspection captures, traces, a comparison).
bool parse_output_flag(const std::string& a, const NextFn& next, CliOptions& o) {
    if (a == "--json") o.json = true;
    else if (a == "--top-candidates") o.top_candidates = to_int(a, next(), 0, 1000);
    else if (a == "--dump-attention") o.dump_attention = next();
    else if (a == "--export-trace" && o.command == "generate") o.export_trace = next();
    else if (a == "--replay" && o.command == "generate") o.replay = next();
    else if (a == "--compare-model" && o.command == "generate") o.compare_model = next();
    else if (a == "--logit-lens") o.logit_lens = to_int(a, next(), 1, wb::kMaxLensTop);
    else if (a == "--head-stats") o.head_stats = true;
    else if (a == "--trace-attention" && o.command == "generate") o.trace_attention = true;
    else if (a == "--layers") o.layers = to_int_list(a, next());
    else if (a == "--heads") o.heads = to_int_list(a, next());
    else return false;
    return true;
}

// The common sampling settings (llama.cpp's further samplers are parse_sampler_flag's).
bool parse_basic_sampling_flag(const std::string& a, const NextFn& next, CliOptions& o) {
    SamplingParams& s = o.sampling;
    if (a == "--temp") s.temperature = to_float(a, next(), sampling_range::temperature);
    else if (a == "--top-k") s.top_k = to_int(a, next(), sampling_range::top_k);
    else if (a == "--top-p") s.top_p = to_float(a, next(), sampling_range::probability);
    else if (a == "--min-p") s.min_p = to_float(a, next(), sampling_range::probability);
    else if (a == "--typical-p") s.typical_p = to_float(a, next(), sampling_range::probability);
    else if (a == "--repeat-penalty") s.repeat_penalty = to_float(a, next(), sampling_range::repeat_penalty);
    else if (a == "--repeat-last-n") s.repeat_last_n = to_int(a, next(), sampling_range::window);
    else if (a == "--frequency-penalty") s.frequency_penalty = to_float(a, next(), sampling_range::count_penalty);
    else if (a == "--presence-penalty") s.presence_penalty = to_float(a, next(), sampling_range::count_penalty);
    else if (a == "--seed") s.seed = to_u64(a, next());
    else if (a == "--stop") s.stop.push_back(next());
    else if (a == "--ignore-eos") s.ignore_eos = true;
    else return false;
    return true;
}

// bench's and perplexity's own flags.
bool parse_measure_flag(const std::string& a, const NextFn& next, CliOptions& o) {
    if ((a == "-d" || a == "--depth") && o.command == "bench") o.bench_depth = to_int(a, next(), 0, 1 << 20);
    else if (a == "-r" || a == "--repetitions") o.repetitions = to_int(a, next(), 1, 1000);
    else if (a == "--capture") {
        o.bench_capture = next();
        if (o.bench_capture != "none" && o.bench_capture != "empty" && o.bench_capture != "attention" &&
            o.bench_capture != "candidates" && o.bench_capture != "layers")
            throw Error("--capture expects none, empty, attention, candidates or layers, got '" + o.bench_capture + "'");
    }
    else if (a == "-f" || a == "--file") o.text_file = next();
    else if (a == "--top") o.top_k = to_int(a, next(), 0, 1000);
    else if (a == "--save-logits") o.save_logits = next();
    else if (a == "--kl-base") o.kl_base = next();
    else return false;
    return true;
}

// The network: serve's address and limits, and the server generate and chat --remote talk to.
bool parse_network_flag(const std::string& a, const NextFn& next, CliOptions& o) {
    const bool serve = o.command == "serve", client = o.command == "generate" || o.command == "chat";
    if (a == "--host" && serve) o.host = next();
    else if (a == "--port" && serve) o.port = to_int(a, next(), 0, 65535);
    else if (a == "--api-key" && (serve || client)) o.api_key = next();
    else if (a == "--remote" && client) {
        o.remote = next();
        if (o.remote.empty()) throw Error("--remote expects the server's URL, got ''");
    }
    else if (a == "--remote-model" && client) o.remote_model = next();
    else if (a == "--parallel" && serve) o.parallel = to_int(a, next(), 1, 64);
    else if (a == "--queue" && serve) o.queue = to_int(a, next(), 0, 4096);
    else if (a == "--max-body" && serve) o.max_body_kib = to_int(a, next(), 1, 1 << 20);
    else if (a == "--request-timeout" && serve) o.request_timeout_s = to_int(a, next(), 1, 3600);
    else return false;
    return true;
}

// What the flags need of each other and of the command, once all are read.
void check_combinations(const CliOptions& o) {
    if (o.remote.empty() && o.command != "serve" && (!o.api_key.empty() || !o.remote_model.empty()))
        throw Error(std::string(o.api_key.empty() ? "--remote-model" : "--api-key") + " needs --remote URL");
    if ((o.command == "tokenize" || o.command == "generate") && !o.prompt_given && o.replay.empty())
        throw Error(o.command + " needs a prompt: -p TEXT");
    if (!o.compare_model.empty() && !o.replay.empty()) throw Error("--compare-model and --replay exclude each other");
    if (!o.replay.empty()) check_replay_flags(o);
    if (o.trace_attention && o.export_trace.empty())
        throw Error("--trace-attention adds the attention rows to --export-trace's file: give --export-trace FILE");
#ifndef WB_HAVE_TRACE_FILE
    if (!o.export_trace.empty() || !o.replay.empty())
        throw Error("this whitebox-cli was built without JSON support (nlohmann-json): no --export-trace or --replay");
#endif
    // Accepted by the shared sampler flags, but only generate and chat draw replies under it (serve
    // would silently constrain every request, bench and perplexity would ignore it).
    if (!o.grammar_flag.empty() && o.command != "generate" && o.command != "chat")
        throw Error(o.grammar_flag + " is for generate and chat; " + o.command + " does not take a grammar");
    if (!o.chat_template_file.empty() && !o.chat_format.empty())
        throw Error("--chat-template and --chat-format exclude each other");
    if (o.command == "template" && o.messages_file.empty())
        throw Error("template needs the conversation: --messages FILE.json");
    if (o.command == "perplexity" && o.text_file.empty()) throw Error("perplexity needs a text file: -f TEXT_FILE");
    if ((o.logit_lens > 0 || o.head_stats) && (o.command != "generate" || !o.json))
        throw Error(std::string(o.logit_lens > 0 ? "--logit-lens" : "--head-stats") + " adds to generate --json: use it "
                    "with generate and --json");
}

}  // namespace

CliOptions parse_cli(int argc, char** argv) {
    CliOptions o;
    if (argc < 2) throw Error("no command given (try --help)");
    o.command = argv[1];
    check_command(o.command);
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        o.flags.push_back(a);
        const NextFn next = [&]() -> std::string {
            if (i + 1 >= argc) throw Error(a + " needs a value");
            return argv[++i];
        };
        if (!parse_input_flag(a, next, o) && !parse_engine_flag(a, next, o) && !parse_output_flag(a, next, o) &&
            !parse_basic_sampling_flag(a, next, o) && !parse_measure_flag(a, next, o) &&
            !parse_network_flag(a, next, o) && !parse_sampler_flag(a, next, o))
            throw Error("unknown option '" + a + "' for " + o.command + " (try --help)");
    }
    check_combinations(o);
    return o;
}

}  // namespace wb::cli
