#pragma once
// Native renderers of the chat formats WhiteBox recognises, and the reader of a ChatML template's
// built-in system prompt. Internal to wb_chat.
#include <string>
#include <vector>

#include "chat/chat_template.h"

namespace wb {

// Throws wb::Error for a role other than system, user or assistant.
void check_roles(const std::vector<ChatMessage>& messages);

std::string render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                          const std::string& default_system);
std::string render_llama2(const std::vector<ChatMessage>& messages, bool add_generation_prompt);
std::string render_llama3(const std::vector<ChatMessage>& messages, bool add_generation_prompt);
std::string render_gemma(const std::vector<ChatMessage>& messages, bool add_generation_prompt);
std::string render_mistral(const std::vector<ChatMessage>& messages, bool add_generation_prompt);

// The system prompt a ChatML Jinja template writes when the conversation has none: the text
// between "<|im_start|>system\n" and "<|im_end|>" inside one Jinja string literal. Empty if none.
std::string extract_default_system(const std::string& jinja_source);

}  // namespace wb
