#include "chat_document.h"

#include <cmath>

#include <QFontDatabase>
#include <QTextBlockFormat>
#include <QTextCursor>

#include "theme.h"

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

void ChatDocument::rebuild(const Conversation& conversation) {
    m_document->clear();
    m_messageStarts.clear();
    for (int i = 0; i < conversation.messages.size(); ++i) appendMessage(conversation, i);
}

void ChatDocument::writeHeader(const Conversation& conversation, int index) {
    const ChatEntry& entry = conversation.messages[index];
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
    if (const int versions = conversation.versionCount(index); versions > 1) {
        QTextCharFormat sf;
        sf.setForeground(Theme::color(Theme::Role::AssistantName));
        const auto link = [&](const QString& text, const QString& step, const QString& tip) {
            QTextCharFormat af = sf;
            af.setFontWeight(QFont::Bold);
            af.setAnchor(true);
            af.setAnchorHref(QStringLiteral("branch:%1:%2").arg(index).arg(step));
            af.setToolTip(tip);
            c.insertText(text, af);
        };
        c.insertText(QStringLiteral("   "), QTextCharFormat());
        link(QStringLiteral("<"), QStringLiteral("prev"), QObject::tr("Previous version"));
        c.insertText(QStringLiteral(" %1/%2 ").arg(conversation.versionIndex(index) + 1).arg(versions), sf);
        link(QStringLiteral(">"), QStringLiteral("next"), QObject::tr("Next version"));
    }
    c.insertBlock();
    c.setBlockFormat(QTextBlockFormat());
    c.setCharFormat(QTextCharFormat());
}

void ChatDocument::writePlain(const QString& text) {
    QTextCursor c(m_document);
    c.movePosition(QTextCursor::End);
    c.insertText(text, QTextCharFormat());
}

void ChatDocument::writeToken(const ChatEntry& entry, int messageIndex, int tokenIndex) {
    const TokenRecord& t = entry.tokens[tokenIndex];
    QTextCursor c(m_document);
    c.movePosition(QTextCursor::End);
    QTextCharFormat f;
    f.setAnchor(true);
    f.setAnchorHref(QStringLiteral("tok:%1:%2").arg(messageIndex).arg(tokenIndex));
    f.setToolTip(Theme::tokenTip(t.p, t.id));
    if (m_colorByProbability && std::isfinite(t.p)) f.setBackground(Theme::probabilityColor(t.p));
    c.insertText(t.piece, f);
}

void ChatDocument::appendMessage(const Conversation& conversation, int index) {
    const ChatEntry& entry = conversation.messages[index];
    QTextCursor c(m_document);
    c.movePosition(QTextCursor::End);
    m_messageStarts.append(m_document->isEmpty() ? 0 : c.position() + 1);
    writeHeader(conversation, index);
    // What the user typed stays verbatim; replies are Markdown unless shown as raw text.
    if (entry.role == QLatin1String("user")) {
        writePlain(entry.content);
    } else if (m_raw.contains(index)) {
        writeRaw(entry, index);
    } else {
        m_body.begin(m_document, index, m_colorByProbability);
        m_body.update(entry.content, entry.tokens);
    }
}

// The reply as the model wrote it: each token's piece as its anchor, no formatting.
void ChatDocument::writeRaw(const ChatEntry& entry, int index) {
    QString streamed;
    for (int i = 0; i < entry.tokens.size(); ++i) {
        writeToken(entry, index, i);
        streamed += entry.tokens[i].piece;
    }
    // Text the engine released only at the end (held back for a possible stop string).
    if (entry.content.startsWith(streamed) && entry.content.size() > streamed.size())
        writePlain(entry.content.mid(streamed.size()));
    else if (entry.tokens.isEmpty())
        writePlain(entry.content);
}

void ChatDocument::appendToken(const Conversation& conversation, int messageIndex, int tokenIndex) {
    const ChatEntry& entry = conversation.messages[messageIndex];
    if (m_raw.contains(messageIndex)) {
        writeToken(entry, messageIndex, tokenIndex);
    } else if (m_body.messageIndex() == messageIndex && m_body.tokenCount() == tokenIndex &&
               messageIndex == conversation.messages.size() - 1) {
        // Only the reply's unfinished blocks are written again (MarkdownBody).
        m_body.update(entry.content, entry.tokens);
    } else {
        refreshLastMessage(conversation);
    }
}

void ChatDocument::setRawText(const Conversation& conversation, int index, bool raw) {
    if (raw == m_raw.contains(index)) return;
    if (raw) m_raw.insert(index);
    else m_raw.remove(index);
    rebuild(conversation);
}

void ChatDocument::finishLastMessage(const Conversation& conversation) {
    const int index = int(conversation.messages.size()) - 1;
    if (index >= 0 && index + 1 == m_messageStarts.size() && !m_raw.contains(index) && m_body.messageIndex() == index &&
        conversation.messages[index].role != QLatin1String("user")) {
        m_body.update(conversation.messages[index].content, conversation.messages[index].tokens);
        return;
    }
    refreshLastMessage(conversation);
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
