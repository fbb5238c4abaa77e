#include "serve_executor.h"

#include <algorithm>

using wb::server::Endpoint;
using wb::server::Job;
using wb::server::JobEnd;

AppJobExecutor::AppJobExecutor(std::function<void()> wake, int32_t n_ctx, Measure measure, TemplateFn chat_template)
    : wake_(std::move(wake)), n_ctx_(n_ctx), measure_(std::move(measure)), chat_template_(std::move(chat_template)) {}

std::shared_ptr<const wb::ChatTemplate> AppJobExecutor::chat_template() const {
    return chat_template_ ? chat_template_() : nullptr;
}

std::optional<wb::server::ExecutorPrompt> AppJobExecutor::chat_prompt(const std::vector<wb::ChatMessage>& messages) const {
    if (!measure_) return std::nullopt;
    return measure_(messages);
}

AppJobExecutor::~AppJobExecutor() { shutdown(); }

bool AppJobExecutor::submit(std::shared_ptr<Job> job) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_ || int32_t(waiting_.size()) >= kCapacity) return false;
        waiting_.push_back(std::move(job));
    }
    if (wake_) wake_();
    return true;
}

void AppJobExecutor::cancel(Job& job) {
    job.cancel();
    std::shared_ptr<Job> left;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        const auto it = std::find_if(waiting_.begin(), waiting_.end(), [&](const auto& j) { return j.get() == &job; });
        if (it != waiting_.end()) {
            left = *it;
            waiting_.erase(it);
        }
    }
    if (left) {
        // Never started: its place in the queue goes to the next client at once.
        wb::GenerateResult r;
        r.reason = wb::StopReason::STOPPED;
        report_done(*left, r, JobEnd::ABANDONED);
        left->finish(r);
    } else if (wake_) {
        wake_();  // it may be the running one: the GUI thread stops the worker's reply
    }
}

void AppJobExecutor::shutdown() {
    std::deque<std::shared_ptr<Job>> dropped;
    std::shared_ptr<Job> interrupted;
    wb::GenerateResult partial;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
        dropped.swap(waiting_);
        interrupted = std::move(running_);
        running_.reset();
        partial.tokens = std::move(running_tokens_);
        partial.text = std::move(running_text_);
        running_tokens_.clear();
        running_text_.clear();
    }
    for (auto& job : dropped) {
        wb::GenerateResult r;
        r.reason = wb::StopReason::ERROR;  // never started: its client gets an error, not an empty reply
        r.error = "the WhiteBox app stopped serving";
        report_done(*job, r, job->cancelled() ? JobEnd::ABANDONED : JobEnd::DROPPED);
        job->finish(r);
    }
    if (interrupted) {
        // Its HTTP thread returns now (the server waits for it), not when the worker has stopped.
        interrupted->cancel_for_shutdown();
        partial.reason = wb::StopReason::STOPPED;
        report_done(*interrupted, partial, JobEnd::INTERRUPTED);
        interrupted->finish(std::move(partial));
    }
}

bool AppJobExecutor::stopping() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stopping_;
}

std::string AppJobExecutor::unsupported(Endpoint e) const {
    if (e == Endpoint::CHAT) return {};
    return "the WhiteBox app serves chat completions only (POST /v1/chat/completions): its replies are "
           "conversations in its chat list. whitebox-cli serve answers /v1/completions too";
}

int32_t AppJobExecutor::waiting() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return int32_t(waiting_.size());
}

int32_t AppJobExecutor::busy() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return running_ ? 1 : 0;
}

std::shared_ptr<Job> AppJobExecutor::take_next() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (running_ || waiting_.empty() || stopping_) return nullptr;
    running_ = std::move(waiting_.front());
    waiting_.pop_front();
    running_tokens_.clear();
    running_text_.clear();
    return running_;
}

bool AppJobExecutor::running() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return running_ != nullptr;
}

bool AppJobExecutor::running_cancelled() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return running_ && running_->cancelled();
}

void AppJobExecutor::token(int32_t id, wb::server::StreamToken t) {
    std::shared_ptr<Job> job;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!running_) return;
        job = running_;
        running_tokens_.push_back(id);
        running_text_ += t.text;
    }
    job->push(std::move(t));
}

void AppJobExecutor::finish_running(wb::GenerateResult r) {
    std::shared_ptr<Job> job;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!running_) return;
        job = std::move(running_);
        running_.reset();
        r.tokens = std::move(running_tokens_);
        running_tokens_.clear();
        running_text_.clear();
    }
    JobEnd end = JobEnd::GENERATED;
    if (r.reason == wb::StopReason::STOPPED && job->cancelled()) end = JobEnd::CANCELLED;
    report_done(*job, r, end);
    job->finish(std::move(r));
}
