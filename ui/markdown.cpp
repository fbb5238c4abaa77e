// Block structure of Markdown, line by line (markdown.h). Inline content is parsed when its block
// closes (markdown_inline.cpp).
#include "markdown.h"

namespace md {
namespace {

int indentOf(const QString& s, int start, int end, int* firstNonSpace) {
    int col = 0, p = start;
    for (; p < end; ++p) {
        if (s[p] == QLatin1Char(' ')) ++col;
        else if (s[p] == QLatin1Char('\t')) col += 4 - col % 4;
        else break;
    }
    *firstNonSpace = p;
    return col;
}

int trimEnd(const QString& s, int start, int end) {
    while (end > start && (s[end - 1] == QLatin1Char(' ') || s[end - 1] == QLatin1Char('\t') || s[end - 1] == QLatin1Char('\r'))) --end;
    return end;
}

bool isBlank(const QString& s, int start, int end) {
    for (int p = start; p < end; ++p)
        if (!s[p].isSpace()) return false;
    return true;
}

// "---", "* * *", "___" (three or more of one character, spaces between).
bool isThematicBreak(const QString& s, int p, int end) {
    if (p >= end) return false;
    const QChar c = s[p];
    if (c != QLatin1Char('-') && c != QLatin1Char('*') && c != QLatin1Char('_')) return false;
    int count = 0;
    for (; p < end; ++p) {
        if (s[p] == c) ++count;
        else if (s[p] != QLatin1Char(' ') && s[p] != QLatin1Char('\t')) return false;
    }
    return count >= 3;
}

// "===" or "---" alone under a paragraph: 1 or 2; 0 otherwise. Three at least (CommonMark takes
// one): a reply streaming "Intro:\n-" would otherwise flash its intro as a heading before each list.
int setextLevel(const QString& s, int p, int end) {
    end = trimEnd(s, p, end);
    if (end - p < 3) return 0;
    const QChar c = s[p];
    if (c != QLatin1Char('=') && c != QLatin1Char('-')) return 0;
    for (int k = p; k < end; ++k)
        if (s[k] != c) return 0;
    return c == QLatin1Char('=') ? 1 : 2;
}

// Cells of a table row: split at '|' not escaped; a leading and a trailing '|' are optional.
QVector<Line> splitCells(const QString& s, int start, int end) {
    int first = 0;
    indentOf(s, start, end, &first);
    end = trimEnd(s, first, end);
    if (first < end && s[first] == QLatin1Char('|')) ++first;
    if (end > first && s[end - 1] == QLatin1Char('|') && (end - 2 < first || s[end - 2] != QLatin1Char('\\'))) --end;
    QVector<Line> cells;
    int cellStart = first;
    for (int p = first; p <= end; ++p) {
        if (p < end && s[p] == QLatin1Char('\\')) {
            ++p;
            continue;
        }
        if (p == end || s[p] == QLatin1Char('|')) {
            int a = cellStart, b = p;
            while (a < b && s[a].isSpace()) ++a;
            b = trimEnd(s, a, b);
            cells.append({a, b});
            cellStart = p + 1;
        }
    }
    return cells;
}

bool hasPipe(const QString& s, int start, int end) {
    for (int p = start; p < end; ++p) {
        if (s[p] == QLatin1Char('\\')) ++p;
        else if (s[p] == QLatin1Char('|')) return true;
    }
    return false;
}

// A delimiter row ("|---|:---:|"): the columns' alignment; empty when it is not one.
QVector<Align> delimiterRow(const QString& s, int start, int end) {
    if (!hasPipe(s, start, end)) return {};
    QVector<Align> out;
    for (const Line& c : splitCells(s, start, end)) {
        const QString cell = s.mid(c.start, c.end - c.start);
        if (cell.isEmpty()) return {};
        const bool left = cell.startsWith(QLatin1Char(':')), right = cell.endsWith(QLatin1Char(':'));
        const QString dashes = cell.mid(left ? 1 : 0, cell.size() - (left ? 1 : 0) - (right ? 1 : 0));
        if (dashes.isEmpty() || dashes.count(QLatin1Char('-')) != dashes.size()) return {};
        out.append(left && right ? Align::Center : right ? Align::Right : left ? Align::Left : Align::None);
    }
    return out;
}

}  // namespace

void Parser::startBlock(Open open, Kind kind, int start) {
    m_open = open;
    m_cur = Block();
    m_cur.kind = kind;
    m_cur.start = start;
    m_cur.end = start;
    m_segs.clear();
}

void Parser::closeOpen(const QString& source) {
    if (m_open == Open::None) return;
    if (m_open != Open::Code && m_open != Open::Table) {
        QVector<Line> lines;
        QVector<int> newlines;
        for (const Seg& g : m_segs) {
            lines.append({g.start, g.end});
            newlines.append(g.newline);
        }
        m_cur.spans = parseInline(source, lines, newlines);
    }
    m_blocks.append(m_cur);
    m_open = Open::None;
    m_segs.clear();
}

// How many list levels a line indented by `indent` continues (its content column reaches theirs).
int Parser::containerDepth(int indent) const {
    int depth = 0;
    for (const Level& l : m_levels)
        if (indent >= l.content) ++depth;
    return depth;
}

bool Parser::tryFence(const QString& s, int start, int end, int newline, int indent) {
    int first = 0;
    indentOf(s, start, end, &first);
    if (first >= end) return false;
    const QChar c = s[first];
    if (c != QLatin1Char('`') && c != QLatin1Char('~')) return false;
    int len = 0;
    while (first + len < end && s[first + len] == c) ++len;
    if (len < 3) return false;
    const QString info = s.mid(first + len, end - first - len).trimmed();
    if (c == QLatin1Char('`') && info.contains(QLatin1Char('`'))) return false;
    closeOpen(s);
    const int depth = indent > 0 ? containerDepth(indent) : 0;
    if (depth == 0) m_levels.clear();
    startBlock(Open::Code, Kind::Code, start);
    m_cur.depth = depth;
    m_cur.language = info.section(QLatin1Char(' '), 0, 0);
    m_cur.end = newline >= 0 ? newline + 1 : end;
    m_fenceChar = c;
    m_fenceLen = len;
    m_fenceIndent = indent;
    return true;
}

bool Parser::tryTable(const QString& s, int start, int end, int newline) {
    if (m_open == Open::Table) {
        if (!hasPipe(s, start, end)) return false;
        QVector<Line> cells = splitCells(s, start, end);
        cells.resize(m_tableCols);  // missing cells are empty, extra ones dropped (as GitHub does)
        QVector<QVector<Span>> row;
        for (const Line& c : cells) row.append(parseInline(s, {c}, {}));
        m_cur.rows.append(row);
        m_cur.end = newline >= 0 ? newline : end;
        return true;
    }
    // A paragraph of one line followed by a delimiter row with as many cells: a table's header.
    if (m_open != Open::Paragraph || m_segs.size() != 1 || m_cur.depth != 0) return false;
    const QVector<Align> align = delimiterRow(s, start, end);
    if (align.isEmpty()) return false;
    const Seg header = m_segs.first();
    if (!hasPipe(s, header.start, header.end)) return false;
    const QVector<Line> cells = splitCells(s, header.start, header.end);
    if (cells.size() != align.size()) return false;
    const int blockStart = m_cur.start;
    startBlock(Open::Table, Kind::Table, blockStart);
    m_cur.align = align;
    m_tableCols = int(align.size());
    QVector<QVector<Span>> row;
    for (const Line& c : cells) row.append(parseInline(s, {c}, {}));
    m_cur.rows.append(row);
    m_cur.end = newline >= 0 ? newline : end;
    return true;
}

bool Parser::tryListItem(const QString& s, int start, int end, int newline, int indent) {
    int p = 0;
    indentOf(s, start, end, &p);
    const int markerStart = p;
    bool ordered = false;
    int number = 0;
    if (p < end && (s[p] == QLatin1Char('-') || s[p] == QLatin1Char('*') || s[p] == QLatin1Char('+'))) {
        ++p;
    } else {
        int digits = 0;
        while (p < end && s[p].isDigit() && s[p].unicode() < 128 && digits < 9) {
            number = number * 10 + (s[p].unicode() - '0');
            ++p;
            ++digits;
        }
        if (digits == 0 || p >= end || (s[p] != QLatin1Char('.') && s[p] != QLatin1Char(')'))) return false;
        ++p;
        ordered = true;
    }
    if (p < end && s[p] != QLatin1Char(' ') && s[p] != QLatin1Char('\t')) return false;
    const int markerEnd = p;
    while (p < end && (s[p] == QLatin1Char(' ') || s[p] == QLatin1Char('\t'))) ++p;
    closeOpen(s);
    const int content = indent + (markerEnd - markerStart) + 1;
    while (!m_levels.isEmpty() && indent < m_levels.last().marker) m_levels.removeLast();
    if (m_levels.isEmpty() || indent >= m_levels.last().content) m_levels.append({indent, content});
    else m_levels.last() = {indent, content};
    startBlock(Open::ListItem, Kind::ListItem, start);
    m_cur.depth = int(m_levels.size());
    m_cur.ordered = ordered;
    m_cur.number = number;
    m_cur.marker = {markerStart, markerEnd};
    m_cur.end = end;
    m_segs.append({p, trimEnd(s, p, end), newline});
    return true;
}

std::optional<Line> Parser::codeLine(const QString& s, int start, int end) const {
    int first = 0;
    indentOf(s, start, end, &first);
    int len = 0;
    while (first + len < end && s[first + len] == m_fenceChar) ++len;
    if (len >= m_fenceLen && isBlank(s, first + len, end)) return std::nullopt;
    // The fence's indentation is not part of the code.
    int p = start, col = 0;
    while (p < end && col < m_fenceIndent && s[p] == QLatin1Char(' ')) ++p, ++col;
    int e = end;
    if (e > p && s[e - 1] == QLatin1Char('\r')) --e;
    return Line{p, e};
}

void Parser::addLine(const QString& s, int start, int end, int newline) {
    const int lineEnd = newline >= 0 ? newline : end;
    if (m_open == Open::Code) {
        const std::optional<Line> code = codeLine(s, start, end);
        m_cur.end = lineEnd;
        if (code) {
            m_cur.lines.append(*code);
            return;
        }
        m_cur.closed = true;
        closeOpen(s);
        return;
    }
    if (isBlank(s, start, end)) {
        closeOpen(s);
        m_blank = true;
        return;
    }
    const bool blankBefore = m_blank;
    m_blank = false;
    int first = 0;
    const int indent = indentOf(s, start, end, &first);
    if (tryFence(s, start, end, newline, indent)) return;
    if (indent <= 3 && s[first] == QLatin1Char('#')) {
        int level = 0;
        while (first + level < end && s[first + level] == QLatin1Char('#')) ++level;
        if (level <= 6 && (first + level == end || s[first + level] == QLatin1Char(' ') || s[first + level] == QLatin1Char('\t'))) {
            closeOpen(s);
            m_levels.clear();
            int a = first + level, b = trimEnd(s, first + level, end);
            while (a < b && s[a].isSpace()) ++a;
            // A closing run of '#' (after a space) is markup too.
            int c = b;
            while (c > a && s[c - 1] == QLatin1Char('#')) --c;
            if (c < b && (c == a || s[c - 1] == QLatin1Char(' '))) b = trimEnd(s, a, c);
            startBlock(Open::Paragraph, Kind::Heading, start);
            m_cur.level = level;
            m_cur.end = end;
            m_segs.append({a, b, newline});
            closeOpen(s);
            return;
        }
    }
    if (m_open == Open::Paragraph && m_cur.depth == 0 && indent <= 3) {
        if (const int level = setextLevel(s, first, end)) {
            m_cur.kind = Kind::Heading;
            m_cur.level = level;
            m_cur.end = end;
            closeOpen(s);
            return;
        }
    }
    if (indent <= 3 && isThematicBreak(s, first, trimEnd(s, first, end))) {
        closeOpen(s);
        m_levels.clear();
        startBlock(Open::Paragraph, Kind::Rule, start);
        m_cur.end = end;
        closeOpen(s);
        return;
    }
    if (tryTable(s, start, end, newline)) return;
    if (tryListItem(s, start, end, newline, indent)) return;
    if (indent <= 3 && s[first] == QLatin1Char('>')) {
        if (m_open != Open::Quote) {
            closeOpen(s);
            const int depth = indent > 0 ? containerDepth(indent) : 0;
            if (depth == 0) m_levels.clear();
            startBlock(Open::Quote, Kind::Quote, start);
            m_cur.depth = depth;
        }
        int p = first + 1;
        if (p < end && s[p] == QLatin1Char(' ')) ++p;
        m_segs.append({p, trimEnd(s, p, end), newline});
        m_cur.end = end;
        return;
    }
    // Plain text: continues the open paragraph, list item or quote (a lazy line), or starts a paragraph.
    if (!blankBefore && (m_open == Open::Paragraph || m_open == Open::ListItem || m_open == Open::Quote)) {
        m_segs.append({first, trimEnd(s, first, end), newline});
        m_cur.end = end;
        return;
    }
    closeOpen(s);
    const int depth = containerDepth(indent);
    if (depth == 0) m_levels.clear();
    startBlock(Open::Paragraph, Kind::Paragraph, start);
    m_cur.depth = depth;
    m_cur.end = end;
    m_segs.append({first, trimEnd(s, first, end), newline});
}

void Parser::finish(const QString& source) {
    closeOpen(source);
}

QVector<Block> parse(const QString& source) {
    Parser p;
    int start = 0;
    while (start <= source.size()) {
        const int nl = source.indexOf(QLatin1Char('\n'), start);
        const int end = nl < 0 ? int(source.size()) : nl;
        if (nl < 0 && start == source.size()) break;
        p.addLine(source, start, end, nl);
        if (nl < 0) break;
        start = nl + 1;
    }
    p.finish(source);
    return p.blocks();
}

QString codeText(const QString& source, const Block& block) {
    QStringList lines;
    for (const Line& l : block.lines) lines.append(source.mid(l.start, l.end - l.start));
    return lines.join(QLatin1Char('\n'));
}

}  // namespace md
