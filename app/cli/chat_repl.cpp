#include "cli/chat_repl.h"

namespace wb::cli {

std::vector<ChatMessage> run_chat_repl(std::istream& in, std::FILE* out, std::vector<ChatMessage> messages,
                                       const ChatTurns& turns) {
    const size_t start = messages.size();
    std::string line;
    for (;;) {
        std::fprintf(out, "\n> ");
        std::fflush(out);
        if (!std::getline(in, line) || line == "/exit") break;
        if (line == "/reset") {
            messages.resize(start);
            if (turns.on_reset) turns.on_reset();
            std::fprintf(out, "(conversation cleared)\n");
            continue;
        }
        if (line.empty()) continue;
        messages.push_back({"user", line});
        const std::optional<std::string> reply = turns.reply(messages);
        if (reply) messages.push_back({"assistant", *reply});
        else messages.pop_back();
    }
    std::fprintf(out, "\n");
    return messages;
}

}  // namespace wb::cli
