#include "engine/head_stats.h"

#include <algorithm>
#include <cmath>

namespace wb {

std::vector<HeadStats> head_stats(const AttentionEvent& e, int32_t row, int32_t model_window) {
    std::vector<HeadStats> out;
    if (row < 0 || row >= e.n_queries) return out;
    const int32_t qpos = e.query_pos0 + row;
    const int32_t window = e.window > 0 ? e.window : model_window;
    for (size_t hi = 0; hi < e.heads.size(); ++hi) {
        HeadStats s;
        s.layer = e.layer;
        s.head = e.heads[hi];
        s.kv_head = e.kv_head_of[hi];
        s.window = window;
        // Sums in double: a row has up to the context's length of small terms.
        double entropy = 0.0, distance = 0.0, inside = 0.0, total = 0.0;
        for (int32_t k = 0; k <= qpos && k < e.n_keys; ++k) {
            const double p = e.at(hi, row, k);
            if (p <= 0.0) continue;
            entropy -= p * std::log(p);
            distance += p * double(qpos - k);
            total += p;
            if (window <= 0 || qpos - k < window) inside += p;
        }
        s.entropy = float(entropy);
        s.sink = e.at(hi, row, 0);
        s.prev = qpos > 0 ? e.at(hi, row, qpos - 1) : 0.0f;
        s.distance = float(distance);
        s.in_window = total > 0.0 ? float(inside / total) : 1.0f;
        out.push_back(s);
    }
    return out;
}

int32_t head_stats_model_window(const ModelConfig& c) {
    const bool swa = std::find(c.layer_is_swa.begin(), c.layer_is_swa.end(), true) != c.layer_is_swa.end();
    return swa ? c.sliding_window : 0;
}

void PassHeadStats::add(const AttentionEvent& e) {
    if (pass_.starts_new_pass(e)) heads_.clear();
    const std::vector<HeadStats> h = head_stats(e, e.n_queries - 1, model_window_);
    heads_.insert(heads_.end(), h.begin(), h.end());
}

}  // namespace wb
