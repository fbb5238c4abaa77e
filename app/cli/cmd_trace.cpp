// generate --export-trace / --replay: the reply's sampler trace as a file (docs/trace-format.md) and a
// rerun of one that says where the new run first differs.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>

#include "cli/commands.h"
#include "engine/inspection_replay.h"
#include "engine/session.h"
#include "util/error.h"

namespace wb::cli {

namespace {

bool flag_given(const CliOptions& o, std::initializer_list<const char*> names) {
    return std::any_of(o.flags.begin(), o.flags.end(), [&](const std::string& f) {
        return std::find(names.begin(), names.end(), f) != names.end();
    });
}

// One engine setting of a replay: the trace's unless its flag was given, and a note when they differ
// (the numbers may then differ too, which is what such a replay is for).
void take_setting(const CliOptions& o, std::initializer_list<const char*> flags, const std::string& given,
                  const std::string& recorded, const std::function<void()>& take_recorded) {
    if (!flag_given(o, flags)) {
        take_recorded();
    } else if (given != recorded) {
        std::fprintf(stderr, "note: replay with %s %s; the trace was made with %s\n", *flags.begin(), given.c_str(),
                     recorded.c_str());
    }
}

}  // namespace

GenerationTrace trace_of(const GenerateObserver& obs, GenerationTrace header) {
    for (const TokenEvent& e : obs.steps()) header.steps.push_back({e.id, e.trace});
    return header;
}

std::vector<TraceStepInspection> inspection_of(GenerateObserver& obs) {
    std::vector<TraceStepInspection> out(obs.steps().size());
    std::vector<std::vector<AttentionRow>> rows = obs.take_step_rows();
    for (size_t i = 0; i < out.size(); ++i) {
        out[i].lens = obs.steps()[i].lens;
        if (i < obs.step_heads().size()) out[i].heads = obs.step_heads()[i];
        if (i < rows.size()) out[i].attention = std::move(rows[i]);
    }
    return out;
}

TraceEngine engine_of(const CliOptions& o, const Session& s) {
    TraceEngine e;
    e.recorded = true;
    e.n_ctx = s.n_ctx();
    e.cache_type_k = kv_type_name(o.cache_type_k);
    e.cache_type_v = kv_type_name(o.cache_type_v);
    e.context_policy = context_policy_name(s.context_policy().policy);
    e.keep = s.context_policy().n_keep;
    return e;
}

void apply_trace_engine(const GenerationTrace& t, CliOptions& o) {
    take_setting(o, {"--backend"}, o.backend, t.backend, [&] { o.backend = t.backend; });
    const TraceEngine& e = t.engine;
    if (!e.recorded) return;  // a file from before the engine settings were recorded
    take_setting(o, {"--ctx", "-c"}, std::to_string(o.ctx), std::to_string(e.n_ctx), [&] { o.ctx = e.n_ctx; });
    // A name the file made up is refused as the flag would refuse it.
    const auto type = [](const std::string& name) {
        try {
            return kv_type_from_name(name);
        } catch (const Error& err) {
            throw Error(std::string("the trace's cache type: ") + err.what());
        }
    };
    take_setting(o, {"--cache-type-k"}, kv_type_name(o.cache_type_k), e.cache_type_k,
                 [&] { o.cache_type_k = type(e.cache_type_k); });
    take_setting(o, {"--cache-type-v"}, kv_type_name(o.cache_type_v), e.cache_type_v,
                 [&] { o.cache_type_v = type(e.cache_type_v); });
    take_setting(o, {"--context-policy"}, context_policy_name(o.context_policy), e.context_policy,
                 [&] { o.context_policy = parse_context_policy(e.context_policy); });
    take_setting(o, {"--keep"}, o.keep ? std::to_string(*o.keep) : "(default)", std::to_string(e.keep),
                 [&] { o.keep = e.keep; });
}

void write_trace_file(const std::string& path, const GenerationTrace& trace,
                      const std::vector<TraceStepInspection>& inspection) {
    const std::string text = write_inspected_trace_json(trace, inspection);
    const std::string tmp = path + ".tmp";  // renamed into place: a half-written file never has the name
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw Error("cannot write " + tmp + ": " + std::strerror(errno));
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fputc('\n', f) != EOF;
    if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;  // std::remove may set its own
        std::remove(tmp.c_str());
        throw Error("cannot write " + path + ": " + std::strerror(err));
    }
}

InspectedTrace read_trace_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read the trace file " + path + ": " + std::strerror(errno));
    // Refused before it is read: a huge file would be held whole, then parsed (sampling/trace_file.h).
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size > kMaxTraceFileBytes)
        throw Error(path + ": the trace file has " + std::to_string(size) + " bytes, more than the " +
                    std::to_string(kMaxTraceFileBytes >> 20) + " MiB a trace may have");
    in.seekg(0, std::ios::beg);
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw Error("cannot read the trace file " + path);
    try {
        return read_inspected_trace_json(text.str());
    } catch (const Error& e) {
        throw Error(path + ": " + e.what());
    }
}

void replay_capture(const InspectedTrace& file, GenerateCapture& capture) {
    capture.trace_candidates = replay_trace_candidates(file.trace);
    const InspectionReplaySpec spec = inspection_replay_spec(file.inspection);
    capture.logit_lens = spec.logit_lens;
    if (!spec.head_stats) return;
    capture.head_stats = true;
    // The file's layers and heads are captured; a --dump-attention's own --layers/--heads too (empty: all).
    const auto add = [](std::vector<int32_t>& given, const std::vector<int32_t>& needed, bool dump) {
        if (dump && given.empty()) return;
        given.insert(given.end(), needed.begin(), needed.end());
        std::sort(given.begin(), given.end());
        given.erase(std::unique(given.begin(), given.end()), given.end());
    };
    add(capture.layers, spec.layers, capture.attention);
    add(capture.heads, spec.heads, capture.attention);
}

bool replay_model_matches(const GenerationTrace& recorded, const std::string& model_sha256) {
    // Another file gives other numbers from the first token on (or fails on token ids it lacks):
    // saying so beats a first difference.
    if (recorded.model_sha256.empty() || recorded.model_sha256 == model_sha256) return true;
    std::printf("replay: the trace was made with another model file (SHA-256 %s; this one is %s)\n",
                recorded.model_sha256.c_str(), model_sha256.c_str());
    return false;
}

int report_replay(const InspectedTrace& file, const GenerationTrace& now,
                  const std::vector<TraceStepInspection>& now_inspection) {
    const GenerationTrace& recorded = file.trace;
    if (recorded.backend != now.backend)
        std::fprintf(stderr, "note: the trace was made on the %s backend, this replay ran on %s\n",
                     recorded.backend.c_str(), now.backend.c_str());
    const TraceDivergence d = compare_traces(recorded, now);
    if (d.same) {
        std::printf("replay: the same %zu tokens and sampler trace\n", now.steps.size());
    } else {
        std::printf("replay: differs at token %zu%s: %s\n", d.step,
                    d.stage.empty() ? "" : (" (stage " + d.stage + ")").c_str(), d.what.c_str());
    }
    // Up to the first different token: its lens and heads still come from the file's context.
    const size_t steps = d.same ? now.steps.size() : d.step + 1;
    const InspectionDivergence di = compare_inspection(file.inspection, now_inspection, steps);
    const std::string records = describe_inspection_records(file.inspection);
    if (!di.same) std::printf("replay: %s\n", describe_inspection_divergence(di).c_str());
    else if (!records.empty()) std::printf("replay: the same %s, bit for bit\n", records.c_str());
    return d.same && di.same ? 0 : 1;
}

}  // namespace wb::cli
