#include "engine/token_inspection.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tokenizer/tokenizer.h"

namespace wb {

void inspect_candidates(const float* logits, int32_t n_vocab, const CandidateSet& final_set, int32_t n,
                        const Tokenizer& tok, TokenEvent& event) {
    // Raw softmax statistics in double: entropy sums 50k-260k small terms.
    const float max_logit = *std::max_element(logits, logits + n_vocab);
    double z = 0.0, weighted = 0.0;
    for (int32_t i = 0; i < n_vocab; ++i) {
        const double d = double(logits[i]) - max_logit;
        const double e = std::exp(d);
        z += e;
        weighted += e * d;
    }
    // H = -sum p log p with p = e/z and log p = d - log z  =>  H = log z - sum(e*d)/z
    event.entropy = float(std::log(z) - weighted / z);

    const int32_t k = std::min(n, n_vocab);
    std::vector<int32_t> ids(static_cast<size_t>(n_vocab));
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
        return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    event.candidates.clear();
    for (int32_t i = 0; i < k; ++i) {
        const int32_t id = ids[size_t(i)];
        event.candidates.push_back({id, tok.token_to_piece(id, true), float(std::exp(double(logits[id]) - max_logit) / z), 0.0f});
    }
    // p_final: the probability in the set the token was drawn from (0 when a stage removed it). The
    // final set can hold the whole vocabulary, so look the few candidates up by id, not the reverse.
    std::vector<std::pair<int32_t, size_t>> by_id;
    for (size_t i = 0; i < event.candidates.size(); ++i) by_id.emplace_back(event.candidates[i].id, i);
    std::sort(by_id.begin(), by_id.end());
    for (const Candidate& c : final_set.data) {
        const auto it = std::lower_bound(by_id.begin(), by_id.end(), std::make_pair(c.id, size_t(0)));
        if (it != by_id.end() && it->first == c.id) event.candidates[it->second].p_final = c.p;
    }
}

}  // namespace wb
