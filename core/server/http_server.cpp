#include "server/http_server.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include "engine/chat_prompt.h"
#include "engine/sampler_vocab.h"
#include "sampling/grammar/grammar_constraint.h"
#include "server/guarded_server.h"
#include "server/loopback.h"
#include "util/error.h"

namespace wb::server {

namespace {

using std::chrono::milliseconds;

int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void send_error(httplib::Response& res, const ApiError& e) {
    res.status = e.status;
    res.set_content(error_json(e), "application/json");
}

// The error for a status httplib set itself (no route, body over the limit, ...).
ApiError error_for_status(int status, size_t max_body) {
    switch (status) {
    case 404: return ApiError(404, "no such endpoint (see GET /v1/models, POST /v1/chat/completions, "
                                   "POST /v1/completions, GET /health, GET /metrics)",
                              "invalid_request_error", {}, "unknown_url");
    case 413: return ApiError(413, "the request body is over the limit of " + std::to_string(max_body) + " bytes",
                              "invalid_request_error", {}, "request_too_large");
    case 400: return ApiError(400, "malformed HTTP request", "invalid_request_error");
    default: return ApiError(status, "request failed with HTTP status " + std::to_string(status),
                             status >= 500 ? "server_error" : "invalid_request_error");
    }
}

const char* finish_reason(StopReason r) {
    return r == StopReason::MAX_TOKENS || r == StopReason::CONTEXT_FULL ? "length" : "stop";
}

std::string new_id(Endpoint e) {
    static std::atomic<uint64_t> counter{0};
    static const uint64_t salt = std::random_device{}();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s-%08llx%06llx", e == Endpoint::CHAT ? "chatcmpl" : "cmpl",
                  (unsigned long long)(salt & 0xffffffffu), (unsigned long long)++counter);
    return buf;
}

bool write(httplib::DataSink& sink, const std::string& s) { return sink.write(s.data(), s.size()); }

// A request's grammar that no token of the vocabulary can begin is the client's mistake (400), found
// here on the request's own HTTP thread: a worker would find it only when the job reached a session,
// after the reply's 200 had gone out. A grammar that can begin costs a few hundred token checks; one
// that cannot, one pass over the vocabulary, which holds up no other request.
void check_grammar_can_start(const CompletionRequest& r, const std::string& grammar,
                             const std::shared_ptr<const SamplerVocab>& vocab) {
    if (grammar.empty()) return;
    try {
        GrammarConstraint(grammar, vocab).check_can_start();
    } catch (const Error& e) {
        const std::string field = r.grammar_field.empty() ? "grammar" : r.grammar_field;
        throw ApiError(400, "'" + field + "': " + e.what(), "invalid_request_error", field, "invalid_value");
    }
}

}  // namespace

HttpServer::HttpServer(const Model& model, ServerOptions options) : HttpServer(model, std::move(options), nullptr, nullptr) {}

HttpServer::HttpServer(const Model& model, ServerOptions options, JobExecutor& executor)
    : HttpServer(model, std::move(options), nullptr, &executor) {}

HttpServer::HttpServer(const Model& model, ServerOptions options, std::unique_ptr<GenerationQueue> own,
                       JobExecutor* executor)
    : model_(model), vocab_(make_sampler_vocab(model)), options_(std::move(options)), queue_(std::move(own)),
      exec_(executor), started_(unix_now()) {
    if (!is_loopback_host(options_.host) && options_.api_key.empty())
        throw Error("refusing to serve on " + options_.host + " without --api-key: anyone who can reach it could use "
                    "the model (bind 127.0.0.1, or give a key that clients send as 'Authorization: Bearer KEY')");
    if (options_.request_timeout_ms <= 0)
        throw Error("the request timeout is " + std::to_string(options_.request_timeout_ms) + " ms; it must be positive");
    // Last of the checks that throw: a given executor must not keep a callback into a server never made.
    auto count = [this](const Job& job, const GenerateResult& r, JobEnd end) {
        metrics_.count_job(end, int32_t(job.prompt.size()), int32_t(r.tokens.size()), r.timings.prefill_ms,
                           r.timings.decode_ms, r.timings.n_decode);
    };
    if (exec_) {
        exec_->set_on_done(count);
    } else {
        queue_ = std::make_unique<GenerationQueue>(model_, options_.queue, count);
        exec_ = queue_.get();
    }
    const int32_t ms = options_.request_timeout_ms;
    const ApiError timeout(408, "the request did not arrive within " +
                                    (ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms") +
                                    " of its first byte (serve --request-timeout)",
                           "invalid_request_error", {}, "request_timeout");
    http_ = std::make_unique<GuardedServer>(milliseconds(ms), error_json(timeout));
    routes();
}

const GenerationQueue& HttpServer::queue() const {
    if (!queue_) throw Error("this server runs its jobs on a given executor, not a queue of its own");
    return *queue_;
}

HttpServer::~HttpServer() {
    const bool given = !queue_;
    stop();
    queue_.reset();  // cancels what runs before the HTTP side goes
    // A given executor outlives the server: it must not call back into it.
    if (given) exec_->set_on_done({});
}

int HttpServer::bind() {
    const int port = options_.port == 0 ? http_->bind_to_any_port(options_.host)
                                        : (http_->bind_to_port(options_.host, options_.port) ? options_.port : -1);
    if (port <= 0)
        throw Error("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                    " (in use, or not an address of this machine)");
    return port;
}

void HttpServer::run() {
    {
        std::lock_guard<std::mutex> lock(run_mutex_);
        if (stopped_) return;
        running_ = true;
    }
    http_->listen_after_bind();
}

void HttpServer::stop() {
    // The HTTP side waits for its handlers, and a handler runs as long as its generation does: end the
    // generations first, so a SIGTERM does not wait for every running and queued reply to complete.
    if (exec_) exec_->shutdown();
    bool wait = false;
    {
        std::lock_guard<std::mutex> lock(run_mutex_);
        if (stopped_) return;
        stopped_ = true;
        wait = running_;
    }
    if (!http_) return;
    // Never run (and now it never will): httplib's stop() would leave the bound port taken.
    if (!wait) return http_->close_unused_listener();
    // httplib's stop() does nothing until listen_after_bind has marked the server running, and a
    // run() that has just begun (the app stops right after a start) would then accept forever: wait
    // for the mark. It is set before the accept loop, so the wait is short; bounded all the same.
    for (int i = 0; !http_->is_running() && i < 2000; ++i) std::this_thread::sleep_for(milliseconds(1));
    // The connection threads' waits end too: run() returns when those threads have, and a client that
    // does not read its reply would hold one for the write timeout.
    http_->stop_now();
}

void HttpServer::routes() {
    httplib::Server& s = *http_;
    // Every waiting request holds a connection thread while it waits; a few more keep /health,
    // /metrics and the 429 answers of a full queue responsive. A connection only kept alive between
    // requests gives its thread up to a new one that would wait for a thread.
    http_->set_thread_count(size_t(exec_->sessions() + exec_->capacity() + 4));
    s.set_payload_max_length(options_.max_body);
    // httplib's default also sets SO_REUSEPORT, with which a second server (another `serve`, the
    // app) binds beside one that listens and the kernel splits the connections between them: a port
    // in use must be an error. SO_REUSEADDR alone still allows a restart while old connections linger.
    s.set_socket_options([](socket_t sock) {
        const int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
        // httplib (0.11) caps only a body with a Content-Length: a chunked body would be read, and a
        // compressed one inflated, without limit. Both are refused before the body is read.
        if (req.has_header("Transfer-Encoding")) {
            send_error(res, ApiError(411, "send the request body with a Content-Length (chunked bodies are not "
                                          "accepted)", "invalid_request_error", {}, "length_required"));
            return httplib::Server::HandlerResponse::Handled;
        }
        const std::string encoding = req.get_header_value("Content-Encoding");
        if (!encoding.empty() && encoding != "identity") {
            send_error(res, ApiError(415, "compressed request bodies are not accepted (Content-Encoding: " + encoding +
                                          ")", "invalid_request_error", {}, "unsupported_encoding"));
            return httplib::Server::HandlerResponse::Handled;
        }
        if (options_.api_key.empty()) {
            // Without a key the server trusts whatever can reach the loopback address, which includes
            // web pages in the user's browser: a page of another site may POST to it (a "simple"
            // cross-origin request needs no preflight), or reach it under its own name by DNS
            // rebinding. Browsers always send Origin on such POSTs and the page's name as Host, so a
            // request naming anything but this machine is refused; command-line clients send
            // Host: 127.0.0.1:PORT or localhost and no Origin.
            const std::string host = req.get_header_value("Host");
            const std::string origin = req.get_header_value("Origin");
            if (req.has_header("Host") && !is_loopback_authority(host)) {
                send_error(res, ApiError(403, "Host '" + host + "' is not this machine: a server without --api-key "
                                              "answers only requests addressed to a loopback name or address",
                                         "permission_error", {}, "forbidden_host"));
                return httplib::Server::HandlerResponse::Handled;
            }
            if (req.has_header("Origin") && !is_loopback_origin(origin)) {
                send_error(res, ApiError(403, "requests from the web page '" + origin + "' are refused: a server "
                                              "without --api-key answers only pages served from this machine",
                                         "permission_error", {}, "forbidden_origin"));
                return httplib::Server::HandlerResponse::Handled;
            }
            return httplib::Server::HandlerResponse::Unhandled;
        }
        if (req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
        if (req.get_header_value("Authorization") == "Bearer " + options_.api_key)
            return httplib::Server::HandlerResponse::Unhandled;
        send_error(res, ApiError(401, "invalid or missing API key (send 'Authorization: Bearer KEY')",
                                 "authentication_error", {}, "invalid_api_key"));
        return httplib::Server::HandlerResponse::Handled;
    });
    s.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty() || res.status < 400) return httplib::Server::HandlerResponse::Unhandled;
        send_error(res, error_for_status(res.status, options_.max_body));
        return httplib::Server::HandlerResponse::Handled;
    }));
    s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
            if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
            what = e.what();
        } catch (...) {
        }
        send_error(res, ApiError(500, what, "server_error"));
    });
    http_->set_status_logger([this](int status) { metrics_.count_request(status); });

    s.Get("/health", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("{\"status\":\"ok\"}", "application/json");
    });
    s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics_.prometheus_text([this] {
            return MetricsSnapshotGauges{exec_->waiting(), exec_->busy(), exec_->sessions(), exec_->capacity()};
        }), "text/plain; version=0.0.4");
    });
    s.Get("/props", [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(props_json(*chat_template()), "application/json");
    });
    for (const char* path : {"/v1/models", "/models"})
        s.Get(path, [this](const httplib::Request&, httplib::Response& res) {
            res.set_content(models_json(options_.model_id, started_), "application/json");
        });
    for (const char* path : {"/v1/chat/completions", "/chat/completions"})
        s.Post(path, [this](const httplib::Request& req, httplib::Response& res) {
            handle_completion(req.body, Endpoint::CHAT, res);
        });
    for (const char* path : {"/v1/completions", "/completions"})
        s.Post(path, [this](const httplib::Request& req, httplib::Response& res) {
            handle_completion(req.body, Endpoint::COMPLETION, res);
        });
}

std::shared_ptr<const ChatTemplate> HttpServer::chat_template() const {
    if (std::shared_ptr<const ChatTemplate> own = exec_->chat_template()) return own;
    // The model's, which outlives the server: a pointer that owns nothing.
    return std::shared_ptr<const ChatTemplate>(std::shared_ptr<void>(), &model_.chat_template());
}

// The prompt of a request as its executor will feed it: tokens, how many of them must fit the
// context, and the room the reply must have after them.
ExecutorPrompt HttpServer::render(const CompletionRequest& r) const {
    try {
        if (r.endpoint == Endpoint::CHAT) {
            if (std::optional<ExecutorPrompt> own = exec_->chat_prompt(r.messages)) return std::move(*own);
            ExecutorPrompt out;
            out.ids = build_chat_prompt(model_, r.messages, true).ids;
            out.must_fit = int32_t(out.ids.size());
            return out;
        }
        const Tokenizer& tok = model_.tokenizer();
        ExecutorPrompt out;
        out.ids = tok.encode(r.prompt, tok.add_bos(), true);
        out.must_fit = int32_t(out.ids.size());
        return out;
    } catch (const Error& e) {
        throw ApiError(400, e.what(), "invalid_request_error", r.endpoint == Endpoint::CHAT ? "messages" : "prompt");
    }
}

// A prompt, with max_tokens when given, that does not fit the context is refused here (400), by the
// executor's count: a prompt it would refuse must not get as far as the 200.
void HttpServer::check_fits(const CompletionRequest& r, const ExecutorPrompt& prompt) const {
    const int32_t n_ctx = exec_->n_ctx();
    const int32_t room = std::max(prompt.reply_room, 1);
    const bool prompt_fits = prompt.must_fit + room <= n_ctx;
    if (prompt_fits && (r.max_tokens <= 0 || prompt.must_fit + r.max_tokens <= n_ctx)) return;
    const std::string kept = room > 1 ? " with at least " + std::to_string(room) + " kept for the reply" : "";
    const std::string param = prompt_fits ? "max_tokens" : (r.endpoint == Endpoint::CHAT ? "messages" : "prompt");
    throw ApiError(400, "the prompt is " + std::to_string(prompt.must_fit) + " tokens" +
                            (r.max_tokens > 0 ? " and max_tokens " + std::to_string(r.max_tokens) : "") +
                            ", but the context holds " + std::to_string(n_ctx) + " tokens" + kept + " (" +
                            exec_->context_setting() + ")",
                   "invalid_request_error", param, "context_length_exceeded");
}

// The prompt and the sampling settings of a request, checked against the model and the context.
std::shared_ptr<Job> HttpServer::make_job(const CompletionRequest& r) const {
    const Tokenizer& tok = model_.tokenizer();
    ExecutorPrompt prompt = render(r);
    if (prompt.ids.empty()) throw ApiError(400, "the prompt is empty", "invalid_request_error", "prompt");
    check_fits(r, prompt);
    SamplingParams p = r.sampling;
    // As `generate --chat`: the template's end-of-turn text ends a reply even when the file does not
    // mark it as a control token.
    if (r.endpoint == Endpoint::CHAT)
        for (const std::string& s : chat_template()->end_of_turn_texts()) p.stop.push_back(s);
    p.max_tokens = r.max_tokens > 0 ? r.max_tokens : exec_->n_ctx() - prompt.must_fit;
    for (const LogitBias& b : p.logit_bias)
        if (b.token >= tok.n_vocab())
            throw ApiError(400, "logit_bias: token " + std::to_string(b.token) + " is beyond the vocabulary of " +
                                    std::to_string(tok.n_vocab()) + " tokens",
                           "invalid_request_error", "logit_bias", "invalid_value");
    check_grammar_can_start(r, p.grammar, vocab_);
    auto job = std::make_shared<Job>(std::move(prompt.ids), std::move(p), r.logprobs, r.top_logprobs);
    job->messages = r.messages;
    job->reuse_prefix = r.cache_prompt;
    return job;
}

void HttpServer::handle_completion(const std::string& body, Endpoint endpoint, httplib::Response& res) {
    try {
        if (const std::string why = exec_->unsupported(endpoint); !why.empty())
            throw ApiError(400, why, "invalid_request_error", {}, "unsupported_endpoint");
        const CompletionRequest r = parse_completion_request(body, endpoint, options_.defaults);
        if (!r.model.empty() && r.model != options_.model_id)
            throw ApiError(404, "the model '" + r.model + "' does not exist; this server serves '" + options_.model_id + "'",
                           "invalid_request_error", "model", "model_not_found");
        std::shared_ptr<Job> job = make_job(r);
        const ApiError stopping(503, "the server is shutting down", "server_error", {}, "shutting_down");
        if (exec_->stopping()) throw stopping;
        if (!exec_->submit(job)) {
            if (exec_->stopping()) throw stopping;  // it began between the check and the submit
            throw ApiError(429, "the queue is full (" + std::to_string(exec_->capacity()) +
                                    " requests waiting); retry later", "rate_limit_error", {}, "queue_full");
        }
        const ResponseMeta meta{endpoint, new_id(endpoint), unix_now(), options_.model_id};
        res.set_header("Cache-Control", "no-cache");
        const bool usage = r.include_usage;
        const auto release = [this, job](bool success) {
            if (!success) exec_->cancel(*job);  // the client left, or the server is stopping
        };
        if (r.stream)
            res.set_chunked_content_provider(
                "text/event-stream",
                [this, job, meta, usage](size_t, httplib::DataSink& sink) { return stream(*job, meta, usage, sink); },
                release);
        else
            // "charset" keeps httplib from compressing it: a compressor would hold back the keep-alive spaces.
            res.set_chunked_content_provider(
                "application/json; charset=utf-8",
                [this, job, meta](size_t, httplib::DataSink& sink) { return respond_whole(*job, meta, sink); },
                release);
    } catch (const ApiError& e) {
        send_error(res, e);
    }
}

// The whole reply of a non-streamed request, written when it is done. While it is generated a space
// goes out every half second (JSON allows whitespace before the value): a write that fails means the
// client has gone, and the job is cancelled as a streamed one would be. The status is 200 by then, so
// a generation that fails (a backend error) answers with OpenAI's error object in a 200 body.
std::string HttpServer::failure_of(const GenerateResult& g) const {
    if (g.reason == StopReason::ERROR) return g.error;
    if (g.reason == StopReason::STOPPED && exec_->stopping())
        return "the server shut down before the reply was complete";
    return {};
}

bool HttpServer::respond_whole(Job& job, const ResponseMeta& meta, httplib::DataSink& sink) const {
    std::vector<StreamToken> tokens;
    while (!job.wait(tokens, milliseconds(500)))
        if (!write(sink, " ")) {
            exec_->cancel(job);
            return false;
        }
    // The reply is all there: a client that reads it slowly may not hold this thread past the timeout.
    GuardedServer::limit_reply_time();
    const GenerateResult& g = job.result();
    std::string body;
    if (const std::string failure = failure_of(g); !failure.empty()) {
        body = error_json(ApiError(500, failure, "server_error"));
    } else {
        std::vector<TokenLogprob> lps;
        for (StreamToken& t : tokens) lps.push_back(std::move(t.logprob));
        const Usage usage{int32_t(job.prompt.size()), int32_t(g.tokens.size()), g.timings.n_reused};
        body = completion_json(meta, g.text, finish_reason(g.reason), job.logprobs ? &lps : nullptr, usage);
    }
    if (!write(sink, body)) return false;
    sink.done();
    return true;
}

// Writes the events of one streamed reply as its tokens arrive. False (the job cancelled) when the
// client has gone: a write fails, or the socket is no longer writable.
bool HttpServer::stream(Job& job, const ResponseMeta& meta, bool include_usage, httplib::DataSink& sink) {
    const auto gone = [&] {
        exec_->cancel(job);
        return false;
    };
    ChunkContent first;
    if (meta.endpoint == Endpoint::CHAT) first.role = "assistant";
    if (meta.endpoint == Endpoint::CHAT && !write(sink, sse_event(chunk_json(meta, first)))) return gone();
    std::string streamed;
    size_t token_offset = 0;  // legacy logprobs' text_offset counts token bytes from the reply's start
    auto idle_since = std::chrono::steady_clock::now();
    for (bool done = false; !done;) {
        std::vector<StreamToken> tokens;
        done = job.wait(tokens, milliseconds(100));
        // The rest of the reply is all there (what a slow reader left behind included): it may not
        // hold this thread past the timeout.
        if (done) GuardedServer::limit_reply_time();
        if (!sink.is_writable()) return gone();
        for (StreamToken& t : tokens) {
            if (t.text.empty() && !job.logprobs) continue;
            std::vector<TokenLogprob> lp{t.logprob};
            ChunkContent c;
            c.text = t.text;
            if (job.logprobs) c.logprobs = &lp;
            c.text_offset = token_offset;
            if (!write(sink, sse_event(chunk_json(meta, c)))) return gone();
            streamed += t.text;
            token_offset += t.logprob.token.size();
        }
        // While the request waits for a session nothing else is written: an SSE comment now and then
        // finds out whether the client is still there (a write to a closed connection fails).
        if (!tokens.empty()) idle_since = std::chrono::steady_clock::now();
        else if (!done && std::chrono::steady_clock::now() - idle_since > milliseconds(500)) {
            if (!write(sink, ": waiting\n\n")) return gone();
            idle_since = std::chrono::steady_clock::now();
        }
    }
    const GenerateResult& g = job.result();
    if (const std::string failure = failure_of(g); !failure.empty()) {
        if (!write(sink, sse_event(error_json(ApiError(500, failure, "server_error"))))) return gone();
    } else {
        // Text held back at the end (a partial stop string that never completed, an unfinished character).
        ChunkContent last;
        if (g.text.size() > streamed.size() && g.text.compare(0, streamed.size(), streamed) == 0)
            last.text = g.text.substr(streamed.size());
        last.finish_reason = finish_reason(g.reason);
        if (!write(sink, sse_event(chunk_json(meta, last)))) return gone();
        if (include_usage &&
            !write(sink, sse_event(usage_chunk_json(
                meta, {int32_t(job.prompt.size()), int32_t(g.tokens.size()), g.timings.n_reused}))))
            return gone();
    }
    if (!write(sink, "data: [DONE]\n\n")) return gone();
    sink.done();
    return true;
}

}  // namespace wb::server
