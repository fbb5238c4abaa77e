#pragma once
// The inspector's records of a reply in its trace file (issue 16 item 7, "optionally attention and
// lens"): per generated token, the logit lens, the attention head statistics and (opt-in, megabytes
// per token) the raw attention rows, when they were captured. They are optional keys of each step ("lens", "heads"; docs/trace-format.md) beside the
// sampler trace that sampling/trace_file.h writes and reads; that reader ignores them, so a file with
// them still replays, and a file without them reads here as no records.
//
// Kept out of sampling/trace_file.h on purpose: the lens and head statistics are engine types
// (engine/observer.h, engine/head_stats.h), and the sampler library does not depend on the engine.
#include <string>
#include <vector>

#include "engine/head_stats.h"
#include "engine/observer.h"
#include "engine/pass_rows.h"
#include "sampling/trace_file.h"

namespace wb {

// The longest lens `top` a file may hold: whitebox-cli's --logit-lens limit. A replay asks the engine
// for the file's longest top at every layer of every step, so an unbounded one in a small hostile
// file would make it allocate gigabytes.
inline constexpr int32_t kMaxLensTop = 1000;

// What the inspector recorded for one generated token (either may be empty: not captured).
struct TraceStepInspection {
    std::vector<LensLayer> lens;   // every layer's logit lens (TokenEvent::lens)
    std::vector<HeadStats> heads;  // every captured head's statistics of the row that drew the token
    std::vector<AttentionRow> attention;  // every captured head's row that drew the token (opt-in)
    bool empty() const { return lens.empty() && heads.empty() && attention.empty(); }
};

// A trace file's contents: the sampler trace and, step by step, the inspector's records.
struct InspectedTrace {
    GenerationTrace trace;
    std::vector<TraceStepInspection> inspection;  // trace.steps.size() entries (all empty: none recorded)
};

// write_trace_json's file with each step's "lens", "heads" and "attention" added where `inspection` has them.
// inspection may be shorter than the steps (the rest recorded nothing); longer is a wb::Error.
// Floats round-trip bit for bit; NaN and infinities are "nan", "inf", "-inf" as in the rest of the file.
std::string write_inspected_trace_json(const GenerationTrace& trace, const std::vector<TraceStepInspection>& inspection);

// read_trace_json, and each step's "lens", "heads" and "attention" when present. wb::Error naming the step and key
// when one is there but malformed (not an array, a layer or id that is not a non-negative integer, a
// top entry that is not [id, p], a top longer than kMaxLensTop, a missing field), so a damaged file is refused rather than half read.
InspectedTrace read_inspected_trace_json(const std::string& text);

}  // namespace wb
