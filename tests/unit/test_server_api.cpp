// The server's request parser and response formats (core/server/api_*), without a model or HTTP:
// every field the server reads lands in the request with the right value, every malformed or
// out-of-range field is a 400 naming it, and the responses have OpenAI's shapes.
// Plain executable (label unit): PASS/FAIL lines, exit status 1 on any failure.
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "sampling/grammar/gbnf.h"
#include "sampling/grammar/grammar_matcher.h"
#include "server/api_request.h"
#include "server/api_response.h"
#include "server/loopback.h"
#include "server/memory_budget.h"
#include "util/error.h"

using namespace wb;
using namespace wb::server;
using nlohmann::json;

namespace {

int g_failures = 0;

void report(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
    if (!ok) ++g_failures;
}

CompletionRequest chat(const std::string& body) { return parse_completion_request(body, Endpoint::CHAT); }

// The ApiError a body gives (status 0: none).
ApiError error_of(const std::string& body, Endpoint e = Endpoint::CHAT) {
    try {
        parse_completion_request(body, e);
    } catch (const ApiError& err) {
        return err;
    }
    return ApiError(0, "accepted");
}

void expect_400(const std::string& what, const std::string& body, const std::string& param,
                Endpoint e = Endpoint::CHAT) {
    const ApiError err = error_of(body, e);
    report(err.status == 400 && err.param == param && !err.message.empty(),
           what + " -> 400 on '" + param + "' (got " + std::to_string(err.status) + " '" + err.param + "': " +
               err.message + ")");
}

const std::string kMsg = R"("messages": [{"role": "user", "content": "hi"}])";

void fields_are_read() {
    const CompletionRequest r = chat("{" + kMsg + R"(, "model": "m", "temperature": 0.5, "top_p": 0.9, "top_k": 7,
        "min_p": 0.1, "seed": 123, "stop": ["a", "b"], "max_tokens": 33, "frequency_penalty": 0.25,
        "presence_penalty": -0.5, "repeat_penalty": 1.1, "repeat_last_n": 32, "logit_bias": {"15": -2, "16": false},
        "dry_multiplier": 0.8, "dry_base": 2, "dry_allowed_length": 3, "dry_penalty_last_n": -1,
        "dry_sequence_breakers": ["x"], "xtc_probability": 0.5, "xtc_threshold": 0.2, "top_n_sigma": 1.5,
        "mirostat": 2, "mirostat_tau": 4, "mirostat_eta": 0.2, "typical_p": 0.7, "samplers": ["top_k", "temperature"],
        "stream": true, "stream_options": {"include_usage": true}, "logprobs": true, "top_logprobs": 20,
        "ignore_eos": true, "cache_prompt": true, "user": "unknown fields are ignored", "n": 1})");
    const SamplingParams& s = r.sampling;
    report(r.model == "m" && r.messages.size() == 1 && r.messages[0].role == "user" && r.messages[0].content == "hi",
           "model and messages");
    report(s.temperature == 0.5f && s.top_p == 0.9f && s.top_k == 7 && s.min_p == 0.1f && s.seed == 123 &&
               s.stop == std::vector<std::string>{"a", "b"} && r.max_tokens == 33,
           "temperature, top_p, top_k, min_p, seed, stop, max_tokens");
    report(s.frequency_penalty == 0.25f && s.presence_penalty == -0.5f && s.repeat_penalty == 1.1f &&
               s.repeat_last_n == 32,
           "penalties");
    report(s.logit_bias.size() == 2 && s.logit_bias[0].token == 15 && s.logit_bias[0].bias == -2.0f &&
               s.logit_bias[1].token == 16 && std::isinf(s.logit_bias[1].bias) && s.logit_bias[1].bias < 0,
           "logit_bias (false bans)");
    report(s.dry_multiplier == 0.8f && s.dry_base == 2.0f && s.dry_allowed_length == 3 && s.dry_penalty_last_n == -1 &&
               s.dry_sequence_breakers == std::vector<std::string>{"x"},
           "DRY under llama-server's names");
    report(s.xtc_probability == 0.5f && s.xtc_threshold == 0.2f && s.top_n_sigma == 1.5f && s.mirostat == 2 &&
               s.mirostat_tau == 4.0f && s.mirostat_eta == 0.2f && s.typical_p == 0.7f && s.ignore_eos,
           "XTC, top-n-sigma, Mirostat, typical, ignore_eos");
    report(s.samplers == std::vector<std::string>{"top_k", "temperature"}, "samplers");
    report(r.stream && r.include_usage && r.logprobs && r.top_logprobs == 20, "stream, usage, logprobs");
    report(r.cache_prompt, "cache_prompt (llama-server's)");

    SamplingParams defaults;
    defaults.temperature = 0.3f;
    defaults.top_k = 5;
    const CompletionRequest d = parse_completion_request("{" + kMsg + R"(, "top_k": 9})", Endpoint::CHAT, defaults);
    report(d.sampling.temperature == 0.3f && d.sampling.top_k == 9 && d.max_tokens == 0 && !d.stream && !d.cache_prompt,
           "unset fields keep the server's defaults");
    const CompletionRequest seeded = chat("{" + kMsg + R"(, "seed": -1, "max_tokens": null})");
    report(seeded.sampling.seed == SamplingParams::kRandomSeed && seeded.max_tokens == 0, "seed -1 = random, null = unset");
    const CompletionRequest parts =
        chat(R"({"messages": [{"role": "developer", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                              {"role": "assistant", "content": null}]})");
    report(parts.messages.size() == 2 && parts.messages[0].role == "system" && parts.messages[0].content == "ab" &&
               parts.messages[1].content.empty(),
           "text parts join, developer is system, null content is empty");
    const CompletionRequest c =
        parse_completion_request(R"({"prompt": ["once"], "logprobs": 3, "stop": "x", "n_predict": -1})", Endpoint::COMPLETION);
    report(c.prompt == "once" && c.logprobs && c.top_logprobs == 3 && c.sampling.stop == std::vector<std::string>{"x"} &&
               c.max_tokens == 0,
           "completions: prompt, integer logprobs, one stop string, n_predict -1");
    report(chat("{" + kMsg + R"(, "max_tokens": 4.0})").max_tokens == 4, "an integer written as 4.0");
}

void bad_requests_are_400() {
    const ApiError bad_json = error_of(R"({"messages": [)");
    report(bad_json.status == 400 && bad_json.code == "invalid_json", "malformed JSON -> 400 invalid_json");
    report(error_of("[1]").status == 400 && error_of("").status == 400 && error_of("\"x\"").status == 400,
           "a body that is not an object -> 400");
    expect_400("no messages", "{}", "messages");
    expect_400("empty messages", R"({"messages": []})", "messages");
    expect_400("messages not an array", R"({"messages": "hi"})", "messages");
    expect_400("a message not an object", R"({"messages": [5]})", "messages[0]");
    expect_400("a message without a role", R"({"messages": [{"content": "x"}]})", "messages[0].role");
    expect_400("an image part", R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})",
               "messages[0].content");
    expect_400("content a number", R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content");
    const std::vector<std::pair<std::string, std::string>> fields = {
        {"temperature", "\"hot\""}, {"temperature", "-1"}, {"temperature", "1000"}, {"top_p", "1.5"},
        {"top_k", "2.5"}, {"top_k", "true"}, {"min_p", "-0.1"}, {"seed", "1.5"}, {"seed", "-2"},
        {"stop", "5"}, {"stop", "[1]"}, {"stop", "[\"\"]"}, {"stop", "[\"a\",\"b\",\"c\",\"d\",\"e\",\"f\",\"g\",\"h\","
        "\"i\",\"j\",\"k\",\"l\",\"m\",\"n\",\"o\",\"p\",\"q\"]"}, {"max_tokens", "-5"}, {"max_tokens", "0"},
        {"max_tokens", "\"10\""}, {"max_tokens", "1e30"}, {"max_completion_tokens", "0"}, {"n_predict", "-2"},
        {"frequency_penalty", "\"x\""}, {"presence_penalty", "1e9"}, {"repeat_penalty", "-1"},
        {"logit_bias", "[1]"}, {"logit_bias", "{\"abc\": 1}"}, {"logit_bias", "{\"1\": \"x\"}"},
        {"logit_bias", "{\"1\": true}"}, {"logit_bias", "{\"99999999999\": 1}"}, {"mirostat", "3"},
        {"samplers", "[\"nope\"]"}, {"dry_sequence_breakers", "{}"}, {"stream", "\"yes\""}, {"cache_prompt", "1"}, {"stream_options", "1"},
        {"logprobs", "1"}, {"top_logprobs", "21"}, {"top_logprobs", "-1"}, {"n", "2"}, {"model", "5"},
        {"tools", "[{\"type\": \"function\"}]"}};
    for (const auto& [name, value] : fields)
        expect_400(name + " = " + value, "{" + kMsg + ", \"" + name + "\": " + value + "}", name);
    // A million nested objects would overflow the stack when the value is copied: refused unparsed.
    std::string deep = R"({"messages": [{"role": "user", "content": )";
    for (int i = 0; i < 1000000; ++i) deep += "{\"\":";
    deep += "1" + std::string(1000000, '}') + "}]}";
    const ApiError deep_err = error_of(deep);
    report(deep_err.status == 400 && deep_err.code == "invalid_json", "a body nested a million deep -> 400");
    const std::string brackets = R"({"messages": [{"role": "user", "content": ")" + std::string(1000, '[') + "\"}]}";
    report(chat(brackets).messages[0].content == std::string(1000, '['), "brackets inside a string are text");
    expect_400("top_logprobs without logprobs", "{" + kMsg + ", \"top_logprobs\": 3}", "top_logprobs");
    expect_400("no prompt", "{}", "prompt", Endpoint::COMPLETION);
    expect_400("a prompt of token ids", R"({"prompt": [1, 2]})", "prompt", Endpoint::COMPLETION);
    expect_400("completions logprobs over 20", R"({"prompt": "x", "logprobs": 21})", "logprobs", Endpoint::COMPLETION);
}

// Whether the whole text matches a grammar (the request's compiled one).
bool grammar_matches(const std::string& gbnf, const std::string& text) {
    GrammarMatcher m(std::make_shared<Grammar>(parse_gbnf(gbnf)));
    if (!m.allows(text)) return false;
    m.accept(text);
    return m.complete();
}

const std::string kSchema = R"({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})";

// Each way of asking for a grammar lands in sampling.grammar as GBNF that holds the reply to it.
void constraints_are_compiled() {
    const std::string text = chat("{" + kMsg + R"(, "response_format": {"type": "text"}})").sampling.grammar;
    report(text.empty() && chat("{" + kMsg + "}").sampling.grammar.empty() &&
               chat("{" + kMsg + R"(, "grammar": ""})").sampling.grammar.empty(),
           "response_format text, no field, or an empty grammar: no grammar");
    const std::string object = chat("{" + kMsg + R"(, "response_format": {"type": "json_object"}})").sampling.grammar;
    report(grammar_matches(object, R"({"a": [1, "x", null], "b": {"c": true}})") && grammar_matches(object, "{}") &&
               !grammar_matches(object, "[1]") && !grammar_matches(object, "\"x\"") && !grammar_matches(object, "{\"a\":}"),
           "json_object: any JSON object, nothing else");
    const std::vector<std::pair<std::string, std::string>> forms = {
        {"response_format json_schema", R"("response_format": {"type": "json_schema", "json_schema": {"name": "r",
            "strict": true, "schema": )" + kSchema + "}}"},
        {"response_format json_object with llama-server's schema", R"("response_format": {"type": "json_object",
            "schema": )" + kSchema + "}"},
        {"llama-server's json_schema", R"("json_schema": )" + kSchema},
        {"llama-server's grammar (GBNF)", R"("grammar": "root ::= \"{\\\"ok\\\": \" (\"true\" | \"false\") \"}\""
            )"}};
    for (const auto& [what, field] : forms) {
        const std::string g = chat("{" + kMsg + ", " + field + "}").sampling.grammar;
        report(grammar_matches(g, R"({"ok": true})") && !grammar_matches(g, R"({"ok": 1})") && !grammar_matches(g, "{}"),
               what + ": {\"ok\": true} and nothing like {\"ok\": 1}");
    }
    const CompletionRequest c =
        parse_completion_request(R"({"prompt": "x", "grammar": "root ::= \"yes\" | \"no\""})", Endpoint::COMPLETION);
    report(grammar_matches(c.sampling.grammar, "no") && !grammar_matches(c.sampling.grammar, "maybe"),
           "completions take a grammar too");
}

// A malformed grammar or schema, or two at once, is a 400 naming the field, with where it went wrong.
void bad_constraints_are_400() {
    const std::vector<std::tuple<std::string, std::string, std::string, std::string>> cases = {
        // what, fields, param, a part of the message
        {"grammar and json_schema", R"("grammar": "root ::= \"a\"", "json_schema": {})", "json_schema", "both"},
        {"response_format and grammar", R"("response_format": {"type": "json_object"}, "grammar": "root ::= \"a\"")",
         "grammar", "'response_format' and 'grammar'"},
        {"response_format and json_schema", R"("response_format": {"type": "json_schema", "json_schema": {"schema": {}}},
            "json_schema": {})", "json_schema", "only one"},
        {"an undefined rule", R"("grammar": "root ::= item\nitem ::= \"a\" other")", "grammar", "line 2, column"},
        {"an unclosed quote", R"("grammar": "root ::= \"abc")", "grammar", "line 1, column"},
        {"no root rule", R"("grammar": "item ::= \"a\"")", "grammar", "root"},
        {"left recursion", R"("grammar": "root ::= root \"a\" | \"b\"")", "grammar", "root"},
        {"a rule that never finishes", R"("grammar": "root ::= a\na ::= \"x\" a")", "grammar",
         "'grammar': grammar line 2, column 1: rule 'a' can never finish"},
        {"a schema no finite value satisfies", R"("json_schema": {"type": "object", "properties": {"next": {"$ref": "#"}},
            "required": ["next"]})", "json_schema", "'json_schema': JSON Schema at #: no finite JSON value"},
        {"the same in response_format", R"("response_format": {"type": "json_schema", "json_schema": {"schema":
            {"type": "array", "items": {"$ref": "#"}, "minItems": 1}}})", "response_format.json_schema.schema",
         "no finite JSON value"},
        {"a grammar of the wrong type", R"("grammar": 5)", "grammar", "string"},
        {"json_schema not an object", R"("json_schema": "{}")", "json_schema", "object"},
        {"an unsupported schema keyword", R"("json_schema": {"type": "string", "pattern": "^a"})", "json_schema",
         "pattern"},
        {"a bad $ref", R"("json_schema": {"$ref": "#/$defs/missing"})", "json_schema", "missing"},
        {"response_format not an object", R"("response_format": "json")", "response_format", "object"},
        {"response_format of another type", R"("response_format": {"type": "xml"})", "response_format.type", "xml"},
        {"json_schema without its wrapper", R"("response_format": {"type": "json_schema", "schema": {}})",
         "response_format.json_schema", "'schema'"},
        {"json_schema without a schema", R"("response_format": {"type": "json_schema", "json_schema": {"name": "x"}})",
         "response_format.json_schema.schema", "required"},
        {"a schema name not a string", R"("response_format": {"type": "json_schema", "json_schema": {"name": 1,
            "schema": {}}})", "response_format.json_schema.name", "string"},
        {"strict not a boolean", R"("response_format": {"type": "json_schema", "json_schema": {"strict": "yes",
            "schema": {}}})", "response_format.json_schema.strict", "boolean"},
        {"a bad schema in response_format", R"("response_format": {"type": "json_schema", "json_schema": {"schema":
            {"type": "object", "properties": {"a": {"minimum": 3}}}}})", "response_format.json_schema.schema",
         "minimum"},
        {"a bad schema beside json_object", R"("response_format": {"type": "json_object", "schema": {"type": "date"}})",
         "response_format.schema", "date"},
    };
    for (const auto& [what, fields, param, part] : cases) {
        const ApiError err = error_of("{" + kMsg + ", " + fields + "}");
        report(err.status == 400 && err.param == param && err.message.find(part) != std::string::npos,
               what + " -> 400 on '" + param + "' saying '" + part + "' (got " + std::to_string(err.status) + " '" +
                   err.param + "': " + err.message + ")");
    }
    const ApiError completion = error_of(R"({"prompt": "x", "grammar": "root ::= (\"a\""})", Endpoint::COMPLETION);
    report(completion.status == 400 && completion.param == "grammar" &&
               completion.message.find("line 1, column") != std::string::npos,
           "completions: an unbalanced parenthesis -> 400 with its line and column (" + completion.message + ")");
}

void responses_have_openai_shapes() {
    const ResponseMeta chat_meta{Endpoint::CHAT, "chatcmpl-1", 1700000000, "m"};
    std::vector<TokenLogprob> lps = {{"Hi", -0.5f, {{"Hi", -0.5f}, {"Hello", -1.0f}}},
                                     {"\xe2\x82", -INFINITY, {}}};  // part of a UTF-8 character; p underflowed
    const json whole = json::parse(completion_json(chat_meta, "Hi!", "stop", &lps, {5, 2}));
    report(whole["object"] == "chat.completion" && whole["choices"][0]["message"]["content"] == "Hi!" &&
               whole["choices"][0]["message"]["role"] == "assistant" && whole["choices"][0]["finish_reason"] == "stop" &&
               whole["usage"]["total_tokens"] == 7,
           "chat completion: message, finish reason, usage");
    const json& content = whole["choices"][0]["logprobs"]["content"];
    report(content.size() == 2 && content[0]["top_logprobs"][1]["token"] == "Hello" &&
               content[0]["top_logprobs"][1]["logprob"] == -1.0 && content[1]["bytes"] == json({0xe2, 0x82}) &&
               content[1]["logprob"] == -9999.0,
           "chat logprobs: alternatives, exact bytes of a partial character, -9999 for p = 0");
    report(json::parse(completion_json(chat_meta, "x", "length", nullptr, {1, 1}))["choices"][0]["logprobs"].is_null(),
           "logprobs null unless asked");
    const ResponseMeta text_meta{Endpoint::COMPLETION, "cmpl-1", 1, "m"};
    const json text = json::parse(completion_json(text_meta, "Hi", "length", &lps, {1, 2}));
    report(text["object"] == "text_completion" && text["choices"][0]["text"] == "Hi" &&
               text["choices"][0]["logprobs"]["top_logprobs"][0]["Hello"] == -1.0 &&
               text["choices"][0]["logprobs"]["text_offset"] == json({0, 2}),
           "text completion with the legacy logprobs arrays");
    ChunkContent first;
    first.role = "assistant";
    const json c0 = json::parse(chunk_json(chat_meta, first));
    ChunkContent last;
    last.finish_reason = "stop";
    const json c1 = json::parse(chunk_json(chat_meta, last));
    report(c0["object"] == "chat.completion.chunk" && c0["choices"][0]["delta"] == json({{"role", "assistant"}, {"content", ""}}) &&
               c1["choices"][0]["delta"] == json::object() && c1["choices"][0]["finish_reason"] == "stop",
           "stream chunks: the role first, the finish reason last");
    // A streamed completion's logprobs count text_offset from the start of the whole reply, not the chunk.
    std::vector<TokenLogprob> second = {lps[1]};
    ChunkContent later;
    later.text = "?";
    later.logprobs = &second;
    later.text_offset = 2;
    report(json::parse(chunk_json(text_meta, later))["choices"][0]["logprobs"]["text_offset"] == json({2}),
           "a later completions chunk's text_offset continues from the tokens before it");
    report(json::parse(completion_json(chat_meta, "x", "stop", nullptr, {5, 1, 4}))["usage"]["prompt_tokens_details"] ==
               json({{"cached_tokens", 4}}),
           "usage: prompt_tokens_details.cached_tokens");
    report(json::parse(usage_chunk_json(chat_meta, {3, 4}))["usage"]["completion_tokens"] == 4 &&
               sse_event("{}") == "data: {}\n\n",
           "the usage chunk and the SSE framing");
    const json err = json::parse(error_json(ApiError(404, "no", "invalid_request_error", "model", "model_not_found")));
    report(err["error"]["message"] == "no" && err["error"]["param"] == "model" && err["error"]["code"] == "model_not_found" &&
               json::parse(error_json(ApiError(400, "x")))["error"]["param"].is_null(),
           "the error object");
    report(json::parse(models_json("m", 5))["data"][0]["id"] == "m", "the models list");
}

// What a keyless server answers: requests addressed to this machine, not pages of other sites or
// names that resolve here only by DNS rebinding.
void loopback_checks() {
    for (const char* h : {"127.0.0.1:8080", "127.0.0.1", "localhost:8080", "localhost", "[::1]:8080", "[::1]",
                          "127.1.2.3:1"})
        report(is_loopback_authority(h), std::string("Host ") + h + " is this machine");
    for (const char* h : {"evil.example:8080", "127.example.com", "localhost.evil.example", "0.0.0.0:8080",
                          "[::2]:8080", "", ":8080", "[::1"})
        report(!is_loopback_authority(h), std::string("Host '") + h + "' is refused");
    for (const char* o : {"http://localhost:3000", "https://127.0.0.1", "http://[::1]:8080"})
        report(is_loopback_origin(o), std::string("Origin ") + o + " is a page of this machine");
    for (const char* o : {"null", "http://evil.example", "http://localhost.evil.example:80", "file://",
                          "http://localhost:3000/x", "ftp://localhost", "localhost"})
        report(!is_loopback_origin(o), std::string("Origin '") + o + "' is refused");
}

void kv_budget() {
    ModelConfig c;  // SmolLM2-135M's shape
    c.n_layer = 30;
    c.n_head_kv = 3;
    c.head_dim = c.head_dim_v = 64;
    const uint64_t per_session = session_kv_bytes(c, 8192);
    report(per_session == uint64_t(30) * 3 * 128 * 2 * 8192, "KV bytes of a session: layers x kv heads x (K+V) x f16 x context");
    ModelConfig swa = c;  // every other layer windowed to 512 tokens
    swa.sliding_window = 512;
    for (int i = 0; i < 30; ++i) swa.layer_is_swa.push_back(i % 2 == 0);
    report(session_kv_bytes(swa, 8192) == uint64_t(15) * 3 * 128 * 2 * (8192 + 512), "a sliding-window layer holds its window");
    bool refused = false;
    try {
        check_kv_budget(per_session, 64, 8192, uint64_t(8) << 30);
    } catch (const Error& e) {
        refused = std::string(e.what()).find("--parallel") != std::string::npos;
    }
    bool fits = true;
    try {
        check_kv_budget(per_session, 4, 8192, uint64_t(8) << 30);
        check_kv_budget(per_session, 64, 8192, 0);  // free memory unknown: no check
    } catch (const Error&) {
        fits = false;
    }
    report(refused && fits, "64 sessions of 180 MiB do not fit in 8 GiB (an error naming --parallel), 4 do");
    report(available_memory() > 0, "MemAvailable is read");
}

}  // namespace

// GET /props: a Jinja template's source with its BOS / EOS texts; a built-in format by name.
void props_have_llama_server_fields() {
    const json jinja = json::parse(props_json(ChatTemplate::from_jinja("{{ bos_token }}{{ messages[0].content }}", "<s>", "</s>")));
    report(jinja["chat_template"] == "{{ bos_token }}{{ messages[0].content }}" && jinja["bos_token"] == "<s>" &&
               jinja["eos_token"] == "</s>" && !jinja.contains("chat_format"),
           "/props gives a Jinja template's source, BOS and EOS");
    const json builtin = json::parse(props_json(ChatTemplate::of_kind(ChatTemplateKind::CHATML)));
    report(builtin["chat_template"] == "" && builtin["chat_format"] == "chatml", "/props names a built-in format");
    // A GGUF's template is not checked for UTF-8: a cut sequence becomes U+FFFD, not an exception (a 500).
    std::string text;
    try {
        text = props_json(ChatTemplate::from_jinja("{{ messages[0].content }}\xe2\x82", "<s>", "</s>"));
    } catch (const std::exception& e) {
        text = e.what();
    }
    report(text.find("\"{{ messages[0].content }}\xef\xbf\xbd\"") != std::string::npos,
           "/props replaces invalid UTF-8 in a template: " + text);
}

int main() {
    loopback_checks();
    props_have_llama_server_fields();
    kv_budget();
    fields_are_read();
    bad_requests_are_400();
    constraints_are_compiled();
    bad_constraints_are_400();
    responses_have_openai_shapes();
    std::printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "passed", g_failures);
    return g_failures ? 1 : 0;
}
