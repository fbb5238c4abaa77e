#pragma once
// The server's generations: a bounded queue of jobs served in arrival order by a fixed set of
// sessions (one per --parallel slot, each with its own backend and KV cache). A job carries its
// output back to the HTTP thread that waits on it, token by token, and can be cancelled from there
// (a client that went away): the session then stops after the current token or prompt batch.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/backend.h"
#include "engine/session.h"
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

    // Worker side.
    void push(StreamToken t);
    void finish(GenerateResult r);
    // HTTP side: waits up to `timeout` for tokens or the end; moves the tokens that arrived into `out`.
    // True once the job has finished and every token was handed out (result() is then valid).
    bool wait(std::vector<StreamToken>& out, std::chrono::milliseconds timeout);
    const GenerateResult& result() const { return result_; }
    // Stops the job: its client left (cancel) or the server is shutting down (cancel_for_shutdown).
    // The first cause sticks, so a client dropped by the shutdown is not counted as one that left.
    void cancel() { set_cause(Cause::CLIENT); }
    void cancel_for_shutdown() { set_cause(Cause::SHUTDOWN); }
    bool cancelled() const { return cause_.load() != Cause::NONE; }
    bool cancelled_for_shutdown() const { return cause_.load() == Cause::SHUTDOWN; }

private:
    std::mutex mutex_;
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

struct QueueOptions {
    int32_t parallel = 1;   // sessions generating at once
    int32_t capacity = 16;  // jobs that may wait for a session; one more is refused
    SessionOptions session;
    BackendKind backend = BackendKind::AUTO;
    int32_t threads = 0;
};

class GenerationQueue {
public:
    // Called once for every job submitted, when it ends (metrics): on its worker thread, or for a job
    // still waiting at shutdown (DROPPED) on the thread that calls shutdown().
    using DoneFn = std::function<void(const Job&, const GenerateResult&, JobEnd)>;

    // Creates the backends and sessions (wb::Error when one cannot be made) and starts the workers.
    GenerationQueue(const Model& model, const QueueOptions& options, DoneFn on_done = {});
    ~GenerationQueue();  // shutdown(), then joins the workers
    GenerationQueue(const GenerationQueue&) = delete;
    GenerationQueue& operator=(const GenerationQueue&) = delete;

    // False (and the job untouched) when every session is busy and `capacity` jobs already wait, or
    // after shutdown().
    bool submit(std::shared_ptr<Job> job);
    // Cancels what runs (it stops after its current token or prompt batch) and finishes what waits
    // as ERROR ("shutting down", counted DROPPED), so the HTTP threads waiting on them return at
    // once; later submits are refused.
    void shutdown();
    bool stopping() const;

    int32_t waiting() const;
    int32_t busy() const;
    int32_t sessions() const { return int32_t(slots_.size()); }
    int32_t capacity() const { return capacity_; }
    int32_t n_ctx() const;
    std::string backend_description() const;
    std::vector<std::string> backend_notes() const;

private:
    struct Slot {
        BackendChoice backend;
        std::unique_ptr<Session> session;
    };
    void work(Slot& slot);

    const Model& model_;
    const int32_t capacity_;
    DoneFn on_done_;
    std::vector<std::unique_ptr<Slot>> slots_;
    std::vector<std::thread> workers_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<Job>> waiting_;
    std::vector<std::shared_ptr<Job>> running_;
    bool stopping_ = false;
};

}  // namespace wb::server
