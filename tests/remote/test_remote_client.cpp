// The remote client (core/remote/openai_client) against small fake servers on loopback: each way a
// server can fail (nothing listening, too slow, 4xx / 5xx, malformed or cut-off streams, an error
// mid-stream, an event over the size limit) is a RemoteError of its kind with the server's words,
// and a good stream arrives whole, with the key, the model and the request fields the server needs.
// Plain executable (label unit): PASS/FAIL lines, exit status 1 on any failure.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "remote/openai_client.h"
#include "remote_test_support.h"

using namespace wb;
using namespace wb::remote;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace wb_remote_test;

namespace {

std::string chunk(const std::string& text) {
    return "data: " + json{{"model", "fake"}, {"choices", json::array({{{"index", 0}, {"delta", {{"content", text}}}}})}}.dump() +
           "\n\n";
}

const std::string kStream = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n" +
                            chunk("Hel") + chunk("lo") +
                            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
                            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\n"
                            "data: [DONE]\n\n";

RemoteOptions options_for(const FakeServer& s, const std::string& path = "") {
    RemoteOptions o;
    o.base_url = s.url(path);
    o.model = "fake";
    return o;
}

RemoteRequest hello() {
    RemoteRequest r;
    r.messages = {{"user", "hi"}};
    return r;
}

void good_stream() {
    FakeServer s;
    json seen;
    std::string auth, path;
    s.http.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
        seen = json::parse(req.body);
        auth = req.get_header_value("Authorization");
        path = req.path;
        res.set_content(kStream, "text/event-stream");
    });
    s.start();
    RemoteOptions o = options_for(s, "/v1/");
    o.api_key = "secret";
    RemoteRequest r = hello();
    r.sampling.temperature = 0.0f;
    r.sampling.top_k = 5;
    r.sampling.stop = {"\n"};
    r.max_tokens = 9;
    r.top_logprobs = 3;
    std::string streamed;
    const RemoteResult res = OpenAiClient(o).complete(r, [&](const StreamDelta& d) { streamed += d.text + "|"; });
    report(res.text == "Hello" && streamed == "Hel|lo|", "the deltas in order and the whole text (" + streamed + ")");
    report(res.finish_reason == "stop" && res.model == "fake" && res.prompt_tokens == 4 && res.completion_tokens == 2,
           "finish reason, model and usage from the chunks");
    report(auth == "Bearer secret" && path == "/v1/chat/completions", "the key as a bearer token, '/v1/' not doubled");
    report(seen.value("stream", false) && seen["model"] == "fake" && seen["temperature"] == 0.0 && seen["top_k"] == 5 &&
               seen["max_tokens"] == 9 && seen["stop"] == json::array({"\n"}) && seen["logprobs"] == true &&
               seen["top_logprobs"] == 3 && !seen.contains("top_p") && !seen.contains("seed") &&
               !seen.contains("grammar") && !seen.contains("logit_bias") && !seen.contains("dry_multiplier") &&
               !seen.contains("mirostat"),
           "the request carries stream, the set fields and no others: " + seen.dump());
}

// llama.cpp server's extensions go by its names when set, a ban (-inf) as false, and a request
// that sets none of them carries none (good_stream checks that).
void extension_fields() {
    FakeServer s;
    json seen;
    s.http.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
        seen = json::parse(req.body);
        res.set_content(kStream, "text/event-stream");
    });
    s.start();
    RemoteRequest r = hello();
    RemoteSampling& x = r.sampling;
    x.grammar = "root ::= \"yes\"";
    x.logit_bias = {{15, 2.5f}, {7, -INFINITY}};
    x.dry_multiplier = 0.8f;
    x.dry_base = 1.5f;
    x.dry_allowed_length = 3;
    x.dry_penalty_last_n = -1;
    x.dry_sequence_breakers = std::vector<std::string>{"\n", "."};
    x.xtc_probability = 0.5f;
    x.xtc_threshold = 0.25f;
    x.top_n_sigma = 1.5f;
    x.mirostat = 2;
    x.mirostat_tau = 4.0f;
    x.mirostat_eta = 0.25f;
    x.samplers = std::vector<std::string>{"top_k", "temperature"};
    x.ignore_eos = true;
    OpenAiClient(options_for(s)).complete(r, [](const StreamDelta&) {});
    const json bias = seen.value("logit_bias", json());
    report(seen["grammar"] == "root ::= \"yes\"" && bias.size() == 2 && bias["15"] == 2.5 && bias["7"] == false,
           "the grammar, and the logit bias as {id: bias} with a ban as false: " + seen.dump());
    report(seen["dry_multiplier"] == 0.8f && seen["dry_base"] == 1.5 && seen["dry_allowed_length"] == 3 &&
               seen["dry_penalty_last_n"] == -1 && seen["dry_sequence_breakers"] == json::array({"\n", "."}),
           "DRY by llama.cpp server's names");
    report(seen["xtc_probability"] == 0.5 && seen["xtc_threshold"] == 0.25 && seen["top_n_sigma"] == 1.5 &&
               seen["mirostat"] == 2 && seen["mirostat_tau"] == 4.0 && seen["mirostat_eta"] == 0.25,
           "XTC, top-n-sigma and Mirostat by llama.cpp server's names");
    report(seen["samplers"] == json::array({"top_k", "temperature"}), "the sampler order as `samplers`");
    report(seen["ignore_eos"] == true, "ignore_eos");
    // llama.cpp's server refuses every request with an empty breaker list: it is left out.
    x.dry_sequence_breakers = std::vector<std::string>{};
    OpenAiClient(options_for(s)).complete(r, [](const StreamDelta&) {});
    report(!seen.contains("dry_sequence_breakers") && seen["dry_multiplier"] == 0.8f,
           "an empty DRY breaker list is not sent, the rest of DRY is: " + seen.dump());
}

void base_urls() {
    FakeServer s;
    std::string paths, models;
    s.http.Post(R"(.*/chat/completions)", [&](const httplib::Request& req, httplib::Response& res) {
        paths += req.path + " ";
        models += json::parse(req.body).value("model", "(none)") + " ";
        res.set_content(kStream, "text/event-stream");
    });
    s.http.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"object":"list","data":[{"id":"listed-first"},{"id":"second"}]})", "application/json");
    });
    s.start();
    for (const std::string base : {"", "/", "/v1", "/api/v1"}) OpenAiClient(options_for(s, base)).complete(hello(), [](auto&) {});
    report(paths == "/v1/chat/completions /v1/chat/completions /v1/chat/completions /api/v1/chat/completions ",
           "a base URL with or without /v1 reaches .../v1/chat/completions, a path before it is kept (" + paths + ")");
    RemoteOptions o = options_for(s);
    o.model.clear();
    models.clear();
    OpenAiClient(o).complete(hello(), [](auto&) {});
    report(models == "listed-first ", "without a model the first one listed is sent (" + models + ")");
    report(OpenAiClient(options_for(s)).models() == std::vector<std::string>{"listed-first", "second"},
           "models() lists the ids");
}

// GET /props beside /v1 gives the server's chat template (llama-server's fields, WhiteBox's
// chat_format for a built-in one); a server without it (404) or naming none gives nothing.
void chat_template_from_props() {
    FakeServer with;
    with.http.Get("/api/props", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"chat_template":"{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}",)"
                        R"("bos_token":"<s>","eos_token":"</s>","n_ctx":4096})", "application/json");
    });
    with.start();
    const std::optional<ServerChatTemplate> t = OpenAiClient(options_for(with, "/api/v1")).chat_template();
    report(t && t->source.find("for m in messages") != std::string::npos && t->bos_token == "<s>" && t->eos_token == "</s>" &&
               t->format.empty(),
           "chat_template() reads /props beside the /v1 of the base URL");
    FakeServer builtin;
    builtin.http.Get("/props", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"chat_template":"","chat_format":"chatml","bos_token":"","eos_token":""})", "application/json");
    });
    builtin.start();
    const std::optional<ServerChatTemplate> b = OpenAiClient(options_for(builtin)).chat_template();
    report(b && b->source.empty() && b->format == "chatml", "a built-in format is named by chat_format");
    FakeServer without;
    without.http.Get("/props", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"n_ctx":4096})", "application/json");
    });
    without.start();
    report(!OpenAiClient(options_for(without)).chat_template(), "a /props that names no template gives none");
    FakeServer none;
    none.start();
    report(!OpenAiClient(options_for(none)).chat_template(), "a server without /props (404) gives none");
}

// Each malformed URL is refused with its own reason (the message names the URL, except one that
// carries a password, which is not echoed).
void bad_urls() {
    const std::pair<const char*, const char*> cases[] = {
        {"127.0.0.1:8080", "has no scheme"},
        {"ftp://host", "is not http or https"},
        {"http://", "has no host"},
        {"http:///v1", "has no host"},
        {"http://:8080", "has no host"},
        {"http://host:", "has an invalid port ''"},
        {"http://host:0", "has an invalid port '0'"},
        {"http://host:99999", "has an invalid port '99999'"},
        {"http://host:123456", "has an invalid port '123456'"},
        {"http://host:80a", "has an invalid port '80a'"},
        {"http://host:8\xC3\xA9", "has an invalid port '8\xC3\xA9'"},
        {"http://host/v1?x=1", "has a query or fragment"},
        {"http://host/v1#top", "has a query or fragment"},
        {"http://ho st", "contains spaces or control characters"},
        {"http://host\t:8080", "contains spaces or control characters"},
    };
    for (const auto& [url, reason] : cases) {
        RemoteOptions o;
        o.base_url = url;
        const auto e = error_of([&] { OpenAiClient{o}; });
        report(e && e->kind() == RemoteErrorKind::BAD_URL && has(e, std::string("'") + url + "' " + reason),
               "bad URL '" + std::string(url) + "' " + reason + ": " + what_of(e));
    }
    for (const char* url : {"http://user:s3cret@host:8080", "http://s3cret@host", "https://user:s3cret@[::1]:443/v1"}) {
        RemoteOptions o;
        o.base_url = url;
        const auto e = error_of([&] { OpenAiClient{o}; });
        report(e && e->kind() == RemoteErrorKind::BAD_URL && has(e, "carries a user name or password") &&
                   has(e, "--api-key") && !has(e, "s3cret"),
               "a URL with credentials is refused without echoing them: " + what_of(e));
    }
    // The good shapes beside them: each is accepted (no error at all).
    for (const char* url : {"http://host", "HTTPS://host:1/", "http://[::1]:8080/v1", "http://host:65535/api/v1"}) {
        RemoteOptions o;
        o.base_url = url;
        const auto e = error_of([&] { OpenAiClient{o}; });
        report(!e, "the URL '" + std::string(url) + "' is accepted " + what_of(e));
    }
}

void bad_timeouts() {
    RemoteOptions o;
    o.base_url = "http://127.0.0.1:8080";
    o.connect_timeout_ms = 0;
    expect("a connect timeout of 0", error_of([&] { OpenAiClient{o}; }), RemoteErrorKind::BAD_OPTION,
           "connect timeout is 0 ms");
    o.connect_timeout_ms = 1000;
    o.read_timeout_ms = -5;
    expect("a negative read timeout", error_of([&] { OpenAiClient{o}; }), RemoteErrorKind::BAD_OPTION,
           "read timeout is -5 ms");
}

// Without a model named, the client asks GET /v1/models once, not before every request (a chat's turns).
void models_asked_once() {
    FakeServer s;
    std::atomic<int> lists{0};
    std::string models;
    s.http.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
        models += json::parse(req.body).value("model", "(none)") + " ";
        res.set_content(kStream, "text/event-stream");
    });
    s.http.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
        ++lists;
        res.set_content(R"({"object":"list","data":[{"id":"listed-first"}]})", "application/json");
    });
    s.start();
    RemoteOptions o = options_for(s);
    o.model.clear();
    const OpenAiClient client(o);
    for (int turn = 0; turn < 3; ++turn) client.complete(hello(), [](auto&) {});
    report(lists == 1 && models == "listed-first listed-first listed-first ",
           "three requests without a model: " + std::to_string(lists.load()) + " GET /v1/models, models sent: " + models);
}

// One client shared by reference: copying it (and its model cache with its lock) does not compile.
static_assert(!std::is_copy_constructible_v<OpenAiClient> && !std::is_copy_assignable_v<OpenAiClient>,
              "OpenAiClient is shared by reference, never copied");

// A server whose model changes while a client keeps its first answer (Ollama, LM Studio and
// llama-swap swap models): the listed name it kept gets 404, the list is asked again and the
// request goes once more with the new first model. A model the options name is not replaced, and a
// 404 with the list unchanged is not retried in a loop.
void model_changes_on_the_server() {
    FakeServer s;
    std::mutex m;
    std::string served = "first", sent;
    std::atomic<int> lists{0};
    s.http.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
        std::lock_guard<std::mutex> lock(m);
        const std::string model = json::parse(req.body).value("model", "(none)");
        sent += model + " ";
        if (model != served) {
            res.status = 404;
            res.set_content(json{{"error", {{"message", "model '" + model + "' not found"}, {"code", "model_not_found"}}}}
                                .dump(), "application/json");
            return;
        }
        res.set_content(kStream, "text/event-stream");
    });
    s.http.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
        std::lock_guard<std::mutex> lock(m);
        ++lists;
        // "gone" is a server that 404s every model, its list included the one it refuses.
        const json entry = {{"id", served == "gone" ? "second" : served}};
        res.set_content(json{{"object", "list"}, {"data", json::array({entry})}}.dump(), "application/json");
    });
    s.start();
    RemoteOptions o = options_for(s);
    o.model.clear();
    const OpenAiClient client(o);
    const auto serve = [&](const std::string& model) {
        std::lock_guard<std::mutex> lock(m);
        served = model;
        sent.clear();
    };
    std::string text = client.complete(hello(), [](auto&) {}).text;
    serve("second");
    const auto changed = error_of([&] { text += "|" + client.complete(hello(), [](auto&) {}).text; });
    report(!changed && text == "Hello|Hello" && sent == "first second " && lists == 2,
           "the server's model changed: the kept name's 404, the list asked again, the request resent with the "
           "new model (sent: " + sent + ", " + std::to_string(lists.load()) + " lookups) " + what_of(changed));
    serve("second");
    client.complete(hello(), [](auto&) {});
    report(sent == "second " && lists == 2, "the new name is kept for the next request (sent: " + sent + ")");
    serve("gone");
    const auto unchanged = error_of([&] { client.complete(hello(), [](auto&) {}); });
    report(unchanged && unchanged->status() == 404 && has(unchanged, "model 'second' not found") &&
               sent == "second " && lists == 3,
           "a 404 with the list unchanged: asked again once, not resent (sent: " + sent + "): " + what_of(unchanged));
    serve("third");
    RemoteOptions named = options_for(s);
    named.model = "second";
    const int lists_before = lists;
    const auto refused = error_of([&] { OpenAiClient(named).complete(hello(), [](auto&) {}); });
    report(refused && refused->status() == 404 && sent == "second " && lists == lists_before,
           "a model the options name is not replaced: its 404 is the error, no lookup (" + what_of(refused) + ")");
}

// POST /v1/completions end to end: the request in the legacy shape (prompt, logprobs as a count) and
// its chunks' text, finish reason and parallel-array logprobs, a null one included.
void completions_stream() {
    FakeServer s;
    json seen;
    std::string path;
    s.http.Post("/v1/completions", [&](const httplib::Request& req, httplib::Response& res) {
        seen = json::parse(req.body);
        path = req.path;
        res.set_content(
            R"(data: {"model":"fake","choices":[{"index":0,"text":" blue","logprobs":{"tokens":[" blue"],)"
            R"("token_logprobs":[-0.25],"top_logprobs":[{" grey":-2.0," blue":-0.25}]},"finish_reason":null}]})"
            "\n\n"
            R"(data: {"choices":[{"index":0,"text":".","logprobs":{"tokens":["."],"token_logprobs":[null],)"
            R"("top_logprobs":[null]},"finish_reason":"length"}]})"
            "\n\n"
            R"(data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}})"
            "\n\ndata: [DONE]\n\n",
            "text/event-stream");
    });
    s.start();
    RemoteRequest r;
    r.prompt = "The sky is";
    r.top_logprobs = 2;
    std::vector<RemoteTokenLogprob> tokens;
    const RemoteResult res = OpenAiClient(options_for(s)).complete(r, [&](const StreamDelta& d) {
        tokens.insert(tokens.end(), d.tokens.begin(), d.tokens.end());
    });
    report(path == "/v1/completions" && seen["prompt"] == "The sky is" && seen["logprobs"] == 2 &&
               !seen.contains("messages") && !seen.contains("top_logprobs") && seen.value("stream", false),
           "a prompt goes to /v1/completions with logprobs as a count: " + seen.dump());
    report(res.text == " blue." && res.finish_reason == "length" && res.prompt_tokens == 3 && res.completion_tokens == 2,
           "the completion's text, finish reason and usage ('" + res.text + "')");
    report(tokens.size() == 2 && tokens[0].token == " blue" && tokens[0].logprob == -0.25f && tokens[0].top.size() == 2 &&
               tokens[0].top[0].token == " blue" && tokens[1].token == "." && std::isnan(tokens[1].logprob),
           "its logprobs per token, most likely first, a null one NaN");
}

void nothing_listening() {
    int port = 0;
    {
        FakeServer s;
        s.start();
        port = s.port;
    }  // the port is free again: nothing listens there now
    RemoteOptions o;
    o.base_url = "http://127.0.0.1:" + std::to_string(port);
    o.model = "m";
    expect("a port nobody listens on", error_of([&] { OpenAiClient(o).complete(hello(), [](auto&) {}); }),
           RemoteErrorKind::CONNECTION, "connection refused");
    o.base_url = "http://no-such-host.invalid:8080";
    expect("an unknown host", error_of([&] { OpenAiClient(o).models(); }), RemoteErrorKind::CONNECTION,
           "'no-such-host.invalid' is unknown");
}

void too_slow() {
    FakeServer s;
    s.http.Post("/v1/chat/completions", [](const httplib::Request&, httplib::Response& res) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        res.set_content(kStream, "text/event-stream");
    });
    s.start();
    RemoteOptions o = options_for(s);
    o.read_timeout_ms = 400;
    const auto t0 = Clock::now();
    const auto e = error_of([&] { OpenAiClient(o).complete(hello(), [](auto&) {}); });
    const double s_taken = std::chrono::duration<double>(Clock::now() - t0).count();
    // The server answers after 1.5 s: a TIMEOUT can only come from the 400 ms read timeout.
    report(e && e->kind() == RemoteErrorKind::TIMEOUT && has(e, "400 ms"),
           "a server silent past the read timeout (" + std::to_string(s_taken) + " s): " + what_of(e));
}

void http_errors() {
    FakeServer s;
    s.http.Post("/v1/chat/completions", [](const httplib::Request& req, httplib::Response& res) {
        const std::string model = json::parse(req.body).value("model", "");
        if (model == "missing") {
            res.status = 404;
            res.set_content(R"({"error":{"message":"The model 'missing' does not exist","type":"invalid_request_error"}})",
                            "application/json");
        } else if (model == "broken") {
            res.status = 502;
            res.set_content("upstream went away", "text/plain");
        } else {
            res.status = 401;
            res.set_content(R"({"error":"invalid API key"})", "application/json");
        }
    });
    s.http.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
        res.status = 500;
        res.set_content(R"({"detail":"models are loading"})", "application/json");
    });
    s.start();
    RemoteOptions o = options_for(s);
    o.model = "missing";
    auto e = error_of([&] { OpenAiClient(o).complete(hello(), [](auto&) {}); });
    report(e && e->kind() == RemoteErrorKind::HTTP_STATUS && e->status() == 404 && has(e, "HTTP 404") &&
               has(e, "The model 'missing' does not exist"),
           "a 404 with OpenAI's error body: " + what_of(e));
    o.model = "broken";
    e = error_of([&] { OpenAiClient(o).complete(hello(), [](auto&) {}); });
    report(e && e->status() == 502 && has(e, "upstream went away"), "a 502 with a text body: " + what_of(e));
    o.model = "other";
    e = error_of([&] { OpenAiClient(o).complete(hello(), [](auto&) {}); });
    report(e && e->status() == 401 && has(e, "invalid API key"), "a 401 with an error string: " + what_of(e));
    o.model.clear();
    e = error_of([&] { OpenAiClient(o).complete(hello(), [](auto&) {}); });
    report(e && e->status() == 500 && has(e, "models are loading"),
           "the model lookup's error when no model is named: " + what_of(e));
}

// A server answering every chat request with this body (and content type).
void stream_fails(const std::string& what, const std::string& body, RemoteErrorKind kind, const std::string& part,
                  const std::string& type = "text/event-stream") {
    FakeServer s;
    s.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) { res.set_content(body, type); });
    s.start();
    std::string text;
    const auto e =
        error_of([&] { OpenAiClient(options_for(s)).complete(hello(), [&](const StreamDelta& d) { text += d.text; }); });
    expect(what, e, kind, part);
}

void broken_streams() {
    stream_fails("an event that is not JSON", chunk("a") + "data: {\"choices\": [\n\n", RemoteErrorKind::MALFORMED,
                 "not JSON");
    stream_fails("a stream without [DONE]", chunk("a") + chunk("b"), RemoteErrorKind::TRUNCATED, "before 'data: [DONE]'");
    stream_fails("a stream cut inside an event", chunk("a") + "data: {\"choi", RemoteErrorKind::TRUNCATED,
                 "the last event cut off");
    stream_fails("an error event mid-stream", chunk("a") + "data: {\"error\":{\"message\":\"out of memory\"}}\n\n",
                 RemoteErrorKind::HTTP_STATUS, "out of memory");
    stream_fails("llama.cpp's error field mid-stream",
                 chunk("a") + "error: {\"code\":500,\"message\":\"the context is full\",\"type\":\"server_error\"}\n\n",
                 RemoteErrorKind::HTTP_STATUS, "the context is full");
    stream_fails("JSON instead of a stream", R"({"choices":[{"message":{"content":"hi"}}]})", RemoteErrorKind::MALFORMED,
                 "instead of a stream of events", "application/json");
    stream_fails("an event over 8 MiB", "data: " + std::string(9u << 20, 'x'), RemoteErrorKind::MALFORMED,
                 "without an end");
}

// A server (or proxy) that sends [DONE] and leaves the response open: the reply is complete there,
// not a read timeout.
void done_then_held_open() {
    // Declared before the server: its handler may still read them while ~FakeServer waits for it.
    std::atomic<bool> release{false};
    FakeServer s;
    s.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        res.set_chunked_content_provider("text/event-stream", [&](size_t, httplib::DataSink& sink) {
            if (!sink.write(kStream.data(), kStream.size())) return false;
            const auto until = Clock::now() + std::chrono::seconds(5);
            while (!release && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
            sink.done();
            return true;
        });
    });
    s.start();
    RemoteOptions o = options_for(s);
    o.read_timeout_ms = 500;
    RemoteResult r;
    std::string error;
    const auto t0 = Clock::now();
    try {
        r = OpenAiClient(o).complete(hello(), [](const StreamDelta&) {});
    } catch (const RemoteError& e) {
        error = e.what();
    }
    const double taken = std::chrono::duration<double>(Clock::now() - t0).count();
    release = true;
    // Held open for 5 s against a 500 ms read timeout: reading on after [DONE] would be a TIMEOUT error.
    report(error.empty() && r.text == "Hello" && r.finish_reason == "stop",
           "[DONE] on a response left open ends the reply (" + std::to_string(taken) + " s) " + error);
}

void cancel_between_chunks() {
    // Declared before the server: its handler may still read them while ~FakeServer waits for it.
    std::atomic<bool> client_gone{false};
    FakeServer s;
    s.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        res.set_chunked_content_provider("text/event-stream", [&](size_t, httplib::DataSink& sink) {
            for (int i = 0; i < 100; ++i) {
                const std::string c = chunk(std::string(1, 't').append(std::to_string(i)).append(" "));
                if (!sink.write(c.data(), c.size())) {
                    client_gone = true;
                    return false;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            }
            sink.done();
            return true;
        });
    });
    s.start();
    std::atomic<bool> cancel{false};
    int deltas = 0;
    const auto t0 = Clock::now();
    const RemoteResult r = OpenAiClient(options_for(s)).complete(hello(), [&](const StreamDelta&) {
        if (++deltas == 3) cancel = true;
    }, &cancel);
    const double taken = std::chrono::duration<double>(Clock::now() - t0).count();
    report(r.cancelled && deltas == 3 && r.text == "t0 t1 t2 ",
           "cancel after 3 deltas ends the stream there (" + std::to_string(deltas) + " deltas, " +
               std::to_string(taken) + " s, '" + r.text + "')");
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    while (!client_gone && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    report(client_gone, "the server sees the connection closed");
}

// A server silent until the test releases it (a long queue, a long prompt): a cancel set meanwhile
// ends the request while the server is still silent (the order is checked, not a time).
void cancel_while_silent() {
    // Declared before the server: its handler may still read them while ~FakeServer waits for it.
    std::atomic<bool> asked{false}, release{false}, answered{false};
    FakeServer s;
    s.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        asked = true;
        const auto until = Clock::now() + std::chrono::seconds(20);
        while (!release && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        answered = true;
        res.set_content(kStream, "text/event-stream");
    });
    s.start();
    std::atomic<bool> cancel{false};
    std::thread canceller([&] {
        while (!asked) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        cancel = true;
    });
    RemoteResult r;
    std::string error;
    try {
        r = OpenAiClient(options_for(s)).complete(hello(), [](const StreamDelta&) {}, &cancel);
    } catch (const RemoteError& e) {
        error = e.what();
    }
    const bool still_silent = !answered;
    release = true;
    canceller.join();
    report(error.empty() && r.cancelled && r.text.empty() && still_silent,
           "cancel while the server is silent ends the wait before the server answers " + error);
}

// GET /v1/models and /props are bounded against a hostile server: an answer past 1 MiB is refused
// (not read whole), one trickled a byte at a time (each resetting the read timeout) is abandoned at
// the connect + read deadline, and a cancel ends a silent one at once.
void probes_are_bounded() {
    std::atomic<bool> release{false};
    FakeServer s;
    s.http.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(R"({"data":[{"id":")" + std::string(2 * 1024 * 1024, 'x') + R"("}]})", "application/json");
    });
    s.http.Get("/props", [&](const httplib::Request&, httplib::Response& res) {
        res.set_chunked_content_provider("application/json", [&](size_t, httplib::DataSink& sink) {
            // One byte every 100 ms for up to 10 s (a valid answer at the end).
            for (int i = 0; i < 100 && !release; ++i) {
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
                if (!sink.write(" ", 1)) return false;
            }
            sink.write("{}", 2);
            sink.done();
            return true;
        });
    });
    s.http.Get("/silent/v1/models", [&](const httplib::Request&, httplib::Response& res) {
        const auto until = Clock::now() + std::chrono::seconds(20);
        while (!release && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        res.set_content(R"({"data":[]})", "application/json");
    });
    s.start();
    RemoteOptions o = options_for(s);
    expect("a model list past 1 MiB", error_of([&] { OpenAiClient(o).models(); }), RemoteErrorKind::MALFORMED,
           "more than 1024 KiB");
    o.connect_timeout_ms = 300;
    o.read_timeout_ms = 700;
    auto t0 = Clock::now();
    const auto e = error_of([&] { OpenAiClient(o).chat_template(); });
    double taken = std::chrono::duration<double>(Clock::now() - t0).count();
    report(e && e->kind() == RemoteErrorKind::TIMEOUT && has(e, "did not finish answering within 1 s") && taken < 6.0,
           "a /props trickled byte by byte is abandoned at the deadline (" + std::to_string(taken) + " s): " + what_of(e));
    std::atomic<bool> cancel{false};
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        cancel = true;
    });
    t0 = Clock::now();
    std::string error;
    std::vector<std::string> listed{"unset"};
    try {
        listed = OpenAiClient(options_for(s, "/silent")).models(&cancel);
    } catch (const RemoteError& err) {
        error = err.what();
    }
    taken = std::chrono::duration<double>(Clock::now() - t0).count();
    canceller.join();
    release = true;
    report(error.empty() && listed.empty() && taken < 5.0,
           "a cancel ends a silent GET /v1/models (" + std::to_string(taken) + " s) " + error);
}

// A cancel already set sends nothing; one set while GET /v1/models (no model named) is unanswered
// ends that wait, and the completion is never sent.
void cancel_before_and_during_lookup() {
    // Declared before the server: its handler may still read them while ~FakeServer waits for it.
    std::atomic<int> lists{0}, posts{0};
    std::atomic<bool> release{false}, answered{false};
    FakeServer s;
    s.http.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        ++posts;
        res.set_content(kStream, "text/event-stream");
    });
    s.http.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
        ++lists;
        const auto until = Clock::now() + std::chrono::seconds(20);
        while (!release && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        answered = true;
        res.set_content(R"({"object":"list","data":[{"id":"m"}]})", "application/json");
    });
    s.start();
    RemoteOptions o = options_for(s);
    o.model.clear();
    const OpenAiClient client(o);
    std::atomic<bool> cancel{true};
    const RemoteResult before = client.complete(hello(), [](const StreamDelta&) {}, &cancel);
    report(before.cancelled && lists == 0 && posts == 0,
           "a cancel set before complete() sends nothing (" + std::to_string(lists.load()) + " lookups, " +
               std::to_string(posts.load()) + " completions)");
    cancel = false;
    std::thread canceller([&] {
        while (lists == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        cancel = true;
    });
    const RemoteResult during = client.complete(hello(), [](const StreamDelta&) {}, &cancel);
    const bool still_silent = !answered;
    release = true;
    canceller.join();
    report(during.cancelled && still_silent && posts == 0,
           "a cancel during the model lookup ends it before the server answers, and nothing is posted");
}

}  // namespace

int main() {
    good_stream();
    extension_fields();
    base_urls();
    chat_template_from_props();
    bad_urls();
    bad_timeouts();
    models_asked_once();
    model_changes_on_the_server();
    completions_stream();
    nothing_listening();
    too_slow();
    http_errors();
    broken_streams();
    done_then_held_open();
    cancel_between_chunks();
    cancel_while_silent();
    cancel_before_and_during_lookup();
    probes_are_bounded();
    return finish();
}
