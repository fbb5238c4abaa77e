#include "sampling/sampling_limits.h"

#include <cmath>
#include <sstream>
#include <string>

#include "util/error.h"

namespace wb {
namespace {

std::string text(double v) {
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(int64_t(v));
    std::ostringstream s;
    s << v;  // "nan", "inf", "0.25": short, and a NaN reads as one
    return s.str();
}

void check(const char* name, double v, SettingRange r) {
    // !(v >= lo) also catches NaN, which compares false with everything.
    if (!(v >= r.lo && v <= r.hi))
        throw Error(std::string(name) + " must be in [" + text(r.lo) + ", " + text(r.hi) + "], got " + text(v));
}

}  // namespace

void check_sampling_params(const SamplingParams& p) {
    namespace r = sampling_range;
    check("temperature", p.temperature, r::temperature);
    check("top_k", p.top_k, r::top_k);
    check("top_p", p.top_p, r::probability);
    check("min_p", p.min_p, r::probability);
    check("typical_p", p.typical_p, r::probability);
    check("repeat_penalty", p.repeat_penalty, r::repeat_penalty);
    check("repeat_last_n", p.repeat_last_n, r::window);
    check("frequency_penalty", p.frequency_penalty, r::count_penalty);
    check("presence_penalty", p.presence_penalty, r::count_penalty);
    check("max_tokens", p.max_tokens, r::max_tokens);
    for (const LogitBias& b : p.logit_bias) {
        check("logit_bias token", b.token, r::token_id);
        if (std::isnan(b.bias) || b.bias == INFINITY)
            throw Error("logit_bias bias must be a number or -inf, got " + text(b.bias));
    }
    check("xtc_probability", p.xtc_probability, r::probability);
    check("xtc_threshold", p.xtc_threshold, r::probability);
    check("top_n_sigma", p.top_n_sigma, r::top_n_sigma);
    check("mirostat", p.mirostat, r::mirostat);
    check("mirostat_tau", p.mirostat_tau, r::mirostat_rate);
    check("mirostat_eta", p.mirostat_eta, r::mirostat_rate);
    check("dry_multiplier", p.dry_multiplier, r::dry_multiplier);
    check("dry_base", p.dry_base, r::dry_base);
    check("dry_allowed_length", p.dry_allowed_length, r::dry_allowed_length);
    check("dry_penalty_last_n", p.dry_penalty_last_n, r::window);
}

}  // namespace wb
