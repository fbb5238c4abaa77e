#pragma once

#include <cmath>
#include <cstring>

namespace wb {

// The equality a replay uses for a recorded float: bit-for-bit, except that any NaN equals any NaN.
// A trace file writes every NaN as "nan" and reads it back as the canonical quiet NaN (0x7FC00000),
// while x86 arithmetic makes the "default NaN" 0xFFC00000 (sign set); the file cannot tell NaNs apart,
// so a comparison against it must not either. -0 and +0 differ, as do any two distinct finite values.
inline bool same_value(double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}
inline bool same_value(float a, float b) {
    return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

}  // namespace wb
