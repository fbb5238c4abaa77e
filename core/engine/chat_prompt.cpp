#include "engine/chat_prompt.h"

#include "engine/model.h"

namespace wb {

std::vector<int32_t> encode_chat_segments(const Tokenizer& tok, const std::string& bos_text,
                                          const std::vector<ChatSegment>& segments) {
    std::vector<Tokenizer::Piece> pieces;
    for (const ChatSegment& s : segments) pieces.push_back({s.text, !s.from_input});
    const bool strip = tok.add_bos() && tok.bos_id() >= 0 && !bos_text.empty() && !pieces.empty() &&
                       pieces.front().parse_special && pieces.front().text.starts_with(bos_text);
    if (strip) pieces.front().text.remove_prefix(bos_text.size());
    return tok.encode_pieces(pieces, true);
}

ChatPrompt build_chat_prompt(const ChatTemplate& t, const Tokenizer& tok, const jinja::Value& messages,
                             const jinja::Value& tools, bool add_generation_prompt) {
    ChatPrompt p;
    p.segments = t.render_segments(messages, tools, add_generation_prompt);
    p.text = join_segments(p.segments);
    p.ids = encode_chat_segments(tok, t.bos_token(), p.segments);
    return p;
}

ChatPrompt build_chat_prompt(const Model& m, const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
    return build_chat_prompt(m.chat_template(), m.tokenizer(), chat_messages_value(messages), jinja::Value::none(),
                             add_generation_prompt);
}

int32_t chat_keep_prefix(const Model& m, const std::vector<ChatMessage>& messages) {
    std::vector<ChatMessage> a;
    for (const ChatMessage& msg : messages) {
        if (msg.role != "system") break;
        a.push_back(msg);
    }
    std::vector<ChatMessage> b = a;
    a.push_back({"user", "a"});
    b.push_back({"user", "b"});
    try {
        const std::vector<int32_t> x = build_chat_prompt(m, a, false).ids, y = build_chat_prompt(m, b, false).ids;
        size_t n = 0;
        while (n < x.size() && n < y.size() && x[n] == y[n]) ++n;
        return int32_t(n);
    } catch (const std::exception&) {
        return 0;
    }
}

}  // namespace wb
