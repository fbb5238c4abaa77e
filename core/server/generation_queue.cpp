#include "server/generation_queue.h"

#include <algorithm>
#include <cmath>

#include "server/memory_budget.h"
#include "tokenizer/tokenizer.h"

namespace wb::server {

namespace {

float log_p(float p) { return float(std::log(double(p))); }

// Turns the session's token events into the job's stream, and the job's cancellation into a stop.
class JobObserver : public Observer {
public:
    explicit JobObserver(Job& job) : job_(job) {}
    CaptureSpec capture() const override {
        CaptureSpec spec;
        // The chosen token's raw p comes with the candidates: at least one is asked for.
        if (job_.logprobs) spec.top_candidates = std::max(job_.top_logprobs, 1);
        return spec;
    }
    void on_token(const TokenEvent& e) override {
        StreamToken t;
        t.text = e.piece;
        if (job_.logprobs) {
            t.logprob.token = e.token_piece;
            t.logprob.logprob = log_p(e.p_raw);
            for (size_t i = 0; i < e.candidates.size() && int32_t(i) < job_.top_logprobs; ++i)
                t.logprob.top.emplace_back(e.candidates[i].piece, log_p(e.candidates[i].p_raw));
        }
        job_.push(std::move(t));
    }
    bool stop_requested() const override { return job_.cancelled(); }

private:
    Job& job_;
};

}  // namespace

GenerationQueue::GenerationQueue(const Model& model, const QueueOptions& o, DoneFn on_done)
    : model_(model), capacity_(o.capacity) {
    set_on_done(std::move(on_done));
    const int32_t n = std::max(o.parallel, 1);
    for (int32_t i = 0; i < n; ++i) {
        auto slot = std::make_unique<Slot>();
        slot->backend = create_backend(o.backend, o.threads);
        slot->session = std::make_unique<Session>(model_, *slot->backend.backend, o.session);
        // The caches fill as the sessions are used, so a budget too small would show only later as an
        // allocation failure or swapping: refuse it now. (A GPU backend's caches are in device memory.)
        if (i == 0 && slot->backend.backend->name() == std::string("cpu"))
            check_kv_budget(session_kv_bytes(model_.config(), slot->session->n_ctx()), n, slot->session->n_ctx(),
                            available_memory());
        slots_.push_back(std::move(slot));
    }
    for (auto& slot : slots_) workers_.emplace_back([this, s = slot.get()] { work(*s); });
}

GenerationQueue::~GenerationQueue() {
    shutdown();
    for (auto& w : workers_) w.join();
}

void GenerationQueue::shutdown() {
    std::deque<std::shared_ptr<Job>> dropped;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
        for (auto& job : running_) job->cancel_for_shutdown();
        dropped.swap(waiting_);
    }
    cv_.notify_all();
    for (auto& job : dropped) {
        GenerateResult r;
        r.reason = StopReason::ERROR;  // never started: its client gets an error, not an empty reply
        r.error = "the server is shutting down";
        // Shutdown cancels only what runs: a waiting job already cancelled was left by its client.
        report_done(*job, r, job->cancelled() ? JobEnd::ABANDONED : JobEnd::DROPPED);
        job->finish(r);
    }
}

bool GenerationQueue::stopping() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stopping_;
}

bool GenerationQueue::submit(std::shared_ptr<Job> job) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        // A job may wait when fewer than `capacity` do; with a session idle it does not wait at all.
        if (stopping_ || int32_t(waiting_.size() + running_.size()) >= capacity_ + int32_t(slots_.size())) return false;
        waiting_.push_back(std::move(job));
    }
    cv_.notify_one();
    return true;
}

void GenerationQueue::work(Slot& slot) {
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            cv_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
            if (stopping_) return;
            job = std::move(waiting_.front());
            waiting_.pop_front();
            running_.push_back(job);
        }
        GenerateResult r;
        JobEnd end = JobEnd::GENERATED;
        if (job->cancelled()) {
            // Its client left while it waited, or the shutdown began as it was taken: never generated.
            r.reason = StopReason::STOPPED;
            end = job->cancelled_for_shutdown() ? JobEnd::DROPPED : JobEnd::ABANDONED;
        } else {
            // A request starts from an empty context, so a seeded request gives exactly what
            // `generate` gives with that seed whatever ran before it. One that asks (cache_prompt)
            // starts from the session's cache of the last request instead: generate() evaluates only
            // what follows the longest cached prefix (a chat client's next turn repeats the
            // conversation so far), faster, but a reply token that was decoded alone and is now part
            // of the prompt carries its decode-time K/V, which are not bit for bit a prefill's, so
            // the log probabilities may differ (up to ~0.2 was seen on SmolLM2; docs/architecture.md).
            if (!job->reuse_prefix) slot.session->reset();
            JobObserver observer(*job);
            r = slot.session->generate(job->prompt, LiveSamplingParams(job->params), &observer);
            if (r.reason == StopReason::STOPPED)
                end = job->cancelled_for_shutdown() ? JobEnd::INTERRUPTED : JobEnd::CANCELLED;
        }
        // Out of the busy sessions before it is counted (a scrape that shows it counted shows the
        // session free, see Metrics), counted before its client is answered (a client that reads
        // /metrics after its reply finds it there).
        {
            std::lock_guard<std::mutex> lock(mutex_);
            running_.erase(std::find(running_.begin(), running_.end(), job));
        }
        report_done(*job, r, end);
        job->finish(std::move(r));
    }
}

int32_t GenerationQueue::waiting() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return int32_t(waiting_.size());
}

int32_t GenerationQueue::busy() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return int32_t(running_.size());
}

int32_t GenerationQueue::n_ctx() const { return slots_.front()->session->n_ctx(); }

std::string GenerationQueue::backend_description() const { return slots_.front()->backend.backend->description(); }

std::vector<std::string> GenerationQueue::backend_notes() const {
    std::vector<std::string> notes;
    if (!slots_.front()->backend.note.empty()) notes.push_back(slots_.front()->backend.note);
    return notes;
}

}  // namespace wb::server
