// libFuzzer target: what the remote client reads from a server (core/remote/sse_parser and
// openai_format) on any bytes as a response body. The first byte picks where the body is cut in two
// (a socket may deliver it in any pieces): the events must be the same as from the body in one piece,
// and each event's data, read as a chat and as a completions chunk, must give a chunk or a
// RemoteError with a message; nothing else may be thrown. A limit of 4 KiB per event keeps inputs small.
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <string>
#include <vector>

#include "remote/openai_format.h"
#include "remote/sse_parser.h"

namespace {

void require(bool ok) {
    if (!ok) std::abort();
}

// The events of the body fed in the given pieces; false when the size limit was hit.
bool events_of(const std::vector<std::string_view>& pieces, std::vector<wb::remote::SseEvent>& out) {
    wb::remote::SseParser p(4096);
    try {
        for (std::string_view piece : pieces) p.feed(piece, [&](const wb::remote::SseEvent& e) { out.push_back(e); });
    } catch (const wb::remote::SseError& e) {
        require(std::string(e.what()).find("4096 bytes") != std::string::npos);
        return false;
    }
    return true;
}

void read_chunk(const std::string& data, bool chat) {
    try {
        const wb::remote::StreamChunk c = wb::remote::parse_stream_chunk(data, chat);
        // A log-probability at or below -9999 (OpenAI's stand-in for -inf) is -inf, never kept finite.
        for (const wb::remote::RemoteTokenLogprob& t : c.delta.tokens)
            require(!(std::isfinite(t.logprob) && t.logprob <= -9999.0f));
    } catch (const wb::remote::RemoteError& e) {
        require(std::string(e.what()).size() > 10);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
    const size_t cut = data[0] % (body.size() + 1);
    std::vector<wb::remote::SseEvent> whole, split;
    const bool whole_ok = events_of({body}, whole);
    const bool split_ok = events_of({body.substr(0, cut), body.substr(cut)}, split);
    require(whole_ok == split_ok);
    // Up to the limit the two feeds see the same events (past it each stops where it threw).
    if (whole_ok) {
        require(whole.size() == split.size());
        for (size_t i = 0; i < whole.size(); ++i)
            require(whole[i].data == split[i].data && whole[i].event == split[i].event && whole[i].id == split[i].id &&
                    whole[i].error == split[i].error);
    }
    for (const wb::remote::SseEvent& e : whole) {
        read_chunk(e.data, true);
        read_chunk(e.data, false);
    }
    wb::remote::error_message_of(std::string(body));
    try {
        wb::remote::parse_models(std::string(body));
    } catch (const wb::remote::RemoteError&) {
    }
    return 0;
}
