// The chat loop shared by `whitebox-cli chat` and `chat --remote` (app/cli/chat_repl): which lines
// are turns, what each reply is given, what /reset keeps, that a failed turn is dropped, and that
// /exit and the end of the input end it. A scripted reply stands in for the model.
// Plain executable (label unit): PASS/FAIL lines, exit status 1 on any failure.
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/chat_repl.h"

using namespace wb;
using namespace wb::cli;

namespace {

int g_failures = 0;

void report(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
    if (!ok) ++g_failures;
}

std::string show(const std::vector<ChatMessage>& messages) {
    std::string s;
    for (const ChatMessage& m : messages) s += m.role + ":" + m.content + " ";
    return s;
}

// What the loop did with an input: every conversation reply() was given, the resets, what it
// printed and the conversation it ended with.
struct Run {
    std::vector<std::string> asked;
    int resets = 0;
    std::string printed;
    std::vector<ChatMessage> last;
};

// The reply to "fail" fails; any other line is answered "re:LINE".
Run run(const std::string& input, const std::vector<ChatMessage>& start) {
    Run r;
    ChatTurns turns;
    turns.on_reset = [&] { ++r.resets; };
    turns.reply = [&](const std::vector<ChatMessage>& messages) -> std::optional<std::string> {
        r.asked.push_back(show(messages));
        if (messages.back().content == "fail") return std::nullopt;
        return "re:" + messages.back().content;
    };
    std::istringstream in(input);
    std::FILE* out = std::tmpfile();
    r.last = run_chat_repl(in, out, start, turns);
    std::rewind(out);
    char buf[256];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, out)) > 0;) r.printed.append(buf, n);
    std::fclose(out);
    return r;
}

void turns_carry_the_conversation() {
    const Run r = run("hi\n\nthere\n", {{"system", "be brief"}});
    report(r.asked.size() == 2 && r.asked[0] == "system:be brief user:hi " &&
               r.asked[1] == "system:be brief user:hi assistant:re:hi user:there ",
           "each turn gets the conversation so far, the empty line skipped: " +
               (r.asked.empty() ? std::string("(none)") : r.asked.back()));
    report(show(r.last) == "system:be brief user:hi assistant:re:hi user:there assistant:re:there ",
           "the end of the input ends the chat with the whole conversation: " + show(r.last));
    report(r.printed == "\n> \n> \n> \n> \n", "a prompt per line read and a newline at the end: '" + r.printed + "'");
}

void reset_keeps_the_system_prompt() {
    const Run r = run("one\n/reset\ntwo\n", {{"system", "S"}});
    report(r.resets == 1 && r.asked.size() == 2 && r.asked[1] == "system:S user:two ",
           "/reset: the next turn starts from the system prompt alone (" +
               (r.asked.size() == 2 ? r.asked[1] : std::string("?")) + "), on_reset called once");
    report(r.printed.find("(conversation cleared)\n") != std::string::npos, "/reset says so");
    const Run bare = run("one\n/reset\ntwo\n", {});
    report(bare.asked.size() == 2 && bare.asked[1] == "user:two ", "/reset without a system prompt: nothing kept");
}

void failed_turn_is_dropped() {
    const Run r = run("fail\nok\n", {});
    report(r.asked.size() == 2 && r.asked[1] == "user:ok " && show(r.last) == "user:ok assistant:re:ok ",
           "a failed turn's line is not sent again: " + show(r.last));
}

void exit_ends_the_chat() {
    const Run r = run("a\n/exit\nb\n", {});
    report(r.asked.size() == 1 && show(r.last) == "user:a assistant:re:a ", "/exit ends the chat, later lines unread");
    const Run none = run("", {});
    report(none.asked.empty() && none.printed == "\n> \n", "an empty input: one prompt, no turn");
}

}  // namespace

int main() {
    turns_carry_the_conversation();
    reset_keeps_the_system_prompt();
    failed_turn_is_dropped();
    exit_ends_the_chat();
    std::printf("%s\n", g_failures == 0 ? "all passed" : (std::to_string(g_failures) + " failed").c_str());
    return g_failures == 0 ? 0 : 1;
}
