#pragma once
// ChatDocument: renders a Conversation into a QTextDocument for the chat view. User messages are
// shown as typed. Assistant replies are Markdown (MarkdownBody, markdown_writer.h), rendered while
// they stream; every shown character is its token's anchor ("tok:<message>:<token>") so a click opens
// it in the token inspector, optionally on a background coloured by its probability. A reply can be
// shown as raw text instead (setRawText): its tokens' pieces as they came. Streaming and full
// re-renders use the same writer, so a reply looks the same while it streams and after. Colours come
// from the theme; after a theme change the owner calls rebuild, since the formats carry the colours.
#include <QSet>
#include <QTextCharFormat>
#include <QTextDocument>
#include <QVector>

#include "conversation.h"
#include "markdown_writer.h"

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
    // The last reply ended: a reply streamed as Markdown takes its final text as one more update
    // (nothing is written again when it is what streamed, only the end when text was held back); a
    // raw one, or any other case, is re-rendered. A long reply is never laid out twice for its end.
    void finishLastMessage(const Conversation& conversation);

    // Shows reply `index` as its raw text (true) or as Markdown; re-renders the conversation.
    void setRawText(const Conversation& conversation, int index, bool raw);
    bool isRawText(int index) const { return m_raw.contains(index); }
    // Forgets every "show raw text" choice: they are kept by message index, which means another
    // message once the conversation is replaced (new chat, another conversation, another version).
    void clearRawText() { m_raw.clear(); }

    // The writer of the latest reply shown as Markdown (what streaming costs: writtenCharacters).
    const MarkdownBody& markdownBody() const { return m_body; }
    // Message whose text contains document position pos; -1 when none.
    int messageAt(int position) const;
    static bool parseTokenHref(const QString& href, int* messageIndex, int* tokenIndex);

private:
    // The role's name and, for a message with several versions, the "< 2/3 >" switcher (anchors
    // "branch:<message>:prev" / ":next").
    void writeHeader(const Conversation& conversation, int index);
    void writePlain(const QString& text);
    void writeToken(const ChatEntry& entry, int messageIndex, int tokenIndex);
    void writeRaw(const ChatEntry& entry, int index);

    QTextDocument* m_document;
    QVector<int> m_messageStarts;  // document position where each message's header begins
    bool m_colorByProbability = false;
    MarkdownBody m_body;  // the latest reply written as Markdown: tokens extend it while it streams
    QSet<int> m_raw;      // replies shown as raw text
};
