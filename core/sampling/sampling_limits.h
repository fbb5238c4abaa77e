#pragma once
// The accepted range of every numeric sampling setting, in one place: the CLI checks the flags a user
// types against it, and a trace file's settings are checked against it when the file is read, so a
// file cannot hand the sampler a value no flag could have set (NaN, a negative window, ...).
#include <cstdint>

#include "sampling/sampling_params.h"

namespace wb {

struct SettingRange {
    double lo, hi;  // inclusive
};

namespace sampling_range {
inline constexpr SettingRange temperature{0, 100};
inline constexpr SettingRange top_k{0, 1 << 30};
inline constexpr SettingRange probability{0, 1};  // top_p, min_p, typical_p, xtc_probability, xtc_threshold
inline constexpr SettingRange repeat_penalty{0, 100};
inline constexpr SettingRange window{-1, 1 << 24};  // repeat_last_n, dry_penalty_last_n (-1 = all)
inline constexpr SettingRange count_penalty{-100, 100};  // frequency_penalty, presence_penalty
inline constexpr SettingRange max_tokens{0, 1 << 20};
inline constexpr SettingRange dry_multiplier{0, 1e6};
inline constexpr SettingRange dry_base{1, 1e6};
inline constexpr SettingRange dry_allowed_length{0, 1 << 24};
inline constexpr SettingRange mirostat{0, 2};
inline constexpr SettingRange mirostat_rate{0, 100};  // mirostat_eta, mirostat_tau
inline constexpr SettingRange top_n_sigma{-1, 1000};
inline constexpr SettingRange token_id{0, 1 << 30};
}  // namespace sampling_range

// wb::Error naming the first setting outside its range ("temperature must be in [0, 100], got nan").
// Every number must be finite except a logit bias, which may be -inf (a ban); the sampler names and
// grammar are checked by the chain that uses them.
void check_sampling_params(const SamplingParams& p);

}  // namespace wb
