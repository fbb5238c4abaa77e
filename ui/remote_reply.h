#pragma once
// What the app takes from a remote engine's reply (an OpenAI-compatible server, core/remote): the
// token events the chat, the token inspector and the distribution plot read, the sampling settings a
// request carries and how a reply ended. Plain conversions, no network, so they are tested alone.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/observer.h"
#include "engine/session.h"
#include "remote/openai_client.h"
#include "sampling/sampling_params.h"

namespace remote_reply {

// Alternatives asked per token: the most the API allows (OpenAI's top_logprobs limit, and the
// candidates the app's own engine records).
constexpr int32_t kTopLogprobs = 20;

// A server names tokens by their bytes, not by ids: every remote token and candidate has a negative
// id. The drawn token's is kDrawnId, and so is a candidate with the drawn token's bytes (the inspector
// marks it); the others are kDrawnId - 1 - their rank, distinct, so no view takes two for the same token.
constexpr int32_t kDrawnId = -1;

// The events of one streamed chunk, numbered from *nextIndex on (advanced). A chunk that reports
// logprobs gives one event per token: its bytes, its probability and the server's alternatives as
// the raw distribution (p_raw = exp(logprob), as the server computed them; p_final is NaN: the server
// does not say what its sampling left). The chunk's text goes with its last token, so the reply is
// the chunks' texts exactly. A chunk with text and no logprobs (a server that sends none) is one
// event whose probability is NaN (unknown).
std::vector<wb::TokenEvent> tokenEvents(const wb::remote::StreamDelta& delta, int32_t* nextIndex);

// The Sampling panel's settings as a request sends them: the knobs every llama.cpp-style server takes
// (temperature, top-k, top-p, min-p, typical-p, the penalties, the seed unless random, the stop
// strings), and llama.cpp server's extensions where the panel turns them on: the grammar, the logit
// bias (its token ids, taken as the server's), DRY, XTC, top-nσ, Mirostat, and the sampler order
// when it is not the default.
wb::remote::RemoteSampling sampling(const wb::SamplingParams& params);

// How a remote reply ended in the engine's terms: "stop" is EOS (the API does not tell a stop string
// from an end-of-turn), "length" MAX_TOKENS, a cancelled stream STOPPED, anything else NONE.
wb::StopReason stopReason(const wb::remote::RemoteResult& result);

}  // namespace remote_reply
