#include "sampling/samplers.h"

namespace wb {

void LogitBiasSampler::apply(CandidateSet& cands) {
    n_found_ = 0;
    auto& data = cands.data;
    for (const LogitBias& b : biases_) {
        // The chain applies the bias first, to the row in id order: one lookup per entry.
        if (b.token >= 0 && static_cast<size_t>(b.token) < data.size() && data[b.token].id == b.token) {
            data[b.token].logit += b.bias;
            ++n_found_;
            continue;
        }
        for (Candidate& c : data) {
            if (c.id == b.token) {
                c.logit += b.bias;
                ++n_found_;
                break;
            }
        }
    }
    cands.sorted = false;
}

std::string LogitBiasSampler::describe() const {
    std::string out;
    for (const LogitBias& b : biases_) {
        if (!out.empty()) out += ", ";
        out += format_number(b.token) + (b.bias < 0 ? "" : "+") + format_number(b.bias);
    }
    return out + " (" + format_number(double(n_found_)) + " found)";
}

}  // namespace wb
