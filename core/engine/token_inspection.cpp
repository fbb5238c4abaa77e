#include "engine/token_inspection.h"

#include <algorithm>
#include <cmath>

#include "tokenizer/tokenizer.h"

namespace wb {

namespace {

// The ids of the k largest logits, largest first (ties: the smaller id first). One pass with a
// k-element heap instead of sorting the vocabulary: this runs after every token the inspector shows,
// and a partial sort of 50k-260k indices cost more than the rest of the inspection together.
std::vector<int32_t> top_ids(const float* logits, int32_t n_vocab, int32_t k) {
    // "a before b": a ranks higher. The heap keeps its lowest-ranked member on top.
    const auto ranks_higher = [logits](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    };
    std::vector<int32_t> heap;
    if (k <= 0) return heap;
    heap.reserve(size_t(k));
    for (int32_t id = 0; id < n_vocab; ++id) {
        if (int32_t(heap.size()) < k) {
            heap.push_back(id);
            std::push_heap(heap.begin(), heap.end(), ranks_higher);
        } else if (ranks_higher(id, heap.front())) {
            std::pop_heap(heap.begin(), heap.end(), ranks_higher);
            heap.back() = id;
            std::push_heap(heap.begin(), heap.end(), ranks_higher);
        }
    }
    std::sort_heap(heap.begin(), heap.end(), ranks_higher);  // ascending by "rank lower" = best first
    return heap;
}

}  // namespace

void inspect_candidates(const float* logits, int32_t n_vocab, const CandidateSet& final_set, int32_t n,
                        const Tokenizer& tok, TokenEvent& event) {
    // Raw softmax statistics: the terms in float (exp of a value <= 0, at most 1), the sums in double,
    // since entropy adds 50k-260k small terms.
    const float max_logit = *std::max_element(logits, logits + n_vocab);
    double z = 0.0, weighted = 0.0;
    for (int32_t i = 0; i < n_vocab; ++i) {
        const float d = logits[i] - max_logit;
        const float e = std::exp(d);
        z += double(e);
        weighted += double(e) * double(d);
    }
    // H = -sum p log p with p = e/z and log p = d - log z  =>  H = log z - sum(e*d)/z
    event.entropy = float(std::log(z) - weighted / z);

    const std::vector<int32_t> ids = top_ids(logits, n_vocab, std::min(n, n_vocab));
    event.candidates.clear();
    for (const int32_t id : ids)
        event.candidates.push_back({id, tok.token_to_piece(id, true), float(std::exp(double(logits[id]) - max_logit) / z), 0.0f});
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
