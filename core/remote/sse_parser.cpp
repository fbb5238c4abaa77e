#include "remote/sse_parser.h"

namespace wb::remote {

namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

std::string size_text(size_t bytes) {
    return bytes % (1u << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

}  // namespace

void SseParser::feed(std::string_view bytes, const EventFn& on_event) {
    for (const char c : bytes) {
        if (after_cr_) {
            after_cr_ = false;
            if (c == '\n') continue;  // the LF of a CRLF: the line already ended at the CR
        }
        if (c == '\r' || c == '\n') {
            after_cr_ = c == '\r';
            end_line(on_event);
            continue;
        }
        line_ += c;
        if (at_start_ && line_.size() <= kBom.size()) {
            if (line_ == kBom) {
                line_.clear();
                at_start_ = false;
            } else if (kBom.compare(0, line_.size(), line_) != 0) {
                at_start_ = false;
            }
        }
        if (event_bytes_ + line_.size() > max_event_bytes_)
            throw SseError("the server sent an event of over " + size_text(max_event_bytes_) +
                           " without an end (an empty line); the stream was dropped");
    }
}

// One line of the stream: an empty one ends the event, ":..." is a comment, else "field: value"
// (a missing colon means the whole line is the field name with an empty value).
void SseParser::end_line(const EventFn& on_event) {
    at_start_ = false;
    if (line_.empty()) {
        dispatch(on_event);
        return;
    }
    event_bytes_ += line_.size() + 1;
    if (line_[0] != ':') {
        const size_t colon = line_.find(':');
        const std::string_view field = std::string_view(line_).substr(0, colon);
        std::string_view value;
        if (colon != std::string::npos) {
            value = std::string_view(line_).substr(colon + 1);
            if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
        }
        if (field == "data") {
            if (has_data_) event_.data += '\n';
            event_.data += value;
            has_data_ = true;
        } else if (field == "event") {
            event_.event = value;
        } else if (field == "id") {
            event_.id = value;
        } else if (field == "error") {
            if (event_.error)
                event_.error->push_back('\n');
            else
                event_.error.emplace();
            event_.error->append(value);
        }
        // "retry" and other unknown fields are ignored, as the format says.
    }
    line_.clear();
}

void SseParser::dispatch(const EventFn& on_event) {
    const bool send = has_data_ || event_.error;
    SseEvent done = std::move(event_);
    event_ = SseEvent{};
    has_data_ = false;
    event_bytes_ = 0;
    if (send) on_event(done);
}

}  // namespace wb::remote
