// libFuzzer target: the server's request parser (core/server/api_request) on any bytes as a request
// body, for both endpoints (a first byte 1 means /v1/completions and the body is the rest). Parsing must end in a
// CompletionRequest or an ApiError with a 4xx status and a message; an accepted request must hold
// what the server relies on (messages or a prompt, top_logprobs <= 20, max_tokens >= 0, stop strings
// non-empty), and the error body must be valid JSON.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "server/api_request.h"
#include "server/api_response.h"

namespace {

void require(bool ok) {
    if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    using namespace wb::server;
    // A leading byte 1 picks /v1/completions (the body is the rest); anything else is a chat body.
    const bool completion = data[0] == 1;
    const Endpoint e = completion ? Endpoint::COMPLETION : Endpoint::CHAT;
    const std::string body(reinterpret_cast<const char*>(data + (completion ? 1 : 0)), size - (completion ? 1 : 0));
    try {
        const CompletionRequest r = parse_completion_request(body, e);
        require(e == Endpoint::COMPLETION || !r.messages.empty());
        require(r.top_logprobs >= 0 && r.top_logprobs <= kMaxTopLogprobs && r.max_tokens >= 0);
        require(r.sampling.stop.size() <= kMaxStopStrings);
        for (const std::string& s : r.sampling.stop) require(!s.empty());
        // The formats take whatever text a model could produce from it.
        const ResponseMeta meta{e, "id", 0, r.model};
        std::vector<TokenLogprob> lp{{r.prompt, -1.0f, {{r.model, -2.0f}}}};
        require(nlohmann::json::accept(completion_json(meta, r.prompt, "stop", &lp, {1, 1})));
    } catch (const ApiError& err) {
        require(err.status >= 400 && err.status < 500 && !err.message.empty());
        require(nlohmann::json::accept(error_json(err)));
    }
    return 0;
}
