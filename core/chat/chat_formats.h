#pragma once
// Native renderers of the built-in chat formats. Internal to wb_chat.
#include <string>
#include <vector>

#include "chat/chat_template.h"

namespace wb {

// Throws wb::Error for a role other than system, user or assistant.
void check_roles(const std::vector<ChatMessage>& messages);

std::string render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt);
std::string render_llama2(const std::vector<ChatMessage>& messages, bool add_generation_prompt);
std::string render_llama3(const std::vector<ChatMessage>& messages, bool add_generation_prompt);
std::string render_gemma(const std::vector<ChatMessage>& messages, bool add_generation_prompt);
std::string render_mistral(const std::vector<ChatMessage>& messages, bool add_generation_prompt);

}  // namespace wb
