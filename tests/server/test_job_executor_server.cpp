// HttpServer over a given JobExecutor (the constructor the desktop app uses), here a fake one with no
// generation: a request reaches the executor as a Job (its messages and max_tokens as sent), the
// tokens the executor pushes come back whole and streamed, a refusal is a 429, an endpoint the
// executor does not serve is a 400 with its reason, so is a grammar no token can begin, /metrics
// shows the executor's queue, a client that leaves mid-stream makes the server cancel its job
// through the executor, and so does one that reads a finished reply slower than the request timeout.
// The default model is loaded because the server renders and tokenises prompts and checks grammars
// against its vocabulary.
// Plain executable (label model): PASS/FAIL lines, exit status 1 on any failure.
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/model.h"
#include "server/http_server.h"
#include "server/job_executor.h"
#include "util/error.h"
#include "test_paths.h"

using namespace wb;
using namespace wb::server;
using std::chrono::milliseconds;

namespace {

int g_failures = 0;

void report(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
    std::fflush(stdout);
    if (!ok) ++g_failures;
}

// Answers every job at once with two tokens ("Hel", "lo"), or (hold) keeps it running until the test
// ends it; refuses every job when `refuse`. Records what it was given and which jobs it cancelled.
class FakeExecutor : public JobExecutor {
public:
    std::atomic<bool> refuse{false};
    std::atomic<bool> hold{false};
    std::atomic<size_t> big{0};  // > 0: the first token's text is this many bytes
    std::atomic<int32_t> own_must_fit{0};  // > 0: chat_prompt renders its own (see own_prompt_is_checked)

    bool submit(std::shared_ptr<Job> job) override {
        std::lock_guard<std::mutex> lock(mutex_);
        if (refuse) return false;
        jobs_.push_back(job);
        if (!hold) answer(*job, big);
        return true;
    }
    void cancel(Job& job) override {
        std::lock_guard<std::mutex> lock(mutex_);
        cancelled_.push_back(&job);
        job.cancel();
    }
    void shutdown() override { stopping_ = true; }
    bool stopping() const override { return stopping_; }
    std::string unsupported(Endpoint e) const override {
        return e == Endpoint::COMPLETION ? "this fake serves chat completions only" : "";
    }
    int32_t waiting() const override { return 3; }
    int32_t busy() const override { return 1; }
    int32_t sessions() const override { return 1; }
    int32_t capacity() const override { return 16; }
    int32_t n_ctx() const override { return 2048; }
    // As the app's worker: its own tokens (1, 2, 3), of which own_must_fit must fit with 64 kept for
    // the reply.
    std::optional<ExecutorPrompt> chat_prompt(const std::vector<ChatMessage>&) const override {
        if (own_must_fit <= 0) return std::nullopt;
        return ExecutorPrompt{{1, 2, 3}, own_must_fit, 64};
    }
    std::string context_setting() const override { return "the fake's context"; }

    static void answer(Job& job, size_t big = 0) {
        for (const char* piece : {"Hel", "lo"}) {
            StreamToken t;
            t.text = big > 0 && piece[0] == 'H' ? std::string(big, 'x') : piece;
            t.logprob.token = piece;
            t.logprob.logprob = -0.5f;
            job.push(t);
        }
        GenerateResult r;
        r.tokens = {1, 2};
        r.text = big > 0 ? std::string(big, 'x') + "lo" : "Hello";
        r.reason = StopReason::EOS;
        job.finish(r);
    }
    std::shared_ptr<Job> last() {
        std::lock_guard<std::mutex> lock(mutex_);
        return jobs_.empty() ? nullptr : jobs_.back();
    }
    size_t count() {
        std::lock_guard<std::mutex> lock(mutex_);
        return jobs_.size();
    }
    bool was_cancelled(const Job* job) {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const Job* j : cancelled_)
            if (j == job) return true;
        return false;
    }

private:
    std::mutex mutex_;
    std::vector<std::shared_ptr<Job>> jobs_;
    std::vector<const Job*> cancelled_;
    std::atomic<bool> stopping_{false};
};

const std::string kChat = R"({"messages":[{"role":"user","content":"Say hello."}],"max_tokens":7)";

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void whole_and_streamed(httplib::Client& cli, FakeExecutor& fake) {
    auto res = cli.Post("/v1/chat/completions", kChat + "}", "application/json");
    report(res && res->status == 200, "a chat request is answered 200");
    const auto job = fake.last();
    report(job && job->messages.size() == 1 && job->messages[0].content == "Say hello." &&
               job->messages[0].role == "user",
           "the executor got the request's messages");
    report(job && job->params.max_tokens == 7 && !job->prompt.empty(), "and its max_tokens and a rendered prompt");
    report(res && has(res->body, R"("content":"Hello")") && has(res->body, R"("completion_tokens":2)"),
           "the whole reply is the executor's text and token count");
    res = cli.Post("/v1/chat/completions", kChat + R"(,"stream":true})", "application/json");
    const std::string body = res ? res->body : "";
    const size_t hel = body.find(R"("content":"Hel")"), lo = body.find(R"("content":"lo")");
    report(res && res->status == 200 && hel != std::string::npos && lo != std::string::npos && hel < lo &&
               has(body, "data: [DONE]") && has(body, R"("finish_reason":"stop")"),
           "streamed, the executor's tokens are events in order, then [DONE]");
}

void refusals(httplib::Client& cli, FakeExecutor& fake) {
    fake.refuse = true;
    auto res = cli.Post("/v1/chat/completions", kChat + "}", "application/json");
    report(res && res->status == 429 && has(res->body, "queue_full"), "a refused job is a 429 (queue_full)");
    fake.refuse = false;
    res = cli.Post("/v1/completions", R"({"prompt":"Hi"})", "application/json");
    report(res && res->status == 400 && has(res->body, "this fake serves chat completions only"),
           "an endpoint the executor does not serve is a 400 with its reason");
    res = cli.Get("/metrics");
    report(res && res->status == 200 && has(res->body, "whitebox_queue_waiting 3"), "/metrics shows the executor's queue");
}

// A grammar no token of the model's vocabulary can begin (none begins with a NUL) is the client's
// mistake: a 400 naming the field, and the executor never sees the request. One that can begin is
// handed over with its grammar.
void grammar_checked_against_the_vocabulary(httplib::Client& cli, FakeExecutor& fake) {
    const size_t before = fake.count();
    auto res = cli.Post("/v1/chat/completions", kChat + R"(,"grammar":"root ::= \"\\x00\" [a-z]+"})",
                        "application/json");
    report(res && res->status == 400 && has(res->body, R"("type":"invalid_request_error")") &&
               has(res->body, R"("param":"grammar")") &&
               has(res->body, R"('grammar': the grammar cannot begin the reply: it must start with \"\\x00\")"),
           "a grammar no token can begin is a 400 naming the field and what it must start with");
    report(fake.count() == before, "and the executor never got it");
    res = cli.Post("/v1/chat/completions", kChat + R"(,"grammar":"root ::= \"Hel\" \"lo\""})", "application/json");
    const auto job = fake.last();
    report(res && res->status == 200 && fake.count() == before + 1 && job && !job->params.grammar.empty(),
           "a grammar a token can begin reaches the executor");
}

// An executor that renders prompts its own way (the app's worker) is checked by its own count: its
// tokens, the part that must fit and the room it keeps for the reply, named in the refusal.
void own_prompt_is_checked(httplib::Client& cli, FakeExecutor& fake) {
    const size_t before = fake.count();
    fake.own_must_fit = 2048 - 64 + 1;  // one token over the fake's edge
    auto res = cli.Post("/v1/chat/completions", kChat + "}", "application/json");
    report(res && res->status == 400 && has(res->body, R"("code":"context_length_exceeded")") &&
               has(res->body, R"("param":"messages")") &&
               has(res->body, "the prompt is 1985 tokens and max_tokens 7, but the context holds 2048 tokens with at "
                              "least 64 kept for the reply (the fake's context)") &&
               fake.count() == before,
           "a prompt over the executor's own edge is a 400 naming its count, the reply room and where the context is set");
    fake.own_must_fit = 2048 - 64;
    res = cli.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"Say hello."}]})", "application/json");
    const auto job = fake.last();
    report(res && res->status == 200 && fake.count() == before + 1 && job &&
               job->prompt == std::vector<int32_t>{1, 2, 3} && job->params.max_tokens == 64,
           "one at the edge is taken with the executor's tokens, max_tokens what the context has left");
    res = cli.Post("/v1/chat/completions", kChat.substr(0, kChat.find("\"max_tokens\"")) + R"("max_tokens":65})",
                   "application/json");
    report(res && res->status == 400 && has(res->body, R"("param":"max_tokens")"), "max_tokens past the context: 400");
    fake.own_must_fit = 0;
}

// A streamed client that reads the first token and hangs up: the server cancels the job through the
// executor (the fake then ends it, as a worker would).
void disconnect_cancels(int port, FakeExecutor& fake) {
    fake.hold = true;
    const size_t before = fake.count();
    std::thread client([port] {
        httplib::Client c("127.0.0.1", port);
        c.set_read_timeout(10, 0);
        httplib::Request req;
        req.method = "POST";
        req.path = "/v1/chat/completions";
        req.body = kChat + R"(,"stream":true})";
        req.set_header("Content-Type", "application/json");
        req.content_receiver = [](const char* data, size_t n, uint64_t, uint64_t) {
            return std::string(data, n).find("\"Hel\"") == std::string::npos;  // false: hang up
        };
        c.send(req);
    });
    // The held job is the newest once the request reached the executor; it gets its first token.
    std::shared_ptr<Job> job;
    for (int i = 0; i < 500 && fake.count() == before; ++i) std::this_thread::sleep_for(milliseconds(10));
    if (fake.count() > before) job = fake.last();
    if (job) {
        StreamToken t;
        t.text = "Hel";
        job->push(t);
    }
    bool cancelled = false;
    for (int i = 0; i < 500 && !(cancelled = job && fake.was_cancelled(job.get())); ++i)
        std::this_thread::sleep_for(milliseconds(10));
    report(cancelled && job->cancelled(), "a client that hangs up mid-stream has its job cancelled by the executor");
    if (job && !job->finished()) job->finish(GenerateResult{});
    client.join();
    fake.hold = false;
}

// A finished reply of 12 MiB (more than the kernel's 4 MiB send buffer takes), whole and streamed,
// to a client that reads 4 KiB every 20 ms (it would take a minute; each wait for room is far inside
// the write timeout): the rest of a finished reply must be read within the request timeout (here
// 500 ms), so the server cuts it and cancels the job through the executor then, giving its thread back.
void slow_reader_of_a_finished_reply_is_cut(const Model& model) {
    FakeExecutor fake;  // the other tests' one was shut down with its server
    ServerOptions o;
    o.port = 0;
    o.request_timeout_ms = 500;
    HttpServer server(model, o, fake);
    const int port = server.bind();
    std::thread run([&] { server.run(); });
    fake.big = 12u << 20;
    for (const bool stream : {false, true}) {
        const size_t before = fake.count();
        std::atomic<bool> done{false};
        std::thread slow([&] {
            const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
            const int rcvbuf = 4096;
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(uint16_t(port));
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
                const std::string body = kChat + (stream ? R"(,"stream":true})" : "}");
                const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                                        "application/json\r\nContent-Length: " + std::to_string(body.size()) +
                                        "\r\n\r\n" + body;
                (void)::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
                char buf[4096];
                while (!done && ::recv(fd, buf, sizeof buf, 0) > 0) std::this_thread::sleep_for(milliseconds(20));
            }
            ::close(fd);
        });
        std::shared_ptr<Job> job;
        for (int i = 0; i < 500 && fake.count() == before; ++i) std::this_thread::sleep_for(milliseconds(10));
        if (fake.count() > before) job = fake.last();
        const auto t0 = std::chrono::steady_clock::now();
        bool cancelled = false;
        for (int i = 0; i < 500 && !(cancelled = job && fake.was_cancelled(job.get())); ++i)
            std::this_thread::sleep_for(milliseconds(10));
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        done = true;
        slow.join();
        report(cancelled && seconds < 2.0, std::string(stream ? "streamed" : "whole") +
                                               ": a slow reader of a finished reply is cut, its job cancelled, in " +
                                               std::to_string(seconds) + " s (the request timeout is 0.5 s)");
    }
    server.stop();
    run.join();
}

// Whether a socket without SO_REUSEPORT can listen on the loopback port (httplib's own sockets set
// SO_REUSEPORT, so a second httplib server would bind beside a listening one and prove nothing).
bool port_free(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd, 1) == 0;
    ::close(fd);
    return ok;
}

// The app stops a server right after starting it (a model load just after Serve): a stop() that
// comes as run() begins, or before it, must still end run().
void stop_right_after_start(const Model& model, FakeExecutor& fake) {
    ServerOptions o;
    o.port = 0;
    bool all = true;
    for (int i = 0; i < 50 && all; ++i) {
        HttpServer server(model, o, fake);
        server.bind();
        std::atomic<bool> returned{false};
        std::thread run([&] {
            server.run();
            returned = true;
        });
        if (i % 2) std::this_thread::sleep_for(std::chrono::microseconds(50 * i));
        server.stop();
        for (int t = 0; t < 300 && !returned; ++t) std::this_thread::sleep_for(milliseconds(10));
        all = returned;
        if (!all) std::_Exit((report(false, "a stop right after the start ends run() (it hangs)"), 1));
        run.join();
    }
    report(all, "a stop right after the start ends run(), 50 times");
    // A server stopped before it ran (or destroyed unrun) frees its port.
    int port = 0;
    {
        HttpServer unrun(model, o, fake);
        port = unrun.bind();
        unrun.stop();
        const bool bound = port_free(port);
        report(bound, "a server stopped before it ran frees its port");
    }
    // A port another server listens on cannot be bound (httplib's default SO_REUSEPORT would share it).
    {
        HttpServer first(model, o, fake);
        ServerOptions same = o;
        same.port = first.bind();
        HttpServer second(model, same, fake);
        bool refused = false;
        try {
            second.bind();
        } catch (const Error& e) {
            refused = std::string(e.what()).find("cannot listen") != std::string::npos;
        }
        report(refused, "a port another server listens on is refused (cannot listen)");
    }
}

}  // namespace

int main() {
    const auto model = Model::load(wb_test::default_model());
    FakeExecutor fake;
    ServerOptions o;
    o.port = 0;
    o.model_id = "fake";
    int port = 0;
    {
        HttpServer server(*model, o, fake);
        port = server.bind();
        std::thread run([&] { server.run(); });
        httplib::Client cli("127.0.0.1", port);
        cli.set_read_timeout(20, 0);
        whole_and_streamed(cli, fake);
        refusals(cli, fake);
        grammar_checked_against_the_vocabulary(cli, fake);
        own_prompt_is_checked(cli, fake);
        disconnect_cancels(port, fake);
        server.stop();
        run.join();
        report(fake.stopping(), "stopping the server shuts its executor down");
    }
    slow_reader_of_a_finished_reply_is_cut(*model);
    stop_right_after_start(*model, fake);
    std::printf("%s\n", g_failures == 0 ? "all passed" : (std::to_string(g_failures) + " failed").c_str());
    return g_failures == 0 ? 0 : 1;
}
