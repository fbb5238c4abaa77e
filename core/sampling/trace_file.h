#pragma once
// A reply's sampler trace as a file (issue 16 item 7): the settings, seed, prompt and generated ids and
// every step's stage records, written as JSON (docs/trace-format.md) so a reply can be kept, reloaded
// bit for bit and compared with another run of the same prompt.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sampling/sampler.h"
#include "sampling/sampling_params.h"

namespace wb {

// What files from before "trace_candidates" was written recorded (CaptureSpec's default).
inline constexpr int32_t kDefaultTraceCandidates = 10;

// One generated token and what every sampler stage did to draw it.
struct TraceStep {
    int32_t token = -1;
    std::vector<SamplerStageTrace> stages;
};

// The engine settings the logits were computed under (what a replay runs with unless told otherwise).
struct TraceEngine {
    bool recorded = false;              // false: a file written before these were recorded
    int32_t n_ctx = 0;
    std::string cache_type_k = "f16";   // KV cache element types (kv_type_name)
    std::string cache_type_v = "f16";
    std::string context_policy = "stop";  // context_policy_name: "stop", "shift", "trim"
    int32_t keep = 0;                   // tokens a context shift keeps (-1: the whole prompt)
};

struct GenerationTrace {
    std::string model_sha256;  // of the model file ("" = not recorded)
    std::string backend;       // "cpu", "cuda", ...
    TraceEngine engine;
    SamplingParams params;
    // Candidates each stage record keeps (CaptureSpec::trace_top): a replay must record as many.
    int32_t trace_candidates = kDefaultTraceCandidates;
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
// wb::Error naming the field when a text (a stop string, a grammar, ...) is not valid UTF-8.
std::string write_trace_json(const GenerationTrace& trace);

// Reads write_trace_json's output. wb::Error naming the key (and step) when the text is not JSON or
// nests deeper than a trace does, the format or version is not this one, a value is missing or of the
// wrong type (an integer must be one: 2.5 and true are not), or a setting is outside the range the
// CLI accepts for it (sampling/sampling_limits.h).
GenerationTrace read_trace_json(const std::string& text);

// The largest trace file the app and whitebox-cli read (256 MiB): a real trace of a few thousand
// tokens with the lens and head statistics is a few MB, with raw attention rows tens of MB. A bigger
// file is refused before it is read, with this limit in the message (read_trace_json refuses a
// longer text too).
inline constexpr std::int64_t kMaxTraceFileBytes = std::int64_t(256) << 20;

// read_trace_json in two halves, so a reader of more keys (engine/trace_inspection.h) parses the
// text once: parse_trace_text refuses a text too long, too deep or not JSON (wb::Error), and
// read_trace_value reads the parsed file.
nlohmann::json parse_trace_text(const std::string& text);
GenerationTrace read_trace_value(const nlohmann::json& j);

// Where two traces of the same prompt first part ways.
struct TraceDivergence {
    bool same = true;
    size_t step = 0;     // index into steps (== the shorter length when one trace only ends earlier)
    std::string stage;   // the first stage whose record differs, "" when only the token or length does
    std::string what;    // e.g. "n_after 12 vs 9", "token 464 vs 1820", "trace A ends after 5 steps"
};

// Compares the prompts, then step by step the stage records (name, n_before, n_after, threshold,
// p_cutoff, the surviving candidates' ids, logits and p, bit for bit, any NaN equal to any NaN:
// util/same_value.h) and the drawn token.
TraceDivergence compare_traces(const GenerationTrace& a, const GenerationTrace& b);

// The candidates per stage record a replay must ask for (CaptureSpec::trace_candidates) to record
// what the file's stages did: its trace_candidates, or more when its records are longer (a file that
// did not say, from an exporter that kept more than the default). Asking for the longest record is
// enough: a stage that kept fewer survivors than the recording's count recorded all of them.
int32_t replay_trace_candidates(const GenerationTrace& t);

}  // namespace wb
