#include <algorithm>
#include <unordered_map>

#include "sampling/samplers.h"

namespace wb {

PenaltiesSampler::PenaltiesSampler(const std::vector<int32_t>& history, int32_t last_n, float repeat,
                                   float frequency, float presence)
    : history_(history), last_n_(last_n), repeat_(repeat), frequency_(frequency), presence_(presence) {}

bool penalties_change_logits(const std::vector<int32_t>& history, int32_t last_n, float repeat, float frequency,
                             float presence) {
    const bool any_penalty = repeat != 1.0f || frequency != 0.0f || presence != 0.0f;
    return last_n != 0 && !history.empty() && any_penalty;
}

void PenaltiesSampler::apply(CandidateSet& cands) {
    if (!penalties_change_logits(history_, last_n_, repeat_, frequency_, presence_)) {
        return;
    }
    const size_t window =
        last_n_ < 0 ? history_.size() : std::min(history_.size(), static_cast<size_t>(last_n_));
    std::unordered_map<int32_t, int32_t> counts;
    for (auto it = history_.end() - static_cast<std::ptrdiff_t>(window); it != history_.end(); ++it) {
        ++counts[*it];
    }

    auto penalise = [this](Candidate& c, int32_t count) {
        // Dividing a negative logit would make the token more likely, so those are multiplied.
        c.logit = c.logit > 0.0f ? c.logit / repeat_ : c.logit * repeat_;
        c.logit -= static_cast<float>(count) * frequency_ + (count > 0 ? presence_ : 0.0f);
    };

    // The chain applies penalties to the full vocabulary in id order, so a window of ~64 tokens
    // costs ~64 lookups; a reordered or filtered set falls back to one pass over all candidates.
    auto& data = cands.data;
    const bool id_indexed = std::all_of(counts.begin(), counts.end(), [&](const auto& kv) {
        return kv.first >= 0 && static_cast<size_t>(kv.first) < data.size() && data[kv.first].id == kv.first;
    });
    if (id_indexed) {
        for (const auto& [id, count] : counts) {
            penalise(data[static_cast<size_t>(id)], count);
        }
    } else {
        for (Candidate& c : data) {
            auto it = counts.find(c.id);
            if (it != counts.end()) {
                penalise(c, it->second);
            }
        }
    }
    cands.sorted = false;
}

}  // namespace wb
