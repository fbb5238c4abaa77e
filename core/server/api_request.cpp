#include "server/api_request.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "sampling/grammar/gbnf.h"
#include "sampling/grammar/json_schema.h"
#include "sampling/sampler.h"
#include "util/error.h"
#include "util/json_depth.h"

namespace wb::server {

using nlohmann::json;

std::string error_json(const ApiError& e) {
    json err = {{"message", e.message}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
    if (!e.param.empty()) err["param"] = e.param;
    if (!e.code.empty()) err["code"] = e.code;
    return json{{"error", err}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

ApiError bad(const std::string& param, const std::string& message) {
    return ApiError(400, message, "invalid_request_error", param, "invalid_value");
}

// Typed readers of one optional field: absent or null leaves `out` alone.
class Fields {
public:
    explicit Fields(const json& body) : body_(body) {}

    const json* get(const char* name) const {
        const auto it = body_.find(name);
        return it == body_.end() || it->is_null() ? nullptr : &*it;
    }
    void boolean(const char* name, bool& out) const {
        if (const json* v = get(name)) {
            if (!v->is_boolean()) throw bad(name, std::string("'") + name + "' must be a boolean");
            out = v->get<bool>();
        }
    }
    void number(const char* name, float& out, double lo, double hi) const {
        if (const json* v = get(name)) {
            if (!v->is_number()) throw bad(name, std::string("'") + name + "' must be a number");
            const double x = v->get<double>();
            if (!std::isfinite(x) || x < lo || x > hi) throw bad(name, range_message(name, lo, hi));
            out = float(x);
        }
    }
    // Integers may be written as 5.0 (some clients do) but not 5.5.
    template <typename T>
    void integer(const char* name, T& out, double lo, double hi) const {
        if (const json* v = get(name)) {
            const double x = v->is_number() ? v->get<double>() : NAN;
            if (!v->is_number() || x != std::floor(x)) throw bad(name, std::string("'") + name + "' must be an integer");
            if (x < lo || x > hi) throw bad(name, range_message(name, lo, hi));
            out = T(x);
        }
    }
    // A string or an array of strings (stop, dry_sequence_breakers, samplers).
    bool strings(const char* name, std::vector<std::string>& out, size_t max_count) const {
        const json* v = get(name);
        if (!v) return false;
        out.clear();
        if (v->is_string()) out.push_back(v->get<std::string>());
        else if (v->is_array()) {
            for (const json& s : *v) {
                if (!s.is_string()) throw bad(name, std::string("'") + name + "' must be a string or an array of strings");
                out.push_back(s.get<std::string>());
            }
        } else {
            throw bad(name, std::string("'") + name + "' must be a string or an array of strings");
        }
        if (out.size() > max_count)
            throw bad(name, std::string("'") + name + "' holds at most " + std::to_string(max_count) + " strings");
        return true;
    }

private:
    static std::string range_message(const char* name, double lo, double hi) {
        json j = {lo, hi};
        return std::string("'") + name + "' must be in [" + j[0].dump() + ", " + j[1].dump() + "]";
    }
    const json& body_;
};

std::string message_content(const json& content, size_t i) {
    const std::string param = "messages[" + std::to_string(i) + "].content";
    if (content.is_null()) return {};
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) throw bad(param, "'" + param + "' must be a string or an array of text parts");
    std::string text;
    for (const json& part : content) {
        if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") ||
            !part["text"].is_string())
            throw bad(param, "'" + param + "': only text parts ({\"type\": \"text\", \"text\": ...}) are supported");
        text += part["text"].get<std::string>();
    }
    return text;
}

std::vector<ChatMessage> parse_messages(const json& body) {
    const auto it = body.find("messages");
    if (it == body.end() || it->is_null()) throw bad("messages", "'messages' is required");
    if (!it->is_array() || it->empty()) throw bad("messages", "'messages' must be a non-empty array");
    std::vector<ChatMessage> out;
    for (size_t i = 0; i < it->size(); ++i) {
        const json& m = (*it)[i];
        const std::string param = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) throw bad(param, "'" + param + "' must be an object");
        const auto role = m.find("role");
        if (role == m.end() || !role->is_string() || role->get<std::string>().empty())
            throw bad(param + ".role", "'" + param + ".role' must be a non-empty string");
        // OpenAI's newer name for the system turn; chat templates know only "system".
        std::string r = role->get<std::string>();
        if (r == "developer") r = "system";
        out.push_back({r, message_content(m.value("content", json()), i)});
    }
    return out;
}

std::string parse_prompt(const json& body) {
    const auto it = body.find("prompt");
    if (it == body.end() || it->is_null()) throw bad("prompt", "'prompt' is required");
    if (it->is_string()) return it->get<std::string>();
    if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) return (*it)[0].get<std::string>();
    throw bad("prompt", "'prompt' must be a string (or an array of one string)");
}

// {"15043": -100, "42": false}: OpenAI's token-id keys; false bans the token, as llama-server.
void parse_logit_bias(const Fields& f, SamplingParams& s) {
    const json* v = f.get("logit_bias");
    if (!v) return;
    if (!v->is_object()) throw bad("logit_bias", "'logit_bias' must be an object of token id -> bias");
    s.logit_bias.clear();
    for (auto it = v->begin(); it != v->end(); ++it) {
        const std::string& key = it.key();
        if (key.empty() || key.size() > 9 || key.find_first_not_of("0123456789") != std::string::npos)
            throw bad("logit_bias", "'logit_bias' keys must be token ids, got '" + key + "'");
        float bias = 0.0f;
        if (it->is_boolean() && !it->get<bool>()) bias = -std::numeric_limits<float>::infinity();
        else if (it->is_number() && std::isfinite(it->get<double>()) && std::fabs(it->get<double>()) <= 1e6)
            bias = float(it->get<double>());
        else throw bad("logit_bias", "'logit_bias' values must be numbers in [-1e6, 1e6] (or false to ban)");
        s.logit_bias.push_back({int32_t(std::stol(key)), bias});
    }
}

void parse_sampling(const Fields& f, SamplingParams& s) {
    f.number("temperature", s.temperature, 0.0, 100.0);
    f.number("top_p", s.top_p, 0.0, 1.0);
    f.integer("top_k", s.top_k, -1, 1 << 30);
    f.number("min_p", s.min_p, 0.0, 1.0);
    f.number("typical_p", s.typical_p, 0.0, 1.0);
    f.number("repeat_penalty", s.repeat_penalty, 0.0, 100.0);
    f.integer("repeat_last_n", s.repeat_last_n, -1, 1 << 24);
    f.number("frequency_penalty", s.frequency_penalty, -100.0, 100.0);
    f.number("presence_penalty", s.presence_penalty, -100.0, 100.0);
    int64_t seed = -1;
    f.integer("seed", seed, -1, double(std::numeric_limits<uint32_t>::max()));
    if (f.get("seed")) s.seed = seed < 0 ? SamplingParams::kRandomSeed : uint64_t(seed);
    f.strings("stop", s.stop, kMaxStopStrings);
    for (const std::string& stop : s.stop)
        if (stop.empty()) throw bad("stop", "'stop' strings must not be empty");
    f.boolean("ignore_eos", s.ignore_eos);
    f.number("dry_multiplier", s.dry_multiplier, 0.0, 1e6);
    f.number("dry_base", s.dry_base, 1.0, 1e6);
    f.integer("dry_allowed_length", s.dry_allowed_length, 0, 1 << 24);
    f.integer("dry_penalty_last_n", s.dry_penalty_last_n, -1, 1 << 24);
    f.strings("dry_sequence_breakers", s.dry_sequence_breakers, 64);
    f.number("xtc_probability", s.xtc_probability, 0.0, 1.0);
    f.number("xtc_threshold", s.xtc_threshold, 0.0, 1.0);
    f.number("top_n_sigma", s.top_n_sigma, -1.0, 1000.0);
    f.integer("mirostat", s.mirostat, 0, 2);
    f.number("mirostat_tau", s.mirostat_tau, 0.0, 100.0);
    f.number("mirostat_eta", s.mirostat_eta, 0.0, 100.0);
    std::vector<std::string> samplers;
    if (f.strings("samplers", samplers, 32)) {
        std::string list;
        for (const std::string& name : samplers) list += (list.empty() ? "" : ";") + name;
        try {
            s.samplers = parse_sampler_sequence(list);
        } catch (const Error& e) {
            throw bad("samplers", std::string("'samplers': ") + e.what());
        }
    }
    parse_logit_bias(f, s);
}

void parse_output_options(const Fields& f, const json& body, CompletionRequest& r) {
    f.boolean("stream", r.stream);
    f.boolean("cache_prompt", r.cache_prompt);
    if (const json* so = f.get("stream_options")) {
        if (!so->is_object()) throw bad("stream_options", "'stream_options' must be an object");
        Fields(*so).boolean("include_usage", r.include_usage);
    }
    // max_tokens, OpenAI's newer max_completion_tokens, llama-server's n_predict (-1: no limit).
    for (const char* name : {"max_tokens", "max_completion_tokens", "n_predict"}) {
        int64_t n = 0;
        f.integer(name, n, name[0] == 'n' ? -1 : std::numeric_limits<int32_t>::min(), 1 << 24);
        if (f.get(name) && n <= 0 && !(name[0] == 'n' && n == -1))
            throw bad(name, std::string("'") + name + "' must be at least 1");
        if (f.get(name)) r.max_tokens = n < 0 ? 0 : int32_t(n);
    }
    int32_t n = 1;
    f.integer("n", n, 1, 1e9);
    if (n != 1) throw bad("n", "'n' must be 1: one choice per request");
    if (r.endpoint == Endpoint::CHAT) {
        f.boolean("logprobs", r.logprobs);
        f.integer("top_logprobs", r.top_logprobs, 0, kMaxTopLogprobs);
        if (r.top_logprobs > 0 && !r.logprobs) throw bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    } else {
        // The completions endpoint's logprobs is the number of alternatives.
        f.integer("logprobs", r.top_logprobs, 0, kMaxTopLogprobs);
        r.logprobs = f.get("logprobs") != nullptr;
    }
    if (const json* tools = f.get("tools"); tools && !(tools->is_array() && tools->empty()))
        throw bad("tools", "tools are not supported by this server");
    (void)body;
}

// One of the fields that constrain the reply to a grammar, as the request gave it.
struct Constraint {
    std::string field;    // the field at fault in an error: "grammar", "response_format.json_schema.schema", ...
    const json* value;    // GBNF text (grammar) or a JSON Schema (the others)
    bool is_schema;
};

// response_format: OpenAI's {"type": "text"} (no constraint), {"type": "json_object"} (any JSON
// object; llama-server also takes a "schema" beside it) and {"type": "json_schema", "json_schema":
// {"name", "schema", "strict"}}. A generic object is the schema {"type": "object"}.
std::optional<Constraint> response_format_constraint(const Fields& f) {
    static const json kAnyObject = {{"type", "object"}};
    const json* rf = f.get("response_format");
    if (!rf) return std::nullopt;
    if (!rf->is_object() || !rf->contains("type") || !(*rf)["type"].is_string())
        throw bad("response_format", "'response_format' must be an object with a string 'type'");
    const std::string type = (*rf)["type"].get<std::string>();
    if (type == "text") return std::nullopt;
    if (type == "json_object") {
        const auto schema = rf->find("schema");
        if (schema == rf->end() || schema->is_null()) return Constraint{"response_format", &kAnyObject, true};
        return Constraint{"response_format.schema", &*schema, true};
    }
    if (type != "json_schema")
        throw bad("response_format.type", "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", "
                                          "got \"" + type + "\"");
    const auto wrapper = rf->find("json_schema");
    if (wrapper == rf->end() || !wrapper->is_object())
        throw bad("response_format.json_schema", "'response_format.json_schema' must be an object holding the schema "
                                                 "in 'schema'");
    // name and strict are checked for their types only: the grammar holds the reply to the schema
    // whether or not strict is set.
    if (const auto name = wrapper->find("name"); name != wrapper->end() && !name->is_string())
        throw bad("response_format.json_schema.name", "'response_format.json_schema.name' must be a string");
    if (const auto strict = wrapper->find("strict"); strict != wrapper->end() && !strict->is_null() && !strict->is_boolean())
        throw bad("response_format.json_schema.strict", "'response_format.json_schema.strict' must be a boolean");
    const auto schema = wrapper->find("schema");
    if (schema == wrapper->end() || schema->is_null())
        throw bad("response_format.json_schema.schema", "'response_format.json_schema.schema' is required");
    return Constraint{"response_format.json_schema.schema", &*schema, true};
}

// The reply's grammar from response_format or llama-server's grammar (GBNF text) / json_schema (a
// schema object), compiled and parsed here: a malformed one is a 400 naming its field (with the
// line and column of GBNF, the place in the schema), never an error of a worker mid-request.
void parse_constraint(const Fields& f, CompletionRequest& r) {
    SamplingParams& s = r.sampling;
    std::vector<Constraint> given;
    if (std::optional<Constraint> c = response_format_constraint(f)) given.push_back(*c);
    // An empty grammar is no grammar, as in llama-server.
    if (const json* g = f.get("grammar"); g && !(g->is_string() && g->get<std::string>().empty()))
        given.push_back({"grammar", g, false});
    if (const json* js = f.get("json_schema")) given.push_back({"json_schema", js, true});
    if (given.empty()) return;
    if (given.size() > 1) {
        const std::string first = given[0].field.substr(0, given[0].field.find('.'));
        const std::string second = given[1].field.substr(0, given[1].field.find('.'));
        throw bad(second, "'" + first + "' and '" + second + "' were both given; the reply can follow only one");
    }
    const Constraint& c = given[0];
    if (c.is_schema && !c.value->is_object())
        throw bad(c.field, "'" + c.field + "' must be a JSON Schema object");
    if (!c.is_schema && !c.value->is_string()) throw bad(c.field, "'" + c.field + "' must be a string of GBNF rules");
    try {
        std::string gbnf = c.is_schema ? json_schema_to_gbnf(c.value->dump()) : c.value->get<std::string>();
        parse_gbnf(gbnf);
        s.grammar = std::move(gbnf);
        r.grammar_field = c.field;
    } catch (const Error& e) {
        throw bad(c.field, "'" + c.field + "': " + e.what());
    }
}

}  // namespace

CompletionRequest parse_completion_request(const std::string& body, Endpoint endpoint, const SamplingParams& defaults) {
    if (json_nested_deeper_than(body, kMaxJsonDepth))
        throw ApiError(400, "the request body nests deeper than " + std::to_string(kMaxJsonDepth) + " levels",
                       "invalid_request_error", {}, "invalid_json");
    json j;
    try {
        j = json::parse(body);
    } catch (const json::exception& e) {
        throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what(), "invalid_request_error", {},
                       "invalid_json");
    }
    if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object", "invalid_request_error", {},
                                       "invalid_json");
    CompletionRequest r;
    r.endpoint = endpoint;
    r.sampling = defaults;
    const Fields f(j);
    if (const json* m = f.get("model")) {
        if (!m->is_string()) throw bad("model", "'model' must be a string");
        r.model = m->get<std::string>();
    }
    if (endpoint == Endpoint::CHAT) r.messages = parse_messages(j);
    else r.prompt = parse_prompt(j);
    parse_sampling(f, r.sampling);
    parse_output_options(f, j, r);
    parse_constraint(f, r);
    return r;
}

}  // namespace wb::server
