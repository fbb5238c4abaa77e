#pragma once
// What the Prompt view draws, recorded on the worker thread from the prompt the engine is fed
// (wb::build_chat_prompt's text, segments and ids), so the view never tokenizes anything itself.
#include "engine/chat_prompt.h"
#include "engine_types.h"

// ids, pieces, text and flags of `p`: each token is matched to the bytes of the rendered text it
// stands for, then marked PromptTokenFromInput / PromptTokenFromTemplate by the segments those bytes
// are in, and PromptTokenControl by its type. A token not in the text (the BOS the tokenizer adds)
// counts as the template's. ids = p.ids and what follows them (PromptTokenForced).
PromptInfo recordPrompt(const wb::ChatPrompt& p, const std::vector<int32_t>& ids, const wb::Tokenizer& tok);
