#pragma once
// A reply's sampler trace as a file (issue 16 item 7): the settings, seed, prompt and generated ids and
// every step's stage records, written as JSON (docs/trace-format.md) so a reply can be kept, reloaded
// bit for bit and compared with another run of the same prompt.
#include <cstdint>
#include <string>
#include <vector>

#include "sampling/sampler.h"
#include "sampling/sampling_params.h"

namespace wb {

// One generated token and what every sampler stage did to draw it.
struct TraceStep {
    int32_t token = -1;
    std::vector<SamplerStageTrace> stages;
};

struct GenerationTrace {
    std::string model_sha256;  // of the model file ("" = not recorded)
    std::string backend;       // "cpu", "cuda", ...
    SamplingParams params;
    uint64_t seed_in_use = 0;  // the seed the chain drew with (params.seed may be kRandomSeed)
    std::vector<int32_t> prompt;
    // Leading prompt positions the recording session had cached from an earlier turn (0 = the whole
    // prompt was prefilled). Their keys and values were computed one token at a time while that turn
    // was generated, where a replay prefills them: the logits can differ a little.
    int32_t prompt_cached = 0;
    std::vector<TraceStep> steps;
};

// The file's "format" value; a reader refuses any other.
inline constexpr const char* kTraceFormat = "whitebox-sampler-trace";
inline constexpr int kTraceVersion = 1;

// Writes the trace as JSON. Every float and double is written so that reading it back gives the same
// bits; NaN and infinities (which JSON has no numbers for) are the strings "nan", "inf" and "-inf".
std::string write_trace_json(const GenerationTrace& trace);

// Reads write_trace_json's output. wb::Error naming the key (and step) when the text is not JSON, the
// format or version is not this one, or a value is missing or of the wrong type.
GenerationTrace read_trace_json(const std::string& text);

// Where two traces of the same prompt first part ways.
struct TraceDivergence {
    bool same = true;
    size_t step = 0;     // index into steps (== the shorter length when one trace only ends earlier)
    std::string stage;   // the first stage whose record differs, "" when only the token or length does
    std::string what;    // e.g. "n_after 12 vs 9", "token 464 vs 1820", "trace A ends after 5 steps"
};

// Compares the prompts, then step by step the stage records (name, n_before, n_after, threshold,
// p_cutoff, the surviving candidates' ids, logits and p, bit for bit) and the drawn token.
TraceDivergence compare_traces(const GenerationTrace& a, const GenerationTrace& b);

}  // namespace wb
