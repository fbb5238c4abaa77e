#pragma once
// Chat templates: a list of messages -> the prompt text the model was trained on.
//
// A GGUF file's own Jinja template (tokenizer.chat_template) is run by the Jinja engine in
// chat/jinja with the variables Hugging Face's apply_chat_template passes, so the prompt is the one
// the model's authors specified. The built-in formats remain for files that carry no template, or
// when the user picks one explicitly.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja/template.h"
#include "chat/jinja/value.h"

namespace wb {

// A piece of a rendered prompt; from_input marks text that came from the messages or tools (a user
// typed it), which the tokenizer must never read as special tokens.
using ChatSegment = jinja::Segment;
std::string join_segments(const std::vector<ChatSegment>& segments);

struct ChatMessage {
    std::string role;     // "system", "user", "assistant", or any role the template knows ("tool")
    std::string content;
};

// JINJA: the model's own template (or one the user gave). The others are built-in formats.
enum class ChatTemplateKind { CHATML, LLAMA2, LLAMA3, GEMMA, MISTRAL, JINJA };

const char* chat_template_kind_name(ChatTemplateKind k);
// A built-in format by the name chat_template_kind_name gives it ("chatml", "llama3", ...); nullopt
// for any other name (including "jinja", which needs a source).
std::optional<ChatTemplateKind> builtin_chat_format(std::string_view name);
// "chatml, llama2, llama3, gemma, mistral", for messages.
std::string builtin_chat_format_names();

class ChatTemplate {
public:
    // A Jinja template rendered with bos_token / eos_token set to these texts. Throws wb::Error
    // "the chat template cannot be parsed: line L, column C: ..." when the source is not a template.
    static ChatTemplate from_jinja(const std::string& source, std::string bos_token, std::string eos_token);
    static ChatTemplate of_kind(ChatTemplateKind kind);
    // A template that failed to parse, kept so that the model still loads (raw prompts work, the app
    // can show the error and offer a built-in format): render() throws `error`, never falls back.
    static ChatTemplate unusable(const std::string& source, std::string error);

    ChatTemplateKind kind() const { return kind_; }
    // Why this template cannot render (unusable()); empty when it can.
    const std::string& error() const { return error_; }
    // Non-empty when the user should know which format is used and why (a file without a template).
    const std::string& warning() const { return warning_; }
    void set_warning(std::string w) { warning_ = std::move(w); }
    // One line for listings: "the model's own (Jinja)" or "built-in gemma".
    std::string description() const;
    // The Jinja source (empty for a built-in format).
    const std::string& source() const { return source_; }

    // Renders messages; with add_generation_prompt the text ends where the assistant's reply begins.
    // Special-token texts (<|im_start|>, <start_of_turn>, ...) appear as text. A Jinja template may
    // write the BOS text itself (most Hugging Face templates do); encode_chat_prompt (engine/chat_prompt.h)
    // then keeps the tokenizer from adding a second one. Built-in formats never write the BOS.
    // Throws wb::Error for a render error or a template's raise_exception (its message), and for a
    // role a built-in format does not have.
    std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
    // The same with messages as Hugging Face passes them (a list of dicts: role, content, tool_calls,
    // ...) and tools (a list of JSON-schema dicts, or None). Built-in formats read role and content only.
    std::string render(const jinja::Value& messages, const jinja::Value& tools, bool add_generation_prompt) const;

    // The same texts as segments (join_segments gives render()'s text): message contents and tool
    // definitions, and whatever a template computes from them, are from_input (see chat/jinja/taint.h).
    std::vector<ChatSegment> render_segments(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
    std::vector<ChatSegment> render_segments(const jinja::Value& messages, const jinja::Value& tools,
                                             bool add_generation_prompt) const;

    // Texts that end an assistant turn in this format (used as extra stop strings).
    std::vector<std::string> end_of_turn_texts() const;

    const std::string& bos_token() const { return bos_token_; }
    const std::string& eos_token() const { return eos_token_; }

private:
    ChatTemplateKind kind_ = ChatTemplateKind::CHATML;
    std::string warning_;
    std::string error_;
    std::string source_;
    std::string bos_token_, eos_token_;
    std::optional<jinja::Template> jinja_;  // kind_ == JINJA
};

// ChatMessages as the list of {"role", "content"} dicts a Jinja template reads.
jinja::Value chat_messages_value(const std::vector<ChatMessage>& messages);

}  // namespace wb
