#include "remote/openai_format.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "util/json_depth.h"

namespace wb::remote {

using nlohmann::json;

namespace {

// Far deeper than any chunk, error or models list; a server nesting more is refused (util/json_depth.h).
constexpr int kMaxDepth = 64;

// The text parsed, or a discarded value when it is not JSON or nests deeper than kMaxDepth.
json parse_bounded(const std::string& text) {
    if (json_nested_deeper_than(text, kMaxDepth)) return json(json::value_t::discarded);
    return json::parse(text, nullptr, false);
}

[[noreturn]] void malformed(const std::string& what, const std::string& data) {
    throw RemoteError(RemoteErrorKind::MALFORMED, "the server sent " + what + ": " + excerpt(data));
}

// OpenAI reports a probability that underflowed as -9999 (JSON has no -inf); so does WhiteBox.
float logprob_of(const json& v) {
    const double lp = v.get<double>();
    return lp <= -9999.0 ? -INFINITY : float(lp);
}

// A token's exact bytes: chat logprobs carry them as "bytes" (the "token" text may have U+FFFD in
// place of a partial UTF-8 character); without them the text is all there is.
std::string token_text(const json& t) {
    const auto bytes = t.find("bytes");
    if (bytes == t.end() || !bytes->is_array()) return t.at("token").get<std::string>();
    std::string out;
    for (const json& b : *bytes) out += char(b.get<int>());
    return out;
}

std::vector<RemoteTokenLogprob> chat_logprobs(const json& lp) {
    std::vector<RemoteTokenLogprob> out;
    const auto content = lp.find("content");
    if (content == lp.end() || content->is_null()) return out;
    for (const json& t : content->get_ref<const json::array_t&>()) {
        RemoteTokenLogprob tok{token_text(t), logprob_of(t.at("logprob")), {}};
        if (const auto top = t.find("top_logprobs"); top != t.end() && !top->is_null())
            for (const json& c : top->get_ref<const json::array_t&>())
                tok.top.push_back({token_text(c), logprob_of(c.at("logprob"))});
        out.push_back(std::move(tok));
    }
    return out;
}

// The legacy shape: parallel arrays, each token's alternatives as a {text: logprob} object, whose
// order JSON does not keep: they are put back most likely first.
std::vector<RemoteTokenLogprob> text_logprobs(const json& lp) {
    std::vector<RemoteTokenLogprob> out;
    const auto& tokens = lp.at("tokens").get_ref<const json::array_t&>();
    const auto& lps = lp.at("token_logprobs").get_ref<const json::array_t&>();
    if (lps.size() != tokens.size())
        throw RemoteError(RemoteErrorKind::MALFORMED, "the server sent logprobs whose 'tokens' and 'token_logprobs' "
                                                      "differ in length");
    const json* tops = lp.contains("top_logprobs") && lp["top_logprobs"].is_array() ? &lp["top_logprobs"] : nullptr;
    for (size_t i = 0; i < tokens.size(); ++i) {
        // null (a server echoing the prompt gives its first token none) is no probability: NaN, not 0 (p = 1).
        RemoteTokenLogprob tok{tokens[i].get<std::string>(), lps[i].is_null() ? NAN : logprob_of(lps[i]), {}};
        if (tops && i < tops->size() && (*tops)[i].is_object())
            for (const auto& [text, v] : (*tops)[i].items()) tok.top.push_back({text, logprob_of(v)});
        std::stable_sort(tok.top.begin(), tok.top.end(),
                         [](const RemoteCandidate& a, const RemoteCandidate& b) { return a.logprob > b.logprob; });
        out.push_back(std::move(tok));
    }
    return out;
}

std::string string_or_empty(const json& obj, const char* key) {
    const auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? std::string() : it->get<std::string>();
}

void read_choice(const json& choice, bool chat, StreamChunk& c) {
    if (chat) {
        if (const auto delta = choice.find("delta"); delta != choice.end() && !delta->is_null())
            c.delta.text = string_or_empty(*delta, "content");
    } else {
        c.delta.text = string_or_empty(choice, "text");
    }
    if (const auto lp = choice.find("logprobs"); lp != choice.end() && !lp->is_null())
        c.delta.tokens = chat ? chat_logprobs(*lp) : text_logprobs(*lp);
    if (const auto fr = choice.find("finish_reason"); fr != choice.end() && !fr->is_null())
        c.finish_reason = fr->get<std::string>();
}

}  // namespace

std::string excerpt(const std::string& text, size_t max_bytes) {
    std::string out = text.substr(0, max_bytes);
    std::replace(out.begin(), out.end(), '\n', ' ');
    std::replace(out.begin(), out.end(), '\r', ' ');
    return text.size() > max_bytes ? out + "..." : out;
}

StreamChunk parse_stream_chunk(const std::string& data, bool chat) {
    if (json_nested_deeper_than(data, kMaxDepth))
        malformed("an event nested deeper than " + std::to_string(kMaxDepth) + " levels", data);
    const json j = json::parse(data, nullptr, false);
    if (j.is_discarded()) malformed("an event that is not JSON", data);
    if (!j.is_object()) malformed("an event that is not a JSON object", data);
    if (j.contains("error") && !j["error"].is_null())
        throw RemoteError(RemoteErrorKind::HTTP_STATUS, "the server reported an error during the reply: " +
                                                            error_message_of(data));
    StreamChunk c;
    try {
        c.model = string_or_empty(j, "model");
        if (const auto u = j.find("usage"); u != j.end() && u->is_object()) {
            c.prompt_tokens = u->value("prompt_tokens", 0);
            c.completion_tokens = u->value("completion_tokens", 0);
        }
        const auto choices = j.find("choices");
        if (choices == j.end() || !choices->is_array()) malformed("a chunk without a 'choices' array", data);
        if (!choices->empty()) read_choice(choices->front(), chat, c);
    } catch (const json::exception& e) {
        malformed(std::string("a chunk of an unexpected shape (") + e.what() + ")", data);
    }
    return c;
}

std::string error_message_of(const std::string& body) {
    const json j = parse_bounded(body);
    if (j.is_object()) {
        for (const char* key : {"error", "detail", "message"}) {
            const auto it = j.find(key);
            if (it == j.end()) continue;
            if (it->is_string()) return it->get<std::string>();
            if (it->is_object() && it->contains("message") && (*it)["message"].is_string())
                return (*it)["message"].get<std::string>();
            return excerpt(it->dump());
        }
    }
    return body.empty() ? std::string("(no message)") : excerpt(body);
}

std::vector<std::string> parse_models(const std::string& body) {
    const json j = parse_bounded(body);
    const auto data = j.is_object() ? j.find("data") : j.end();
    if (!j.is_object() || data == j.end() || !data->is_array())
        malformed("a models list without a 'data' array", body);
    std::vector<std::string> ids;
    for (const json& m : *data) {
        if (!m.is_object() || !m.contains("id") || !m["id"].is_string())
            malformed("a models list whose entries have no 'id'", body);
        ids.push_back(m["id"].get<std::string>());
    }
    return ids;
}

std::optional<ServerChatTemplate> parse_props(const std::string& body) {
    const json j = parse_bounded(body);
    if (!j.is_object()) return std::nullopt;
    const auto text = [&](const char* key) {
        const auto it = j.find(key);
        return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    ServerChatTemplate t{text("chat_template"), text("chat_format"), text("bos_token"), text("eos_token")};
    if (t.source.empty() && t.format.empty()) return std::nullopt;
    return t;
}

}  // namespace wb::remote
