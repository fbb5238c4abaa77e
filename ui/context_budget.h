#pragma once
// Whether a prompt leaves the reply room in the context, and what the user is told when it does not.
// The chat panel checks it before a message enters the history; the worker checks the same rule
// before a generation, so both refuse the same prompts.
#include <algorithm>

#include <QCoreApplication>
#include <QLocale>
#include <QString>

namespace context_budget {

// Tokens a reply is guaranteed at least: an eighth of the context, 16 to 256.
inline int replyRoom(int contextSize) {
    return std::clamp(contextSize / 8, 16, 256);
}

inline bool fits(int promptTokens, int contextSize) {
    return contextSize <= 0 || promptTokens + replyRoom(contextSize) <= contextSize;
}

// "1,234 / 8,192 tokens" (the user's locale's digit grouping).
inline QString counterText(int promptTokens, int contextSize) {
    const QLocale locale;
    return QCoreApplication::translate("ContextBudget", "%1 / %2 tokens")
        .arg(locale.toString(promptTokens), locale.toString(contextSize));
}

inline QString refusal(int promptTokens, int contextSize) {
    const QLocale locale;
    return QCoreApplication::translate("ContextBudget",
                                       "Not sent: the prompt would be %1 tokens, and the context holds %2 with at least %3 "
                                       "kept for the reply. Shorten the message, start a New chat, or choose a larger "
                                       "context (Model > Context size).")
        .arg(locale.toString(promptTokens), locale.toString(contextSize), locale.toString(replyRoom(contextSize)));
}

}  // namespace context_budget
