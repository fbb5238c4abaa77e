#pragma once
// AppJobExecutor: the JobExecutor of the desktop app's server (ServeController). Qt-free. It does not
// generate: the app has one engine, its InferenceWorker, and the chat on screen uses it, so a request
// waits here (at most kCapacity of them; the next gets 429) until the GUI thread takes it (take_next)
// and starts it through ChatController as a conversation of its own. The GUI thread then feeds the
// job its tokens (token) and its end (finish_running). `wake` tells the GUI thread there is something
// to do (a job arrived, or a client left); it is called from HTTP threads and must only post.
#include <functional>
#include <memory>
#include <mutex>

#include "server/job_executor.h"

class AppJobExecutor : public wb::server::JobExecutor {
public:
    static constexpr int32_t kCapacity = 16;

    // How the worker will see a chat request's prompt (its template, its context policy's count,
    // context_budget's room for the reply): chat_prompt's answer, on the HTTP thread. Empty: the
    // server's own rendering.
    using Measure = std::function<wb::server::ExecutorPrompt(const std::vector<wb::ChatMessage>&)>;

    // The template the worker renders with now (the user's choice, else the model's): chat_template's
    // answer, on the HTTP thread. Empty: the model's.
    using TemplateFn = std::function<std::shared_ptr<const wb::ChatTemplate>()>;

    AppJobExecutor(std::function<void()> wake, int32_t n_ctx, Measure measure = {}, TemplateFn chat_template = {});
    ~AppJobExecutor() override;

    // --- JobExecutor (HTTP threads; shutdown on whichever thread stops the server) ---
    bool submit(std::shared_ptr<wb::server::Job> job) override;
    // A waiting job ends at once (abandoned); the running one is marked and the GUI thread woken to stop it.
    void cancel(wb::server::Job& job) override;
    // Waiting jobs end with an error; the running one ends now with what it has, as interrupted (the
    // caller stops the worker's reply).
    void shutdown() override;
    bool stopping() const override;
    std::string unsupported(wb::server::Endpoint e) const override;
    int32_t waiting() const override;
    int32_t busy() const override;
    int32_t sessions() const override { return 1; }
    int32_t capacity() const override { return kCapacity; }
    int32_t n_ctx() const override { return n_ctx_; }
    std::optional<wb::server::ExecutorPrompt> chat_prompt(const std::vector<wb::ChatMessage>& messages) const override;
    std::string context_setting() const override { return "the app's Model > Context size"; }
    std::shared_ptr<const wb::ChatTemplate> chat_template() const override;

    // --- GUI thread ---
    // The oldest waiting job, now the running one; null when none waits or one runs.
    std::shared_ptr<wb::server::Job> take_next();
    bool running() const;
    // The running job's client has gone: the GUI thread stops its reply.
    bool running_cancelled() const;
    // One token of the running job's reply (its id counts in the usage).
    void token(int32_t id, wb::server::StreamToken t);
    // The running job's end; r.tokens is filled from the tokens given. Nothing when no job runs (the
    // shutdown ended it already).
    void finish_running(wb::GenerateResult r);

private:
    std::function<void()> wake_;
    const int32_t n_ctx_;
    const Measure measure_;
    const TemplateFn chat_template_;
    mutable std::mutex mutex_;
    std::deque<std::shared_ptr<wb::server::Job>> waiting_;
    std::shared_ptr<wb::server::Job> running_;
    std::vector<int32_t> running_tokens_;
    std::string running_text_;
    bool stopping_ = false;
};
