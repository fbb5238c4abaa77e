#include "engine/inspection_replay.h"

#include <algorithm>
#include <cstdio>

#include "util/same_value.h"

namespace wb {
namespace {

// Nine significant digits tell any two floats apart, so a one-ulp difference shows in the message.
std::string num(float v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", double(v));
    return buf;
}

std::string floats(const char* name, float a, float b) { return std::string(name) + " " + num(a) + " vs " + num(b); }

void sorted_unique(std::vector<int32_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

// "" when the rerun's layer reproduces the file's.
std::string lens_difference(const LensLayer& a, const LensLayer& b) {
    if (b.top_ids.size() < a.top_ids.size())
        return "top has " + std::to_string(b.top_ids.size()) + " tokens, the file " + std::to_string(a.top_ids.size());
    for (size_t k = 0; k < a.top_ids.size(); ++k) {
        const std::string at = "top[" + std::to_string(k) + "] ";
        if (a.top_ids[k] != b.top_ids[k])
            return at + "id " + std::to_string(a.top_ids[k]) + " vs " + std::to_string(b.top_ids[k]);
        if (!same_value(a.top_p[k], b.top_p[k])) return at + floats("p", a.top_p[k], b.top_p[k]);
    }
    if (!same_value(a.p_drawn, b.p_drawn)) return floats("p_drawn", a.p_drawn, b.p_drawn);
    if (!same_value(a.entropy, b.entropy)) return floats("entropy", a.entropy, b.entropy);
    return {};
}

std::string head_difference(const HeadStats& a, const HeadStats& b) {
    if (a.kv_head != b.kv_head) return "kv_head " + std::to_string(a.kv_head) + " vs " + std::to_string(b.kv_head);
    if (a.window != b.window) return "window " + std::to_string(a.window) + " vs " + std::to_string(b.window);
    const std::pair<const char*, float HeadStats::*> fields[] = {{"entropy", &HeadStats::entropy},
                                                                 {"sink", &HeadStats::sink},
                                                                 {"prev", &HeadStats::prev},
                                                                 {"distance", &HeadStats::distance},
                                                                 {"in_window", &HeadStats::in_window}};
    for (const auto& [name, field] : fields)
        if (!same_value(a.*field, b.*field)) return floats(name, a.*field, b.*field);
    return {};
}

InspectionDivergence lens_divergence(size_t step, const std::vector<LensLayer>& recorded,
                                     const std::vector<LensLayer>& now) {
    for (const LensLayer& a : recorded) {
        const auto b = std::find_if(now.begin(), now.end(), [&](const LensLayer& l) { return l.layer == a.layer; });
        const std::string what = b == now.end() ? "not recomputed" : lens_difference(a, *b);
        if (!what.empty()) return {false, step, "lens", a.layer, -1, what};
    }
    return {};
}

InspectionDivergence heads_divergence(size_t step, const std::vector<HeadStats>& recorded,
                                      const std::vector<HeadStats>& now) {
    for (const HeadStats& a : recorded) {
        const auto b = std::find_if(now.begin(), now.end(),
                                    [&](const HeadStats& h) { return h.layer == a.layer && h.head == a.head; });
        const std::string what = b == now.end() ? "not recomputed" : head_difference(a, *b);
        if (!what.empty()) return {false, step, "heads", a.layer, a.head, what};
    }
    return {};
}

}  // namespace

InspectionReplaySpec inspection_replay_spec(const std::vector<TraceStepInspection>& recorded) {
    InspectionReplaySpec spec;
    for (const TraceStepInspection& s : recorded) {
        for (const LensLayer& l : s.lens) spec.logit_lens = std::max(spec.logit_lens, int32_t(l.top_ids.size()));
        for (const HeadStats& h : s.heads) {
            spec.layers.push_back(h.layer);
            spec.heads.push_back(h.head);
        }
        // A lens record with an empty top still asks for the lens (its p_drawn and entropy).
        if (!s.lens.empty()) spec.logit_lens = std::max(spec.logit_lens, 1);
        if (!s.heads.empty()) spec.head_stats = true;
    }
    // read_inspected_trace_json refuses a longer top; a spec built from other records is capped too.
    spec.logit_lens = std::min(spec.logit_lens, kMaxLensTop);
    sorted_unique(spec.layers);
    sorted_unique(spec.heads);
    return spec;
}

InspectionDivergence compare_inspection(const std::vector<TraceStepInspection>& recorded,
                                        const std::vector<TraceStepInspection>& now, size_t steps) {
    steps = std::min(steps, recorded.size());
    for (size_t i = 0; i < steps; ++i) {
        static const TraceStepInspection none;
        const TraceStepInspection& b = i < now.size() ? now[i] : none;
        if (InspectionDivergence d = lens_divergence(i, recorded[i].lens, b.lens); !d.same) return d;
        if (InspectionDivergence d = heads_divergence(i, recorded[i].heads, b.heads); !d.same) return d;
    }
    return {};
}

std::string describe_inspection_divergence(const InspectionDivergence& d) {
    if (d.same) return {};
    const std::string where = "token " + std::to_string(d.step) + ", layer " + std::to_string(d.layer) +
                              (d.head >= 0 ? ", head " + std::to_string(d.head) : std::string());
    return (d.record == "lens" ? "the logit lens differs at " : "the head statistics differ at ") + where + ": " + d.what;
}

std::string describe_inspection_records(const std::vector<TraceStepInspection>& recorded) {
    size_t lens = 0, heads = 0;
    for (const TraceStepInspection& s : recorded) {
        lens += s.lens.size();
        heads += s.heads.size();
    }
    std::string out;
    if (lens > 0) out = "logit lens (" + std::to_string(lens) + " layer records)";
    if (heads > 0)
        out += (out.empty() ? "" : " and ") + std::string("head statistics (") + std::to_string(heads) + " head records)";
    return out;
}

}  // namespace wb
