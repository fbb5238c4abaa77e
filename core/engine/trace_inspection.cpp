#include "engine/trace_inspection.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "util/error.h"

namespace wb {
namespace {

using nlohmann::json;

// As in the rest of the file (sampling/trace_file.cpp): JSON numbers cannot be NaN or infinite.
json number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
}

[[noreturn]] void refuse(const std::string& where, const std::string& what, const json& got) {
    // The type and at most ~60 characters of a scalar, as the sampler trace's reader says it.
    std::string shown = got.type_name();
    if (!got.is_structured() && !got.is_null())
        shown += " " + got.dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 60);
    throw Error("trace file: " + where + " must be " + what + ", got " + shown);
}

const json& member(const json& obj, const char* key, const std::string& where) {
    if (!obj.is_object()) refuse(where, "an object", obj);
    auto it = obj.find(key);
    if (it == obj.end()) throw Error("trace file: " + where + " has no \"" + key + "\"");
    return *it;
}

float read_float(const json& v, const std::string& where) {
    if (v.is_number()) return float(v.get<double>());
    if (v.is_string()) {
        const std::string& s = v.get_ref<const std::string&>();
        if (s == "nan") return std::numeric_limits<float>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<float>::infinity();
        if (s == "-inf") return -std::numeric_limits<float>::infinity();
    }
    refuse(where, "a number (or \"nan\", \"inf\", \"-inf\")", v);
}

// A layer, head or token id: a JSON integer in [0, 2^31). nlohmann would convert 2.5 or true silently.
int32_t read_index(const json& v, const std::string& where) {
    if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= std::numeric_limits<int32_t>::max())
        return int32_t(v.get<int64_t>());
    refuse(where, "a non-negative integer", v);
}

float float_member(const json& obj, const char* key, const std::string& where) {
    return read_float(member(obj, key, where), where + "." + key);
}

int32_t index_member(const json& obj, const char* key, const std::string& where) {
    return read_index(member(obj, key, where), where + "." + key);
}

// The same keys as `generate --json --logit-lens`'s per-step "lens", so one reader serves both.
json lens_json(const std::vector<LensLayer>& lens) {
    json out = json::array();
    for (const LensLayer& l : lens) {
        if (l.top_ids.size() != l.top_p.size()) throw Error("trace file: a lens layer's ids and p differ in length");
        json top = json::array();
        for (size_t i = 0; i < l.top_ids.size(); ++i) top.push_back({l.top_ids[i], number(l.top_p[i])});
        out.push_back({{"layer", l.layer}, {"top", top}, {"p_drawn", number(l.p_drawn)}, {"entropy", number(l.entropy)}});
    }
    return out;
}

// The same keys as `generate --json --head-stats`'s per-step "heads".
json heads_json(const std::vector<HeadStats>& heads) {
    json out = json::array();
    for (const HeadStats& h : heads)
        out.push_back({{"layer", h.layer}, {"head", h.head}, {"kv_head", h.kv_head}, {"entropy", number(h.entropy)},
                       {"sink", number(h.sink)}, {"prev", number(h.prev)}, {"distance", number(h.distance)},
                       {"in_window", number(h.in_window)}, {"window", h.window}});
    return out;
}

// The rows as the engine captured them: [{"layer", "head", "probs": [p, ...]}, ...].
json attention_json(const std::vector<AttentionRow>& rows) {
    json out = json::array();
    for (const AttentionRow& r : rows) {
        json probs = json::array();
        for (float p : r.probs) probs.push_back(number(p));
        out.push_back({{"layer", r.layer}, {"head", r.head}, {"probs", std::move(probs)}});
    }
    return out;
}

const json& array_at(const json& step, const char* key, const std::string& where) {
    const json& a = step[key];
    if (!a.is_array()) refuse(where + "." + key, "an array", a);
    return a;
}

std::vector<LensLayer> read_lens(const json& step, const std::string& where) {
    std::vector<LensLayer> out;
    const json& a = array_at(step, "lens", where);
    for (size_t i = 0; i < a.size(); ++i) {
        const std::string w = where + ".lens[" + std::to_string(i) + "]";
        LensLayer l;
        l.layer = index_member(a[i], "layer", w);
        const json& top = member(a[i], "top", w);
        if (!top.is_array()) refuse(w + ".top", "an array", top);
        if (top.size() > size_t(kMaxLensTop))
            throw Error("trace file: " + w + " (layer " + std::to_string(l.layer) + ") has a top of " +
                        std::to_string(top.size()) + " tokens; at most " + std::to_string(kMaxLensTop) +
                        " are allowed (the --logit-lens limit)");
        for (size_t k = 0; k < top.size(); ++k) {
            const std::string at = w + ".top[" + std::to_string(k) + "]";
            if (!top[k].is_array() || top[k].size() != 2) refuse(at, "[id, p]", top[k]);
            l.top_ids.push_back(read_index(top[k][0], at + " id"));
            l.top_p.push_back(read_float(top[k][1], at + " p"));
        }
        l.p_drawn = float_member(a[i], "p_drawn", w);
        l.entropy = float_member(a[i], "entropy", w);
        out.push_back(std::move(l));
    }
    return out;
}

std::vector<HeadStats> read_heads(const json& step, const std::string& where) {
    std::vector<HeadStats> out;
    const json& a = array_at(step, "heads", where);
    for (size_t i = 0; i < a.size(); ++i) {
        const std::string w = where + ".heads[" + std::to_string(i) + "]";
        HeadStats h;
        h.layer = index_member(a[i], "layer", w);
        h.head = index_member(a[i], "head", w);
        h.kv_head = index_member(a[i], "kv_head", w);
        h.entropy = float_member(a[i], "entropy", w);
        h.sink = float_member(a[i], "sink", w);
        h.prev = float_member(a[i], "prev", w);
        h.distance = float_member(a[i], "distance", w);
        h.in_window = float_member(a[i], "in_window", w);
        h.window = index_member(a[i], "window", w);
        out.push_back(h);
    }
    return out;
}

// max_keys: the keys the row that drew this step's token can have seen (the prompt and the tokens
// drawn before it).
std::vector<AttentionRow> read_attention(const json& step, const std::string& where, size_t max_keys) {
    std::vector<AttentionRow> out;
    const json& a = array_at(step, "attention", where);
    for (size_t i = 0; i < a.size(); ++i) {
        const std::string w = where + ".attention[" + std::to_string(i) + "]";
        AttentionRow r;
        r.layer = index_member(a[i], "layer", w);
        r.head = index_member(a[i], "head", w);
        const json& probs = member(a[i], "probs", w);
        if (!probs.is_array() || probs.empty()) refuse(w + ".probs", "a non-empty array", probs);
        if (probs.size() > max_keys)
            throw Error("trace file: " + w + ".probs has " + std::to_string(probs.size()) + " keys; the token it drew saw at most " +
                        std::to_string(max_keys) + " (the prompt and the tokens before it)");
        for (const AttentionRow& o : out)
            if (o.layer == r.layer && o.head == r.head)
                throw Error("trace file: " + w + " repeats layer " + std::to_string(r.layer) + ", head " +
                            std::to_string(r.head) + " of an earlier row of the step");
        r.probs.reserve(probs.size());
        for (size_t k = 0; k < probs.size(); ++k) {
            const std::string at = w + ".probs[" + std::to_string(k) + "]";
            const float p = read_float(probs[k], at);
            // A probability, or NaN (a masked key's entry).
            if (!std::isnan(p) && !(p >= 0.f && p <= 1.f)) refuse(at, "a probability in [0, 1] or \"nan\"", probs[k]);
            r.probs.push_back(p);
        }
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace

std::string write_inspected_trace_json(const GenerationTrace& trace, const std::vector<TraceStepInspection>& inspection) {
    if (inspection.size() > trace.steps.size())
        throw Error("trace file: " + std::to_string(inspection.size()) + " inspected steps for " +
                    std::to_string(trace.steps.size()) + " generated tokens");
    const std::string base = write_trace_json(trace);
    bool any = false;
    for (const TraceStepInspection& s : inspection) any = any || !s.empty();
    if (!any) return base;  // the sampler trace's file, byte for byte
    // Added to the written file rather than written beside it: the sampler half stays in one place
    // (trace_file.cpp) and its keys stay in its order.
    json j = json::parse(base);
    json& steps = j["steps"];
    for (size_t i = 0; i < inspection.size(); ++i) {
        if (!inspection[i].lens.empty()) steps[i]["lens"] = lens_json(inspection[i].lens);
        if (!inspection[i].heads.empty()) steps[i]["heads"] = heads_json(inspection[i].heads);
        if (!inspection[i].attention.empty()) steps[i]["attention"] = attention_json(inspection[i].attention);
    }
    return j.dump();
}

InspectedTrace read_inspected_trace_json(const std::string& text) {
    InspectedTrace out;
    // First the sampler trace: it refuses what is not a trace (depth, JSON, format, version, fields).
    const json j = parse_trace_text(text);
    out.trace = read_trace_value(j);
    out.inspection.resize(out.trace.steps.size());
    const json& steps = j["steps"];
    for (size_t i = 0; i < steps.size(); ++i) {
        const std::string w = "steps[" + std::to_string(i) + "]";
        if (steps[i].contains("lens")) out.inspection[i].lens = read_lens(steps[i], w);
        if (steps[i].contains("heads")) out.inspection[i].heads = read_heads(steps[i], w);
        if (steps[i].contains("attention"))
            out.inspection[i].attention = read_attention(steps[i], w, out.trace.prompt.size() + i);
    }
    return out;
}

}  // namespace wb
