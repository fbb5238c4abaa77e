#pragma once
// An incremental parser of Server-Sent Events (the WHATWG "text/event-stream" format), as OpenAI-style
// servers stream replies: bytes arrive in chunks cut anywhere (inside a line, between the CR and LF of
// a line end, inside a UTF-8 character) and complete events come out.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "util/error.h"

namespace wb::remote {

// An event over the size limit (its own type, so a caller tells it from its own callback's errors).
class SseError : public Error {
public:
    using Error::Error;
};

struct SseEvent {
    std::string event;  // the "event:" field; empty means "message"
    std::string data;   // the "data:" lines joined by '\n'
    std::string id;     // the "id:" field
    // The "error:" field, which the format does not define: llama.cpp's server sends a failure during a
    // reply as "error: {...}" in place of data, so it is kept (lines joined by '\n') and an event with
    // it is dispatched even without data.
    std::optional<std::string> error{};
};

class SseParser {
public:
    static constexpr size_t kDefaultMaxEventBytes = size_t(8) << 20;

    // max_event_bytes bounds one event (its lines as received, comments included), so a server that
    // never ends an event cannot make the client buffer without limit.
    explicit SseParser(size_t max_event_bytes = kDefaultMaxEventBytes) : max_event_bytes_(max_event_bytes) {}

    using EventFn = std::function<void(const SseEvent&)>;
    // Parses the bytes; on_event gets each event they complete, in order. SseError when the event
    // under way grows past the limit (the parser is then unusable).
    void feed(std::string_view bytes, const EventFn& on_event);

    // True while an event has begun (a line or a field received) but not ended with an empty line:
    // a stream that stops here was cut short.
    bool in_event() const { return !line_.empty() || event_bytes_ > 0; }

private:
    void end_line(const EventFn& on_event);
    void dispatch(const EventFn& on_event);

    size_t max_event_bytes_;
    std::string line_;          // the line under way, without its end
    bool after_cr_ = false;     // the last byte was CR: an LF right after it ends nothing more
    bool at_start_ = true;      // nothing read yet (a UTF-8 byte order mark is skipped there)
    size_t event_bytes_ = 0;    // bytes of the event under way in completed lines
    bool has_data_ = false;     // a data field was seen (an event with neither it nor an error is not dispatched)
    SseEvent event_;
};

}  // namespace wb::remote
