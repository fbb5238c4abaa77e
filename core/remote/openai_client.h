#pragma once
// A client of an OpenAI-compatible server (WhiteBox's own `serve`, llama.cpp's server, vLLM, Ollama,
// LM Studio, ...): the models it lists, and replies streamed from /v1/chat/completions or
// /v1/completions token by token, with the logprobs the server reports. cpp-httplib underneath.
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chat/chat_template.h"
#include "util/error.h"

namespace wb::remote {

struct RemoteOptions {
    std::string base_url;            // http(s)://host[:port][/path]; "/v1" is added unless the path ends in it
    std::string api_key;             // sent as "Authorization: Bearer KEY" when not empty
    std::string model;               // the "model" of requests; empty: the first one GET /v1/models lists
    int32_t connect_timeout_ms = 10000;
    int32_t read_timeout_ms = 60000;  // the longest wait for the next bytes of a reply
};

// What went wrong, for callers that react differently (the messages say it for people).
enum class RemoteErrorKind {
    BAD_URL,      // the base URL cannot be used
    BAD_OPTION,   // another client option cannot be used (a timeout that is not positive)
    CONNECTION,   // nothing answered at the address (refused, unknown host, TLS failure)
    TIMEOUT,      // connecting, or the next bytes of a reply, took longer than the timeout
    HTTP_STATUS,  // the server answered 4xx / 5xx (status()), or reported an error inside the stream
    MALFORMED,    // the server's answer is not what the API defines (not JSON, fields missing)
    TRUNCATED,    // the stream ended before "data: [DONE]"
};

class RemoteError : public Error {
public:
    RemoteError(RemoteErrorKind kind, const std::string& message, int status = 0)
        : Error(message), kind_(kind), status_(status) {}
    RemoteErrorKind kind() const { return kind_; }
    int status() const { return status_; }  // the HTTP status of HTTP_STATUS errors (0 for one inside a stream)

private:
    RemoteErrorKind kind_;
    int status_;
};

// Sampling settings sent with a request; those not set are left to the server's defaults. The
// names are OpenAI's where it has them and llama.cpp server's otherwise (which vLLM and WhiteBox's
// server take as well; OpenAI itself refuses the extensions).
struct RemoteSampling {
    std::optional<float> temperature, top_p, min_p, typical_p;
    std::optional<float> frequency_penalty, presence_penalty, repeat_penalty;
    std::optional<int32_t> top_k, repeat_last_n;
    std::optional<uint64_t> seed;
    std::vector<std::string> stop;
    // llama.cpp server's extensions (WhiteBox's server takes them too), sent only when set, so a
    // server that knows none of them sees none unless the user asked for one.
    std::string grammar;  // GBNF, matching from `root`; empty: none
    // OpenAI's {"token id": bias}, ids of the server's vocabulary; -inf bans (sent as false, as
    // llama.cpp's server and WhiteBox's take it).
    std::vector<std::pair<int32_t, float>> logit_bias;
    std::optional<float> dry_multiplier, dry_base;
    std::optional<int32_t> dry_allowed_length, dry_penalty_last_n;
    std::optional<std::vector<std::string>> dry_sequence_breakers;  // never sent empty (servers refuse it)
    std::optional<float> xtc_probability, xtc_threshold, top_n_sigma;
    std::optional<int32_t> mirostat;
    std::optional<float> mirostat_tau, mirostat_eta;
    // The filtering stages' order by llama.cpp's names (core/sampling's); set only when not the default.
    std::optional<std::vector<std::string>> samplers;
    bool ignore_eos = false;  // sent only when true

    bool operator==(const RemoteSampling&) const = default;
};

struct RemoteRequest {
    std::vector<ChatMessage> messages;  // POST /v1/chat/completions ...
    std::optional<std::string> prompt;  // ... unless set: POST /v1/completions with this text as it is
    RemoteSampling sampling;
    int32_t max_tokens = 0;             // 0: not sent (the server's limit)
    int32_t top_logprobs = -1;          // >= 0: ask for logprobs with this many alternatives per token
};

// A token as the server reports it in logprobs: its exact bytes (which may be part of a UTF-8
// character) and natural-log probability; a probability the server rounded to 0 is -inf, and a token
// the server gave no probability (a null in the legacy completions shape) has NaN.
struct RemoteCandidate {
    std::string token;
    float logprob = 0.0f;
};
struct RemoteTokenLogprob {
    std::string token;
    float logprob = 0.0f;
    std::vector<RemoteCandidate> top;  // the alternatives, most likely first, as sent
};

// One streamed chunk: the text it adds (may be empty) and the tokens it reports logprobs for.
struct StreamDelta {
    std::string text;
    std::vector<RemoteTokenLogprob> tokens;
};

struct RemoteResult {
    std::string text;                  // the whole reply as streamed
    std::string finish_reason;         // "stop", "length", ... as the server said; empty when cancelled
    std::string model;                 // the model the chunks name
    std::optional<int32_t> prompt_tokens, completion_tokens;  // when the server reports usage
    bool cancelled = false;            // the cancel flag ended the stream
};

// The chat template a server renders chat requests with, as llama-server's GET /props tells it
// (WhiteBox's server too): the Jinja source and its BOS / EOS texts, or a built-in format's name.
struct ServerChatTemplate {
    std::string source;     // empty for a built-in format
    std::string format;     // "chatml", ... when source is empty (WhiteBox's "chat_format")
    std::string bos_token, eos_token;
};

// Each request opens its own connection, so one client serves any number of requests, on several
// threads at once; it is neither copied nor moved (its model cache has a lock), but shared by
// reference for as long as the server is used.
class OpenAiClient {
public:
    // RemoteError BAD_URL when the URL is not http(s)://host[:port][/path], BAD_OPTION when a timeout
    // is not positive.
    explicit OpenAiClient(RemoteOptions options);
    OpenAiClient(const OpenAiClient&) = delete;
    OpenAiClient& operator=(const OpenAiClient&) = delete;

    // GET /v1/models: the ids the server lists. RemoteError on any failure. Both GETs here read at
    // most 1 MiB (more is a MALFORMED error) and give up (TIMEOUT) once the connect and read timeouts
    // together have passed, however the bytes trickle; *cancel, when given, ends them as it ends a
    // stream (within 50 ms): models() is then empty, chat_template() nullopt.
    std::vector<std::string> models(const std::atomic<bool>* cancel = nullptr) const;
    // GET /props beside /v1 (llama-server's, WhiteBox's): the template the server renders chats with.
    // nullopt when the server does not say (no /props, as vLLM, Ollama and OpenAI; no template in
    // it); RemoteError when the server cannot be reached.
    std::optional<ServerChatTemplate> chat_template(const std::atomic<bool>* cancel = nullptr) const;

    // Streams one reply (stream=true), calling on_delta for every chunk that carries text or logprobs.
    // *cancel, when given, is read before anything is sent, after each event and, while no bytes come
    // (the model lookup included), every 50 ms: once true the connection is closed (the server sees its
    // client leave) and the result says cancelled. RemoteError on any failure; an exception thrown by
    // on_delta ends the stream and propagates.
    // Without options().model the request names the first model GET /v1/models listed, asked once
    // and kept; a server that has since changed its model (Ollama, LM Studio and llama-swap swap
    // them) answers that name with 404: the list is then asked again and, when it now starts with
    // another model, the request is sent once more with that one (nothing had been streamed). A 404
    // for a model the options name, or with the list unchanged, is the RemoteError.
    using DeltaFn = std::function<void(const StreamDelta&)>;
    RemoteResult complete(const RemoteRequest& request, const DeltaFn& on_delta,
                          const std::atomic<bool>* cancel = nullptr) const;

    // "http://host:port/v1": where requests go, for messages.
    std::string endpoint() const { return origin_ + prefix_; }
    const RemoteOptions& options() const { return options_; }

private:
    // The model a request names: the option, else the first one the server lists, asked once per
    // client (a chat's turns would otherwise each wait for a GET /v1/models first). `stale`, when not
    // empty, is a listed name the server refused: it is forgotten and the list asked again.
    // Empty when *cancel was set meanwhile. The lock is not held while the server is asked.
    std::string model_for_request(const std::atomic<bool>* cancel, const std::string& stale = {}) const;
    std::vector<std::string> list_models(const std::atomic<bool>* cancel) const;
    // One POST of the request naming `model`, streamed to on_delta.
    RemoteResult stream_once(const RemoteRequest& request, const std::string& model, const DeltaFn& on_delta,
                             const std::atomic<bool>* cancel) const;

    RemoteOptions options_;
    std::string origin_;  // scheme://host[:port]
    std::string host_;    // the host alone, for telling an unknown host from a refused connection
    std::string prefix_;  // the path before /chat/completions, ending in /v1
    mutable std::mutex listed_mutex_;   // complete() may run on several threads at once
    mutable std::string listed_model_;  // the first model GET /v1/models listed; empty until asked
};

}  // namespace wb::remote
