#pragma once
// The CLI server's generations (a JobExecutor): a bounded queue of jobs served in arrival order by a
// fixed set of sessions (one per --parallel slot, each with its own backend and KV cache). A job
// carries its output back to the HTTP thread that waits on it, token by token, and can be cancelled
// from there (a client that went away): the session then stops after the current token or prompt batch.
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
#include "server/job_executor.h"

namespace wb::server {

struct QueueOptions {
    int32_t parallel = 1;   // sessions generating at once
    int32_t capacity = 16;  // jobs that may wait for a session; one more is refused
    SessionOptions session;
    BackendKind backend = BackendKind::AUTO;
    int32_t threads = 0;
};

class GenerationQueue : public JobExecutor {
public:
    // on_done: as set_on_done; called on the job's worker thread, or for a job still waiting at
    // shutdown (DROPPED) on the thread that calls shutdown().
    // Creates the backends and sessions (wb::Error when one cannot be made) and starts the workers.
    GenerationQueue(const Model& model, const QueueOptions& options, DoneFn on_done = {});
    ~GenerationQueue() override;  // shutdown(), then joins the workers
    GenerationQueue(const GenerationQueue&) = delete;
    GenerationQueue& operator=(const GenerationQueue&) = delete;

    // False (and the job untouched) when every session is busy and `capacity` jobs already wait, or
    // after shutdown().
    bool submit(std::shared_ptr<Job> job) override;
    // Cancels what runs (it stops after its current token or prompt batch) and finishes what waits
    // as ERROR ("shutting down", counted DROPPED), so the HTTP threads waiting on them return at
    // once; later submits are refused.
    void shutdown() override;
    bool stopping() const override;

    int32_t waiting() const override;
    int32_t busy() const override;
    int32_t sessions() const override { return int32_t(slots_.size()); }
    int32_t capacity() const override { return capacity_; }
    int32_t n_ctx() const override;
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
    std::vector<std::unique_ptr<Slot>> slots_;
    std::vector<std::thread> workers_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<Job>> waiting_;
    std::vector<std::shared_ptr<Job>> running_;
    bool stopping_ = false;
};

}  // namespace wb::server
