#pragma once
// Chat templates: a list of messages -> the prompt text the model was trained on.
//
// GGUF files carry a Jinja template (tokenizer.chat_template). WhiteBox does not run Jinja; it
// recognises the template family from distinctive markers and renders it natively, as llama.cpp's
// built-in templates do. An unknown template falls back to ChatML with a warning the user sees.
#include <string>
#include <vector>

namespace wb {

struct ChatMessage {
    std::string role;     // "system", "user" or "assistant"
    std::string content;
};

enum class ChatTemplateKind { CHATML, LLAMA2, LLAMA3, GEMMA, MISTRAL };

const char* chat_template_kind_name(ChatTemplateKind k);

class ChatTemplate {
public:
    // Recognises the family from the template source by its markers: <|im_start|> ChatML,
    // <|start_header_id|> Llama 3, <start_of_turn> Gemma, [INST] with <<SYS>> Llama 2, [INST]
    // without it Mistral (rendered in Mistral's v3 format). Empty or unknown source: ChatML with a
    // warning.
    static ChatTemplate detect(const std::string& jinja_source);
    static ChatTemplate of_kind(ChatTemplateKind kind);

    ChatTemplateKind kind() const { return kind_; }
    // Non-empty when the template was not recognised (or absent) and ChatML is used instead.
    const std::string& warning() const { return warning_; }
    // System prompt the template itself inserts when the conversation has none (SmolLM2's template
    // does); empty when it inserts none.
    const std::string& default_system() const { return default_system_; }

    // Renders messages; with add_generation_prompt the text ends where the assistant's reply begins.
    // Special-token texts (<|im_start|>, <start_of_turn>, ...) appear as text: encode with
    // parse_special. The BOS token is not part of the text (the tokenizer adds it). Llama 2 and
    // Mistral texts always end where the reply begins, so add_generation_prompt does not change them.
    // A role other than system, user or assistant throws wb::Error.
    std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

    // Texts that end an assistant turn in this format (used as extra stop strings).
    std::vector<std::string> end_of_turn_texts() const;

private:
    ChatTemplateKind kind_ = ChatTemplateKind::CHATML;
    std::string warning_;
    std::string default_system_;
};

}  // namespace wb
