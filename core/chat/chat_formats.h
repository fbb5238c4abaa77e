#pragma once
// Native renderers of the built-in chat formats. Internal to wb_chat.
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.h"

namespace wb {

// Builds a prompt as segments: the format's own text, and message text marked as input.
class PromptWriter {
public:
    PromptWriter& operator+=(std::string_view s) {
        add(s, false);
        return *this;
    }
    void input(std::string_view s) { add(s, true); }
    bool empty() const { return segments_.empty(); }
    std::vector<ChatSegment> take() { return std::move(segments_); }

private:
    void add(std::string_view s, bool from_input);
    std::vector<ChatSegment> segments_;
};

// Throws wb::Error for a role other than system, user or assistant.
void check_roles(const std::vector<ChatMessage>& messages);

std::vector<ChatSegment> render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt);
std::vector<ChatSegment> render_llama2(const std::vector<ChatMessage>& messages, bool add_generation_prompt);
std::vector<ChatSegment> render_llama3(const std::vector<ChatMessage>& messages, bool add_generation_prompt);
std::vector<ChatSegment> render_gemma(const std::vector<ChatMessage>& messages, bool add_generation_prompt);
std::vector<ChatSegment> render_mistral(const std::vector<ChatMessage>& messages, bool add_generation_prompt);

}  // namespace wb
