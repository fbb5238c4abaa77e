#pragma once
// ChatDocument: renders a Conversation into a QTextDocument for the chat view. Assistant replies are
// written token by token, each token an anchor ("tok:<message>:<token>") so a click can open it in
// the token inspector, optionally on a background coloured by its probability; text between ```
// fences is set as code. The same token writer serves streaming and full re-renders, so a reply
// looks the same while it streams and after. Colours come from the theme; after a theme change the
// owner calls rebuild, since the formats carry the colours.
#include <QTextCharFormat>
#include <QTextDocument>
#include <QVector>

#include "conversation.h"

class ChatDocument {
public:
    explicit ChatDocument(QTextDocument* document);

    void setColorByProbability(bool on) { m_colorByProbability = on; }
    bool colorByProbability() const { return m_colorByProbability; }

    void rebuild(const Conversation& conversation);
    void appendMessage(const Conversation& conversation, int index);
    void appendToken(const Conversation& conversation, int messageIndex, int tokenIndex);
    // Re-renders the last message (its final text may differ from the streamed pieces).
    void refreshLastMessage(const Conversation& conversation);

    // Message whose text contains document position pos; -1 when none.
    int messageAt(int position) const;
    static bool parseTokenHref(const QString& href, int* messageIndex, int* tokenIndex);

private:
    void writeHeader(const ChatEntry& entry);
    void writePlain(const QString& text, bool* inCode);
    void writeToken(const ChatEntry& entry, int messageIndex, int tokenIndex, bool inCode);
    QTextCharFormat baseFormat(bool inCode) const;

    QTextDocument* m_document;
    QVector<int> m_messageStarts;  // document position where each message's header begins
    bool m_colorByProbability = false;
};
