#include "engine/chat_prompt.h"

#include "engine/model.h"

namespace wb {

std::vector<int32_t> encode_chat_text(const Tokenizer& tok, const std::string& bos_text, const std::string& text) {
    const bool strip = tok.add_bos() && tok.bos_id() >= 0 && !bos_text.empty() && text.starts_with(bos_text);
    return tok.encode(strip ? std::string_view(text).substr(bos_text.size()) : std::string_view(text), true, true);
}

ChatPrompt build_chat_prompt(const ChatTemplate& t, const Tokenizer& tok, const jinja::Value& messages,
                             const jinja::Value& tools, bool add_generation_prompt) {
    ChatPrompt p;
    p.text = t.render(messages, tools, add_generation_prompt);
    p.ids = encode_chat_text(tok, t.bos_token(), p.text);
    return p;
}

ChatPrompt build_chat_prompt(const Model& m, const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
    return build_chat_prompt(m.chat_template(), m.tokenizer(), chat_messages_value(messages), jinja::Value::none(),
                             add_generation_prompt);
}

}  // namespace wb
