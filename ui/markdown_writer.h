#pragma once
// MarkdownBody: lays a reply's Markdown (markdown.h) out in the chat's QTextDocument with
// QTextCursor: block formats for headings, paragraphs and quotes, QTextList for lists, QTextTable for
// tables, one block per code line under a label with the language and a Copy link. Every shown
// character keeps the anchor ("tok:<message>:<token>"), tooltip and probability colour of the token
// its source offset came from, so clicking rendered text opens the token and colouring still works.
//
// Streaming: blocks the parser has finished are written once; only the open tail (the last block or
// two) is removed and written again on each update, so a reply of n tokens costs O(n * tail), not
// O(n^2). An open fenced code block (a tail that can grow to thousands of lines) is not rewritten:
// its new lines are appended and only the line being written is replaced. update() takes the reply's whole text; when the new text does not extend the old one (the
// final text differs), the body is written again from its start.
#include <QTextCharFormat>
#include <QTextDocument>
#include <QVector>

#include "conversation.h"
#include "markdown.h"

class QTextCursor;
class QTextList;

namespace markdown_format {
// Char-format properties the chat view sets on rendered text.
constexpr int LinkHref = QTextFormat::UserProperty + 1;  // the URL of a Markdown link (the anchor is the token's)
constexpr int UiLabel = QTextFormat::UserProperty + 2;   // text that is not from the reply (code label, Copy)
// Block property on code lines: the index of their code block in the reply.
constexpr int CodeBlockIndex = QTextFormat::UserProperty + 3;
}  // namespace markdown_format

class MarkdownBody {
public:
    // Starts a body at the document's end, in the empty block the message header left there.
    void begin(QTextDocument* document, int messageIndex, bool colorByProbability);
    // Shows `text`, the reply's whole text so far; tokens: what it was generated from (may be empty).
    void update(const QString& text, const QVector<TokenRecord>& tokens);
    int messageIndex() const { return m_message; }
    int tokenCount() const { return int(m_tokenStarts.size()); }
    // Characters inserted into the document since begin() (the work streaming costs).
    qint64 writtenCharacters() const { return m_writtenChars; }

    static QString copyHref(int messageIndex, int blockIndex);
    static bool parseCopyHref(const QString& href, int* messageIndex, int* blockIndex);
    // The code of block `blockIndex` of a reply's text, exactly as the Copy link copies it.
    static QString codeBlockText(const QString& text, int blockIndex);

private:
    struct Context {
        bool fresh = true;              // the cursor's block is empty and unused: the next block goes there
        QVector<QTextList*> lists;      // the open list of each depth (index depth - 1)
    };

    void extendTokens(const QVector<TokenRecord>& tokens);
    void restart();
    void writeBlocks(const QVector<md::Block>& blocks, int firstIndex, Context* ctx);
    void writeBlock(QTextCursor& c, const md::Block& b, int index, Context* ctx);
    void writeCode(QTextCursor& c, const md::Block& b, int index, Context* ctx);
    void writeCodeLabel(QTextCursor& c, const md::Block& b, int index, Context* ctx);
    void writeCodeLine(QTextCursor& c, const md::Block& b, int index, md::Line line, bool last);
    // Removes what the tail wrote from m_tailPos on.
    void removeTail();
    // The open tail is a fenced code block: appends its new lines; false when the tail must be
    // written the usual way (no open code block, or the line being written closes it).
    bool appendOpenCode();
    void writeTable(QTextCursor& c, const md::Block& b, Context* ctx);
    void writeListItem(QTextCursor& c, const md::Block& b, Context* ctx);
    void writeSpans(QTextCursor& c, const QVector<md::Span>& spans, const QTextCharFormat& base);
    void writeSource(QTextCursor& c, int from, int to, const QTextCharFormat& f);
    int tokenAt(int offset) const;

    QTextDocument* m_document = nullptr;
    int m_message = -1;
    bool m_color = false;
    const QVector<TokenRecord>* m_tokens = nullptr;  // valid during update()

    QString m_text;
    QString m_pieces;           // the tokens' pieces joined
    QVector<int> m_tokenStarts; // where each token's piece starts in m_pieces
    int m_covered = 0;          // m_text[0, m_covered) equals m_pieces: those characters have tokens

    md::Parser m_parser;        // fed the complete lines of m_text
    int m_fed = 0;              // m_text offset of the first line not fed yet
    int m_written = 0;          // finished blocks written for good
    int m_bodyStart = 0;        // document position of the body's first block
    int m_tailPos = 0;          // document position where the rewritten tail begins
    Context m_ctx;              // after the blocks written for good
    struct OpenCode {
        bool active = false;    // the tail is the open code block, written line by line
        int lines = 0;          // its complete lines written
        int partialPos = 0;     // document position before the line being written
    } m_openCode;
    qint64 m_writtenChars = 0;
};
