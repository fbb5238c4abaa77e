// GenerationQueue on the default model: how each job ends, as its DoneFn and the server's /metrics
// text count it. A job generated to its end, one whose client left while it was generated, one whose
// client left while it waited (never generated), and at shutdown the one running and those still
// waiting: each is reported exactly once, with its own end, and only the generated ones count as
// generations, tokens and time. And a request starts from an empty context (bit for bit a fresh
// session's reply) unless it asks for the prompt cache, which then evaluates only what is new.
// Plain executable (label model): PASS/FAIL lines, exit status 1 on any failure.
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include "engine/model.h"
#include "server/generation_queue.h"
#include "server/metrics.h"
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

const char* name_of(JobEnd e) {
    switch (e) {
    case JobEnd::GENERATED: return "generated";
    case JobEnd::CANCELLED: return "cancelled";
    case JobEnd::INTERRUPTED: return "interrupted";
    case JobEnd::ABANDONED: return "abandoned";
    case JobEnd::DROPPED: return "dropped";
    }
    return "?";
}

// What the DoneFn saw, per job, fed on to a Metrics as HttpServer does.
struct Ends {
    std::mutex mutex;
    std::map<const Job*, std::vector<JobEnd>> by_job;
    Metrics metrics;
    uint64_t generated_prompt_tokens = 0;

    GenerationQueue::DoneFn fn() {
        return [this](const Job& job, const GenerateResult& r, JobEnd end) {
            {
                std::lock_guard<std::mutex> lock(mutex);
                by_job[&job].push_back(end);
                if (end == JobEnd::GENERATED || end == JobEnd::CANCELLED || end == JobEnd::INTERRUPTED)
                    generated_prompt_tokens += job.prompt.size();
            }
            metrics.count_job(end, int32_t(job.prompt.size()), int32_t(r.tokens.size()), r.timings.prefill_ms,
                              r.timings.decode_ms, r.timings.n_decode);
        };
    }
    // A scenario's jobs are told apart by address: the last scenario's are gone (and may share them).
    void next_scenario() {
        std::lock_guard<std::mutex> lock(mutex);
        by_job.clear();
    }
    // "generated", or what the job's ends were when not exactly one.
    std::string of(const Job& job) {
        std::lock_guard<std::mutex> lock(mutex);
        std::string s;
        for (JobEnd e : by_job[&job]) s += std::string(s.empty() ? "" : "+") + name_of(e);
        return s.empty() ? "none" : s;
    }
};

std::shared_ptr<Job> job_of(const Model& model, int32_t max_tokens) {
    const Tokenizer& tok = model.tokenizer();
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;  // the long ones must still run when they are stopped
    return std::make_shared<Job>(tok.encode("Name a color.", tok.add_bos(), true), p, false, 0);
}

// Waits (up to 60 s) until the job has produced a token: it is running on a session.
bool started(Job& job) {
    std::vector<StreamToken> tokens;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (tokens.empty() && std::chrono::steady_clock::now() < until)
        if (job.wait(tokens, milliseconds(50))) break;
    return !tokens.empty();
}

// Waits (up to 60 s) until the job has finished.
bool finished(Job& job) {
    std::vector<StreamToken> tokens;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until)
        if (job.wait(tokens, milliseconds(50))) return true;
    return false;
}

QueueOptions one_session(int32_t capacity) {
    QueueOptions o;
    o.parallel = 1;
    o.capacity = capacity;
    o.session.n_ctx = 512;
    o.backend = BackendKind::CPU;
    return o;
}

// A client that leaves while its job runs, one that leaves while its job waits, and one that stays.
void clients_leaving(const Model& model, Ends& ends) {
    ends.next_scenario();
    GenerationQueue queue(model, one_session(2), ends.fn());
    auto running = job_of(model, 400), waiting = job_of(model, 4), normal = job_of(model, 4);
    report(queue.submit(running) && started(*running), "a long job starts");
    report(queue.submit(waiting) && queue.waiting() == 1, "a second job waits");
    waiting->cancel();
    running->cancel();
    report(finished(*running) && finished(*waiting), "both end once their clients left");
    report(queue.submit(normal) && finished(*normal), "a job after them is served");
    report(ends.of(*running) == "cancelled", "left while generated: cancelled (" + ends.of(*running) + ")");
    report(running->result().tokens.size() < 400, "the cancelled one stopped early");
    report(ends.of(*waiting) == "abandoned", "left while waiting: abandoned, not a generation (" +
                                                 ends.of(*waiting) + ")");
    report(ends.of(*normal) == "generated" && normal->result().tokens.size() == 4,
           "a job run to its length: generated (" + ends.of(*normal) + ")");
}

// At shutdown: the running job, one waiting, and one waiting whose client had already left.
void shutdown_ends(const Model& model, Ends& ends) {
    ends.next_scenario();
    auto queue = std::make_unique<GenerationQueue>(model, one_session(4), ends.fn());
    auto running = job_of(model, 400), waiting = job_of(model, 4), left = job_of(model, 4);
    report(queue->submit(running) && started(*running), "a long job starts");
    report(queue->submit(waiting) && queue->submit(left) && queue->waiting() == 2, "two jobs wait");
    left->cancel();
    queue->shutdown();
    report(finished(*waiting) && waiting->result().reason == StopReason::ERROR &&
               waiting->result().error.find("shutting down") != std::string::npos,
           "a waiting job is answered at once with the shutdown's error");
    queue.reset();  // joins the workers: the running job has ended
    report(ends.of(*running) == "interrupted", "running at shutdown: interrupted, not cancelled by a client (" +
                                                   ends.of(*running) + ")");
    report(ends.of(*waiting) == "dropped", "waiting at shutdown: dropped (" + ends.of(*waiting) + ")");
    report(ends.of(*left) == "abandoned", "waiting at shutdown, its client gone: abandoned (" + ends.of(*left) + ")");
}

// A job's tokens as its client gets them, and its result, once it has finished.
std::vector<StreamToken> run_to_end(GenerationQueue& queue, const std::shared_ptr<Job>& job) {
    std::vector<StreamToken> tokens;
    if (!queue.submit(job)) return tokens;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until && !job->wait(tokens, milliseconds(50))) {}
    return tokens;
}

bool same_logprobs(const std::vector<StreamToken>& a, const std::vector<StreamToken>& b) {
    if (a.size() != b.size() || a.empty()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        const TokenLogprob &x = a[i].logprob, &y = b[i].logprob;
        if (a[i].text != b[i].text || x.token != y.token || x.logprob != y.logprob || x.top.size() != y.top.size())
            return false;
        for (size_t k = 0; k < x.top.size(); ++k)
            if (x.top[k] != y.top[k]) return false;
    }
    return true;
}

// A chat client's next request repeats the last one's prompt and reply and adds a turn. By default it
// starts from an empty context: its tokens and log probabilities are bit for bit those of a session
// that never ran anything (what `generate` gives). With cache_prompt (Job::reuse_prefix) it starts
// from the cache the last request left and evaluates only what is new.
void prefix_reuse(const Model& model) {
    Ends ends;  // apart from the metrics main() checks
    const Tokenizer& tok = model.tokenizer();
    for (const float temperature : {0.0f, 0.8f}) {
        SamplingParams p;
        p.temperature = temperature;
        p.seed = 7;
        p.max_tokens = 12;
        p.ignore_eos = true;  // both replies have tokens to compare
        const std::vector<int32_t> first = tok.encode("Name a color.", tok.add_bos(), true);
        GenerationQueue queue(model, one_session(2), ends.fn());
        const auto job1 = std::make_shared<Job>(first, p, true, 5);
        run_to_end(queue, job1);
        std::vector<int32_t> second = first;
        second.insert(second.end(), job1->result().tokens.begin(), job1->result().tokens.end());
        const std::vector<int32_t> more = tok.encode(" Name another one.", false, true);
        second.insert(second.end(), more.begin(), more.end());
        const auto again = std::make_shared<Job>(second, p, true, 5);
        const std::vector<StreamToken> got = run_to_end(queue, again);
        GenerationQueue fresh(model, one_session(2), ends.fn());
        const std::vector<StreamToken> want = run_to_end(fresh, std::make_shared<Job>(second, p, true, 5));
        const std::string what = temperature > 0 ? "seeded at temperature 0.8" : "greedy";
        report(again->result().timings.n_reused == 0 && same_logprobs(got, want),
               what + ": the next request starts empty, its tokens and log probabilities bit for bit a fresh "
                      "session's");
        const auto cached = std::make_shared<Job>(second, p, true, 5);
        cached->reuse_prefix = true;
        const std::vector<StreamToken> reply = run_to_end(queue, cached);
        report(cached->result().timings.n_reused == int32_t(second.size()) - 1 &&
                   cached->result().timings.n_prefill == 1 && reply.size() == 12,
               what + ": with cache_prompt it evaluates only its last prompt token (reused " +
                   std::to_string(cached->result().timings.n_reused) + " of " + std::to_string(second.size()) + ")");
    }
}

double metric(const std::string& text, const std::string& name) {
    std::smatch m;
    if (!std::regex_search(text, m, std::regex("\n" + name + " (\\S+)\n"))) return -1;
    return std::stod(m[1]);
}

}  // namespace

int main() {
    const auto model = Model::load(wb_test::default_model());
    Ends ends;
    clients_leaving(*model, ends);
    shutdown_ends(*model, ends);
    // Of the six jobs: three generated (to its end, cancelled, interrupted), two abandoned, one dropped.
    const std::string text = ends.metrics.prometheus_text([] { return MetricsSnapshotGauges{}; });
    const std::map<std::string, double> want = {
        {"whitebox_generations_total", 3},         {"whitebox_generations_cancelled_total", 1},
        {"whitebox_generations_interrupted_total", 1}, {"whitebox_queue_abandoned_total", 2},
        {"whitebox_queue_dropped_total", 1},
        {"whitebox_prompt_tokens_total", double(ends.generated_prompt_tokens)}};
    for (const auto& [name, value] : want)
        report(metric(text, name) == value, name + " " + std::to_string(metric(text, name)) + " (want " +
                                                std::to_string(value) + ")");
    for (const char* counter : {"whitebox_generations_interrupted_total", "whitebox_queue_abandoned_total",
                                "whitebox_queue_dropped_total"})
        report(text.find(std::string("# TYPE ") + counter + " counter\n") != std::string::npos,
               std::string(counter) + " is typed a counter");
    prefix_reuse(*model);
    std::printf("%s\n", g_failures == 0 ? "all passed" : (std::to_string(g_failures) + " failed").c_str());
    return g_failures == 0 ? 0 : 1;
}
