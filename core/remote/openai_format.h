#pragma once
// Reading what an OpenAI-compatible server sends: the chunks of a streamed reply (chat and legacy
// completions shapes), error bodies and the models list. No HTTP here, so the tests feed it text.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "remote/openai_client.h"

namespace wb::remote {

// What one chunk of a stream says.
struct StreamChunk {
    StreamDelta delta;
    std::optional<std::string> finish_reason;
    std::string model;
    std::optional<int32_t> prompt_tokens, completion_tokens;  // a usage object
};

// Parses the data of one event. RemoteError MALFORMED when it is not JSON or not a chunk's shape;
// HTTP_STATUS (status 0) when it is an error object the server sent in place of a chunk.
StreamChunk parse_stream_chunk(const std::string& data, bool chat);

// The message of an error response: OpenAI's {"error": {"message"}}, {"error": "text"}, FastAPI's
// {"detail": ...}, {"message": ...}, else the start of the body itself.
std::string error_message_of(const std::string& body);

// GET /props's chat template (ServerChatTemplate); nullopt when the body is not JSON or names none.
std::optional<ServerChatTemplate> parse_props(const std::string& body);

// The ids of GET /v1/models. RemoteError MALFORMED when the body is not a models list.
std::vector<std::string> parse_models(const std::string& body);

// The start of a text for a message: at most max_bytes, newlines shown as spaces.
std::string excerpt(const std::string& text, size_t max_bytes = 200);

}  // namespace wb::remote
