#include <algorithm>
#include <cmath>
#include <limits>

#include "sampling/samplers.h"

namespace wb {

// As llama.cpp's typical sampler, except that the mass test is cum >= typical_p (llama.cpp: >), the
// same rule as top_p; the two differ only when the mass lands exactly on the threshold.
void TypicalSampler::apply(CandidateSet& cands) {
    mass_reached_ = kNoThreshold;
    if (p_ >= 1.0f || cands.data.size() <= 1) {
        return;
    }
    // Entropy and surprise need p but no order: one sort, by typicality, is all this stage pays.
    compute_probs(cands);
    const std::vector<Candidate>& data = cands.data;

    double entropy = 0.0;
    for (const Candidate& c : data) {
        if (c.p > 0.0f) {  // lim p->0 of p log p is 0; p = 0 would give 0 * inf = NaN
            entropy -= c.p * std::log(static_cast<double>(c.p));
        }
    }
    // How far each token's surprise is from the expected surprise; p = 0 is infinitely atypical.
    struct Scored {
        double shifted;
        Candidate c;
    };
    std::vector<Scored> scored(data.size());
    for (size_t i = 0; i < data.size(); ++i) {
        const double p = data[i].p;
        scored[i] = {p > 0.0 ? std::fabs(-std::log(p) - entropy) : std::numeric_limits<double>::infinity(), data[i]};
    }
    // Equally typical tokens go in likelihood order, whatever order earlier stages left them in.
    auto more_typical = [](const Scored& a, const Scored& b) {
        return a.shifted != b.shifted ? a.shifted < b.shifted : candidate_before(a.c, b.c);
    };
    bool sorted = false;
    const size_t keep = sort_until_mass(scored, sorted, p_, more_typical, [](const Scored& s) { return s.c.p; });
    cands.data.resize(keep);
    double mass = 0.0;  // in sort_until_mass's order and arithmetic
    for (size_t i = 0; i < keep; ++i) {
        cands.data[i] = scored[i].c;
        mass += scored[i].c.p;
    }
    mass_reached_ = mass;
    cands.sorted = false;
}

}  // namespace wb
