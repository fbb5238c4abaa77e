// The remote client against WhiteBox's own server (core/server, in this process on a free port) on
// SmolLM2, and whitebox-cli generate and chat --remote against it: a streamed reply equals the server's
// non-streamed one for the same greedy or seeded settings, logprobs arrive per token, the server's
// 4xx message comes through, a cancelled stream frees the server's session, and the CLI prints the
// streamed text or one line of error, and chat goes on past a refused turn.
// Plain executable (label model): PASS/FAIL lines, exit status 1 on any failure.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "engine/model.h"
#include "remote/openai_client.h"
#include "remote_test_support.h"
#include "server/http_server.h"
#include "test_paths.h"

using namespace wb;
using namespace wb::remote;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using wb_remote_test::report;

namespace {

const char* kModelId = "smollm2";

// `serve` in this process: the default model behind an HttpServer on a free loopback port.
struct LiveServer {
    std::unique_ptr<Model> model;
    std::unique_ptr<server::HttpServer> http;
    std::thread thread;
    int port = 0;

    LiveServer() {
        model = Model::load(wb_test::default_model());
        server::ServerOptions so;
        so.port = 0;
        so.model_id = kModelId;
        so.queue.session.n_ctx = 512;
        http = std::make_unique<server::HttpServer>(*model, so);
        port = http->bind();
        thread = std::thread([this] { http->run(); });
        // stop() before the loop runs would not end it: wait until it answers.
        httplib::Client c("127.0.0.1", port);
        while (!c.Get("/health")) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ~LiveServer() {
        http->stop();
        thread.join();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }

    // The body of a non-streamed request (the reference a stream is compared with).
    json whole(const std::string& path, json body) const {
        body["stream"] = false;
        httplib::Client c("127.0.0.1", port);
        c.set_read_timeout(std::chrono::seconds(120));
        const httplib::Result r = c.Post(path, body.dump(), "application/json");
        if (!r || r->status != 200) return json();
        return json::parse(r->body, nullptr, false);
    }
};

RemoteOptions options(const LiveServer& s) {
    RemoteOptions o;
    o.base_url = s.url();
    return o;
}

struct Streamed {
    RemoteResult result;
    std::vector<RemoteTokenLogprob> tokens;
    int deltas = 0;
};

Streamed stream(const LiveServer& s, const RemoteRequest& r, RemoteOptions o = {}) {
    if (o.base_url.empty()) o = options(s);
    Streamed out;
    out.result = OpenAiClient(o).complete(r, [&](const StreamDelta& d) {
        ++out.deltas;
        out.tokens.insert(out.tokens.end(), d.tokens.begin(), d.tokens.end());
    });
    return out;
}

const std::string kQuestion = "Name a color.";

// The question as a greedy chat of at most 24 tokens (as the CLI runs below send it: --temp 0 -n 24).
RemoteRequest greedy_question() {
    RemoteRequest r;
    r.messages = {{"user", kQuestion}};
    r.sampling.temperature = 0.0f;
    r.max_tokens = 24;
    return r;
}

void chat_stream_matches_whole(const LiveServer& s) {
    RemoteRequest r = greedy_question();
    r.top_logprobs = 3;
    const Streamed st = stream(s, r);
    const json whole = s.whole("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", kQuestion}}}},
                                                        {"temperature", 0}, {"max_tokens", 24}});
    const std::string expected = whole.is_object() ? whole["choices"][0]["message"]["content"].get<std::string>() : "";
    report(!expected.empty() && st.result.text == expected,
           "greedy chat: streamed '" + st.result.text + "' equals the whole reply '" + expected + "'");
    report(whole.is_object() && st.result.finish_reason == whole["choices"][0]["finish_reason"] &&
               st.result.prompt_tokens == whole["usage"]["prompt_tokens"].get<int>() &&
               st.result.completion_tokens == whole["usage"]["completion_tokens"].get<int>(),
           "greedy chat: the same finish reason and usage (" + st.result.finish_reason + ", " +
               std::to_string(st.result.prompt_tokens.value_or(-1)) + " + " +
               std::to_string(st.result.completion_tokens.value_or(-1)) + ")");
    bool shaped = !st.tokens.empty() && int(st.tokens.size()) == st.result.completion_tokens.value_or(-1);
    for (const RemoteTokenLogprob& t : st.tokens)
        shaped = shaped && t.top.size() == 3 && t.top[0].token == t.token && t.top[0].logprob == t.logprob &&
                 t.top[1].logprob <= t.top[0].logprob && t.logprob <= 0.0f;
    report(shaped, "logprobs: one entry per generated token (" + std::to_string(st.tokens.size()) +
                       "), 3 alternatives, the greedy token the most likely of them");
    report(st.result.model == kModelId, "the chunks name the served model (" + st.result.model + ")");
}

void seeded_and_completion_match_whole(const LiveServer& s) {
    RemoteRequest r;
    r.messages = {{"user", "Write a word."}};
    r.sampling.temperature = 1.0f;
    r.sampling.seed = 1234;
    r.max_tokens = 16;
    const Streamed st = stream(s, r);
    const json whole = s.whole("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "Write a word."}}}},
                                                        {"temperature", 1.0}, {"seed", 1234}, {"max_tokens", 16}});
    const std::string expected = whole.is_object() ? whole["choices"][0]["message"]["content"].get<std::string>() : "";
    report(!expected.empty() && st.result.text == expected,
           "seeded chat: streamed '" + st.result.text + "' equals the whole reply '" + expected + "'");
    RemoteRequest c;
    c.prompt = "The three primary colors are";
    c.sampling.temperature = 0.0f;
    c.max_tokens = 16;
    c.top_logprobs = 2;
    const Streamed cs = stream(s, c);
    const json cw = s.whole("/v1/completions", {{"prompt", *c.prompt}, {"temperature", 0}, {"max_tokens", 16}});
    const std::string cexp = cw.is_object() ? cw["choices"][0]["text"].get<std::string>() : "";
    report(!cexp.empty() && cs.result.text == cexp,
           "greedy completion: streamed '" + cs.result.text + "' equals the whole reply '" + cexp + "'");
    bool shaped = !cs.tokens.empty();
    for (const RemoteTokenLogprob& t : cs.tokens) shaped = shaped && t.top.size() == 2 && t.top[0].token == t.token;
    report(shaped, "completion logprobs in the legacy shape: 2 alternatives, the greedy token first");
}

void server_errors(const LiveServer& s) {
    report(OpenAiClient(options(s)).models() == std::vector<std::string>{kModelId}, "models() lists the served model");
    RemoteOptions o = options(s);
    o.model = "no-such-model";
    RemoteRequest r;
    r.messages = {{"user", "hi"}};
    std::string what;
    int status = 0;
    try {
        stream(s, r, o);
    } catch (const RemoteError& e) {
        what = e.what();
        status = e.kind() == RemoteErrorKind::HTTP_STATUS ? e.status() : -1;
    }
    report(status == 404 && what.find("the model 'no-such-model' does not exist") != std::string::npos,
           "an unknown model: HTTP 404 with the server's message: " + what);
}

// The server's GET /metrics as name -> value (the unlabelled samples; NaN for one not there).
struct MetricsScrape {
    std::map<std::string, double> values;
    double operator[](const std::string& name) const {
        const auto it = values.find(name);
        return it == values.end() ? std::nan("") : it->second;
    }
};

MetricsScrape scrape(const LiveServer& s) {
    MetricsScrape m;
    httplib::Client c("127.0.0.1", s.port);
    const httplib::Result r = c.Get("/metrics");
    if (!r || r->status != 200) return m;
    std::istringstream in(r->body);
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#' || line.find('{') != std::string::npos) continue;
        const size_t space = line.find(' ');
        if (space != std::string::npos) m.values[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
    }
    return m;
}

// A cancelled stream frees its session, as the server itself counts it: the generation ends as
// cancelled, short of its max_tokens, and the session is idle again. The wait is for the generation
// to be counted at all (finished either way); what it was is then read off the counters.
void cancel_frees_the_session(const LiveServer& s) {
    const MetricsScrape before = scrape(s);
    RemoteRequest r;
    r.prompt = "1, 2, 3, 4, 5,";
    r.sampling.temperature = 0.0f;
    r.max_tokens = 400;
    std::atomic<bool> cancel{false};
    int deltas = 0;
    const RemoteResult res = OpenAiClient(options(s)).complete(r, [&](const StreamDelta&) {
        if (++deltas == 3) cancel = true;
    }, &cancel);
    report(res.cancelled && deltas == 3, "cancel after 3 deltas: cancelled, no more deltas (" + std::to_string(deltas) + ")");
    MetricsScrape after = scrape(s);
    // Bounded only so that a server that never ends the generation fails here instead of hanging.
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (!(after["whitebox_generations_total"] > before["whitebox_generations_total"]) && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        after = scrape(s);
    }
    const double generated = after["whitebox_completion_tokens_total"] - before["whitebox_completion_tokens_total"];
    report(after["whitebox_generations_total"] == before["whitebox_generations_total"] + 1 &&
               after["whitebox_generations_cancelled_total"] == before["whitebox_generations_cancelled_total"] + 1,
           "/metrics: the generation is counted once, as cancelled (" +
               std::to_string(after["whitebox_generations_cancelled_total"] - before["whitebox_generations_cancelled_total"]) +
               " cancelled)");
    report(generated >= 3 && generated < r.max_tokens,
           "/metrics: it generated " + std::to_string(int(generated)) + " tokens, short of max_tokens " +
               std::to_string(r.max_tokens));
    report(after["whitebox_sessions_busy"] == 0 && after["whitebox_queue_waiting"] == 0 && after["whitebox_sessions"] == 1,
           "/metrics: the session is idle again (busy " + std::to_string(after["whitebox_sessions_busy"]) +
               ", waiting " + std::to_string(after["whitebox_queue_waiting"]) + ")");
}

struct CliRun {
    int code = -1;
    std::string out, err;
};

// whitebox-cli with these arguments (already quoted for the shell) and this text on stdin.
CliRun run_cli(const std::string& args, const std::string& input = "") {
    const std::string base = "/tmp/test_remote_serve." + std::to_string(getpid());
    const std::string err_path = base + ".err", in_path = base + ".in";
    std::ofstream(in_path) << input;
    CliRun run;
    FILE* p = popen((std::string(WB_CLI_PATH) + " " + args + " <" + in_path + " 2>" + err_path).c_str(), "r");
    char buf[4096];
    for (size_t n; p && (n = fread(buf, 1, sizeof buf, p)) > 0;) run.out.append(buf, n);
    const int status = p ? pclose(p) : -1;
    run.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(err_path);
    std::stringstream ss;
    ss << in.rdbuf();
    run.err = ss.str();
    std::remove(err_path.c_str());
    std::remove(in_path.c_str());
    return run;
}

// A loopback port nothing listens on: bound for a moment to find it, closed without listen().
int unused_port() {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    close(fd);
    return ok ? ntohs(a.sin_port) : 1;
}

int line_count(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

void cli_remote(const LiveServer& s) {
    const std::string text = stream(s, greedy_question()).result.text;
    CliRun run = run_cli("generate --remote " + s.url() + " --chat -p '" + kQuestion + "' --temp 0 -n 24");
    report(run.code == 0 && run.out == text + "\n" && run.err.find("finish: ") != std::string::npos,
           "generate --remote --chat prints the streamed reply (exit " + std::to_string(run.code) + ", '" + run.out +
               "', " + run.err + ")");
    run = run_cli("generate --remote " + s.url() + " --remote-model nope -p hi");
    report(run.code == 1 && line_count(run.err) == 1 && run.err.find("does not exist") != std::string::npos,
           "generate --remote with an unknown model: exit 1, the server's message in one line: " + run.err);
    run = run_cli("generate --remote " + s.url() + " --backend cpu -p hi");
    report(run.code == 1 && line_count(run.err) == 1 && run.err.find("--backend does not apply to --remote") != std::string::npos,
           "a local-engine flag with --remote: exit 1, one line: " + run.err);
    run = run_cli("generate --remote http://127.0.0.1:" + std::to_string(unused_port()) + " -p hi");
    report(run.code == 1 && line_count(run.err) == 1 && run.err.find("connection refused") != std::string::npos,
           "generate --remote to a port nobody listens on: exit 1, one line: " + run.err);
}

size_t occurrences(const std::string& s, const std::string& part) {
    size_t n = 0;
    for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + part.size())) ++n;
    return n;
}

// generate --remote sends the grammar (the reply follows it, so the server applied it) and warns, one
// line each, of what it cannot send (a logit bias by text, "no DRY breakers") instead of refusing.
void cli_remote_extensions(const LiveServer& s) {
    const CliRun run = run_cli("generate --remote " + s.url() + " --chat -p '" + kQuestion +
                               "' --temp 0 -n 8 --grammar 'root ::= \"yes\" | \"no\"' "
                               "--logit-bias \"'x'-1\" --dry-multiplier 0.5 --dry-sequence-breaker none");
    report(run.code == 0 && (run.out == "yes\n" || run.out == "no\n"),
           "generate --remote --grammar: the reply follows the grammar (exit " + std::to_string(run.code) + ", '" +
               run.out + "')");
    report(occurrences(run.err, "warning: ") == 2 && run.err.find("warning: --logit-bias text keys are not sent") != std::string::npos &&
               run.err.find("warning: --dry-sequence-breaker none is not sent") != std::string::npos,
           "a warning line for each setting that cannot be sent: " + run.err);
}

// generate --remote --samplers sends the order: with top-k 1 in the default order the hot reply is
// greedy; an order without top_k leaves temperature 100 free, so the same seed gives another reply.
void cli_remote_samplers(const LiveServer& s) {
    const std::string hot = "generate --remote " + s.url() + " --chat -p '" + kQuestion + "' -n 8 --temp 100 --top-k 1 --seed 3";
    const CliRun kept = run_cli(hot);
    const CliRun freed = run_cli(hot + " --samplers temperature");
    report(kept.code == 0 && freed.code == 0 && freed.out != kept.out &&
               freed.err.find("warning") == std::string::npos,
           "--samplers is sent: '" + kept.out + "' with top_k in the order, '" + freed.out + "' without (" + freed.err + ")");
}

// generate --remote takes -l (--logit-bias) and sends --ignore-eos: the reply runs to -n.
void cli_remote_ignore_eos(const LiveServer& s) {
    const CliRun run = run_cli("generate --remote " + s.url() + " --chat -p '" + kQuestion +
                               "' --temp 0 -n 64 --ignore-eos -l 9999+0");
    report(run.code == 0 && run.err.find("64 generated, finish: length") != std::string::npos,
           "generate --remote -l --ignore-eos: the reply runs to -n (" + run.err + ")");
}

// chat --remote: each turn's reply streamed, /reset starting over (the same greedy reply again), and
// a turn the server refuses reported on stderr while the chat goes on.
void chat_remote(const LiveServer& s) {
    const std::string text = stream(s, greedy_question()).result.text;
    CliRun run = run_cli("chat --remote " + s.url() + " --temp 0 -n 24", kQuestion + "\n/reset\n" + kQuestion + "\n");
    report(run.code == 0 && occurrences(run.out, text) == 2 && run.out.find("(conversation cleared)") != std::string::npos,
           "chat --remote: the greedy reply before and after /reset (exit " + std::to_string(run.code) + "): " + run.out);
    run = run_cli("chat --remote " + s.url() + " --remote-model nope -n 4", "hi\nhello\n");
    report(run.code == 0 && occurrences(run.err, "does not exist") == 2,
           "chat --remote: each refused turn is an error line and the chat goes on: " + run.err);
}

}  // namespace

int main() {
    std::unique_ptr<LiveServer> s;
    try {
        s = std::make_unique<LiveServer>();
    } catch (const std::exception& e) {
        std::printf("FAIL the server on %s did not start: %s\n", wb_test::default_model().c_str(), e.what());
        return 1;
    }
    chat_stream_matches_whole(*s);
    seeded_and_completion_match_whole(*s);
    server_errors(*s);
    cancel_frees_the_session(*s);
    cli_remote(*s);
    cli_remote_extensions(*s);
    cli_remote_samplers(*s);
    cli_remote_ignore_eos(*s);
    chat_remote(*s);
    return wb_remote_test::finish();
}
