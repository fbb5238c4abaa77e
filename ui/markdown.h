#pragma once
// A small Markdown parser for the chat view (QtCore only). It keeps the SOURCE OFFSET of every
// character it shows, which Qt's own Markdown import does not: the chat view colours each rendered
// character by the token it came from and makes it that token's link, so it must know, for each
// shown character, where it sits in the reply's text. Markup (`**`, `#`, fence lines, table pipes)
// is parsed away and never appears in a Span.
//
// What it understands (the subset models write): ATX and setext headings, paragraphs (a single
// newline is kept as a line break, as chat UIs do), bullet and ordered lists with nesting, block
// quotes, fenced code (``` and ~~~, with a language), GitHub tables, thematic breaks; inline code,
// emphasis (* _ ** __ ***), ~~strike~~, [links](url), <autolinks>, bare http(s):// URLs and backslash
// escapes. Not supported: indented code blocks, HTML, reference links, footnotes; what is not
// understood stays as its literal text.
//
// Parsing is line by line and linear in the input (delimiter matching uses per-character bottoms,
// link destinations precomputed stops), so hostile input (100k '*', unclosed fences, deep nesting)
// costs no more than ordinary text. A Parser fed the complete lines of a growing reply can be
// copied and finished with the last, unfinished line: what streaming needs (see MarkdownBody).
#include <optional>

#include <QString>
#include <QVector>

namespace md {

enum Style : int {
    Bold = 1,
    Italic = 2,
    Strike = 4,
    Code = 8,
    Link = 16,
};

// A run of shown characters: source[start, end) with one style. A '\n' inside a span is a line
// break within the block.
struct Span {
    int start = 0;
    int end = 0;
    int style = 0;
    QString href;  // for Link
};

// A source line range, without its '\n'.
struct Line {
    int start = 0;
    int end = 0;
};

enum class Kind { Paragraph, Heading, Code, ListItem, Quote, Table, Rule };

enum class Align { None, Left, Center, Right };

struct Block {
    Kind kind = Kind::Paragraph;
    int start = 0;       // source range of the whole block, markup included
    int end = 0;
    int level = 0;       // Heading: 1..6
    int depth = 0;       // ListItem: nesting (1 = top); Paragraph/Code/Quote: the list depth it continues
    bool ordered = false;  // ListItem
    int number = 0;        // ListItem, ordered
    Line marker;           // ListItem: the marker ("-", "3.") in the source
    QString language;      // Code: the first word of the fence's info string
    bool closed = false;   // Code: the closing fence was seen
    QVector<Span> spans;   // Paragraph, Heading, ListItem, Quote
    QVector<Line> lines;   // Code: its lines verbatim (the fence's indentation removed)
    QVector<QVector<QVector<Span>>> rows;  // Table: rows of cells; rows[0] is the header
    QVector<Align> align;                  // Table: per column
};

class Parser {
public:
    // Feeds source[start, end), one line without its '\n'. newline: the offset of that '\n', -1 for
    // the text's last line.
    void addLine(const QString& source, int start, int end, int newline);
    // Closes what is open. The parser takes no more lines after it.
    void finish(const QString& source);
    const QVector<Block>& blocks() const { return m_blocks; }
    // Blocks finished so far are final: later lines never change them.
    int finishedCount() const { return int(m_blocks.size()); }
    // Drops the finished blocks (a copy that will only produce the tail keeps the rest cheap).
    void dropFinished() { m_blocks.clear(); }
    // The open fenced code block (its lines: the complete lines fed so far), or null: a writer can
    // append to it line by line instead of writing the whole block again.
    const Block* openCode() const { return m_open == Open::Code ? &m_cur : nullptr; }
    // Inside the open code block: the code of line source[start, end) (the fence's indentation and a
    // '\r' removed), or nullopt when the line is the closing fence.
    std::optional<Line> codeLine(const QString& source, int start, int end) const;

private:
    enum class Open { None, Paragraph, ListItem, Quote, Code, Table };
    struct Level {
        int marker;   // column of the list marker
        int content;  // column where the item's text begins
    };
    struct Seg {
        int start;
        int end;
        int newline;
    };

    void closeOpen(const QString& source);
    void startBlock(Open open, Kind kind, int start);
    bool tryFence(const QString& s, int start, int end, int newline, int indent);
    bool tryTable(const QString& s, int start, int end, int newline);
    bool tryListItem(const QString& s, int start, int end, int newline, int indent);
    int containerDepth(int indent) const;

    QVector<Block> m_blocks;
    Open m_open = Open::None;
    Block m_cur;
    QVector<Seg> m_segs;  // the open block's content lines
    QVector<Level> m_levels;
    bool m_blank = false;  // the previous line was blank
    QChar m_fenceChar;
    int m_fenceLen = 0;
    int m_fenceIndent = 0;
    int m_tableCols = 0;
};

// The whole text at once.
QVector<Block> parse(const QString& source);

// Inline content of source lines (joined by their '\n'): the spans to show.
QVector<Span> parseInline(const QString& source, const QVector<Line>& lines, const QVector<int>& newlines);

// A code block's text as the user would copy it: its lines joined by '\n'.
QString codeText(const QString& source, const Block& block);

}  // namespace md
