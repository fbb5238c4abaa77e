#include "server/api_response.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace wb::server {

using nlohmann::json;

namespace {

// Token text may end inside a UTF-8 character: invalid bytes become U+FFFD in the JSON text, and
// "bytes" (chat) keeps the exact ones.
std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// OpenAI reports -9999 for a probability that underflowed to 0; JSON has no -inf.
double finite_logprob(float lp) { return std::isfinite(lp) ? double(lp) : -9999.0; }

json bytes_of(const std::string& s) {
    json b = json::array();
    for (unsigned char c : s) b.push_back(int(c));
    return b;
}

json chat_logprobs(const std::vector<TokenLogprob>& tokens) {
    json content = json::array();
    for (const TokenLogprob& t : tokens) {
        json top = json::array();
        for (const auto& [text, lp] : t.top)
            top.push_back({{"token", text}, {"logprob", finite_logprob(lp)}, {"bytes", bytes_of(text)}});
        content.push_back({{"token", t.token}, {"logprob", finite_logprob(t.logprob)}, {"bytes", bytes_of(t.token)},
                           {"top_logprobs", top}});
    }
    return {{"content", content}};
}

// The legacy completions format: parallel arrays, alternatives as {token: logprob} objects.
json text_logprobs(const std::vector<TokenLogprob>& tokens, size_t text_offset0) {
    json toks = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
    size_t offset = text_offset0;
    for (const TokenLogprob& t : tokens) {
        toks.push_back(t.token);
        lps.push_back(finite_logprob(t.logprob));
        json top = json::object();
        for (const auto& [text, lp] : t.top) top[text] = finite_logprob(lp);
        tops.push_back(top);
        offsets.push_back(offset);
        offset += t.token.size();
    }
    return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json usage_json(const Usage& u) {
    return {{"prompt_tokens", u.prompt_tokens}, {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json envelope(const ResponseMeta& meta, const char* chat_object, const char* text_object) {
    return {{"id", meta.id}, {"object", meta.endpoint == Endpoint::CHAT ? chat_object : text_object},
            {"created", meta.created}, {"model", meta.model}, {"system_fingerprint", "whitebox"}};
}

}  // namespace

std::string completion_json(const ResponseMeta& meta, const std::string& text, const std::string& finish_reason,
                            const std::vector<TokenLogprob>* logprobs, const Usage& usage) {
    json j = envelope(meta, "chat.completion", "text_completion");
    json choice = {{"index", 0}, {"finish_reason", finish_reason}, {"logprobs", nullptr}};
    if (meta.endpoint == Endpoint::CHAT) {
        choice["message"] = {{"role", "assistant"}, {"content", text}};
        if (logprobs) choice["logprobs"] = chat_logprobs(*logprobs);
    } else {
        choice["text"] = text;
        if (logprobs) choice["logprobs"] = text_logprobs(*logprobs, 0);
    }
    j["choices"] = json::array({choice});
    j["usage"] = usage_json(usage);
    return dump(j);
}

std::string chunk_json(const ResponseMeta& meta, const ChunkContent& c) {
    json j = envelope(meta, "chat.completion.chunk", "text_completion");
    json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
    if (c.finish_reason) choice["finish_reason"] = *c.finish_reason;
    if (meta.endpoint == Endpoint::CHAT) {
        json delta = json::object();
        if (c.role) delta["role"] = *c.role;
        if (!c.text.empty() || c.role) delta["content"] = c.text;
        choice["delta"] = delta;
        if (c.logprobs) choice["logprobs"] = chat_logprobs(*c.logprobs);
    } else {
        choice["text"] = c.text;
        if (c.logprobs) choice["logprobs"] = text_logprobs(*c.logprobs, c.text_offset);
    }
    j["choices"] = json::array({choice});
    return dump(j);
}

std::string usage_chunk_json(const ResponseMeta& meta, const Usage& usage) {
    json j = envelope(meta, "chat.completion.chunk", "text_completion");
    j["choices"] = json::array();
    j["usage"] = usage_json(usage);
    return dump(j);
}

std::string sse_event(const std::string& json_text) { return "data: " + json_text + "\n\n"; }

std::string models_json(const std::string& model_id, int64_t created) {
    json m = {{"id", model_id}, {"object", "model"}, {"created", created}, {"owned_by", "whitebox"}};
    return dump(json{{"object", "list"}, {"data", json::array({m})}});
}

std::string props_json(const ChatTemplate& chat_template) {
    json j = {{"chat_template", chat_template.source()},
              {"bos_token", chat_template.bos_token()},
              {"eos_token", chat_template.eos_token()}};
    if (chat_template.kind() != ChatTemplateKind::JINJA) j["chat_format"] = chat_template_kind_name(chat_template.kind());
    return dump(j);
}

}  // namespace wb::server
