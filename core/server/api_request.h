#pragma once
// The body of POST /v1/chat/completions and /v1/completions parsed and checked, before any model is
// involved: types and ranges of every field the server reads (OpenAI's names, and llama-server's for
// the samplers OpenAI lacks). Unknown fields are ignored, as OpenAI clients send many; a known field
// of the wrong type or out of range is an ApiError (400) naming it. A grammar the reply must follow
// (response_format json_object / json_schema, llama-server's grammar and json_schema) is compiled
// to GBNF into sampling.grammar here, so a malformed one is refused before any worker sees it. Kept apart from HTTP and from the
// engine so it can be unit-tested and fuzzed on its own.
#include <cstdint>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "sampling/sampling_params.h"
#include "server/api_error.h"

namespace wb::server {

enum class Endpoint { CHAT, COMPLETION };

struct CompletionRequest {
    Endpoint endpoint = Endpoint::CHAT;
    std::string model;                  // empty: not given (the loaded model)
    std::vector<ChatMessage> messages;  // chat: non-empty
    std::string prompt;                 // completion
    bool stream = false;
    bool include_usage = false;         // stream_options.include_usage: a last chunk with usage
    int32_t max_tokens = 0;             // > 0 when given; 0: until end of text or the context is full
    bool logprobs = false;              // report the chosen token's log probability
    int32_t top_logprobs = 0;           // and this many alternatives (0 .. 20)
    // llama-server's cache_prompt: the reply may start from what an earlier request left in the cache
    // (faster; its log probabilities are then not always bit for bit a fresh evaluation's).
    bool cache_prompt = false;
    // Sampling settings: the server's defaults with the request's fields applied. max_tokens is left
    // to the server (it knows the context); logit_bias ids are checked against the vocabulary there.
    SamplingParams sampling;
    // The field sampling.grammar came from ("grammar", "response_format.json_schema.schema", ...),
    // for an error about the grammar found later (one no token of the vocabulary can begin); empty
    // without a grammar.
    std::string grammar_field;
};

inline constexpr int32_t kMaxTopLogprobs = 20;
inline constexpr size_t kMaxStopStrings = 16;
inline constexpr int kMaxJsonDepth = 64;  // a body nested deeper is refused (400) before parsing

// Parses a request body. `defaults` are the sampling settings of the server (its command line).
// Throws ApiError (status 400) for malformed JSON, a non-object body, a field of the wrong type or
// out of range, or a missing messages / prompt.
CompletionRequest parse_completion_request(const std::string& body, Endpoint endpoint,
                                           const SamplingParams& defaults = {});

}  // namespace wb::server
