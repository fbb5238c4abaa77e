// whitebox-cli bench: prefill and decode throughput at a given context depth, mean and standard
// deviation over repetitions, and every repetition's figure in --json.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cli/commands.h"
#include "cli/cli_json.h"
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
// layer ("attention"), the top-40 candidates of every token ("candidates"), or every layer's forward
// time ("layers", the Timings panel's per-layer bars).
class BenchObserver : public Observer {
public:
    explicit BenchObserver(std::string what) : what_(std::move(what)) {}
    CaptureSpec capture() const override {
        CaptureSpec spec;
        spec.decode_attention = what_ == "attention";
        spec.top_candidates = what_ == "candidates" ? 40 : 0;
        spec.layer_timing = what_ == "layers";
        return spec;
    }
    void on_attention(const AttentionEvent& e) override { sink_ += e.probs.empty() ? 0.0f : e.probs[0]; }
    void on_token(const TokenEvent& e) override { sink_ += e.candidates.empty() ? 0.0f : e.candidates[0].p_raw; }

private:
    std::string what_;
    float sink_ = 0.0f;  // touches the data so the capture cannot be optimised away
};

// Fixed pseudo-random tokens: the same sequence every run and in every build.
std::vector<int32_t> bench_tokens(size_t n, int32_t n_vocab) {
    std::vector<int32_t> tokens(n);
    uint64_t state = 42;
    for (auto& t : tokens) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        t = int32_t((state >> 33) % uint64_t(n_vocab));
    }
    return tokens;
}

Json phase_json(int32_t tokens, int32_t depth, const std::vector<double>& tps) {
    const Stat s = tps.empty() ? Stat{} : stat_of(tps);
    Json samples = Json::array();
    for (double x : tps) samples.push_back(json_number(x));
    return {{"tokens", tokens}, {"depth", depth}, {"mean", json_number(s.mean)}, {"sd", json_number(s.sd)},
            {"samples", std::move(samples)}};
}

Json stat_json(const Stat& s) { return {{"mean", json_number(s.mean)}, {"sd", json_number(s.sd)}}; }

}  // namespace

// The protocol follows llama-bench's so the two can stand side by side (scripts/bench-llamabench.sh):
// each repetition starts from a context holding exactly `depth` tokens (computed untimed, once, and
// kept between repetitions as llama-bench keeps its depth state), then times a prefill of -p tokens
// in one batch and a decode of -n tokens, one forward pass each. With -p 0 the decode starts right at
// the depth: the context's last token is evaluated first (untimed), as llama-bench's tg test feeds
// its first token at position depth.
int cmd_bench(const CliOptions& o) {
    const auto model = Model::load(resolve_model_path(o));
    BackendChoice bc = create_backend(parse_backend_kind(o.backend), o.threads, o.cache_type_k, o.cache_type_v);
    if (!bc.note.empty()) std::fprintf(stderr, "note: %s\n", bc.note.c_str());
    const int32_t depth = o.bench_depth, n_prompt = o.bench_prompt;
    if (n_prompt == 0 && depth == 0 && o.n_predict == 0) throw Error("bench: nothing to measure (-p 0 -n 0)");
    if (n_prompt == 0 && o.n_predict == 0) throw Error("bench: -p 0 needs -n > 0");
    // The whole sequence: the depth, then the timed prompt (or, with -p 0, one token to start from).
    const int32_t n_seq = depth + std::max<int32_t>(n_prompt, depth > 0 ? 0 : 1);
    SessionOptions so;
    so.n_ctx = o.ctx > 0 ? o.ctx : n_seq + o.n_predict + 1;
    so.n_batch = std::max<int32_t>({n_prompt, 512, 1});
    so.kv_type_k = o.cache_type_k;
    so.kv_type_v = o.cache_type_v;
    Session session(*model, *bc.backend, so);
    const std::vector<int32_t> seq = bench_tokens(size_t(n_seq), model->config().n_vocab);
    // What stays cached before each timed run; generate() then evaluates only the rest.
    const int32_t kept = n_seq - std::max<int32_t>(n_prompt, 1);

    // One short untimed pass first, so page faults on the weights and thread start-up are not measured.
    session.reset();
    session.append(seq.data(), std::min<int32_t>(8, n_seq));
    session.reset();
    if (kept > 0) session.append(seq.data(), kept);

    // Decode runs through Session::generate, the real path: greedy sampling each step and, with
    // --capture, an observer attached (to measure what the inspector's hooks cost).
    BenchObserver observer(o.bench_capture);
    SamplingParams sp;
    sp.temperature = 0.0f;
    sp.ignore_eos = true;
    sp.max_tokens = o.n_predict + 1;  // the last token is sampled but never fed back
    const LiveSamplingParams live(sp);
    std::vector<double> prefill_tps, decode_tps;
    Timings last;  // of the last repetition: where its phases started, as the session counted them
    for (int rep = 0; rep < o.repetitions; ++rep) {
        // Back to the depth, untimed (a sliding-window layer may need the kept tokens computed again).
        session.truncate(kept);
        const GenerateResult r = session.generate(seq, live, o.bench_capture == "none" ? nullptr : &observer);
        if (r.reason == StopReason::ERROR) throw Error(r.error);
        if (r.timings.n_reused != kept) throw Error("bench: the depth was not kept in the cache");
        last = r.timings;
        if (n_prompt > 0) prefill_tps.push_back(r.timings.prefill_tps());
        if (o.n_predict > 0) decode_tps.push_back(r.timings.decode_tps());
    }
    const Stat pf = prefill_tps.empty() ? Stat{} : stat_of(prefill_tps);
    const Stat dc = decode_tps.empty() ? Stat{} : stat_of(decode_tps);
    const uint64_t weight_bytes = model->weights().total_bytes();
    if (o.json) {
        Json j = {{"model", model->display_name()}, {"backend", bc.backend->description()}, {"commit", WB_GIT_COMMIT},
                  {"prompt_tokens", n_prompt}, {"decode_tokens", o.n_predict}, {"depth", depth},
                  {"repetitions", o.repetitions}, {"capture", o.bench_capture}};
        // Per phase, every repetition's figure and the context length it started at (the prefill's is
        // the tokens the session reused, the decode's those plus the ones it prefilled).
        j["prefill"] = phase_json(n_prompt, n_prompt > 0 ? last.n_reused : depth, prefill_tps);
        j["decode"] = phase_json(o.n_predict, last.n_reused + last.n_prefill, decode_tps);
        j["prefill_tps"] = stat_json(pf);
        j["decode_tps"] = stat_json(dc);
        // Every decoded token reads all weights once: this is the memory traffic decode speed implies.
        j["weight_bytes_per_token"] = weight_bytes;
        j["decode_weight_gbps"] = json_number(dc.mean * double(weight_bytes) / 1e9);
        std::printf("%s\n", json_dump(j).c_str());
    } else {
        std::printf("model   %s\nbackend %s\ncapture %s\ndepth   %d\n", model->display_name().c_str(),
                    bc.backend->description().c_str(), o.bench_capture.c_str(), depth);
        if (n_prompt > 0) std::printf("prefill %5d tokens: %9.1f ± %.1f tok/s\n", n_prompt, pf.mean, pf.sd);
        if (o.n_predict > 0)
            std::printf("decode  %5d tokens: %9.1f ± %.1f tok/s  (%.1f MB of weights per token, %.1f GB/s)\n",
                        o.n_predict, dc.mean, dc.sd, double(weight_bytes) / 1e6, dc.mean * double(weight_bytes) / 1e9);
    }
    return 0;
}

}  // namespace wb::cli
