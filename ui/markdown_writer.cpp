#include "markdown_writer.h"

#include <algorithm>
#include <cmath>

#include <QFontDatabase>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextList>
#include <QTextTable>

#include "theme.h"

namespace {

constexpr int kMaxDepth = 8;  // deeper lists and quotes are drawn at this depth

QTextCharFormat codeFormat() {
    QTextCharFormat f;
    f.setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    f.setFontFixedPitch(true);
    return f;
}

void applyStyle(QTextCharFormat* f, const md::Span& s) {
    if (s.style & md::Bold) f->setFontWeight(QFont::Bold);
    if (s.style & md::Italic) f->setFontItalic(true);
    if (s.style & md::Strike) f->setFontStrikeOut(true);
    if (s.style & md::Code) {
        const QFont font = QFontDatabase::systemFont(QFontDatabase::FixedFont);
        f->setFontFamilies(font.families());
        f->setFontFixedPitch(true);
        f->setBackground(Theme::color(Theme::Role::CodeBackground));
    }
    if (s.style & md::Link) {
        f->setForeground(Theme::color(Theme::Role::Link));
        f->setFontUnderline(true);
        f->setProperty(markdown_format::LinkHref, s.href);
    }
}

QTextBlockFormat paragraphFormat(int depth) {
    QTextBlockFormat bf;
    bf.setBottomMargin(6);
    bf.setIndent(std::min(depth, kMaxDepth));
    return bf;
}

}  // namespace

QString MarkdownBody::copyHref(int messageIndex, int blockIndex) {
    return QStringLiteral("copy:%1:%2").arg(messageIndex).arg(blockIndex);
}

bool MarkdownBody::parseCopyHref(const QString& href, int* messageIndex, int* blockIndex) {
    const QStringList parts = href.split(QLatin1Char(':'));
    if (parts.size() != 3 || parts[0] != QLatin1String("copy")) return false;
    bool ok1 = false, ok2 = false;
    *messageIndex = parts[1].toInt(&ok1);
    *blockIndex = parts[2].toInt(&ok2);
    return ok1 && ok2;
}

QString MarkdownBody::codeBlockText(const QString& text, int blockIndex) {
    const QVector<md::Block> blocks = md::parse(text);
    if (blockIndex < 0 || blockIndex >= blocks.size() || blocks[blockIndex].kind != md::Kind::Code) return {};
    return md::codeText(text, blocks[blockIndex]);
}

void MarkdownBody::begin(QTextDocument* document, int messageIndex, bool colorByProbability) {
    m_document = document;
    m_message = messageIndex;
    m_color = colorByProbability;
    QTextCursor c(document);
    c.movePosition(QTextCursor::End);
    m_bodyStart = c.position();
    m_text.clear();
    m_pieces.clear();
    m_tokenStarts.clear();
    m_covered = 0;
    m_writtenChars = 0;
    restart();
}

void MarkdownBody::restart() {
    QTextCursor c(m_document);
    c.setPosition(m_bodyStart);
    c.movePosition(QTextCursor::End, QTextCursor::KeepAnchor);
    c.removeSelectedText();
    m_parser = md::Parser();
    m_fed = 0;
    m_written = 0;
    m_tailPos = m_bodyStart;
    m_ctx = Context();
    m_openCode = OpenCode();
}

void MarkdownBody::extendTokens(const QVector<TokenRecord>& tokens) {
    if (tokens.size() < m_tokenStarts.size()) {  // another reply's tokens: start over
        m_pieces.clear();
        m_tokenStarts.clear();
        m_covered = 0;
    }
    for (int i = int(m_tokenStarts.size()); i < tokens.size(); ++i) {
        m_tokenStarts.append(int(m_pieces.size()));
        m_pieces += tokens[i].piece;
    }
}

int MarkdownBody::tokenAt(int offset) const {
    if (offset >= m_covered || m_tokenStarts.isEmpty()) return -1;
    const auto it = std::upper_bound(m_tokenStarts.begin(), m_tokenStarts.end(), offset);
    return int(it - m_tokenStarts.begin()) - 1;
}

void MarkdownBody::update(const QString& text, const QVector<TokenRecord>& tokens) {
    if (!m_document) return;
    // The same text from the same tokens (a reply's end that released nothing): already shown.
    if (text == m_text && tokens.size() == m_tokenStarts.size() && !text.isEmpty()) return;
    m_tokens = &tokens;
    const int oldCovered = m_covered;
    extendTokens(tokens);
    // Text written before without a token (the engine released it only at the end) would keep its
    // plain format: the body is written again whenever what it shows is not a plain extension.
    if (!text.startsWith(m_text) || m_covered < oldCovered) {
        m_text.clear();
        m_covered = 0;
        restart();
    }
    m_text = text;
    const int limit = int(std::min(m_text.size(), m_pieces.size()));
    while (m_covered < limit && m_text[m_covered] == m_pieces[m_covered]) ++m_covered;

    // Lines that ended are fed once; the parser's finished blocks are written for good.
    for (int nl = int(m_text.indexOf(QLatin1Char('\n'), m_fed)); nl >= 0; nl = int(m_text.indexOf(QLatin1Char('\n'), m_fed))) {
        m_parser.addLine(m_text, m_fed, nl, nl);
        m_fed = nl + 1;
    }
    const bool finishedMore = m_parser.finishedCount() > m_written;
    if (!finishedMore && appendOpenCode()) {
        m_tokens = nullptr;
        return;
    }
    removeTail();
    if (finishedMore) {
        const QVector<md::Block> done = m_parser.blocks().mid(m_written);
        writeBlocks(done, m_written, &m_ctx);
        m_written = m_parser.finishedCount();
        QTextCursor end(m_document);
        end.movePosition(QTextCursor::End);
        m_tailPos = end.position();
        if (appendOpenCode()) {
            m_tokens = nullptr;
            return;
        }
    }
    // The open tail: a copy of the parser finishes it with the line still being written.
    md::Parser tail = m_parser;
    tail.dropFinished();
    if (m_fed < m_text.size()) tail.addLine(m_text, m_fed, int(m_text.size()), -1);
    tail.finish(m_text);
    Context ctx = m_ctx;
    writeBlocks(tail.blocks(), m_written, &ctx);
    m_tokens = nullptr;
}

void MarkdownBody::removeTail() {
    m_openCode = OpenCode();
    QTextCursor c(m_document);
    c.setPosition(m_tailPos);
    c.movePosition(QTextCursor::End, QTextCursor::KeepAnchor);
    c.removeSelectedText();
    if (m_ctx.fresh) {
        // The tail may have used the block the body had ready: give it back its plain format.
        if (QTextList* list = c.currentList()) list->remove(c.block());
        c.setBlockFormat(QTextBlockFormat());
        c.setBlockCharFormat(QTextCharFormat());
    }
}

namespace {
void setBottomMargin(QTextCursor& c, qreal margin) {
    QTextBlockFormat bf = c.blockFormat();
    bf.setBottomMargin(margin);
    c.setBlockFormat(bf);
}
}  // namespace

bool MarkdownBody::appendOpenCode() {
    const md::Block* open = m_parser.openCode();
    if (!open) return false;
    std::optional<md::Line> partial;
    if (m_fed < m_text.size()) {
        partial = m_parser.codeLine(m_text, m_fed, int(m_text.size()));
        if (!partial) return false;  // the closing fence, not yet ended by a newline: the tail path closes it
    }
    QTextCursor c(m_document);
    c.beginEditBlock();
    if (!m_openCode.active) {
        removeTail();
        c.movePosition(QTextCursor::End);
        // The tail's context is thrown away with it, as the usual tail's is.
        Context ctx = m_ctx;
        writeCodeLabel(c, *open, m_written, &ctx);
        m_openCode.active = true;
    } else {
        // Only the line being written is replaced (with the '\n' before it).
        c.setPosition(m_openCode.partialPos);
        c.movePosition(QTextCursor::End, QTextCursor::KeepAnchor);
        c.removeSelectedText();
    }
    c.movePosition(QTextCursor::End);
    const bool more = m_openCode.lines < open->lines.size() || partial;
    if (m_openCode.lines > 0 && more) setBottomMargin(c, 0);  // the block's closing margin moves down
    for (int i = m_openCode.lines; i < open->lines.size(); ++i)
        writeCodeLine(c, *open, m_written, open->lines[i], !partial && i + 1 == open->lines.size());
    m_openCode.lines = int(open->lines.size());
    m_openCode.partialPos = c.position();
    if (partial) writeCodeLine(c, *open, m_written, *partial, true);
    c.endEditBlock();
    return true;
}

void MarkdownBody::writeBlocks(const QVector<md::Block>& blocks, int firstIndex, Context* ctx) {
    QTextCursor c(m_document);
    c.movePosition(QTextCursor::End);
    c.beginEditBlock();
    for (int i = 0; i < blocks.size(); ++i) writeBlock(c, blocks[i], firstIndex + i, ctx);
    c.endEditBlock();
}

namespace {

// The next block: the fresh one the context has ready, or a new one.
void startBlock(QTextCursor& c, bool* fresh, const QTextBlockFormat& bf, const QTextCharFormat& cf = QTextCharFormat()) {
    if (*fresh) {
        if (QTextList* list = c.currentList()) list->remove(c.block());
        c.setBlockFormat(bf);
        c.setBlockCharFormat(cf);
    } else {
        c.insertBlock(bf, cf);
    }
    *fresh = false;
}

}  // namespace

void MarkdownBody::writeBlock(QTextCursor& c, const md::Block& b, int index, Context* ctx) {
    // A block outside the lists ends them; one that continues an item (depth) keeps them open.
    if (b.kind != md::Kind::ListItem && ctx->lists.size() > b.depth) ctx->lists.resize(b.depth);
    switch (b.kind) {
    case md::Kind::Paragraph:
        startBlock(c, &ctx->fresh, paragraphFormat(b.depth));
        writeSpans(c, b.spans, QTextCharFormat());
        break;
    case md::Kind::Heading: {
        QTextBlockFormat bf;
        bf.setHeadingLevel(b.level);
        bf.setTopMargin(b.level <= 2 ? 10 : 6);
        bf.setBottomMargin(4);
        QTextCharFormat cf;
        cf.setFontWeight(QFont::Bold);
        cf.setProperty(QTextFormat::FontSizeAdjustment, b.level == 1 ? 2 : b.level == 2 ? 1 : 0);
        startBlock(c, &ctx->fresh, bf, cf);
        writeSpans(c, b.spans, cf);
        break;
    }
    case md::Kind::Quote: {
        QTextBlockFormat bf = paragraphFormat(b.depth);
        bf.setLeftMargin(16);
        QTextCharFormat cf;
        cf.setForeground(Theme::color(Theme::Role::QuoteText));
        cf.setFontItalic(true);
        startBlock(c, &ctx->fresh, bf, cf);
        writeSpans(c, b.spans, cf);
        break;
    }
    case md::Kind::Rule: {
        QTextBlockFormat bf;
        bf.setProperty(QTextFormat::BlockTrailingHorizontalRulerWidth, QTextLength(QTextLength::PercentageLength, 100));
        bf.setBottomMargin(6);
        startBlock(c, &ctx->fresh, bf);
        break;
    }
    case md::Kind::ListItem: writeListItem(c, b, ctx); break;
    case md::Kind::Code: writeCode(c, b, index, ctx); break;
    case md::Kind::Table: writeTable(c, b, ctx); break;
    }
}

void MarkdownBody::writeListItem(QTextCursor& c, const md::Block& b, Context* ctx) {
    const int depth = std::clamp(b.depth, 1, kMaxDepth);
    ctx->lists.resize(std::max<int>(depth, int(ctx->lists.size())));
    ctx->lists.resize(depth);  // deeper lists end with a shallower item
    QTextList* list = ctx->lists[depth - 1];
    const bool sameKind = list && (list->format().style() == QTextListFormat::ListDecimal) == b.ordered;
    if (list && !sameKind) list = nullptr;
    // Qt 6.4 lists always count from 1: an ordered item joins its list when its number is the
    // list's next, and a list that starts elsewhere shows the model's own number as text.
    const bool numberFits = !b.ordered || (list ? list->count() + 1 == b.number : b.number == 1);
    QTextBlockFormat bf;
    bf.setBottomMargin(2);
    if (!numberFits) {
        ctx->lists[depth - 1] = nullptr;
        startBlock(c, &ctx->fresh, paragraphFormat(depth));
        writeSource(c, b.marker.start, b.marker.end, QTextCharFormat());
        c.insertText(QStringLiteral(" "));
        writeSpans(c, b.spans, QTextCharFormat());
        return;
    }
    startBlock(c, &ctx->fresh, bf);
    if (list) {
        list->add(c.block());
    } else {
        QTextListFormat lf;
        static const QTextListFormat::Style bullets[] = {QTextListFormat::ListDisc, QTextListFormat::ListCircle,
                                                         QTextListFormat::ListSquare};
        lf.setStyle(b.ordered ? QTextListFormat::ListDecimal : bullets[(depth - 1) % 3]);
        lf.setIndent(depth);
        ctx->lists[depth - 1] = c.createList(lf);
    }
    writeSpans(c, b.spans, QTextCharFormat());
}

void MarkdownBody::writeCode(QTextCursor& c, const md::Block& b, int index, Context* ctx) {
    writeCodeLabel(c, b, index, ctx);
    for (int i = 0; i < b.lines.size(); ++i) writeCodeLine(c, b, index, b.lines[i], i + 1 == b.lines.size());
}

void MarkdownBody::writeCodeLabel(QTextCursor& c, const md::Block& b, int index, Context* ctx) {
    const QColor background = Theme::color(Theme::Role::CodeBackground);
    QTextBlockFormat label;
    label.setBackground(background);
    label.setTopMargin(4);
    label.setIndent(std::min(b.depth, kMaxDepth));
    label.setProperty(markdown_format::CodeBlockIndex, index);
    QTextCharFormat lf;
    lf.setForeground(Theme::color(Theme::Role::CodeLabel));
    lf.setProperty(markdown_format::UiLabel, true);
    lf.setFontPointSize(std::max(6.0, QFont().pointSizeF() * 0.85));
    startBlock(c, &ctx->fresh, label, lf);
    c.insertText(b.language.isEmpty() ? QObject::tr("code") : b.language, lf);
    c.insertText(QStringLiteral("    "), lf);
    QTextCharFormat copy = lf;
    copy.setForeground(Theme::color(Theme::Role::Link));
    copy.setAnchor(true);
    copy.setAnchorHref(copyHref(m_message, index));
    copy.setToolTip(QObject::tr("Copy the code"));
    c.insertText(QObject::tr("Copy"), copy);
}

void MarkdownBody::writeCodeLine(QTextCursor& c, const md::Block& b, int index, md::Line source, bool last) {
    QTextBlockFormat line;
    line.setBackground(Theme::color(Theme::Role::CodeBackground));
    line.setNonBreakableLines(true);
    line.setIndent(std::min(b.depth, kMaxDepth));
    line.setProperty(QTextFormat::BlockCodeFence, QChar(u'`'));
    line.setProperty(markdown_format::CodeBlockIndex, index);
    if (!b.language.isEmpty()) line.setProperty(QTextFormat::BlockCodeLanguage, b.language);
    if (last) line.setBottomMargin(8);
    const QTextCharFormat code = codeFormat();
    c.insertBlock(line, code);
    writeSource(c, source.start, source.end, code);
}

void MarkdownBody::writeTable(QTextCursor& c, const md::Block& b, Context* ctx) {
    if (b.rows.isEmpty() || b.align.isEmpty()) return;
    if (ctx->fresh) {
        // insertTable splits the block it is in; the fresh block stays empty before the table.
        ctx->fresh = false;
    }
    QTextTableFormat tf;
    tf.setBorder(1);
    tf.setBorderBrush(Theme::color(Theme::Role::TableBorder));
    tf.setBorderStyle(QTextFrameFormat::BorderStyle_Solid);
    tf.setBorderCollapse(true);
    tf.setCellSpacing(0);
    tf.setCellPadding(4);
    tf.setBottomMargin(6);
    tf.setHeaderRowCount(1);
    QTextTable* table = c.insertTable(int(b.rows.size()), int(b.align.size()), tf);
    for (int r = 0; r < b.rows.size(); ++r) {
        for (int col = 0; col < b.align.size() && col < b.rows[r].size(); ++col) {
            QTextCursor cell = table->cellAt(r, col).firstCursorPosition();
            QTextBlockFormat bf;
            const md::Align a = b.align[col];
            bf.setAlignment(a == md::Align::Center ? Qt::AlignHCenter : a == md::Align::Right ? Qt::AlignRight : Qt::AlignLeft);
            cell.setBlockFormat(bf);
            QTextCharFormat base;
            if (r == 0) base.setFontWeight(QFont::Bold);
            writeSpans(cell, b.rows[r][col], base);
        }
    }
    // After a table the document has an empty block: the next block goes there.
    c.movePosition(QTextCursor::End);
    ctx->fresh = true;
}

void MarkdownBody::writeSpans(QTextCursor& c, const QVector<md::Span>& spans, const QTextCharFormat& base) {
    for (const md::Span& s : spans) {
        QTextCharFormat f = base;
        applyStyle(&f, s);
        writeSource(c, s.start, s.end, f);
    }
}

// m_text[from, to) in format f, split where the token changes: each piece is its token's anchor.
void MarkdownBody::writeSource(QTextCursor& c, int from, int to, const QTextCharFormat& f) {
    while (from < to) {
        const int t = tokenAt(from);
        int next = to;
        if (t >= 0) next = std::min(to, t + 1 < m_tokenStarts.size() ? m_tokenStarts[t + 1] : m_covered);
        else if (from < m_covered) next = std::min(to, m_covered);
        QString text = m_text.mid(from, next - from);
        text.replace(QLatin1Char('\n'), QChar::LineSeparator);  // a line break inside the block
        QTextCharFormat g = f;
        const QString link = f.property(markdown_format::LinkHref).toString();
        if (t >= 0 && m_tokens && t < m_tokens->size()) {
            const TokenRecord& tok = (*m_tokens)[t];
            g.setAnchor(true);
            g.setAnchorHref(QStringLiteral("tok:%1:%2").arg(m_message).arg(t));
            QString tip = Theme::tokenTip(tok.p, tok.id);
            if (!link.isEmpty()) tip += QStringLiteral("\n") + link;
            g.setToolTip(tip);
            if (m_color && std::isfinite(tok.p)) g.setBackground(Theme::probabilityColor(tok.p));
        } else if (!link.isEmpty()) {
            g.setToolTip(link);
        }
        c.insertText(text, g);
        m_writtenChars += text.size();
        from = next;
    }
}
