#include "engine/token_inspection.h"

#include <algorithm>
#include <cmath>

#include "sampling/top_logits.h"
#include "tokenizer/tokenizer.h"

namespace wb {

SoftmaxStats softmax_stats(const float* logits, int32_t n_vocab) {
    SoftmaxStats s;
    s.max_logit = *std::max_element(logits, logits + n_vocab);
    double weighted = 0.0;
    for (int32_t i = 0; i < n_vocab; ++i) {
        const float d = logits[i] - s.max_logit;
        const float e = std::exp(d);
        s.z += double(e);
        weighted += double(e) * double(d);
    }
    // H = -sum p log p with p = e/z and log p = d - log z  =>  H = log z - sum(e*d)/z
    s.entropy = float(std::log(s.z) - weighted / s.z);
    return s;
}

LensLayer lens_layer(int32_t layer, const float* logits, int32_t n_vocab, int32_t k, int32_t drawn) {
    const SoftmaxStats s = softmax_stats(logits, n_vocab);
    LensLayer out;
    out.layer = layer;
    out.entropy = s.entropy;
    k = std::clamp(k, 0, n_vocab);
    out.top_ids.resize(size_t(k));
    std::vector<float> values(static_cast<size_t>(k));
    select_top_logits(logits, n_vocab, k, out.top_ids.data(), values.data());
    for (const float v : values) out.top_p.push_back(s.p(v));
    if (drawn >= 0 && drawn < n_vocab) out.p_drawn = s.p(logits[drawn]);
    return out;
}

void inspect_candidates(const float* logits, int32_t n_vocab, const CandidateSet& final_set, int32_t n,
                        const Tokenizer& tok, TokenEvent& event) {
    const SoftmaxStats stats = softmax_stats(logits, n_vocab);
    event.entropy = stats.entropy;
    if (event.id >= 0 && event.id < n_vocab) event.p_raw = stats.p(logits[event.id]);

    // The k best by a heap pass, not a sort: this runs after every token the inspector shows.
    const int32_t k = std::clamp(n, 0, n_vocab);
    std::vector<int32_t> ids(static_cast<size_t>(k));
    std::vector<float> top_values(static_cast<size_t>(k));
    select_top_logits(logits, n_vocab, k, ids.data(), top_values.data());
    event.candidates.clear();
    for (const int32_t id : ids)
        event.candidates.push_back({id, tok.token_to_piece(id, true), stats.p(logits[id]), 0.0f});
    if (ids.empty()) return;

    // p_final: the probability in the set the token was drawn from (0 when a stage removed it). The
    // final set can hold the whole vocabulary, so look the few candidates up by id, and only for ids
    // whose raw logit reaches the weakest candidate's (a cheap test that rejects almost all of them).
    std::vector<std::pair<int32_t, size_t>> by_id;
    for (size_t i = 0; i < event.candidates.size(); ++i) by_id.emplace_back(event.candidates[i].id, i);
    std::sort(by_id.begin(), by_id.end());
    const float weakest = logits[ids.back()];
    for (const Candidate& c : final_set.data) {
        if (c.id < 0 || c.id >= n_vocab || logits[c.id] < weakest) continue;
        const auto it = std::lower_bound(by_id.begin(), by_id.end(), std::make_pair(c.id, size_t(0)));
        if (it != by_id.end() && it->first == c.id) event.candidates[it->second].p_final = c.p;
    }
}

}  // namespace wb
