// Replies rendered as Markdown in the chat view (ChatDocument + MarkdownBody): headings, lists, tables
// and code become formatted blocks, markup is not shown, every rendered character is the anchor of
// the token it came from (a click opens that token) and takes its probability colour, Copy copies
// exactly the code, a reply can be shown as raw text, a reply streamed token by token ends up as the
// full render, streaming 2,000 tokens stays linear, and the end of a 20,000-token reply does not lay
// the reply out again.
#include <QApplication>
#include <QClipboard>
#include <QAbstractTextDocumentLayout>
#include <QElapsedTimer>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextList>
#include <QTextTable>
#include <QtTest>

#include "chat_controller.h"
#include "chat_document.h"
#include "chat_panel.h"
#include "conversation.h"
#include "gui_test_support.h"
#include "markdown_writer.h"
#include "theme.h"

namespace {

const QString kReply = QStringLiteral(
    "# Plan\n"
    "Some **bold** words and `inline`.\n"
    "\n"
    "- first item\n"
    "- second item\n"
    "\n"
    "1. one\n"
    "2. two\n"
    "\n"
    "| Name | Size |\n"
    "|------|-----:|\n"
    "| alpha | 10 |\n"
    "\n"
    "```python\n"
    "x = 1\n"
    "print(x)\n"
    "```\n"
    "See [docs](https://example.org/d).");

// A reply cut into pieces of 1 to 4 characters, so tokens straddle markup and text.
ChatEntry replyOf(const QString& text) {
    ChatEntry reply{"assistant", {}, {}, "eos"};
    int i = 0, n = 0;
    while (i < text.size()) {
        const int len = std::min<int>(1 + n % 4, int(text.size()) - i);
        TokenRecord t;
        t.id = 1000 + n;
        t.piece = text.mid(i, len);
        t.p = float((n * 37) % 100) / 100.0f;
        reply.tokens.append(t);
        reply.content += t.piece;
        i += len;
        ++n;
    }
    return reply;
}

Conversation conversationWith(const QString& reply) {
    Conversation c;
    c.messages.append({"user", "Show me **markdown**", {}, {}});
    c.messages.append(replyOf(reply));
    return c;
}

// The token whose piece holds source offset `offset` of the reply.
int tokenOf(const ChatEntry& reply, int offset) {
    int start = 0;
    for (int t = 0; t < reply.tokens.size(); ++t) {
        start += int(reply.tokens[t].piece.size());
        if (offset < start) return t;
    }
    return -1;
}

QTextBlock blockWithText(QTextDocument& doc, const QString& text) {
    for (QTextBlock b = doc.begin(); b.isValid(); b = b.next())
        if (b.text() == text) return b;
    return {};
}

QTextCharFormat formatAt(QTextDocument& doc, const QString& text) {
    QTextCursor c(&doc);
    c.setPosition(doc.toPlainText().indexOf(text) + 1);
    return c.charFormat();
}

QList<QTextTable*> tables(QTextDocument& doc) {
    QList<QTextTable*> out;
    for (QTextFrame* f : doc.rootFrame()->childFrames())
        if (auto* t = qobject_cast<QTextTable*>(f)) out << t;
    return out;
}

// Every fragment of the document after position `from`: (text, format).
QVector<QPair<QString, QTextCharFormat>> fragmentsFrom(QTextDocument& doc, int from) {
    QVector<QPair<QString, QTextCharFormat>> out;
    for (QTextBlock b = doc.begin(); b.isValid(); b = b.next())
        for (auto it = b.begin(); !it.atEnd(); ++it) {
            const QTextFragment f = it.fragment();
            if (f.position() >= from) out.append({f.text(), f.charFormat()});
        }
    return out;
}

}  // namespace

class TestChatMarkdown : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { wb_gui_test::isolateSettings("test_chat_markdown"); }

    void blocksAreFormattedAndMarkupHidden() {
        QTextDocument doc;
        ChatDocument writer(&doc);
        writer.rebuild(conversationWith(kReply));
        const QString shown = doc.toPlainText();
        // Markup is gone; the text stays.
        for (const char* markup : {"# Plan", "**bold**", "`inline`", "```", "|---", "- first", "[docs]", "(https://"})
            QVERIFY2(!shown.contains(markup), markup);
        // The user's message is shown as typed.
        QVERIFY(shown.contains("Show me **markdown**"));

        const QTextBlock heading = blockWithText(doc, "Plan");
        QVERIFY(heading.isValid());
        QCOMPARE(heading.blockFormat().headingLevel(), 1);
        QCOMPARE(formatAt(doc, "Plan").fontWeight(), int(QFont::Bold));
        QCOMPARE(formatAt(doc, "bold").fontWeight(), int(QFont::Bold));
        QVERIFY(formatAt(doc, "words").fontWeight() != int(QFont::Bold));
        QVERIFY(formatAt(doc, "inline").fontFixedPitch());
        QCOMPARE(formatAt(doc, "inline").background().color(), Theme::color(Theme::Role::CodeBackground));

        const QTextBlock first = blockWithText(doc, "first item"), second = blockWithText(doc, "second item");
        QVERIFY(first.textList() && first.textList() == second.textList());
        QCOMPARE(first.textList()->format().style(), QTextListFormat::ListDisc);
        QCOMPARE(first.textList()->count(), 2);
        const QTextBlock one = blockWithText(doc, "one");
        QVERIFY(one.textList());
        QCOMPARE(one.textList()->format().style(), QTextListFormat::ListDecimal);
        QCOMPARE(one.textList()->count(), 2);

        const QList<QTextTable*> t = tables(doc);
        QCOMPARE(t.size(), 1);
        QCOMPARE(t[0]->rows(), 2);
        QCOMPARE(t[0]->columns(), 2);
        QCOMPARE(t[0]->cellAt(1, 0).firstCursorPosition().block().text(), QString("alpha"));
        QCOMPARE(t[0]->cellAt(1, 1).firstCursorPosition().block().blockFormat().alignment() & Qt::AlignHorizontal_Mask, Qt::AlignRight);
        QCOMPARE(t[0]->cellAt(0, 0).firstCursorPosition().charFormat().fontWeight(), int(QFont::Bold));

        const QTextBlock code = blockWithText(doc, "x = 1");
        QVERIFY(code.isValid());
        QVERIFY(code.blockFormat().hasProperty(QTextFormat::BlockCodeFence));
        QCOMPARE(code.blockFormat().background().color(), Theme::color(Theme::Role::CodeBackground));
        QVERIFY(code.begin().fragment().charFormat().fontFixedPitch());
        QCOMPARE(code.next().text(), QString("print(x)"));
        // The label above the code names the language and carries the Copy link.
        QVERIFY(code.previous().text().startsWith("python"));
        QVERIFY(code.previous().text().endsWith("Copy"));

        // The link is styled, keeps its URL and its characters stay token anchors.
        const QTextCharFormat link = formatAt(doc, "docs");
        QCOMPARE(link.foreground().color(), Theme::color(Theme::Role::Link));
        QCOMPARE(link.property(markdown_format::LinkHref).toString(), QString("https://example.org/d"));
        QVERIFY(link.anchorHref().startsWith("tok:1:"));
    }

    // Each rendered character of the reply is the anchor of exactly the token it came from.
    void everyCharacterIsItsTokensAnchor() {
        QTextDocument doc;
        ChatDocument writer(&doc);
        const Conversation c = conversationWith(kReply);
        writer.rebuild(c);
        const ChatEntry& reply = c.messages[1];
        const int bodyStart = doc.toPlainText().indexOf("Plan");
        int cursor = 0;
        QString shown;
        for (const auto& [text, format] : fragmentsFrom(doc, bodyStart)) {
            if (format.property(markdown_format::UiLabel).toBool()) continue;  // "python", "Copy"
            int message = -1, token = -1;
            QVERIFY2(ChatDocument::parseTokenHref(format.anchorHref(), &message, &token), qPrintable(text));
            QCOMPARE(message, 1);
            // The fragment's characters come, in order, from the reply's source at this token.
            const QString plain = QString(text).replace(QChar::LineSeparator, '\n');
            // In order, within the token's piece (markup between them is skipped).
            int tokenStart = 0;
            for (int t = 0; t < token; ++t) tokenStart += int(reply.tokens[t].piece.size());
            cursor = std::max(cursor, tokenStart);
            for (QChar ch : plain) {
                cursor = int(reply.content.indexOf(ch, cursor));
                QVERIFY2(cursor >= 0 && tokenOf(reply, cursor) == token, qPrintable(text));
                ++cursor;
                shown += ch;
            }
        }
        // Exactly the reply less its markup.
        QCOMPARE(shown, QString("PlanSome bold words and inline.first itemsecond itemonetwoNameSizealpha10x = 1print(x)See docs."));
    }

    void clickingRenderedTextOpensItsToken() {
        QTemporaryDir dir;
        const Conversation c = conversationWith(kReply);
        QVERIFY(c.save(dir.filePath("c.json"), nullptr));
        ChatController controller;
        ChatPanel panel(&controller);
        panel.resize(900, 700);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QVERIFY(controller.loadConversation(dir.filePath("c.json"), nullptr));
        QSignalSpy clicked(&panel, &ChatPanel::tokenClicked);
        QTextBrowser* view = panel.view();
        QTextDocument* doc = view->document();
        // A real mouse click on the 'o' of "bold".
        const int pos = doc->toPlainText().indexOf("bold") + 1;
        QTextCursor cur(doc);
        cur.setPosition(pos + 1);
        view->ensureCursorVisible();
        view->setTextCursor(cur);
        view->ensureCursorVisible();
        const QRect r = view->cursorRect(cur);
        QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, QPoint(r.left() - 2, r.center().y()));
        QTRY_COMPARE(clicked.count(), 1);
        QCOMPARE(clicked.at(0).at(0).toInt(), 1);
        QCOMPARE(clicked.at(0).at(1).toInt(), tokenOf(c.messages[1], int(kReply.indexOf("bold")) + 1));
    }

    void colouringAppliesToRenderedText() {
        QTextDocument doc;
        ChatDocument writer(&doc);
        writer.setColorByProbability(true);
        const Conversation c = conversationWith(kReply);
        writer.rebuild(c);
        const ChatEntry& reply = c.messages[1];
        for (const QString& word : {QString("bold"), QString("first"), QString("alpha"), QString("print"), QString("docs")}) {
            const float p = reply.tokens[tokenOf(reply, int(kReply.indexOf(word)))].p;
            QTextCursor cur(&doc);
            cur.setPosition(doc.toPlainText().indexOf(word) + 1);
            QCOMPARE(cur.charFormat().background().color(), Theme::probabilityColor(p));
        }
    }

    void copyButtonCopiesExactlyTheCode() {
        QTemporaryDir dir;
        const Conversation c = conversationWith(kReply);
        QVERIFY(c.save(dir.filePath("c.json"), nullptr));
        ChatController controller;
        ChatPanel panel(&controller);
        QVERIFY(controller.loadConversation(dir.filePath("c.json"), nullptr));
        QString href;
        for (const auto& [text, format] : fragmentsFrom(*panel.view()->document(), 0))
            if (text == "Copy") href = format.anchorHref();
        QVERIFY(href.startsWith("copy:1:"));
        QApplication::clipboard()->setText("before");
        Q_EMIT panel.view()->anchorClicked(QUrl(href));
        QCOMPARE(QApplication::clipboard()->text(), QString("x = 1\nprint(x)"));
    }

    void rawTextToggle() {
        QTemporaryDir dir;
        const Conversation c = conversationWith(kReply);
        QVERIFY(c.save(dir.filePath("c.json"), nullptr));
        ChatController controller;
        ChatPanel panel(&controller);
        QVERIFY(controller.loadConversation(dir.filePath("c.json"), nullptr));
        QTextDocument* doc = panel.view()->document();
        QVERIFY(!doc->toPlainText().contains("```python"));
        panel.setRawText(1, true);
        QVERIFY(panel.chatDocument()->isRawText(1));
        QVERIFY(doc->toPlainText().contains(kReply));
        QVERIFY(tables(*doc).isEmpty());
        // Raw text keeps the token anchors.
        QCOMPARE(formatAt(*doc, "**bold").anchorHref().left(6), QString("tok:1:"));
        panel.setRawText(1, false);
        QVERIFY(!doc->toPlainText().contains("```python"));
        QCOMPARE(tables(*doc).size(), 1);
    }

    // Token by token, as the controller streams it, the view ends up exactly as a full render.
    void streamingEndsAsTheFullRender() {
        const Conversation full = conversationWith(kReply);
        QTextDocument streamedDoc, fullDoc;
        ChatDocument streamed(&streamedDoc), whole(&fullDoc);
        Conversation c;
        c.messages.append(full.messages[0]);
        c.messages.append({"assistant", {}, {}, {}});
        streamed.rebuild(c);
        for (int t = 0; t < full.messages[1].tokens.size(); ++t) {
            c.messages[1].tokens.append(full.messages[1].tokens[t]);
            c.messages[1].content += full.messages[1].tokens[t].piece;
            streamed.appendToken(c, 1, t);
            // While it streams, the unfinished fence or table never shows its markup for long:
            // what is shown is always the render of the text so far.
            if (t % 17 == 0) {
                QTextDocument partial;
                ChatDocument(&partial).rebuild(c);
                QCOMPARE(streamedDoc.toPlainText(), partial.toPlainText());
            }
        }
        whole.rebuild(full);
        QCOMPARE(streamedDoc.toPlainText(), fullDoc.toPlainText());
        QCOMPARE(streamedDoc.toHtml(), fullDoc.toHtml());
    }

    // 2,000 tokens streamed: prose, lists, a long code block and a table. Linear work keeps it to a
    // few seconds on a slow machine; re-rendering the whole reply per token takes far longer.
    void streamingTwoThousandTokensIsLinear() {
        QString text;
        for (int i = 0; text.size() < 8000; ++i) {
            text += QString("## Part %1\nSome *prose* with `code` and **bold** words, number %1.\n\n- item %1\n- item b\n\n").arg(i);
            if (i % 4 == 0) text += "```cpp\n" + QString("int x = %1; // line\n").arg(i).repeated(12) + "```\n\n";
            if (i % 5 == 0) text += "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n";
        }
        ChatEntry reply{"assistant", {}, {}, {}};
        for (int i = 0; i < 2000; ++i) {
            TokenRecord t;
            t.piece = text.mid(i * 4, 4);
            t.p = 0.5f;
            reply.tokens.append(t);
        }
        Conversation c;
        c.messages.append({"user", "go", {}, {}});
        c.messages.append({"assistant", {}, {}, {}});
        QTextDocument doc;
        ChatDocument writer(&doc);
        writer.rebuild(c);
        QElapsedTimer timer;
        timer.start();
        for (int t = 0; t < reply.tokens.size(); ++t) {
            c.messages[1].tokens.append(reply.tokens[t]);
            c.messages[1].content += reply.tokens[t].piece;
            writer.appendToken(c, 1, t);
        }
        const qint64 ms = timer.elapsed();
        qInfo("streamed %d tokens (%lld characters) in %lld ms", int(reply.tokens.size()),
              qint64(c.messages[1].content.size()), ms);
        QTextDocument fullDoc;
        ChatDocument(&fullDoc).rebuild(c);
        QCOMPARE(doc.toPlainText(), fullDoc.toPlainText());
        QVERIFY2(ms < 8000, qPrintable(QString("%1 ms").arg(ms)));
    }

    // A 20,000-token reply (80,000 characters of headings, prose, lists, code and tables) on screen:
    // the first 19,700 tokens are rendered at once (as when a conversation opens), the last 300
    // stream in. Its end (messageFinished) used to re-render the whole reply, about a second of the
    // GUI thread for this size on a loaded 2-core machine: now the end changes nothing when the final
    // text is what streamed, and only the last block when the engine released held-back text at the
    // end. The result is the full render either way. The times are printed, not asserted.
    void theEndOfALongReplyIsNotLaidOutAgain() {
        QString text;
        for (int i = 0; text.size() < 80000; ++i) {
            text += QString("## Part %1\nSome *prose* with `code` and **bold** words, number %1.\n\n- item %1\n- item b\n\n").arg(i);
            if (i % 4 == 0) text += "```cpp\n" + QString("int x = %1; // line\n").arg(i).repeated(12) + "```\n\n";
            if (i % 5 == 0) text += "| a | b |\n|---|---|\n| 1 | 2 |\n\n";
        }
        // It ends in a paragraph of a few hundred characters: the open tail a streamed token rewrites.
        text.truncate(text.lastIndexOf("## Part", 79700));
        for (text += "A last paragraph"; text.size() < 80000;) text += " and more words";
        text.truncate(80000);
        QVector<TokenRecord> tokens;
        for (int i = 0; i * 4 < text.size(); ++i) {
            TokenRecord t;
            t.id = i;
            t.piece = text.mid(i * 4, 4);
            t.p = 0.5f;
            tokens.append(t);
        }
        QCOMPARE(tokens.size(), 20000);
        constexpr int kStreamed = 300;
        Conversation c;
        c.messages.append({"user", "go", {}, {}});
        c.messages.append({"assistant", {}, {}, {}});
        for (int t = 0; t < tokens.size() - kStreamed; ++t) {
            c.messages[1].tokens.append(tokens[t]);
            c.messages[1].content += tokens[t].piece;
        }
        QTextBrowser view;
        view.resize(700, 600);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        ChatDocument writer(view.document());
        const auto toEnd = [&view] {
            view.verticalScrollBar()->setValue(view.verticalScrollBar()->maximum());  // lays the reply out
            QApplication::processEvents();
        };
        QElapsedTimer timer;
        timer.start();
        writer.rebuild(c);
        toEnd();
        const qint64 renderMs = timer.restart();
        for (int t = int(tokens.size()) - kStreamed; t < tokens.size(); ++t) {
            c.messages[1].tokens.append(tokens[t]);
            c.messages[1].content += tokens[t].piece;
            writer.appendToken(c, 1, t);
            toEnd();
        }
        const qint64 streamMs = timer.restart();
        qint64 changed = 0;
        connect(view.document(), &QTextDocument::contentsChange, this, [&changed](int, int removed, int added) { changed += removed + added; });

        writer.finishLastMessage(c);
        toEnd();
        const qint64 sameMs = timer.restart();
        const qint64 changedSame = changed;
        // The engine held " (the end)." back for a possible stop string and released it at the end.
        c.messages[1].content += " (the end).";
        changed = 0;
        writer.finishLastMessage(c);
        toEnd();
        const qint64 releasedMs = timer.restart();
        qInfo("19,700 tokens rendered and laid out in %lld ms; the last %d streamed in %lld ms (%.2f ms a token); "
              "the end %lld ms (%lld characters changed); the end with released text %lld ms (%lld characters changed)",
              renderMs, kStreamed, streamMs, double(streamMs) / kStreamed, sameMs, changedSame, releasedMs, changed);
        QCOMPARE(changedSame, 0);
        QVERIFY2(changed > 0 && changed < 2000, qPrintable(QString("%1 characters changed").arg(changed)));
        QTextDocument fullDoc;
        ChatDocument(&fullDoc).rebuild(c);
        QCOMPARE(view.document()->toPlainText(), fullDoc.toPlainText());
        QVERIFY(view.document()->toPlainText().endsWith("(the end)."));
        QCOMPARE(view.document()->toHtml(), fullDoc.toHtml());
    }

    // A table wider than the chat (ten columns, long words, a long unbroken link) is fitted to the
    // view's width: its cells wrap, the view scrolls no sideways and the panel asks for no more room.
    void aWideTableFitsTheView() {
        QString table = "| " + QStringList(QVector<QString>(10, "Column heading")).join(" | ") + " |\n|";
        for (int i = 0; i < 10; ++i) table += "---|";
        table += "\n";
        for (int r = 0; r < 3; ++r) {
            table += "|";
            for (int col = 0; col < 10; ++col)
                table += col == 3 ? " https://example.org/a/very/long/path/without/any/break/" + QString("x").repeated(120) + " |"
                                  : " incomprehensibilities characteristically |";
            table += "\n";
        }
        QTemporaryDir dir;
        QVERIFY(conversationWith("Here:\n\n" + table + "\nDone.").save(dir.filePath("c.json"), nullptr));
        ChatController controller;
        ChatPanel panel(&controller);
        panel.resize(700, 600);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        const QSize minimumBefore = panel.minimumSizeHint();
        QVERIFY(controller.loadConversation(dir.filePath("c.json"), nullptr));
        QTextBrowser* view = panel.view();
        QCOMPARE(tables(*view->document()).size(), 1);
        QApplication::processEvents();
        const qreal width = view->document()->documentLayout()->documentSize().width();
        QVERIFY2(width <= view->viewport()->width() + 1,
                 qPrintable(QString("document %1 wide in a %2 wide view").arg(width).arg(view->viewport()->width())));
        QCOMPARE(view->horizontalScrollBar()->maximum(), 0);
        QCOMPARE(panel.minimumSizeHint(), minimumBefore);
        QCOMPARE(panel.size(), QSize(700, 600));
    }

    // One code block that stays open for 1,500 lines (a model writing a long file): each token
    // appends to it; the block is not written again per token. The characters inserted stay within a
    // small multiple of the reply's length (rewriting the open block per token inserts ~n^2/8), and
    // what is shown is always the render of the text so far.
    void aLongOpenCodeBlockIsAppendedNotRewritten() {
        QString text = "Here is the file:\n\n```cpp\n";
        for (int i = 0; i < 1500; ++i) text += QString("int v%1 = %1;\n").arg(i);
        text += "```\nDone.";
        const ChatEntry full = replyOf(text);
        const int closing = tokenOf(full, int(text.lastIndexOf("```")));
        Conversation c;
        c.messages.append({"user", "go", {}, {}});
        c.messages.append({"assistant", {}, {}, {}});
        QTextDocument doc;
        ChatDocument writer(&doc);
        writer.rebuild(c);
        QElapsedTimer timer;
        timer.start();
        qint64 checking = 0;
        for (int t = 0; t < full.tokens.size(); ++t) {
            c.messages[1].tokens.append(full.tokens[t]);
            c.messages[1].content += full.tokens[t].piece;
            writer.appendToken(c, 1, t);
            // Now and then, and around the closing fence (typed, then ended by its newline).
            if (t % 9999 == 0 || std::abs(t - closing) <= 1) {
                const qint64 before = timer.elapsed();
                QTextDocument partial;
                ChatDocument(&partial).rebuild(c);
                QCOMPARE(doc.toPlainText(), partial.toPlainText());
                checking += timer.elapsed() - before;
            }
        }
        const qint64 written = writer.markdownBody().writtenCharacters();
        qInfo("%d tokens, %lld characters: %lld characters inserted in %lld ms", int(full.tokens.size()),
              qint64(text.size()), written, timer.elapsed() - checking);
        // Per token at most the line being written is replaced (lines here are under 20 characters),
        // and the block is written whole once when it closes; a rewrite per token is ~10,000 times this.
        QVERIFY2(written < 10 * text.size(), qPrintable(QString("%1 characters inserted for %2").arg(written).arg(text.size())));
        QTextDocument fullDoc;
        ChatDocument(&fullDoc).rebuild(c);
        QCOMPARE(doc.toHtml(), fullDoc.toHtml());
    }
};

QTEST_MAIN(TestChatMarkdown)
#include "test_chat_markdown.moc"
