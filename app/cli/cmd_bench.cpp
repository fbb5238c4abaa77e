// whitebox-cli bench: prefill and decode throughput, mean and standard deviation over repetitions.
// Same protocol as scripts/bench-llamacpp.py so the two numbers can stand side by side.
#include <cmath>
#include <cstdio>

#include "cli/commands.h"
#include "cli/json_writer.h"
#include "engine/backend.h"
#include "engine/model.h"
#include "engine/session.h"
#include "util/error.h"
#include "wb_version.h"

namespace wb::cli {

namespace {

struct Stat {
    double mean = 0, sd = 0;
};

Stat stat_of(const std::vector<double>& xs) {
    Stat s;
    for (double x : xs) s.mean += x;
    s.mean /= double(xs.size());
    for (double x : xs) s.sd += (x - s.mean) * (x - s.mean);
    s.sd = xs.size() > 1 ? std::sqrt(s.sd / double(xs.size() - 1)) : 0.0;
    return s;
}

// The observer attached during bench --capture: nothing ("empty"), every decode attention row of every
// layer ("attention"), or the top-40 candidates of every token ("candidates").
class BenchObserver : public Observer {
public:
    explicit BenchObserver(std::string what) : what_(std::move(what)) {}
    CaptureSpec capture() const override {
        CaptureSpec spec;
        spec.decode_attention = what_ == "attention";
        spec.top_candidates = what_ == "candidates" ? 40 : 0;
        return spec;
    }
    void on_attention(const AttentionEvent& e) override { sink_ += e.probs.empty() ? 0.0f : e.probs[0]; }
    void on_token(const TokenEvent& e) override { sink_ += e.candidates.empty() ? 0.0f : e.candidates[0].p_raw; }

private:
    std::string what_;
    float sink_ = 0.0f;  // touches the data so the capture cannot be optimised away
};

}  // namespace

int cmd_bench(const CliOptions& o) {
    const auto model = Model::load(resolve_model_path(o));
    BackendChoice bc = create_backend(parse_backend_kind(o.backend), o.threads);
    if (!bc.note.empty()) std::fprintf(stderr, "note: %s\n", bc.note.c_str());
    SessionOptions so;
    so.n_ctx = o.ctx > 0 ? o.ctx : o.bench_prompt + o.n_predict + 1;
    so.n_batch = o.bench_prompt;
    Session session(*model, *bc.backend, so);

    // Fixed pseudo-random prompt tokens: the same prompt every run and in every build.
    std::vector<int32_t> prompt(size_t(o.bench_prompt));
    uint64_t state = 42;
    for (auto& t : prompt) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        t = int32_t((state >> 33) % uint64_t(model->config().n_vocab));
    }

    // One short untimed pass first, so page faults on the weights and thread start-up are not measured.
    session.reset();
    session.append(prompt.data(), std::min<int32_t>(8, o.bench_prompt));

    // Decode runs through Session::generate, the real path: greedy sampling each step and, with
    // --capture, an observer attached (to measure what the inspector's hooks cost).
    BenchObserver observer(o.bench_capture);
    SamplingParams sp;
    sp.temperature = 0.0f;
    sp.ignore_eos = true;
    sp.max_tokens = o.n_predict + 1;  // the last token is sampled but never fed back
    const LiveSamplingParams live(sp);
    std::vector<double> prefill_tps, decode_tps;
    for (int rep = 0; rep < o.repetitions; ++rep) {
        session.reset();
        const GenerateResult r = session.generate(prompt, live, o.bench_capture == "none" ? nullptr : &observer);
        if (r.reason == StopReason::ERROR) throw Error(r.error);
        prefill_tps.push_back(r.timings.prefill_tps());
        if (o.n_predict > 0) decode_tps.push_back(r.timings.decode_tps());
    }
    const Stat pf = stat_of(prefill_tps);
    const Stat dc = decode_tps.empty() ? Stat{} : stat_of(decode_tps);
    const uint64_t weight_bytes = model->weights().total_bytes();
    if (o.json) {
        JsonWriter j;
        j.begin_object().key("model").value(model->display_name()).key("backend").value(bc.backend->description());
        j.key("commit").value(WB_GIT_COMMIT).key("prompt_tokens").value(o.bench_prompt).key("decode_tokens").value(o.n_predict);
        j.key("repetitions").value(o.repetitions).key("capture").value(o.bench_capture);
        j.key("prefill_tps").begin_object().key("mean").value(pf.mean).key("sd").value(pf.sd).end_object();
        j.key("decode_tps").begin_object().key("mean").value(dc.mean).key("sd").value(dc.sd).end_object();
        // Every decoded token reads all weights once: this is the memory traffic decode speed implies.
        j.key("weight_bytes_per_token").value(weight_bytes).key("decode_weight_gbps").value(dc.mean * double(weight_bytes) / 1e9);
        j.end_object();
        std::printf("%s\n", j.str().c_str());
    } else {
        std::printf("model   %s\nbackend %s\ncapture %s\n", model->display_name().c_str(),
                    bc.backend->description().c_str(), o.bench_capture.c_str());
        std::printf("prefill %5d tokens: %9.1f ± %.1f tok/s\n", o.bench_prompt, pf.mean, pf.sd);
        std::printf("decode  %5d tokens: %9.1f ± %.1f tok/s  (%.1f MB of weights per token, %.1f GB/s)\n", o.n_predict,
                    dc.mean, dc.sd, double(weight_bytes) / 1e6, dc.mean * double(weight_bytes) / 1e9);
    }
    return 0;
}

}  // namespace wb::cli
