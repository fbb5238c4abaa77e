#pragma once
// `whitebox-cli serve`: an OpenAI-compatible HTTP API over one loaded model (cpp-httplib; see
// docs/architecture.md). GET /health, /metrics, /v1/models; POST /v1/chat/completions and
// /v1/completions, streamed (server-sent events) or not. Requests are parsed by api_request.h and run
// by a JobExecutor: the CLI's own GenerationQueue, or one given (the desktop app's worker). This file
// is the HTTP glue: authentication, limits, status codes, streaming.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "engine/model.h"
#include "server/generation_queue.h"
#include "server/job_executor.h"
#include "server/loopback.h"
#include "server/metrics.h"

namespace httplib {
class Server;
class DataSink;
struct Response;
}

namespace wb::server {

class GuardedServer;

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;                   // 0: any free port (bound_port() says which)
    std::string api_key;               // non-empty: every request but /health needs "Authorization: Bearer KEY"
    size_t max_body = 4u << 20;        // request bodies over this get 413
    int32_t request_timeout_ms = 30000;  // a request (line, headers, body) arriving slower gets 408, and a
                                         // finished reply read slower is cut (GuardedServer)
    std::string model_id;              // the name /v1/models lists and requests may give
    SamplingParams defaults;           // sampling settings of a request that sets none
    QueueOptions queue;
};


class HttpServer {
public:
    // Creates the sessions (a GenerationQueue of options.queue); wb::Error when they cannot be made, or
    // when a non-loopback host has no key.
    HttpServer(const Model& model, ServerOptions options);
    // Runs the jobs on `executor` (not owned; it outlives the server and is not shared with another
    // one: the server sets its done callback). options.queue is not used. The model is read by the
    // HTTP threads (prompts are rendered and tokenised there) and must stay loaded until the
    // server is destroyed.
    HttpServer(const Model& model, ServerOptions options, JobExecutor& executor);
    ~HttpServer();

    // Binds the address; wb::Error naming it when that fails. Returns the port.
    int bind();
    // Serves until stop() (from another thread); returns at once when stop() came first.
    void run();
    // Ends the jobs (the executor's shutdown) and stops listening; at any time, also before or just
    // after run() began, and more than once.
    void stop();

    // The server's own queue (the first constructor); wb::Error for a server over a given executor.
    const GenerationQueue& queue() const;
    const JobExecutor& executor() const { return *exec_; }

private:
    void routes();
    void handle_completion(const std::string& body, Endpoint endpoint, httplib::Response& res);
    bool respond_whole(Job& job, const ResponseMeta& meta, httplib::DataSink& sink) const;
    // The error a finished job answers with: its own, or, for a reply the shutdown cut short, that.
    std::string failure_of(const GenerateResult& g) const;
    bool stream(Job& job, const ResponseMeta& meta, bool include_usage, httplib::DataSink& sink);
    std::shared_ptr<Job> make_job(const CompletionRequest& r) const;
    ExecutorPrompt render(const CompletionRequest& r) const;
    // The template chat prompts are rendered with: the executor's (JobExecutor::chat_template), else the model's.
    std::shared_ptr<const ChatTemplate> chat_template() const;
    void check_fits(const CompletionRequest& r, const ExecutorPrompt& prompt) const;

    HttpServer(const Model& model, ServerOptions options, std::unique_ptr<GenerationQueue> own, JobExecutor* executor);

    const Model& model_;
    std::shared_ptr<const SamplerVocab> vocab_;  // the model's, for a request's grammar (make_job)
    ServerOptions options_;
    Metrics metrics_;
    std::unique_ptr<GenerationQueue> queue_;  // the server's own executor; null over a given one
    JobExecutor* exec_ = nullptr;             // queue_, or the given one
    std::unique_ptr<GuardedServer> http_;
    int64_t started_ = 0;
    std::mutex run_mutex_;  // run() and stop() racing: see stop()
    bool running_ = false;
    bool stopped_ = false;
};

}  // namespace wb::server
