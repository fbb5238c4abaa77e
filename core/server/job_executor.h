#pragma once
// What the HTTP layer (http_server.h) needs of whatever generates its replies: a Job carries one
// request's prompt and settings in and its tokens and result out, token by token, to the HTTP thread
// that waits on it; a JobExecutor takes jobs (or refuses them: 429), cancels one whose client left,
// and reports its queue for /metrics. Two executors exist: the CLI's GenerationQueue (sessions of its
// own) and the desktop app's AppJobExecutor (the app's one inference worker, ui/serve_executor.h).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "engine/session.h"
#include "server/api_request.h"
#include "server/api_response.h"
#include "server/job_end.h"

namespace wb::server {

struct StreamToken {
    std::string text;      // the text this token adds to the reply (held back while it may begin a stop string)
    TokenLogprob logprob;  // filled when the job wants logprobs
};

class Job {
public:
    Job(std::vector<int32_t> prompt, SamplingParams params, bool logprobs, int32_t top_logprobs)
        : prompt(std::move(prompt)), params(std::move(params)), logprobs(logprobs), top_logprobs(top_logprobs) {}

    const std::vector<int32_t> prompt;
    const SamplingParams params;  // max_tokens included
    const bool logprobs;
    const int32_t top_logprobs;
    // A chat request's messages, which `prompt` was rendered from (the app shows them as a
    // conversation and renders them with its own template); empty for a completion.
    std::vector<ChatMessage> messages;
    // The request's cache_prompt: it may start from the cache an earlier request left (GenerationQueue).
    bool reuse_prefix = false;

    // Worker side.
    void push(StreamToken t);
    void finish(GenerateResult r);
    // HTTP side: waits up to `timeout` for tokens or the end; moves the tokens that arrived into `out`.
    // True once the job has finished and every token was handed out (result() is then valid).
    bool wait(std::vector<StreamToken>& out, std::chrono::milliseconds timeout);
    const GenerateResult& result() const { return result_; }
    bool finished() const;
    // Stops the job: its client left (cancel) or the server is shutting down (cancel_for_shutdown).
    // The first cause sticks, so a client dropped by the shutdown is not counted as one that left.
    // HTTP code cancels through JobExecutor::cancel, which also tells the executor.
    void cancel() { set_cause(Cause::CLIENT); }
    void cancel_for_shutdown() { set_cause(Cause::SHUTDOWN); }
    bool cancelled() const { return cause_.load() != Cause::NONE; }
    bool cancelled_for_shutdown() const { return cause_.load() == Cause::SHUTDOWN; }

private:
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<StreamToken> pending_;
    bool finished_ = false;
    GenerateResult result_;
    enum class Cause { NONE, CLIENT, SHUTDOWN };
    void set_cause(Cause c) {
        Cause none = Cause::NONE;
        cause_.compare_exchange_strong(none, c);
    }
    std::atomic<Cause> cause_{Cause::NONE};
};

// A chat request's prompt as an executor that renders prompts its own way will feed it
// (JobExecutor::chat_prompt).
struct ExecutorPrompt {
    std::vector<int32_t> ids;  // the prompt as fed (the usage's prompt_tokens)
    int32_t must_fit = 0;      // how many of its tokens the context must hold (fewer than ids.size() where
                               // the executor drops or shifts out old turns when the context is full)
    int32_t reply_room = 1;    // the tokens the context must have left after them for the reply
};

class JobExecutor {
public:
    // Called once for every job submitted, when it ends (the server's metrics), on whichever thread
    // ends it.
    using DoneFn = std::function<void(const Job&, const GenerateResult&, JobEnd)>;

    virtual ~JobExecutor() = default;

    // False (and the job untouched) when the executor will not take it now: its queue is full (the
    // client gets 429), or it is shutting down (503).
    virtual bool submit(std::shared_ptr<Job> job) = 0;
    // The client of `job` left: it stops after its current token (or never starts). The default marks
    // the job, which an executor that polls it (GenerationQueue's sessions) needs no more than.
    virtual void cancel(Job& job) { job.cancel(); }
    // Cancels what runs and finishes what waits with an error, so the HTTP threads waiting on them
    // return at once; later submits are refused.
    virtual void shutdown() = 0;
    virtual bool stopping() const = 0;

    // Why this executor does not serve an endpoint (the client gets 400 with it); empty when it does.
    virtual std::string unsupported(Endpoint) const { return {}; }
    // A chat request's prompt as this executor will feed it, when that is not the server's way (the
    // model's own template, the whole prompt in the context, one token left for the reply): the app's
    // worker renders with the template the user chose, and refuses a prompt that leaves the reply
    // less room. The server checks the request against it before submit, so a prompt the executor
    // would refuse is a 400, not an error after the 200. Called on the request's HTTP thread;
    // wb::Error when the messages cannot be rendered.
    virtual std::optional<ExecutorPrompt> chat_prompt(const std::vector<ChatMessage>&) const { return std::nullopt; }
    // The template chat requests are rendered with, when it is not the model's own: the app's worker
    // renders with the one the user chose. /props reports it and its end-of-turn texts end a chat
    // reply, so a client sees the template that makes its prompts. Null: the model's. Called on HTTP
    // threads, per request (the user may change the template while serving).
    virtual std::shared_ptr<const ChatTemplate> chat_template() const { return nullptr; }
    // Where the context's size is set, for the message of a prompt that does not fit.
    virtual std::string context_setting() const { return "serve --ctx"; }

    // The queue, for /metrics and the 429 message.
    virtual int32_t waiting() const = 0;
    virtual int32_t busy() const = 0;
    virtual int32_t sessions() const = 0;
    virtual int32_t capacity() const = 0;
    // The context a prompt and its max_tokens must fit.
    virtual int32_t n_ctx() const = 0;

    // Set once, before the first submit (HttpServer does).
    void set_on_done(DoneFn f) { on_done_ = std::move(f); }

protected:
    void report_done(const Job& job, const GenerateResult& r, JobEnd end) const {
        if (on_done_) on_done_(job, r, end);
    }

private:
    DoneFn on_done_;
};

}  // namespace wb::server
