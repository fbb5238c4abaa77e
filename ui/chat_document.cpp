#include "chat_document.h"

#include <QFontDatabase>
#include <QTextBlockFormat>
#include <QTextCursor>

#include "theme.h"

namespace {

const QString kFence = QStringLiteral("```");

// Whether text ends inside a code block (an odd number of fences so far).
bool endsInCode(const QString& text) {
    return text.count(kFence) % 2 == 1;
}

}  // namespace

ChatDocument::ChatDocument(QTextDocument* document) : m_document(document) {
    m_document->setDocumentMargin(10);
}

bool ChatDocument::parseTokenHref(const QString& href, int* messageIndex, int* tokenIndex) {
    const QStringList parts = href.split(QLatin1Char(':'));
    if (parts.size() != 3 || parts[0] != QLatin1String("tok")) return false;
    bool ok1 = false, ok2 = false;
    *messageIndex = parts[1].toInt(&ok1);
    *tokenIndex = parts[2].toInt(&ok2);
    return ok1 && ok2;
}

int ChatDocument::messageAt(int position) const {
    int found = -1;
    for (int i = 0; i < m_messageStarts.size(); ++i)
        if (position >= m_messageStarts[i]) found = i;
    return found;
}

QTextCharFormat ChatDocument::baseFormat(bool inCode) const {
    QTextCharFormat f;
    if (inCode) {
        f.setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
        f.setBackground(Theme::color(Theme::Role::CodeBackground));
    }
    return f;
}

void ChatDocument::rebuild(const Conversation& conversation) {
    m_document->clear();
    m_messageStarts.clear();
    for (int i = 0; i < conversation.messages.size(); ++i) appendMessage(conversation, i);
}

void ChatDocument::writeHeader(const ChatEntry& entry) {
    QTextCursor c(m_document);
    c.movePosition(QTextCursor::End);
    if (!m_document->isEmpty()) c.insertBlock();
    QTextBlockFormat bf;
    bf.setTopMargin(m_messageStarts.isEmpty() ? 0 : 10);
    c.setBlockFormat(bf);
    QTextCharFormat hf;
    hf.setFontWeight(QFont::Bold);
    const bool user = entry.role == QLatin1String("user");
    hf.setForeground(Theme::color(user ? Theme::Role::UserName : Theme::Role::AssistantName));
    c.insertText(user ? QObject::tr("You") : QObject::tr("Assistant"), hf);
    c.insertBlock();
    c.setBlockFormat(QTextBlockFormat());
    c.setCharFormat(QTextCharFormat());
}

void ChatDocument::writePlain(const QString& text, bool* inCode) {
    QTextCursor c(m_document);
    c.movePosition(QTextCursor::End);
    // Split at fences so the fence lines and what lies between them get the code format.
    int from = 0;
    while (from < text.size()) {
        const int fence = text.indexOf(kFence, from);
        const int end = fence < 0 ? int(text.size()) : fence;
        if (end > from) c.insertText(text.mid(from, end - from), baseFormat(*inCode));
        if (fence < 0) break;
        c.insertText(kFence, baseFormat(true));
        *inCode = !*inCode;
        from = fence + int(kFence.size());
    }
}

void ChatDocument::writeToken(const ChatEntry& entry, int messageIndex, int tokenIndex, bool inCode) {
    const TokenRecord& t = entry.tokens[tokenIndex];
    QTextCursor c(m_document);
    c.movePosition(QTextCursor::End);
    QTextCharFormat f = baseFormat(inCode || t.piece.contains(kFence));
    f.setAnchor(true);
    f.setAnchorHref(QStringLiteral("tok:%1:%2").arg(messageIndex).arg(tokenIndex));
    f.setToolTip(QObject::tr("p = %1 · id %2").arg(double(t.p), 0, 'f', 3).arg(t.id));
    if (m_colorByProbability) f.setBackground(Theme::probabilityColor(t.p));
    c.insertText(t.piece, f);
}

void ChatDocument::appendMessage(const Conversation& conversation, int index) {
    const ChatEntry& entry = conversation.messages[index];
    QTextCursor c(m_document);
    c.movePosition(QTextCursor::End);
    m_messageStarts.append(m_document->isEmpty() ? 0 : c.position() + 1);
    writeHeader(entry);
    bool inCode = false;
    if (entry.tokens.isEmpty()) {
        writePlain(entry.content, &inCode);
        return;
    }
    QString streamed;
    for (int i = 0; i < entry.tokens.size(); ++i) {
        writeToken(entry, index, i, endsInCode(streamed));
        streamed += entry.tokens[i].piece;
    }
    // Text the engine released only at the end (held back for a possible stop string).
    if (entry.content.startsWith(streamed) && entry.content.size() > streamed.size()) {
        inCode = endsInCode(streamed);
        writePlain(entry.content.mid(streamed.size()), &inCode);
    }
}

void ChatDocument::appendToken(const Conversation& conversation, int messageIndex, int tokenIndex) {
    const ChatEntry& entry = conversation.messages[messageIndex];
    QString before;
    for (int i = 0; i < tokenIndex; ++i) before += entry.tokens[i].piece;
    writeToken(entry, messageIndex, tokenIndex, endsInCode(before));
}

void ChatDocument::refreshLastMessage(const Conversation& conversation) {
    if (m_messageStarts.isEmpty() || conversation.messages.isEmpty()) return;
    QTextCursor c(m_document);
    const int start = m_messageStarts.takeLast();
    // Remove the block break before the header too, so appendMessage recreates the same layout.
    c.setPosition(std::max(0, start - 1));
    c.movePosition(QTextCursor::End, QTextCursor::KeepAnchor);
    c.removeSelectedText();
    appendMessage(conversation, int(conversation.messages.size()) - 1);
}
