#include "remote/openai_client.h"

#include <httplib.h>
#include <netdb.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "remote/openai_format.h"
#include "remote/sse_parser.h"

namespace wb::remote {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// An error body is read only so far: enough for any message, bounded against a hostile server.
constexpr size_t kMaxErrorBody = 64 * 1024;
// A model list or /props is read only so far (a few KB from any real server; a hostile one could
// otherwise send without end) ...
constexpr size_t kMaxSmallBody = 1024 * 1024;

[[noreturn]] void bad_url(const std::string& url, const std::string& why) {
    throw RemoteError(RemoteErrorKind::BAD_URL, "the remote URL '" + url + "' " + why +
                                                    " (expected http://HOST[:PORT][/PATH] or https://...)");
}

std::string seconds(int32_t ms) {
    return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

bool host_resolves(const std::string& host) {
    std::string name = host;
    if (name.size() > 2 && name.front() == '[' && name.back() == ']') name = name.substr(1, name.size() - 2);
    addrinfo* found = nullptr;
    const int rc = getaddrinfo(name.c_str(), nullptr, nullptr, &found);
    if (found) freeaddrinfo(found);
    return rc == 0;
}

json sampling_json(const RemoteSampling& s) {
    json j = json::object();
    const auto put = [&j](const char* key, const auto& v) {
        if (v) j[key] = *v;
    };
    put("temperature", s.temperature);
    put("top_p", s.top_p);
    put("min_p", s.min_p);
    put("typical_p", s.typical_p);
    put("frequency_penalty", s.frequency_penalty);
    put("presence_penalty", s.presence_penalty);
    put("repeat_penalty", s.repeat_penalty);
    put("top_k", s.top_k);
    put("repeat_last_n", s.repeat_last_n);
    put("seed", s.seed);
    if (!s.stop.empty()) j["stop"] = s.stop;
    if (!s.grammar.empty()) j["grammar"] = s.grammar;
    if (!s.logit_bias.empty()) {
        json bias = json::object();
        for (const auto& [token, b] : s.logit_bias)
            bias[std::to_string(token)] = std::isinf(b) && b < 0 ? json(false) : json(b);
        j["logit_bias"] = bias;
    }
    put("dry_multiplier", s.dry_multiplier);
    put("dry_base", s.dry_base);
    put("dry_allowed_length", s.dry_allowed_length);
    put("dry_penalty_last_n", s.dry_penalty_last_n);
    // llama.cpp's server refuses every request with an empty array, so "no breakers" is not sent.
    if (s.dry_sequence_breakers && !s.dry_sequence_breakers->empty())
        j["dry_sequence_breakers"] = *s.dry_sequence_breakers;
    put("xtc_probability", s.xtc_probability);
    put("xtc_threshold", s.xtc_threshold);
    put("top_n_sigma", s.top_n_sigma);
    put("mirostat", s.mirostat);
    put("mirostat_tau", s.mirostat_tau);
    put("mirostat_eta", s.mirostat_eta);
    put("samplers", s.samplers);
    if (s.ignore_eos) j["ignore_eos"] = true;
    return j;
}

json request_json(const RemoteRequest& r, const std::string& model) {
    json j = sampling_json(r.sampling);
    if (!model.empty()) j["model"] = model;
    if (r.prompt) {
        j["prompt"] = *r.prompt;
        if (r.top_logprobs >= 0) j["logprobs"] = r.top_logprobs;  // the legacy field is the count
    } else {
        json messages = json::array();
        for (const ChatMessage& m : r.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
        j["messages"] = messages;
        if (r.top_logprobs >= 0) {
            j["logprobs"] = true;
            j["top_logprobs"] = r.top_logprobs;
        }
    }
    if (r.max_tokens > 0) j["max_tokens"] = r.max_tokens;
    j["stream"] = true;
    j["stream_options"] = {{"include_usage", true}};
    return j;
}

// The state of one streamed reply while httplib delivers its bytes.
struct StreamState {
    int status = 0;
    std::string content_type;
    std::string error_body;  // a non-2xx (or not event-stream) body, up to kMaxErrorBody
    SseParser parser;
    bool chat = true;
    bool done = false;      // "data: [DONE]" arrived
    bool cancelled = false;
    Clock::time_point last_bytes = Clock::now();
    std::exception_ptr failure;  // thrown while handling bytes; rethrown after httplib returns
    RemoteResult result;
};

bool is_event_stream(const std::string& content_type) {
    std::string t = content_type.substr(0, content_type.find(';'));
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return t == "text/event-stream";
}

void on_event(StreamState& st, const SseEvent& ev, const OpenAiClient::DeltaFn& on_delta) {
    if (st.done) return;  // anything after [DONE] is not part of the reply
    if (ev.error)
        throw RemoteError(RemoteErrorKind::HTTP_STATUS, "the server reported an error during the reply: " +
                                                            error_message_of(*ev.error));
    if (ev.data == "[DONE]") {
        st.done = true;
        return;
    }
    StreamChunk c = parse_stream_chunk(ev.data, st.chat);
    if (!c.model.empty()) st.result.model = c.model;
    if (c.finish_reason) st.result.finish_reason = *c.finish_reason;
    if (c.prompt_tokens) st.result.prompt_tokens = c.prompt_tokens;
    if (c.completion_tokens) st.result.completion_tokens = c.completion_tokens;
    st.result.text += c.delta.text;
    if (!c.delta.text.empty() || !c.delta.tokens.empty()) on_delta(c.delta);
}

// httplib's content receiver: false ends the transfer (cancelled, or an error to rethrow).
bool receive(StreamState& st, const char* data, size_t n, const OpenAiClient::DeltaFn& on_delta,
             const std::atomic<bool>* cancel) {
    st.last_bytes = Clock::now();
    const auto cancelled = [&] { return cancel && cancel->load(std::memory_order_relaxed); };
    if (cancelled()) {
        st.cancelled = true;
        return false;
    }
    if (st.status < 200 || st.status >= 300 || !is_event_stream(st.content_type)) {
        st.error_body.append(data, std::min(n, kMaxErrorBody - std::min(kMaxErrorBody, st.error_body.size())));
        return st.error_body.size() < kMaxErrorBody;
    }
    try {
        st.parser.feed(std::string_view(data, n), [&](const SseEvent& ev) {
            if (st.cancelled) return;
            on_event(st, ev, on_delta);
            if (cancelled()) st.cancelled = true;
        });
    } catch (const SseError& e) {
        st.failure = std::make_exception_ptr(RemoteError(RemoteErrorKind::MALFORMED, e.what()));
        return false;
    } catch (...) {
        st.failure = std::current_exception();
        return false;
    }
    // Stopping at [DONE] matters: a server or proxy that leaves the response open after it would
    // otherwise turn a complete reply into a read timeout.
    return !st.cancelled && !st.done;
}

}  // namespace

OpenAiClient::OpenAiClient(RemoteOptions options) : options_(std::move(options)) {
    const std::string& url = options_.base_url;
    const size_t scheme_end = url.find("://");
    if (scheme_end == std::string::npos) bad_url(url, "has no scheme");
    std::string scheme = url.substr(0, scheme_end);
    std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (scheme != "http" && scheme != "https") bad_url(url, "is not http or https");
    const size_t path_start = url.find('/', scheme_end + 3);
    const std::string authority = url.substr(scheme_end + 3, path_start - (scheme_end + 3));
    if (authority.empty()) bad_url(url, "has no host");
    // Not echoed: the URL holds a password.
    if (authority.find('@') != std::string::npos)
        throw RemoteError(RemoteErrorKind::BAD_URL, "the remote URL carries a user name or password; give the "
                                                    "server's key with --api-key instead");
    if (std::any_of(url.begin(), url.end(), [](unsigned char c) { return c <= ' ' || c == 0x7f; }))
        bad_url(url, "contains spaces or control characters");
    const size_t bracket = authority.rfind(']');
    const size_t colon = authority.rfind(':');
    host_ = colon != std::string::npos && (bracket == std::string::npos || colon > bracket) ? authority.substr(0, colon)
                                                                                          : authority;
    if (host_.empty()) bad_url(url, "has no host");
    if (host_.size() != authority.size()) {
        const std::string port = authority.substr(host_.size() + 1);
        // unsigned char: isdigit of a negative char (a byte >= 0x80) is undefined.
        const auto digit = [](unsigned char c) { return std::isdigit(c) != 0; };
        if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), digit) ||
            std::stoi(port) == 0 || std::stoi(port) > 65535)
            bad_url(url, "has an invalid port '" + port + "'");
    }
    origin_ = scheme + "://" + authority;
    prefix_ = path_start == std::string::npos ? std::string() : url.substr(path_start);
    while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
    if (prefix_.find_first_of("?#") != std::string::npos) bad_url(url, "has a query or fragment");
    // Servers are given as "http://host:8080" as often as ".../v1"; both mean the same API.
    if (prefix_.size() < 3 || prefix_.compare(prefix_.size() - 3, 3, "/v1") != 0) prefix_ += "/v1";
    for (const auto& [name, ms] : {std::pair{"connect", options_.connect_timeout_ms},
                                   std::pair{"read", options_.read_timeout_ms}})
        if (ms <= 0)
            throw RemoteError(RemoteErrorKind::BAD_OPTION, std::string("the remote ") + name + " timeout is " +
                                                               std::to_string(ms) + " ms; it must be positive");
}

namespace {

httplib::Client make_client(const std::string& origin, const RemoteOptions& o) {
    httplib::Client c(origin);
    const auto ms = [](int32_t v) { return std::chrono::milliseconds(v); };
    c.set_connection_timeout(ms(o.connect_timeout_ms));
    c.set_read_timeout(ms(o.read_timeout_ms));
    c.set_write_timeout(ms(o.read_timeout_ms));
    httplib::Headers headers;
    if (!o.api_key.empty()) headers.emplace("Authorization", "Bearer " + o.api_key);
    c.set_default_headers(headers);
    return c;
}

// The error for a request httplib could not complete. waited: how long no bytes had come when it
// gave up, which tells a read timeout from a connection that broke.
[[noreturn]] void transport_error(httplib::Error e, const std::string& where, const std::string& host,
                                  const RemoteOptions& o, Clock::duration waited) {
    using httplib::Error;
    switch (e) {
    case Error::Connection:
        if (!host_resolves(host))
            throw RemoteError(RemoteErrorKind::CONNECTION, "cannot connect to " + where + ": the host '" + host +
                                                               "' is unknown");
        throw RemoteError(RemoteErrorKind::CONNECTION, "cannot connect to " + where + ": connection refused (is the "
                                                           "server running, and on this port?)");
    case Error::ConnectionTimeout:
        throw RemoteError(RemoteErrorKind::TIMEOUT, "cannot connect to " + where + ": no answer within " +
                                                        seconds(o.connect_timeout_ms));
    case Error::Read:
        if (waited + std::chrono::milliseconds(100) >= std::chrono::milliseconds(o.read_timeout_ms))
            throw RemoteError(RemoteErrorKind::TIMEOUT, where + " sent nothing for " + seconds(o.read_timeout_ms) +
                                                            " (the read timeout); the request was abandoned");
        throw RemoteError(RemoteErrorKind::CONNECTION, "the connection to " + where + " broke while reading its answer");
    case Error::Write:
        throw RemoteError(RemoteErrorKind::CONNECTION, "the connection to " + where + " broke while sending the request");
    case Error::SSLConnection:
    case Error::SSLLoadingCerts:
    case Error::SSLServerVerification:
        throw RemoteError(RemoteErrorKind::CONNECTION, "TLS with " + where + " failed (" + httplib::to_string(e) +
                                                           "): check the https URL and the server's certificate");
    default:
        throw RemoteError(RemoteErrorKind::CONNECTION, "the request to " + where + " failed (" + httplib::to_string(e) +
                                                           ")");
    }
}

[[noreturn]] void status_error(int status, const std::string& body, const std::string& where) {
    throw RemoteError(RemoteErrorKind::HTTP_STATUS,
                      where + " answered HTTP " + std::to_string(status) + ": " + error_message_of(body), status);
}

// Sends the request; a set cancel flag also ends a wait in which no bytes come (a server queueing
// the request or reading a long prompt may be silent for a long time): a watcher shuts the socket.
// httplib's stop() (made for another thread) only shuts a socket that is open, so once the flag is
// set the watcher repeats it every 50 ms until send() returns: a flag set while the connection was
// still being opened is not lost. A deadline, when given, ends the request the same way once passed
// (*expired says so): a server trickling bytes resets the read timeout for ever, not this.
httplib::Result send_cancellable(httplib::Client& c, const httplib::Request& req, const std::atomic<bool>* cancel,
                                 std::optional<Clock::time_point> deadline = std::nullopt,
                                 std::atomic<bool>* expired = nullptr) {
    if (!cancel && !deadline) return c.send(req);
    std::mutex m;
    std::condition_variable cv;
    bool finished = false;
    std::thread watcher([&] {
        std::unique_lock<std::mutex> lock(m);
        while (!finished) {
            const bool late = deadline && Clock::now() >= *deadline;
            if (late && expired) expired->store(true);
            if ((cancel && cancel->load()) || late) c.stop();
            cv.wait_for(lock, std::chrono::milliseconds(50));
        }
    });
    httplib::Result res = c.send(req);
    {
        std::lock_guard<std::mutex> lock(m);
        finished = true;
    }
    cv.notify_one();
    watcher.join();
    return res;
}

// A GET whose whole answer is small (a model list, /props): read through a receiver that stops at
// kMaxSmallBody, within the connect and read timeouts together as a deadline for all of it, and
// ended by *cancel as a stream is. The status and body; nullopt when cancelled. RemoteError on a
// transport failure, an answer too large, or one still coming at the deadline.
struct SmallAnswer {
    int status = 0;
    std::string body;
};
std::optional<SmallAnswer> get_small(httplib::Client& c, const std::string& path, const std::string& where,
                                     const std::string& host, const RemoteOptions& o,
                                     const std::atomic<bool>* cancel) {
    SmallAnswer a;
    bool too_large = false;
    std::atomic<bool> expired{false};
    Clock::time_point last_bytes = Clock::now();
    httplib::Request req;
    req.method = "GET";
    req.path = path;
    req.response_handler = [&a](const httplib::Response& r) {
        a.status = r.status;
        return true;
    };
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
        last_bytes = Clock::now();
        if (cancel && cancel->load()) return false;
        if (a.body.size() + n > kMaxSmallBody) {
            too_large = true;
            return false;
        }
        a.body.append(data, n);
        return true;
    };
    const int64_t total_ms = int64_t(o.connect_timeout_ms) + int64_t(o.read_timeout_ms);
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(total_ms);
    const httplib::Result res = send_cancellable(c, req, cancel, deadline, &expired);
    if (cancel && cancel->load()) return std::nullopt;
    if (too_large)
        throw RemoteError(RemoteErrorKind::MALFORMED, where + " answered with more than " +
                                                          std::to_string(kMaxSmallBody / 1024) + " KiB; not read further");
    if (!res) {
        if (expired.load())
            throw RemoteError(RemoteErrorKind::TIMEOUT, where + " did not finish answering within " +
                                                            seconds(int32_t(std::min<int64_t>(total_ms, INT32_MAX))) +
                                                            "; the request was abandoned");
        transport_error(res.error(), where, host, o, Clock::now() - last_bytes);
    }
    return a;
}

}  // namespace

std::vector<std::string> OpenAiClient::models(const std::atomic<bool>* cancel) const { return list_models(cancel); }

std::vector<std::string> OpenAiClient::list_models(const std::atomic<bool>* cancel) const {
    httplib::Client c = make_client(origin_, options_);
    const std::string where = endpoint() + "/models";
    const std::optional<SmallAnswer> res = get_small(c, prefix_ + "/models", where, host_, options_, cancel);
    if (!res) return {};
    if (res->status < 200 || res->status >= 300) status_error(res->status, res->body, where);
    return parse_models(res->body);
}

std::optional<ServerChatTemplate> OpenAiClient::chat_template(const std::atomic<bool>* cancel) const {
    httplib::Client c = make_client(origin_, options_);
    // /props sits beside /v1, not under it (llama-server's layout).
    const std::string root = prefix_.substr(0, prefix_.size() - 3);
    const std::string where = origin_ + root + "/props";
    const std::optional<SmallAnswer> res = get_small(c, root + "/props", where, host_, options_, cancel);
    if (!res) return std::nullopt;
    if (res->status < 200 || res->status >= 300) return std::nullopt;
    return parse_props(res->body);
}

std::string OpenAiClient::model_for_request(const std::atomic<bool>* cancel, const std::string& stale) const {
    if (!options_.model.empty()) return options_.model;
    {
        std::lock_guard<std::mutex> lock(listed_mutex_);
        if (!stale.empty() && listed_model_ == stale) listed_model_.clear();
        if (!listed_model_.empty()) return listed_model_;
    }
    // Two threads may both ask before either has stored the answer; the first answer stays.
    const std::vector<std::string> ids = list_models(cancel);
    if (cancel && cancel->load()) return {};
    if (ids.empty())
        throw RemoteError(RemoteErrorKind::MALFORMED, endpoint() + "/models lists no model; name one (--remote-model)");
    std::lock_guard<std::mutex> lock(listed_mutex_);
    if (listed_model_.empty()) listed_model_ = ids.front();
    return listed_model_;
}

namespace {

RemoteResult cancelled_before_streaming() {
    RemoteResult r;
    r.cancelled = true;
    return r;
}

}  // namespace

RemoteResult OpenAiClient::complete(const RemoteRequest& request, const DeltaFn& on_delta,
                                    const std::atomic<bool>* cancel) const {
    if (!request.prompt && request.messages.empty())
        throw RemoteError(RemoteErrorKind::MALFORMED, "a chat request needs at least one message");
    if (cancel && cancel->load()) return cancelled_before_streaming();  // nothing sent
    const std::string model = model_for_request(cancel);
    if (cancel && cancel->load()) return cancelled_before_streaming();
    try {
        return stream_once(request, model, on_delta, cancel);
    } catch (const RemoteError& e) {
        // A 404 arrives before any event, so nothing was streamed and the request may go again.
        if (!options_.model.empty() || e.kind() != RemoteErrorKind::HTTP_STATUS || e.status() != 404) throw;
        const std::string listed_now = model_for_request(cancel, model);
        if (cancel && cancel->load()) return cancelled_before_streaming();
        if (listed_now == model) throw;  // not a model that went away (a wrong path, say)
        return stream_once(request, listed_now, on_delta, cancel);
    }
}

RemoteResult OpenAiClient::stream_once(const RemoteRequest& request, const std::string& model,
                                       const DeltaFn& on_delta, const std::atomic<bool>* cancel) const {
    const bool chat = !request.prompt;
    const std::string where = endpoint() + (chat ? "/chat/completions" : "/completions");
    StreamState st;
    st.chat = chat;
    const auto cancelled_result = [&st] {
        st.result.cancelled = true;
        st.result.finish_reason.clear();
        return st.result;
    };

    httplib::Request req;
    req.method = "POST";
    req.path = prefix_ + (chat ? "/chat/completions" : "/completions");
    req.body = request_json(request, model).dump(-1, ' ', false, json::error_handler_t::replace);
    req.headers.emplace("Content-Type", "application/json");
    req.headers.emplace("Accept", "text/event-stream");
    req.response_handler = [&st](const httplib::Response& r) {
        st.status = r.status;
        st.content_type = r.get_header_value("Content-Type");
        return true;
    };
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
        return receive(st, data, n, on_delta, cancel);
    };
    httplib::Client c = make_client(origin_, options_);
    st.last_bytes = Clock::now();
    const httplib::Result res = send_cancellable(c, req, cancel);
    if (st.failure) std::rethrow_exception(st.failure);
    if (cancel && cancel->load()) st.cancelled = true;
    if (st.cancelled) return cancelled_result();
    if (!res && !(res.error() == httplib::Error::Canceled && st.status != 0))
        transport_error(res.error(), where, host_, options_, Clock::now() - st.last_bytes);
    if (st.status < 200 || st.status >= 300) status_error(st.status, st.error_body, where);
    if (!is_event_stream(st.content_type))
        throw RemoteError(RemoteErrorKind::MALFORMED, where + " answered with '" + st.content_type +
                                                          "' instead of a stream of events (text/event-stream): " +
                                                          excerpt(st.error_body));
    if (!st.done)
        throw RemoteError(RemoteErrorKind::TRUNCATED,
                          where + " ended the stream before 'data: [DONE]' (" + std::to_string(st.result.text.size()) +
                              " bytes of the reply had arrived" + (st.parser.in_event() ? ", the last event cut off" : "") +
                              ")");
    return st.result;
}

}  // namespace wb::remote
