#include "sampling/samplers.h"

namespace wb {

void XtcSampler::apply(CandidateSet& cands) {
    last_chance_ = -1.0;
    removed_ = 0;
    if (probability_ <= 0.0f || threshold_ > 0.5f || cands.data.size() < 2) {
        return;
    }
    // Same 53-bit construction as the draw, so a fixed seed replays the same decisions everywhere.
    last_chance_ = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
    if (last_chance_ > probability_) {
        return;
    }
    cands.softmax();
    // The least likely token still above the threshold stays; the more likely ones go.
    size_t last_top = 0;
    for (size_t i = 0; i < cands.data.size() && cands.data[i].p >= threshold_; ++i) {
        last_top = i;
    }
    if (last_top > 0) {
        cands.data.erase(cands.data.begin(), cands.data.begin() + static_cast<std::ptrdiff_t>(last_top));
        removed_ = last_top;
    }
}

std::string XtcSampler::describe() const {
    std::string out = "probability " + format_number(probability_) + ", threshold " + format_number(threshold_);
    if (last_chance_ < 0.0) return out + " (off)";
    if (last_chance_ > probability_) return out + ": not triggered (draw " + format_number(last_chance_) + ")";
    return out + ": removed " + format_number(double(removed_)) + " top choices";
}

}  // namespace wb
