#include "sampling/trace_file.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "sampling/sampling_limits.h"
#include "util/error.h"
#include "util/json_depth.h"
#include "util/same_value.h"

namespace wb {
namespace {

using nlohmann::json;

constexpr int kMaxTraceDepth = 32;

// JSON numbers cannot be NaN or infinite, and nlohmann writes them as null; a trace has NaN thresholds
// (stage off) and -inf logits (banned tokens), so those travel as strings.
json number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
}

// What a bad value was, short: its type and, for a scalar, at most ~60 characters of it. A message
// never carries the whole value (a 100 MB string would go to stderr).
std::string describe(const json& v) {
    if (v.is_structured() || v.is_null()) return v.type_name();
    json shown = v;
    bool cut = false;
    if (v.is_string() && v.get_ref<const std::string&>().size() > 60) {
        shown = v.get_ref<const std::string&>().substr(0, 60);
        cut = true;
    }
    // replace: a cut (or a read) string may end inside a UTF-8 sequence, which dump() would throw on.
    return std::string(v.type_name()) + " " + shown.dump(-1, ' ', false, json::error_handler_t::replace) +
           (cut ? "..." : "");
}

double read_number(const json& v, const std::string& where) {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
        const std::string& s = v.get_ref<const std::string&>();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    throw Error("trace file: " + where + " must be a number (or \"nan\", \"inf\", \"-inf\"), got " + describe(v));
}

// nlohmann's get<T>() converts a float or a bool to an integer silently and wraps a negative number
// into an unsigned one: the kind and the range are checked first.
template <class T>
T read_int(const json& v, const std::string& where, T lo = std::numeric_limits<T>::min(),
           T hi = std::numeric_limits<T>::max()) {
    if (v.is_number_unsigned()) {
        const uint64_t x = v.get<uint64_t>();
        if (std::cmp_greater_equal(x, lo) && std::cmp_less_equal(x, hi)) return static_cast<T>(x);
    } else if (v.is_number_integer()) {
        const int64_t x = v.get<int64_t>();
        if (std::cmp_greater_equal(x, lo) && std::cmp_less_equal(x, hi)) return static_cast<T>(x);
    }
    throw Error("trace file: " + where + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                "], got " + describe(v));
}

const json& member(const json& obj, const char* key, const std::string& where) {
    if (!obj.is_object()) throw Error("trace file: " + where + " must be an object");
    auto it = obj.find(key);
    if (it == obj.end()) throw Error("trace file: " + where + " has no \"" + key + "\"");
    return *it;
}

std::string key_path(const std::string& where, const char* key) {
    return where == "the file" ? std::string(key) : where + "." + key;
}

template <class T>
T int_member(const json& obj, const char* key, const std::string& where) {
    return read_int<T>(member(obj, key, where), key_path(where, key));
}

std::string read_string(const json& v, const std::string& where) {
    if (!v.is_string()) throw Error("trace file: " + where + " must be a string, got " + describe(v));
    return v.get<std::string>();
}

std::string string_member(const json& obj, const char* key, const std::string& where) {
    return read_string(member(obj, key, where), key_path(where, key));
}

bool bool_member(const json& obj, const char* key, const std::string& where) {
    const json& v = member(obj, key, where);
    if (!v.is_boolean()) throw Error("trace file: " + key_path(where, key) + " must be true or false, got " + describe(v));
    return v.get<bool>();
}

const json& array_member(const json& obj, const char* key, const std::string& where) {
    const json& v = member(obj, key, where);
    if (!v.is_array()) throw Error("trace file: " + key_path(where, key) + " must be an array, got " + describe(v));
    return v;
}

std::vector<std::string> strings_member(const json& obj, const char* key, const std::string& where) {
    std::vector<std::string> out;
    const json& a = array_member(obj, key, where);
    for (size_t i = 0; i < a.size(); ++i)
        out.push_back(read_string(a[i], key_path(where, key) + "[" + std::to_string(i) + "]"));
    return out;
}

// A 64-bit seed: the number, or, when the file has it, the decimal string beside it ("<key>_text"),
// which a tool that holds JSON numbers as doubles (JavaScript, QJsonDocument) keeps exact where it
// rounds the number above 2^53. Files written before the string was added have only the number.
uint64_t read_seed(const json& obj, const char* key, const std::string& where) {
    const std::string text_key = std::string(key) + "_text";
    auto it = obj.find(text_key);
    if (it == obj.end()) return int_member<uint64_t>(obj, key, where);
    const std::string s = it->is_string() ? it->get<std::string>() : std::string();
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = s.empty() || s[0] == '-' ? 0 : std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || s[0] == '-' || errno == ERANGE || end != s.c_str() + s.size())
        throw Error("trace file: " + key_path(where, text_key.c_str()) + " must be a decimal 64-bit seed, got " +
                    describe(*it));
    return uint64_t(v);
}

float read_float(const json& obj, const char* key, const std::string& where) {
    return static_cast<float>(read_number(member(obj, key, where), key_path(where, key)));
}

// A text as JSON: nlohmann's dump() throws its own type_error on invalid UTF-8 (a stop string typed
// as raw bytes), which would say neither which field nor why; the file cannot hold such a text.
json utf8_text(const std::string& s, const std::string& field) {
    json j = s;
    try {
        (void)j.dump();
    } catch (const json::type_error&) {
        throw Error("trace file: " + field + " is not valid UTF-8, which a JSON file cannot hold");
    }
    return j;
}

json utf8_texts(const std::vector<std::string>& v, const std::string& field) {
    json a = json::array();
    for (size_t i = 0; i < v.size(); ++i) a.push_back(utf8_text(v[i], field + "[" + std::to_string(i) + "]"));
    return a;
}

json params_json(const SamplingParams& p) {
    json bias = json::array();
    for (const LogitBias& b : p.logit_bias) bias.push_back({{"token", b.token}, {"bias", number(b.bias)}});
    return {{"temperature", number(p.temperature)}, {"top_k", p.top_k}, {"top_p", number(p.top_p)},
            {"min_p", number(p.min_p)}, {"typical_p", number(p.typical_p)},
            {"repeat_penalty", number(p.repeat_penalty)}, {"repeat_last_n", p.repeat_last_n},
            {"frequency_penalty", number(p.frequency_penalty)}, {"presence_penalty", number(p.presence_penalty)},
            {"seed", p.seed}, {"seed_text", std::to_string(p.seed)}, {"max_tokens", p.max_tokens},
            {"stop", utf8_texts(p.stop, "params.stop")}, {"ignore_eos", p.ignore_eos},
            {"samplers", utf8_texts(p.samplers, "params.samplers")}, {"logit_bias", bias}, {"xtc_probability", number(p.xtc_probability)},
            {"xtc_threshold", number(p.xtc_threshold)}, {"top_n_sigma", number(p.top_n_sigma)},
            {"mirostat", p.mirostat}, {"mirostat_tau", number(p.mirostat_tau)},
            {"mirostat_eta", number(p.mirostat_eta)}, {"dry_multiplier", number(p.dry_multiplier)},
            {"dry_base", number(p.dry_base)}, {"dry_allowed_length", p.dry_allowed_length},
            {"dry_penalty_last_n", p.dry_penalty_last_n}, {"dry_sequence_breakers", utf8_texts(p.dry_sequence_breakers, "params.dry_sequence_breakers")},
            {"grammar", utf8_text(p.grammar, "params.grammar")}};
}

SamplingParams read_params(const json& j) {
    const std::string w = "params";
    SamplingParams p;
    p.temperature = read_float(j, "temperature", w);
    p.top_k = int_member<int32_t>(j, "top_k", w);
    p.top_p = read_float(j, "top_p", w);
    p.min_p = read_float(j, "min_p", w);
    p.typical_p = read_float(j, "typical_p", w);
    p.repeat_penalty = read_float(j, "repeat_penalty", w);
    p.repeat_last_n = int_member<int32_t>(j, "repeat_last_n", w);
    p.frequency_penalty = read_float(j, "frequency_penalty", w);
    p.presence_penalty = read_float(j, "presence_penalty", w);
    p.seed = read_seed(j, "seed", w);
    p.max_tokens = int_member<int32_t>(j, "max_tokens", w);
    p.stop = strings_member(j, "stop", w);
    p.ignore_eos = bool_member(j, "ignore_eos", w);
    p.samplers = strings_member(j, "samplers", w);
    const json& bias = array_member(j, "logit_bias", w);
    for (size_t i = 0; i < bias.size(); ++i) {
        const std::string at = "params.logit_bias[" + std::to_string(i) + "]";
        p.logit_bias.push_back({int_member<int32_t>(bias[i], "token", at), read_float(bias[i], "bias", at)});
    }
    p.xtc_probability = read_float(j, "xtc_probability", w);
    p.xtc_threshold = read_float(j, "xtc_threshold", w);
    p.top_n_sigma = read_float(j, "top_n_sigma", w);
    p.mirostat = int_member<int32_t>(j, "mirostat", w);
    p.mirostat_tau = read_float(j, "mirostat_tau", w);
    p.mirostat_eta = read_float(j, "mirostat_eta", w);
    p.dry_multiplier = read_float(j, "dry_multiplier", w);
    p.dry_base = read_float(j, "dry_base", w);
    p.dry_allowed_length = int_member<int32_t>(j, "dry_allowed_length", w);
    p.dry_penalty_last_n = int_member<int32_t>(j, "dry_penalty_last_n", w);
    p.dry_sequence_breakers = strings_member(j, "dry_sequence_breakers", w);
    p.grammar = string_member(j, "grammar", w);
    // The ranges the CLI's flags accept: a file must not give the sampler what no flag could.
    try {
        check_sampling_params(p);
    } catch (const Error& e) {
        throw Error(std::string("trace file: params.") + e.what());
    }
    return p;
}

json engine_json(const TraceEngine& e) {
    return {{"n_ctx", e.n_ctx}, {"cache_type_k", e.cache_type_k}, {"cache_type_v", e.cache_type_v},
            {"context_policy", e.context_policy}, {"keep", e.keep}};
}

// Optional: files written before the engine settings were recorded have none.
TraceEngine read_engine(const json& file) {
    TraceEngine e;
    if (!file.contains("engine")) return e;
    const json& j = file["engine"];
    const std::string w = "engine";
    e.recorded = true;
    e.n_ctx = int_member<int32_t>(j, "n_ctx", w);
    e.cache_type_k = string_member(j, "cache_type_k", w);
    e.cache_type_v = string_member(j, "cache_type_v", w);
    e.context_policy = string_member(j, "context_policy", w);
    e.keep = int_member<int32_t>(j, "keep", w);
    if (e.n_ctx < 0 || e.keep < -1) throw Error("trace file: engine.n_ctx or engine.keep is negative");
    return e;
}

json stage_json(const SamplerStageTrace& s) {
    // Candidates as [id, logit, p] triples: a long trace has thousands of them.
    json top = json::array();
    for (const Candidate& c : s.top_after) top.push_back({c.id, number(c.logit), number(c.p)});
    return {{"stage", utf8_text(s.stage, "a stage name")}, {"n_before", s.n_before}, {"n_after", s.n_after},
            {"detail", utf8_text(s.detail, "the " + s.stage + " stage's detail")},
            {"threshold", number(s.threshold)}, {"p_cutoff", number(s.p_cutoff)}, {"top_after", top}};
}

SamplerStageTrace read_stage(const json& j, const std::string& w) {
    SamplerStageTrace s;
    s.stage = string_member(j, "stage", w);
    s.n_before = int_member<size_t>(j, "n_before", w);
    s.n_after = int_member<size_t>(j, "n_after", w);
    s.detail = string_member(j, "detail", w);
    s.threshold = read_number(member(j, "threshold", w), w + ".threshold");
    s.p_cutoff = read_number(member(j, "p_cutoff", w), w + ".p_cutoff");
    const json& top = array_member(j, "top_after", w);
    for (const json& c : top) {
        if (!c.is_array() || c.size() != 3)
            throw Error("trace file: " + w + ".top_after entries must be [id, logit, p], got " + describe(c) +
                        (c.is_array() ? " of " + std::to_string(c.size()) : ""));
        s.top_after.push_back({read_int<int32_t>(c[0], w + ".top_after id", 0),
                               static_cast<float>(read_number(c[1], w + ".top_after logit")),
                               static_cast<float>(read_number(c[2], w + ".top_after p"))});
    }
    return s;
}

std::string num_text(double v) { return number(v).dump(); }

// The first difference between two records of one stage ("" = none).
std::string stage_difference(const SamplerStageTrace& a, const SamplerStageTrace& b) {
    if (a.n_before != b.n_before) return "n_before " + std::to_string(a.n_before) + " vs " + std::to_string(b.n_before);
    if (a.n_after != b.n_after) return "n_after " + std::to_string(a.n_after) + " vs " + std::to_string(b.n_after);
    if (!same_value(a.threshold, b.threshold)) return "threshold " + num_text(a.threshold) + " vs " + num_text(b.threshold);
    if (!same_value(a.p_cutoff, b.p_cutoff)) return "p_cutoff " + num_text(a.p_cutoff) + " vs " + num_text(b.p_cutoff);
    if (a.top_after.size() != b.top_after.size())
        return "recorded candidates " + std::to_string(a.top_after.size()) + " vs " + std::to_string(b.top_after.size());
    for (size_t i = 0; i < a.top_after.size(); ++i) {
        const Candidate& x = a.top_after[i];
        const Candidate& y = b.top_after[i];
        const std::string at = "candidate " + std::to_string(i) + ": ";
        if (x.id != y.id) return at + "id " + std::to_string(x.id) + " vs " + std::to_string(y.id);
        if (!same_value(x.logit, y.logit)) return at + "logit " + num_text(x.logit) + " vs " + num_text(y.logit);
        if (!same_value(x.p, y.p)) return at + "p " + num_text(x.p) + " vs " + num_text(y.p);
    }
    return {};
}

}  // namespace

std::string write_trace_json(const GenerationTrace& t) {
    json steps = json::array();
    for (const TraceStep& s : t.steps) {
        json stages = json::array();
        for (const SamplerStageTrace& st : s.stages) stages.push_back(stage_json(st));
        steps.push_back({{"token", s.token}, {"stages", stages}});
    }
    json j = {{"format", kTraceFormat}, {"version", kTraceVersion}, {"model_sha256", utf8_text(t.model_sha256, "model_sha256")},
              {"backend", utf8_text(t.backend, "backend")}, {"params", params_json(t.params)}, {"seed_in_use", t.seed_in_use},
              {"seed_in_use_text", std::to_string(t.seed_in_use)}, {"trace_candidates", t.trace_candidates},
              {"prompt", t.prompt}, {"prompt_cached", t.prompt_cached}, {"steps", steps}};
    if (t.engine.recorded) j["engine"] = engine_json(t.engine);
    return j.dump();
}

json parse_trace_text(const std::string& text) {
    if (std::int64_t(text.size()) > kMaxTraceFileBytes)
        throw Error("trace file: " + std::to_string(text.size()) + " bytes, more than the " +
                    std::to_string(kMaxTraceFileBytes >> 20) + " MiB a trace may have");
    // A trace nests 6 deep; far deeper is no trace, and would overflow the stack in nlohmann's
    // recursive destructor and copies (util/json_depth.h).
    if (json_nested_deeper_than(text, kMaxTraceDepth))
        throw Error("trace file: nested deeper than " + std::to_string(kMaxTraceDepth) + " levels; not a trace");
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded()) throw Error("trace file: not valid JSON");
    return j;
}

GenerationTrace read_trace_json(const std::string& text) { return read_trace_value(parse_trace_text(text)); }

GenerationTrace read_trace_value(const json& j) {
    if (string_member(j, "format", "the file") != kTraceFormat)
        throw Error(std::string("trace file: \"format\" is not \"") + kTraceFormat + "\"");
    const int version = int_member<int>(j, "version", "the file");
    if (version != kTraceVersion)
        throw Error("trace file: version " + std::to_string(version) + " is not supported (this build reads " +
                    std::to_string(kTraceVersion) + ")");
    GenerationTrace t;
    t.model_sha256 = string_member(j, "model_sha256", "the file");
    t.backend = string_member(j, "backend", "the file");
    t.engine = read_engine(j);
    t.params = read_params(member(j, "params", "the file"));
    t.seed_in_use = read_seed(j, "seed_in_use", "the file");
    if (j.contains("trace_candidates"))
        t.trace_candidates = read_int<int32_t>(j["trace_candidates"], "trace_candidates", 1, 1 << 20);
    const json& prompt = array_member(j, "prompt", "the file");
    for (size_t i = 0; i < prompt.size(); ++i)
        t.prompt.push_back(read_int<int32_t>(prompt[i], "prompt[" + std::to_string(i) + "]", 0));
    // Optional: files written before it was recorded prefilled their whole prompt (the CLI always does).
    if (j.contains("prompt_cached"))
        t.prompt_cached = read_int<int32_t>(j["prompt_cached"], "prompt_cached", 0, int32_t(t.prompt.size()));
    const json& steps = array_member(j, "steps", "the file");
    for (size_t i = 0; i < steps.size(); ++i) {
        const std::string w = "steps[" + std::to_string(i) + "]";
        TraceStep s;
        s.token = int_member<int32_t>(steps[i], "token", w);
        const json& stages = array_member(steps[i], "stages", w);
        for (size_t k = 0; k < stages.size(); ++k)
            s.stages.push_back(read_stage(stages[k], w + ".stages[" + std::to_string(k) + "]"));
        t.steps.push_back(std::move(s));
    }
    return t;
}

int32_t replay_trace_candidates(const GenerationTrace& t) {
    size_t most = size_t(std::max(t.trace_candidates, 1));
    for (const TraceStep& s : t.steps)
        for (const SamplerStageTrace& st : s.stages) most = std::max(most, st.top_after.size());
    return int32_t(std::min<size_t>(most, 1 << 20));
}

TraceDivergence compare_traces(const GenerationTrace& a, const GenerationTrace& b) {
    TraceDivergence d;
    d.same = false;
    if (a.prompt != b.prompt) {
        d.what = "the prompts differ";
        return d;
    }
    const size_t n = std::min(a.steps.size(), b.steps.size());
    for (size_t i = 0; i < n; ++i) {
        d.step = i;
        const TraceStep& x = a.steps[i];
        const TraceStep& y = b.steps[i];
        for (size_t k = 0; k < std::min(x.stages.size(), y.stages.size()); ++k) {
            d.stage = x.stages[k].stage;
            if (x.stages[k].stage != y.stages[k].stage) {
                d.what = "stage " + x.stages[k].stage + " vs " + y.stages[k].stage;
                return d;
            }
            d.what = stage_difference(x.stages[k], y.stages[k]);
            if (!d.what.empty()) return d;
        }
        d.stage.clear();
        if (x.stages.size() != y.stages.size()) {
            d.what = "stages recorded " + std::to_string(x.stages.size()) + " vs " + std::to_string(y.stages.size());
            return d;
        }
        if (x.token != y.token) {
            d.what = "token " + std::to_string(x.token) + " vs " + std::to_string(y.token);
            return d;
        }
    }
    d.step = n;
    if (a.steps.size() != b.steps.size()) {
        d.what = std::string("trace ") + (a.steps.size() < b.steps.size() ? "A" : "B") + " ends after " +
                 std::to_string(n) + " steps";
        return d;
    }
    return TraceDivergence{};
}

}  // namespace wb
