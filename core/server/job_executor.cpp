#include "server/job_executor.h"

namespace wb::server {

void Job::push(StreamToken t) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        pending_.push_back(std::move(t));
    }
    cv_.notify_all();
}

void Job::finish(GenerateResult r) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        result_ = std::move(r);
        finished_ = true;
    }
    cv_.notify_all();
}

bool Job::finished() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return finished_;
}

bool Job::wait(std::vector<StreamToken>& out, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait_for(lock, timeout, [&] { return finished_ || !pending_.empty(); });
    while (!pending_.empty()) {
        out.push_back(std::move(pending_.front()));
        pending_.pop_front();
    }
    return finished_;
}

}  // namespace wb::server
