#include <algorithm>
#include <cstdio>
#include <string>
#include <cmath>
#include <limits>

#include "sampling/samplers.h"

namespace wb {

void CandidateSet::assign(const float* logits, int32_t n_vocab) {
    data.resize(static_cast<size_t>(std::max(n_vocab, 0)));
    for (int32_t i = 0; i < n_vocab; ++i) {
        // A NaN would break the strict weak order every sort relies on; it can only come from a
        // broken forward pass, and as -inf it merely becomes unselectable.
        const float logit = std::isnan(logits[i]) ? -std::numeric_limits<float>::infinity() : logits[i];
        data[static_cast<size_t>(i)] = Candidate{i, logit, 0.0f};
    }
    sorted = false;
    selected = -1;
}

std::vector<Candidate> best_candidates(const std::vector<Candidate>& data, size_t k) {
    k = std::min(k, data.size());
    // A heap whose top is its lowest-ranked member; a candidate below that one's logit cannot get in,
    // which rejects almost every candidate of a model's distribution with one comparison.
    std::vector<Candidate> heap(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(k));
    std::make_heap(heap.begin(), heap.end(), candidate_before);
    for (size_t i = k; i < data.size() && k > 0; ++i) {
        const Candidate& c = data[i];
        if (c.logit < heap.front().logit || !candidate_before(c, heap.front())) {
            continue;
        }
        std::pop_heap(heap.begin(), heap.end(), candidate_before);
        heap.back() = c;
        std::push_heap(heap.begin(), heap.end(), candidate_before);
    }
    std::sort_heap(heap.begin(), heap.end(), candidate_before);
    return heap;
}

void CandidateSet::sort_desc() {
    if (!sorted) {
        std::sort(data.begin(), data.end(), candidate_before);
        sorted = true;
    }
}

void CandidateSet::softmax() {
    sort_desc();
    compute_probs(*this);
}

void compute_probs(CandidateSet& cands) {
    if (cands.data.empty()) {
        return;
    }
    float max_logit = cands.data.front().logit;
    if (!cands.sorted) {
        for (const Candidate& c : cands.data) {
            max_logit = std::max(max_logit, c.logit);
        }
    }
    if (max_logit == -std::numeric_limits<float>::infinity()) {
        // Every candidate was masked: no preference left, so treat them alike rather than divide 0/0.
        const float uniform = 1.0f / static_cast<float>(cands.data.size());
        for (Candidate& c : cands.data) {
            c.p = uniform;
        }
        return;
    }
    // Double accumulation: 262144 small terms summed in float lose several digits.
    double sum = 0.0;
    for (Candidate& c : cands.data) {
        c.p = std::exp(c.logit - max_logit);
        sum += c.p;
    }
    const double inv = 1.0 / sum;
    for (Candidate& c : cands.data) {
        c.p = static_cast<float>(c.p * inv);
    }
}

size_t sorted_prefix_reaching(CandidateSet& cands, double mass) {
    return sort_until_mass(cands.data, cands.sorted, mass, candidate_before, [](const Candidate& c) { return c.p; });
}

}  // namespace wb

namespace wb {

std::string format_number(double value) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", value);
    return buf;
}

std::string reached(double mass) { return std::isnan(mass) ? std::string() : ": reached " + format_number(mass); }

}  // namespace wb
