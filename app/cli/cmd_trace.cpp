// generate --export-trace / --replay: the reply's sampler trace as a file (docs/trace-format.md) and a
// rerun of one that says where the new run first differs.
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli/commands.h"
#include "util/error.h"
#include "util/sha256.h"

namespace wb::cli {

GenerationTrace trace_of(const GenerateObserver& obs, const std::vector<int32_t>& prompt, const SamplingParams& params,
                         uint64_t seed_in_use, const std::string& backend, const std::string& model_path) {
    GenerationTrace t;
    t.model_sha256 = sha256_file(model_path);
    t.backend = backend;
    t.params = params;
    t.seed_in_use = seed_in_use;
    t.prompt = prompt;
    for (const TokenEvent& e : obs.steps()) t.steps.push_back({e.id, e.trace});
    return t;
}

void write_trace_file(const std::string& path, const GenerationTrace& trace) {
    const std::string text = write_trace_json(trace);
    const std::string tmp = path + ".tmp";  // renamed into place: a half-written file never has the name
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw Error("cannot write " + tmp + ": " + std::strerror(errno));
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fputc('\n', f) != EOF;
    if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw Error("cannot write " + path + ": " + std::strerror(errno));
    }
}

GenerationTrace read_trace_file(const std::string& path) {
    try {
        return read_trace_json(read_text_file(path));
    } catch (const Error& e) {
        throw Error(path + ": " + e.what());
    }
}

int report_replay(const GenerationTrace& recorded, const GenerationTrace& now) {
    // Another file gives other numbers from the first token on; saying so beats a first difference.
    if (!recorded.model_sha256.empty() && recorded.model_sha256 != now.model_sha256) {
        std::printf("replay: the trace was made with another model file (SHA-256 %s; this one is %s)\n",
                    recorded.model_sha256.c_str(), now.model_sha256.c_str());
        return 1;
    }
    const TraceDivergence d = compare_traces(recorded, now);
    if (d.same) {
        std::printf("replay: the same %zu tokens and sampler trace\n", now.steps.size());
        return 0;
    }
    std::printf("replay: differs at token %zu%s: %s\n", d.step, d.stage.empty() ? "" : (" (stage " + d.stage + ")").c_str(),
                d.what.c_str());
    return 1;
}

}  // namespace wb::cli
