#pragma once
// Holds back streamed text that might be the start of a stop string, so a reply never shows the
// first half of "</s>" or "User:" before the match is known.
#include <string>
#include <vector>

namespace wb {

class StopStringMatcher {
public:
    explicit StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

    // Appends text; returns what can safely be shown now. Sets matched() once a stop string appears;
    // the stop string and anything after it are never returned.
    std::string push(const std::string& text);
    // The text still held back (when generation ends for another reason, it belongs to the reply).
    std::string flush();
    bool matched() const { return matched_; }

private:
    std::vector<std::string> stops_;
    std::string held_;
    bool matched_ = false;
};

}  // namespace wb
