#pragma once
// The terminal loop of `whitebox-cli chat`, the same for the local engine and --remote: a "> "
// prompt per line, /exit or the end of the input quits, /reset starts over with the system prompt
// kept, empty lines are skipped, and every other line is the user's turn, answered by reply().
#include <cstdio>
#include <functional>
#include <istream>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"

namespace wb::cli {

struct ChatTurns {
    // The reply to the conversation, whose last message is the user's new line. nullopt when the turn
    // failed (its error already printed): the line is then dropped, so that later turns do not send a
    // question without its answer.
    std::function<std::optional<std::string>(const std::vector<ChatMessage>&)> reply;
    // Called after /reset cleared the conversation (the local engine drops its cache then).
    std::function<void()> on_reset;
};

// `messages` is where the conversation starts (the system prompt, or nothing); /reset returns to it.
// The prompts and notes go to `out`; the replies print themselves. Returns the conversation at the end.
std::vector<ChatMessage> run_chat_repl(std::istream& in, std::FILE* out, std::vector<ChatMessage> messages,
                                       const ChatTurns& turns);

}  // namespace wb::cli
