#include <cmath>
#include <iterator>

#include "sampling/samplers.h"

namespace wb {

namespace {

// z[k] = length of the longest common prefix of s and s[k..] (z[0] = s.size()): the textbook
// Z-function, linear in the length.
std::vector<int32_t> z_function(const std::vector<int32_t>& s) {
    const int32_t n = static_cast<int32_t>(s.size());
    std::vector<int32_t> z(s.size(), 0);
    if (n == 0) return z;
    z[0] = n;
    for (int32_t k = 1, left = 0, right = 0; k < n; ++k) {
        if (k < right) z[k] = std::min(right - k, z[k - left]);
        while (k + z[k] < n && s[z[k]] == s[k + z[k]]) ++z[k];
        if (k + z[k] > right) {
            left = k;
            right = k + z[k];
        }
    }
    return z;
}

}  // namespace

std::unordered_map<int32_t, int32_t> DrySampler::extending_tokens() const {
    std::unordered_map<int32_t, int32_t> out;
    const size_t n_hist = history_.size();
    const size_t window = last_n_ < 0 ? n_hist : std::min(n_hist, static_cast<size_t>(last_n_));
    if (static_cast<int64_t>(window) <= allowed_length_) return out;
    // rev[i] = the i-th newest token of the window.
    std::vector<int32_t> rev(history_.rbegin(), history_.rbegin() + static_cast<std::ptrdiff_t>(window));
    const int32_t n = static_cast<int32_t>(window);

    // A repeat may not reach back across the newest breaker: find it and its length.
    int32_t rep_limit = n;
    for (int32_t i = 0; i < n; ++i) {
        auto range = breakers_.equal_range(rev[i]);
        int32_t longest = -1;
        for (auto it = range.first; it != range.second; ++it) {
            const int32_t len = static_cast<int32_t>(it->second.size());
            if (len <= longest || len > i) continue;
            bool match = true;
            for (int32_t o = 0; o < len && match; ++o) match = it->second[o] == rev[i - o - 1];
            if (match) longest = len;
        }
        if (longest >= 0) {
            rep_limit = i - longest;
            break;
        }
    }
    if (rep_limit < allowed_length_) return out;

    // z[k]: how many of the newest tokens also end k positions back; the token that followed that
    // earlier occurrence (rev[k - 1]) would extend the repeat.
    const std::vector<int32_t> z = z_function(rev);
    for (int32_t k = 1; k < n; ++k) {
        const int32_t len = std::min(z[k], rep_limit);
        if (len < allowed_length_) continue;
        int32_t& best = out[rev[k - 1]];
        best = std::max(best, len);
    }
    return out;
}

std::unordered_map<int32_t, int32_t> DrySampler::penalised_tokens() const {
    if (multiplier_ == 0.0f || base_ < 1.0f || last_n_ == 0) return {};
    std::unordered_map<int32_t, int32_t> out = extending_tokens();
    // A token that is a breaker on its own ends the repeat instead of extending it.
    for (auto it = out.begin(); it != out.end();) {
        bool single_breaker = false;
        auto range = breakers_.equal_range(it->first);
        for (auto b = range.first; b != range.second && !single_breaker; ++b) single_breaker = b->second.empty();
        it = single_breaker ? out.erase(it) : std::next(it);
    }
    return out;
}

void DrySampler::apply(CandidateSet& cands) {
    n_penalised_ = 0;
    longest_ = 0;
    const auto penalised = penalised_tokens();
    if (penalised.empty()) return;
    // pow(base, exponent) must stay below FLT_MAX (ln FLT_MAX ~ 88.72).
    int32_t max_exponent = 0;
    if (base_ > 1.000001f) max_exponent = static_cast<int32_t>(88.7228391f / std::log(base_));
    for (Candidate& c : cands.data) {
        auto it = penalised.find(c.id);
        if (it == penalised.end()) continue;
        int32_t exponent = it->second - allowed_length_;
        if (max_exponent > 0 && exponent > max_exponent) exponent = max_exponent;
        // llama.cpp's arithmetic, so the same history gives the same logits: the power in double, the
        // penalty rounded to float, then a float subtraction.
        const float penalty = static_cast<float>(multiplier_ * std::pow(static_cast<double>(base_), exponent));
        c.logit -= penalty;
        ++n_penalised_;
        longest_ = std::max(longest_, it->second);
    }
    cands.sorted = false;
}

std::string DrySampler::describe() const {
    std::string out = "multiplier " + format_number(multiplier_) + ", base " + format_number(base_) +
                      ", allowed " + format_number(allowed_length_) + ", last " +
                      (last_n_ < 0 ? std::string("all") : format_number(last_n_));
    if (n_penalised_ == 0) return out + ": nothing repeated";
    return out + ": penalised " + format_number(double(n_penalised_)) + " tokens (longest repeat " +
           format_number(longest_) + ")";
}

}  // namespace wb
