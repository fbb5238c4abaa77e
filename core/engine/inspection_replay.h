#pragma once
// A replay of a trace's inspector records (issue 16 item 7): what the rerun must capture so that it
// recomputes the logit lens and head statistics the file carries, and where the recomputed records
// first differ from the file's. compare_traces (sampling/trace_file.h) does the same for the tokens
// and the sampler trace; this is its counterpart for the optional "lens" and "heads" of each step.
//
// The rule is bit-for-bit equality, as for the sampler trace: on the same model file, backend and
// engine settings the rerun runs the same kernels on the same inputs (the lens is the model's own final
// norm and output product on each layer's residual; the head statistics are head_stats() of the
// probabilities the attention used), so any difference is a real one, not rounding to be tolerated.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/trace_inspection.h"

namespace wb {

// What a replay asks the engine for (CaptureSpec's logit_lens, layers, heads and the attention rows
// that head statistics are computed from) to recompute every record of the file.
struct InspectionReplaySpec {
    int32_t logit_lens = 0;        // top tokens per layer: the file's longest "top", at most kMaxLensTop (0: no lens)
    bool head_stats = false;       // some step recorded head statistics
    std::vector<int32_t> layers;   // the layers those statistics name (sorted, unique)
    std::vector<int32_t> heads;    // the query heads they name (sorted, unique)
};

InspectionReplaySpec inspection_replay_spec(const std::vector<TraceStepInspection>& recorded);

// The first record of the file that the rerun did not reproduce.
struct InspectionDivergence {
    bool same = true;
    size_t step = 0;          // the generated token's index
    std::string record;       // "lens" or "heads"
    int32_t layer = -1;
    int32_t head = -1;        // the query head ("heads" only)
    std::string what;         // e.g. "top[0] p 0.41 vs 0.4100001", "entropy 1.2 vs 1.3", "not recomputed"
};

// Compares, step by step, every record in `recorded` with `now`'s for the same step, layer and head:
// the lens's top ids and p (the file's length of them), p_drawn and entropy; each head's kv_head,
// window and statistics. Floats compare as bits, except that any NaN equals any NaN
// (util/same_value.h: a file reads every NaN back as one canonical NaN). Only the first `steps`
// steps are compared (a replay whose tokens differ stops meaning the same context after the first
// different token; compare_traces reports that one), and records `now` has beyond the file's are not
// differences. Within a step the lens comes first, layer by layer, then the heads in the file's order.
InspectionDivergence compare_inspection(const std::vector<TraceStepInspection>& recorded,
                                        const std::vector<TraceStepInspection>& now, size_t steps);

// "the logit lens differs at token 3, layer 5: top[0] p 0.41 vs 0.4100001" (or "the head statistics
// differ at token 3, layer 5, head 2: ..."); "" when same.
std::string describe_inspection_divergence(const InspectionDivergence& d);

// How many lens layers and heads the file recorded: "logit lens (90 layer records) and head statistics
// (54 head records)" for a replay's "the same ..." line; "" when it recorded none.
std::string describe_inspection_records(const std::vector<TraceStepInspection>& recorded);

}  // namespace wb
