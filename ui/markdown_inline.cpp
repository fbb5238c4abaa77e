// Inline Markdown: code spans, emphasis, strike, links, autolinks and escapes over a block's content.
// The content is the block's lines joined by their '\n'; every content character remembers its
// source offset, and the result is the runs of shown characters with one style each.
#include <algorithm>
#include <array>

#include "markdown.h"

namespace md {
namespace {

bool isSpace(QChar c) {
    return c == QLatin1Char(' ') || c == QLatin1Char('\t') || c == QLatin1Char('\n') || c.isSpace();
}

bool isAsciiPunct(QChar c) {
    const char16_t u = c.unicode();
    return (u >= '!' && u <= '/') || (u >= ':' && u <= '@') || (u >= '[' && u <= '`') || (u >= '{' && u <= '~');
}

bool isPunct(QChar c) {
    return isAsciiPunct(c) || c.isPunct() || c.isSymbol();
}

struct Delim {
    int pos;   // first character of the run
    int rem;   // characters of the run not yet used
    int cpos;  // a closer is used from its left: its first unused character
    QChar ch;
    bool canOpen;
    bool canClose;
};

class InlineParser {
public:
    InlineParser(const QString& source, const QVector<Line>& lines, const QVector<int>& newlines) {
        for (int i = 0; i < lines.size(); ++i) {
            if (i > 0) {
                m_text += QLatin1Char('\n');
                m_src.append(newlines.value(i - 1, lines[i].start));
            }
            for (int p = lines[i].start; p < lines[i].end; ++p) {
                m_text += source[p];
                m_src.append(p);
            }
        }
        const int n = int(m_text.size());
        m_hidden.fill(0, n);
        m_code.fill(0, n);
        m_link.fill(-1, n);
        for (auto& d : m_diff) d.fill(0, n + 1);
    }

    QVector<Span> run() {
        scan();
        matchEmphasis();
        return spans();
    }

private:
    QChar at(int i) const { return i >= 0 && i < m_text.size() ? m_text[i] : QLatin1Char(' '); }
    void hide(int from, int to) {
        for (int i = from; i < to; ++i) m_hidden[i] = 1;
    }
    void style(int from, int to, int which) {
        if (from >= to) return;
        m_diff[which][from] += 1;
        m_diff[which][to] -= 1;
    }

    void precompute() {
        const int n = int(m_text.size());
        // Backtick runs by length, so a code span finds its closer without rescanning.
        for (int i = 0; i < n;) {
            if (m_text[i] != QLatin1Char('`')) {
                ++i;
                continue;
            }
            int j = i;
            while (j < n && m_text[j] == QLatin1Char('`')) ++j;
            m_ticks.append({i, j - i});
            i = j;
        }
        // Next ')' or white space from each position: where a link destination ends.
        m_destStop.resize(n + 1);
        m_destStop[n] = n;
        for (int i = n - 1; i >= 0; --i)
            m_destStop[i] = (m_text[i] == QLatin1Char(')') || isSpace(m_text[i])) ? i : m_destStop[i + 1];
        m_nextQuote.resize(n + 1);
        m_nextGt.resize(n + 1);
        m_nextSpace.resize(n + 1);
        m_nextQuote[n] = m_nextGt[n] = m_nextSpace[n] = n;
        for (int i = n - 1; i >= 0; --i) {
            m_nextQuote[i] = m_text[i] == QLatin1Char('"') ? i : m_nextQuote[i + 1];
            m_nextGt[i] = m_text[i] == QLatin1Char('>') ? i : m_nextGt[i + 1];
            m_nextSpace[i] = isSpace(m_text[i]) ? i : m_nextSpace[i + 1];
        }
    }

    // The closing run of exactly `len` backticks after position from, or -1.
    int findTickCloser(int from, int len) {
        while (m_tickCursor < m_ticks.size() && m_ticks[m_tickCursor].first < from) ++m_tickCursor;
        for (int k = m_tickCursor; k < m_ticks.size(); ++k)
            if (m_ticks[k].second == len) return m_ticks[k].first;
        return -1;
    }

    int codeSpan(int i) {
        int len = 0;
        while (at(i + len) == QLatin1Char('`')) ++len;
        // Cache "no closer of this length" so a run of unclosed ticks is not searched again.
        if (len < int(m_noCloserAfter.size()) && m_noCloserAfter[len] >= 0 && i >= m_noCloserAfter[len]) return i + len;
        const int close = findTickCloser(i + len, len);
        if (close < 0) {
            if (len >= int(m_noCloserAfter.size())) m_noCloserAfter.resize(len + 1, -1);
            m_noCloserAfter[len] = 0;
            return i + len;
        }
        hide(i, i + len);
        hide(close, close + len);
        int a = i + len, b = close;
        // One space on each side is padding when both are there and the content is not all spaces.
        if (b - a >= 2 && at(a) == QLatin1Char(' ') && at(b - 1) == QLatin1Char(' ')) {
            bool allSpace = true;
            for (int k = a; k < b && allSpace; ++k) allSpace = at(k) == QLatin1Char(' ');
            if (!allSpace) {
                hide(a, a + 1);
                hide(b - 1, b);
            }
        }
        for (int k = a; k < b; ++k) m_code[k] = 1;
        return close + len;
    }

    int delimiterRun(int i) {
        const QChar ch = m_text[i];
        int len = 0;
        while (at(i + len) == ch) ++len;
        if (ch == QLatin1Char('~') && len != 2) return i + len;  // only ~~ strikes
        const QChar before = at(i - 1), after = at(i + len);
        const bool left = !isSpace(after) && (!isPunct(after) || isSpace(before) || isPunct(before));
        const bool right = !isSpace(before) && (!isPunct(before) || isSpace(after) || isPunct(after));
        bool open = left, close = right;
        if (ch == QLatin1Char('_')) {  // no intraword emphasis with _ (snake_case stays as it is)
            open = left && (!right || isPunct(before));
            close = right && (!left || isPunct(after));
        }
        if (open || close) m_delims.append({i, len, i, ch, open, close});
        return i + len;
    }

    static bool isUrlStart(const QString& t, int i) {
        return t.mid(i, 8).startsWith(QLatin1String("https://")) || t.mid(i, 7).startsWith(QLatin1String("http://"));
    }

    void markLink(int from, int to, const QString& href) {
        const int idx = int(m_hrefs.size());
        m_hrefs.append(href);
        for (int k = from; k < to; ++k) m_link[k] = idx;
    }

    // A bare http(s):// URL: up to white space or '<', less trailing punctuation.
    int bareUrl(int i) {
        int j = i;
        while (j < m_text.size() && !isSpace(m_text[j]) && m_text[j] != QLatin1Char('<') && m_text[j] != QLatin1Char('`')) ++j;
        while (j > i && QStringLiteral(".,:;!?*_~'\")").contains(m_text[j - 1])) {
            if (m_text[j - 1] == QLatin1Char(')') && m_text.mid(i, j - i).count(QLatin1Char('(')) > 0) break;
            --j;
        }
        markLink(i, j, m_text.mid(i, j - i));
        return j;
    }

    // [text](destination "title"): after the ']' at k. Returns the index after ')' or -1.
    int linkDestination(int k, QString* href) {
        if (at(k + 1) != QLatin1Char('(')) return -1;
        const int a = k + 2;
        if (a > m_text.size()) return -1;
        const int stop = m_destStop[std::min<int>(a, int(m_text.size()))];
        int j = stop;
        while (at(j) == QLatin1Char(' ') && j < m_text.size()) ++j;
        if (at(j) == QLatin1Char('"')) {
            const int q = m_nextQuote[std::min<int>(j + 1, int(m_text.size()))];
            if (q >= m_text.size()) return -1;
            j = q + 1;
            while (at(j) == QLatin1Char(' ') && j < m_text.size()) ++j;
        }
        if (j >= m_text.size() || m_text[j] != QLatin1Char(')')) return -1;
        // Copied only for a real link: "[a](" repeated has no ')' and a destination running to the end
        // of the text, and copying it for every opener was quadratic.
        *href = m_text.mid(a, stop - a);
        return j + 1;
    }

    int closeBracket(int k) {
        while (!m_brackets.isEmpty() && !m_brackets.last().second) m_brackets.removeLast();
        if (m_brackets.isEmpty()) return k + 1;
        const int open = m_brackets.takeLast().first;
        QString href;
        const int end = linkDestination(k, &href);
        if (end < 0) return k + 1;
        hide(open, open + 1);
        if (open > 0 && m_text[open - 1] == QLatin1Char('!') && !m_hidden[open - 1]) hide(open - 1, open);  // image: its alt text
        hide(k, end);
        markLink(open + 1, k, href);
        m_brackets.clear();  // no links inside links: earlier openers stay literal
        return end;
    }

    void scan() {
        precompute();
        const int n = int(m_text.size());
        for (int i = 0; i < n;) {
            const QChar c = m_text[i];
            if (c == QLatin1Char('\\') && i + 1 < n && isAsciiPunct(m_text[i + 1])) {
                hide(i, i + 1);
                i += 2;
            } else if (c == QLatin1Char('`')) {
                i = codeSpan(i);
            } else if (c == QLatin1Char('*') || c == QLatin1Char('_') || c == QLatin1Char('~')) {
                i = delimiterRun(i);
            } else if (c == QLatin1Char('[')) {
                m_brackets.append({i, true});
                ++i;
            } else if (c == QLatin1Char(']')) {
                i = closeBracket(i);
            } else if (c == QLatin1Char('<') && isUrlStart(m_text, i + 1)) {
                const int close = m_nextGt[i + 1];
                if (close < n && m_nextSpace[i + 1] > close) {
                    hide(i, i + 1);
                    hide(close, close + 1);
                    markLink(i + 1, close, m_text.mid(i + 1, close - i - 1));
                    i = close + 1;
                } else {
                    ++i;
                }
            } else if (c == QLatin1Char('h') && (i == 0 || isSpace(m_text[i - 1]) || m_text[i - 1] == QLatin1Char('(')) &&
                       isUrlStart(m_text, i)) {
                i = bareUrl(i);
            } else {
                ++i;
            }
        }
    }

    // CommonMark's delimiter matching, simplified (no rule of three). bottom[c]: below this stack
    // index no opener of c can match, so each closer searches only what is new: linear overall.
    void matchEmphasis() {
        QVector<int> stack;
        std::array<int, 3> bottom{0, 0, 0};
        auto slot = [](QChar c) { return c == QLatin1Char('*') ? 0 : c == QLatin1Char('_') ? 1 : 2; };
        auto truncate = [&](int size) {
            stack.resize(size);
            for (int& b : bottom) b = std::min(b, size);
        };
        for (int di = 0; di < m_delims.size(); ++di) {
            Delim& d = m_delims[di];
            if (d.canClose) {
                while (d.rem > 0) {
                    int found = -1;
                    for (int s = int(stack.size()) - 1; s >= bottom[slot(d.ch)]; --s) {
                        const Delim& o = m_delims[stack[s]];
                        if (o.ch == d.ch && o.rem > 0) {
                            found = s;
                            break;
                        }
                    }
                    if (found < 0) {
                        bottom[slot(d.ch)] = int(stack.size());
                        break;
                    }
                    Delim& o = m_delims[stack[found]];
                    const int k = d.ch == QLatin1Char('~') ? 2 : (o.rem >= 2 && d.rem >= 2 ? 2 : 1);
                    const int innerStart = o.pos + o.rem;
                    hide(innerStart - k, innerStart);
                    hide(d.cpos, d.cpos + k);
                    const int which = d.ch == QLatin1Char('~') ? 2 : (k == 2 ? 0 : 1);
                    style(innerStart, d.cpos, which);
                    o.rem -= k;
                    d.rem -= k;
                    d.cpos += k;
                    truncate(o.rem > 0 ? found + 1 : found);
                }
            }
            if (d.canOpen && d.rem > 0) stack.append(di);
        }
    }

    QVector<Span> spans() const {
        QVector<Span> out;
        const int n = int(m_text.size());
        std::array<int, 3> level{0, 0, 0};
        int prevSrc = -2;
        for (int i = 0; i < n; ++i) {
            for (int w = 0; w < 3; ++w) level[w] += m_diff[w][i];
            if (m_hidden[i]) continue;
            int st = (level[0] > 0 ? Bold : 0) | (level[1] > 0 ? Italic : 0) | (level[2] > 0 ? Strike : 0) |
                     (m_code[i] ? Code : 0) | (m_link[i] >= 0 ? Link : 0);
            const QString href = m_link[i] >= 0 ? m_hrefs[m_link[i]] : QString();
            if (!out.isEmpty() && out.last().style == st && out.last().href == href && m_src[i] == prevSrc + 1) {
                out.last().end = m_src[i] + 1;
            } else {
                out.append({m_src[i], m_src[i] + 1, st, href});
            }
            prevSrc = m_src[i];
        }
        return out;
    }

    QString m_text;
    QVector<int> m_src;
    QVector<char> m_hidden, m_code;
    QVector<int> m_link;
    QStringList m_hrefs;
    std::array<QVector<int>, 3> m_diff;  // bold, italic, strike: +1 where a range starts, -1 after it
    QVector<Delim> m_delims;
    QVector<QPair<int, bool>> m_brackets;  // '[' positions, still able to open a link
    QVector<QPair<int, int>> m_ticks;      // backtick runs (position, length)
    int m_tickCursor = 0;
    std::vector<int> m_noCloserAfter;
    QVector<int> m_destStop, m_nextQuote, m_nextGt, m_nextSpace;
};

}  // namespace

QVector<Span> parseInline(const QString& source, const QVector<Line>& lines, const QVector<int>& newlines) {
    return InlineParser(source, lines, newlines).run();
}

}  // namespace md
