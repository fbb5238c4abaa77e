#pragma once
// OpenAI's response bodies for chat and text completions: whole responses and server-sent-event
// chunks. Pure formatting from plain values, so the HTTP layer and the tests share one definition.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "chat/chat_template.h"
#include "server/api_request.h"

namespace wb::server {

// One generated token as the logprobs fields report it: its text (bytes, possibly part of a UTF-8
// character), its log probability and the most likely alternatives, all from the raw next-token
// distribution (the softmax of the logits the sampler started from).
struct TokenLogprob {
    std::string token;
    float logprob = 0.0f;
    std::vector<std::pair<std::string, float>> top;  // most likely first
};

struct Usage {
    int32_t prompt_tokens = 0;
    int32_t completion_tokens = 0;
    int32_t cached_tokens = 0;  // of the prompt, taken from the cache (prompt_tokens_details)
};

struct ResponseMeta {
    Endpoint endpoint = Endpoint::CHAT;
    std::string id;       // chatcmpl-... / cmpl-...
    int64_t created = 0;  // Unix seconds
    std::string model;
};

// The whole response of a non-streamed request. logprobs: null unless requested.
std::string completion_json(const ResponseMeta& meta, const std::string& text, const std::string& finish_reason,
                            const std::vector<TokenLogprob>* logprobs, const Usage& usage);

// One streamed chunk: a piece of text (and, chat only, the role in the first chunk), the logprobs of
// the tokens it carries (null when not requested), the finish reason in the last one.
struct ChunkContent {
    std::optional<std::string> role;
    std::string text;
    const std::vector<TokenLogprob>* logprobs = nullptr;
    size_t text_offset = 0;  // completions' logprobs: byte offset of the first token in the whole reply
    std::optional<std::string> finish_reason;
};
std::string chunk_json(const ResponseMeta& meta, const ChunkContent& c);
// The usage chunk OpenAI sends after the last one when stream_options.include_usage is true.
std::string usage_chunk_json(const ResponseMeta& meta, const Usage& usage);

// "data: JSON\n\n"
std::string sse_event(const std::string& json);

// GET /v1/models for one model.
std::string models_json(const std::string& model_id, int64_t created);
// GET /props as llama-server answers it, the part a client needs to render a prompt as the server
// does (the app's remote engine continues a reply through /v1/completions with it): the chat
// template's Jinja source with its BOS and EOS texts; a built-in format has no source and is named
// in "chat_format" (WhiteBox's own field).
std::string props_json(const ChatTemplate& chat_template);

}  // namespace wb::server
