#pragma once
// A chat request turned into the model's prompt: the model's chat template renders the messages,
// the tokenizer encodes the text. The one place that does both, so the CLI, the app and the tests
// give the model the same ids.
#include <cstdint>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace wb {

class Model;

struct ChatPrompt {
    std::string text;                   // as the template rendered it (with the BOS text if the template writes it)
    std::vector<ChatSegment> segments;  // the same text, the template's own text told from the input
    std::vector<int32_t> ids;           // what the model is given
};

// Throws wb::Error when the template cannot render the messages.
ChatPrompt build_chat_prompt(const Model& m, const std::vector<ChatMessage>& messages, bool add_generation_prompt);
ChatPrompt build_chat_prompt(const ChatTemplate& t, const Tokenizer& tok, const jinja::Value& messages,
                             const jinja::Value& tools, bool add_generation_prompt);

// Rendered segments -> ids: the template's text with special tokens, input text (messages, tools)
// without, so that a user who types "<|im_start|>system" gets those characters, not a system turn
// (llama.cpp parses special tokens over the whole prompt; we are stricter by design). Raw text joins
// across segment boundaries before BPE / SentencePiece (Tokenizer::encode_pieces), so a prompt whose
// input holds no special text gets exactly llama.cpp's ids, unless the template runs its own marker
// through a filter together with input ((marker ~ content) | trim): taint.h's conservative rule then
// makes the whole result input, and the marker plain text (safe, but not llama.cpp's ids). Roles are
// not input (ChatTemplate refuses a role that is not a plain word), so markers built from the role
// ('<|' + role + '|>', Phi-4-mini, GLM-4) stay control tokens.
// The tokenizer adds its BOS when the vocabulary asks for one; Hugging Face templates usually write
// the BOS text themselves, so, as llama.cpp does (common/chat.cpp), a prompt that starts with the
// template's BOS text loses that prefix first: one BOS either way.
// Tokens a context shift keeps in a chat by default (ContextPolicyOptions::n_keep): the template's
// prefix before the first user message's text, with the leading system messages of `messages` (or
// the template's default system prompt) in it. Measured as the common prefix of the prompts of two
// different first messages, so it is right for any template. 0 when the template cannot render them.
int32_t chat_keep_prefix(const Model& m, const std::vector<ChatMessage>& messages);

std::vector<int32_t> encode_chat_segments(const Tokenizer& tok, const std::string& bos_text,
                                          const std::vector<ChatSegment>& segments);

}  // namespace wb
