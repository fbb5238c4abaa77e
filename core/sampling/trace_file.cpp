#include "sampling/trace_file.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <cstring>
#include <nlohmann/json.hpp>

#include "util/error.h"

namespace wb {
namespace {

using nlohmann::json;

// JSON numbers cannot be NaN or infinite, and nlohmann writes them as null; a trace has NaN thresholds
// (stage off) and -inf logits (banned tokens), so those travel as strings.
json number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
}

double read_number(const json& v, const std::string& where) {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    throw Error("trace file: " + where + " must be a number (or \"nan\", \"inf\", \"-inf\"), got " + v.dump());
}

const json& member(const json& obj, const char* key, const std::string& where) {
    if (!obj.is_object()) throw Error("trace file: " + where + " must be an object");
    auto it = obj.find(key);
    if (it == obj.end()) throw Error("trace file: " + where + " has no \"" + key + "\"");
    return *it;
}

template <class T>
T read_as(const json& obj, const char* key, const std::string& where) {
    const json& v = member(obj, key, where);
    try {
        return v.get<T>();
    } catch (const json::exception&) {
        throw Error("trace file: " + where + "." + key + " has the wrong type: " + v.dump());
    }
}

// A 64-bit seed: the number, or, when the file has it, the decimal string beside it ("<key>_text"),
// which a tool that holds JSON numbers as doubles (JavaScript, QJsonDocument) keeps exact where it
// rounds the number above 2^53. Files written before the string was added have only the number.
uint64_t read_seed(const json& obj, const char* key, const std::string& where) {
    const std::string text_key = std::string(key) + "_text";
    auto it = obj.find(text_key);
    if (it == obj.end()) return read_as<uint64_t>(obj, key, where);
    const std::string s = it->is_string() ? it->get<std::string>() : std::string();
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = s.empty() || s[0] == '-' ? 0 : std::strtoull(s.c_str(), &end, 10);
    if (s.empty() || s[0] == '-' || errno == ERANGE || end != s.c_str() + s.size())
        throw Error("trace file: " + where + "." + text_key + " must be a decimal 64-bit seed, got " + it->dump());
    return uint64_t(v);
}

float read_float(const json& obj, const char* key, const std::string& where) {
    return static_cast<float>(read_number(member(obj, key, where), where + "." + key));
}

json params_json(const SamplingParams& p) {
    json bias = json::array();
    for (const LogitBias& b : p.logit_bias) bias.push_back({{"token", b.token}, {"bias", number(b.bias)}});
    return {{"temperature", number(p.temperature)}, {"top_k", p.top_k}, {"top_p", number(p.top_p)},
            {"min_p", number(p.min_p)}, {"typical_p", number(p.typical_p)},
            {"repeat_penalty", number(p.repeat_penalty)}, {"repeat_last_n", p.repeat_last_n},
            {"frequency_penalty", number(p.frequency_penalty)}, {"presence_penalty", number(p.presence_penalty)},
            {"seed", p.seed}, {"seed_text", std::to_string(p.seed)}, {"max_tokens", p.max_tokens}, {"stop", p.stop}, {"ignore_eos", p.ignore_eos},
            {"samplers", p.samplers}, {"logit_bias", bias}, {"xtc_probability", number(p.xtc_probability)},
            {"xtc_threshold", number(p.xtc_threshold)}, {"top_n_sigma", number(p.top_n_sigma)},
            {"mirostat", p.mirostat}, {"mirostat_tau", number(p.mirostat_tau)},
            {"mirostat_eta", number(p.mirostat_eta)}, {"dry_multiplier", number(p.dry_multiplier)},
            {"dry_base", number(p.dry_base)}, {"dry_allowed_length", p.dry_allowed_length},
            {"dry_penalty_last_n", p.dry_penalty_last_n}, {"dry_sequence_breakers", p.dry_sequence_breakers},
            {"grammar", p.grammar}};
}

SamplingParams read_params(const json& j) {
    const std::string w = "params";
    SamplingParams p;
    p.temperature = read_float(j, "temperature", w);
    p.top_k = read_as<int32_t>(j, "top_k", w);
    p.top_p = read_float(j, "top_p", w);
    p.min_p = read_float(j, "min_p", w);
    p.typical_p = read_float(j, "typical_p", w);
    p.repeat_penalty = read_float(j, "repeat_penalty", w);
    p.repeat_last_n = read_as<int32_t>(j, "repeat_last_n", w);
    p.frequency_penalty = read_float(j, "frequency_penalty", w);
    p.presence_penalty = read_float(j, "presence_penalty", w);
    p.seed = read_seed(j, "seed", w);
    p.max_tokens = read_as<int32_t>(j, "max_tokens", w);
    p.stop = read_as<std::vector<std::string>>(j, "stop", w);
    p.ignore_eos = read_as<bool>(j, "ignore_eos", w);
    p.samplers = read_as<std::vector<std::string>>(j, "samplers", w);
    const json& bias = member(j, "logit_bias", w);
    if (!bias.is_array()) throw Error("trace file: params.logit_bias must be an array");
    for (const json& b : bias)
        p.logit_bias.push_back({read_as<int32_t>(b, "token", "params.logit_bias[]"),
                                read_float(b, "bias", "params.logit_bias[]")});
    p.xtc_probability = read_float(j, "xtc_probability", w);
    p.xtc_threshold = read_float(j, "xtc_threshold", w);
    p.top_n_sigma = read_float(j, "top_n_sigma", w);
    p.mirostat = read_as<int32_t>(j, "mirostat", w);
    p.mirostat_tau = read_float(j, "mirostat_tau", w);
    p.mirostat_eta = read_float(j, "mirostat_eta", w);
    p.dry_multiplier = read_float(j, "dry_multiplier", w);
    p.dry_base = read_float(j, "dry_base", w);
    p.dry_allowed_length = read_as<int32_t>(j, "dry_allowed_length", w);
    p.dry_penalty_last_n = read_as<int32_t>(j, "dry_penalty_last_n", w);
    p.dry_sequence_breakers = read_as<std::vector<std::string>>(j, "dry_sequence_breakers", w);
    p.grammar = read_as<std::string>(j, "grammar", w);
    return p;
}

json stage_json(const SamplerStageTrace& s) {
    // Candidates as [id, logit, p] triples: a long trace has thousands of them.
    json top = json::array();
    for (const Candidate& c : s.top_after) top.push_back({c.id, number(c.logit), number(c.p)});
    return {{"stage", s.stage}, {"n_before", s.n_before}, {"n_after", s.n_after}, {"detail", s.detail},
            {"threshold", number(s.threshold)}, {"p_cutoff", number(s.p_cutoff)}, {"top_after", top}};
}

SamplerStageTrace read_stage(const json& j, const std::string& w) {
    SamplerStageTrace s;
    s.stage = read_as<std::string>(j, "stage", w);
    s.n_before = read_as<size_t>(j, "n_before", w);
    s.n_after = read_as<size_t>(j, "n_after", w);
    s.detail = read_as<std::string>(j, "detail", w);
    s.threshold = read_number(member(j, "threshold", w), w + ".threshold");
    s.p_cutoff = read_number(member(j, "p_cutoff", w), w + ".p_cutoff");
    const json& top = member(j, "top_after", w);
    if (!top.is_array()) throw Error("trace file: " + w + ".top_after must be an array");
    for (const json& c : top) {
        if (!c.is_array() || c.size() != 3 || !c[0].is_number_integer())
            throw Error("trace file: " + w + ".top_after entries must be [id, logit, p], got " + c.dump());
        s.top_after.push_back({c[0].get<int32_t>(), static_cast<float>(read_number(c[1], w + ".top_after logit")),
                               static_cast<float>(read_number(c[2], w + ".top_after p"))});
    }
    return s;
}

bool same_bits(double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

std::string num_text(double v) { return number(v).dump(); }

// The first difference between two records of one stage ("" = none).
std::string stage_difference(const SamplerStageTrace& a, const SamplerStageTrace& b) {
    if (a.n_before != b.n_before) return "n_before " + std::to_string(a.n_before) + " vs " + std::to_string(b.n_before);
    if (a.n_after != b.n_after) return "n_after " + std::to_string(a.n_after) + " vs " + std::to_string(b.n_after);
    if (!same_bits(a.threshold, b.threshold)) return "threshold " + num_text(a.threshold) + " vs " + num_text(b.threshold);
    if (!same_bits(a.p_cutoff, b.p_cutoff)) return "p_cutoff " + num_text(a.p_cutoff) + " vs " + num_text(b.p_cutoff);
    if (a.top_after.size() != b.top_after.size())
        return "recorded candidates " + std::to_string(a.top_after.size()) + " vs " + std::to_string(b.top_after.size());
    for (size_t i = 0; i < a.top_after.size(); ++i) {
        const Candidate& x = a.top_after[i];
        const Candidate& y = b.top_after[i];
        const std::string at = "candidate " + std::to_string(i) + ": ";
        if (x.id != y.id) return at + "id " + std::to_string(x.id) + " vs " + std::to_string(y.id);
        if (!same_bits(x.logit, y.logit)) return at + "logit " + num_text(x.logit) + " vs " + num_text(y.logit);
        if (!same_bits(x.p, y.p)) return at + "p " + num_text(x.p) + " vs " + num_text(y.p);
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
    json j = {{"format", kTraceFormat}, {"version", kTraceVersion}, {"model_sha256", t.model_sha256},
              {"backend", t.backend}, {"params", params_json(t.params)}, {"seed_in_use", t.seed_in_use},
              {"seed_in_use_text", std::to_string(t.seed_in_use)},
              {"prompt", t.prompt}, {"prompt_cached", t.prompt_cached}, {"steps", steps}};
    return j.dump();
}

GenerationTrace read_trace_json(const std::string& text) {
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded()) throw Error("trace file: not valid JSON");
    if (read_as<std::string>(j, "format", "the file") != kTraceFormat)
        throw Error(std::string("trace file: \"format\" is not \"") + kTraceFormat + "\"");
    const int version = read_as<int>(j, "version", "the file");
    if (version != kTraceVersion)
        throw Error("trace file: version " + std::to_string(version) + " is not supported (this build reads " +
                    std::to_string(kTraceVersion) + ")");
    GenerationTrace t;
    t.model_sha256 = read_as<std::string>(j, "model_sha256", "the file");
    t.backend = read_as<std::string>(j, "backend", "the file");
    t.params = read_params(member(j, "params", "the file"));
    t.seed_in_use = read_seed(j, "seed_in_use", "the file");
    t.prompt = read_as<std::vector<int32_t>>(j, "prompt", "the file");
    // Optional: files written before it was recorded prefilled their whole prompt (the CLI always does).
    if (j.contains("prompt_cached")) t.prompt_cached = read_as<int32_t>(j, "prompt_cached", "the file");
    const json& steps = member(j, "steps", "the file");
    if (!steps.is_array()) throw Error("trace file: \"steps\" must be an array");
    for (size_t i = 0; i < steps.size(); ++i) {
        const std::string w = "steps[" + std::to_string(i) + "]";
        TraceStep s;
        s.token = read_as<int32_t>(steps[i], "token", w);
        const json& stages = member(steps[i], "stages", w);
        if (!stages.is_array()) throw Error("trace file: " + w + ".stages must be an array");
        for (size_t k = 0; k < stages.size(); ++k)
            s.stages.push_back(read_stage(stages[k], w + ".stages[" + std::to_string(k) + "]"));
        t.steps.push_back(std::move(s));
    }
    return t;
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
