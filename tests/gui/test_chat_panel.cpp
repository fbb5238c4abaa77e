// Chat panel and conversations: the save/load round trip restores messages, tokens, settings, system
// prompt and model name; the file is written atomically; the view sets code as code, makes every
// generated token a link and colours it by probability on demand; Enter sends, Shift+Enter breaks the line.
#include <QCheckBox>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QTextBrowser>
#include <QtTest>

#include <limits>

#include "chat_controller.h"
#include "chat_document.h"
#include "chat_panel.h"
#include "conversation.h"
#include "gui_test_support.h"
#include "message_edit.h"
#include "theme.h"

namespace {

Conversation sample() {
    Conversation c;
    c.modelName = "SmolLM2 135M";
    c.systemPrompt = "Be brief.";
    c.sampling.temperature = 0.3f;
    c.sampling.top_k = 12;
    c.sampling.seed = 0x123456789ULL;
    c.sampling.stop = {"END"};
    c.messages.append({"user", "Show code", {}, {}});
    ChatEntry reply{"assistant", {}, {}, "eos"};
    const QStringList pieces = {"Here", ":\n", "```", "py\n", "x = 1", "\n```", "\nDone"};
    for (int i = 0; i < pieces.size(); ++i) {
        TokenRecord t;
        t.id = 10 + i;
        t.piece = pieces[i];
        t.p = 0.1f * float(i + 1);
        t.position = 20 + i;
        reply.tokens.append(t);
        reply.content += pieces[i];
    }
    c.messages.append(reply);
    return c;
}

}  // namespace

class TestChatPanel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { wb_gui_test::isolateSettings("test_chat_panel"); }

    void conversationJsonRoundTrip() {
        QTemporaryDir dir;
        const QString path = dir.filePath("c.json");
        QString error;
        const Conversation c = sample();
        QVERIFY2(c.save(path, &error), qPrintable(error));
        const std::optional<Conversation> back = Conversation::load(path, &error);
        QVERIFY2(back.has_value(), qPrintable(error));
        QCOMPARE(back->modelName, c.modelName);
        QCOMPARE(back->systemPrompt, c.systemPrompt);
        QCOMPARE(back->messages.size(), 2);
        QCOMPARE(back->messages[1].content, c.messages[1].content);
        QCOMPARE(back->messages[1].stopReason, QString("eos"));
        QCOMPARE(back->messages[1].tokens.size(), c.messages[1].tokens.size());
        QCOMPARE(back->messages[1].tokens[3].id, 13);
        QCOMPARE(back->messages[1].tokens[3].position, 23);
        QCOMPARE(back->sampling.temperature, 0.3f);
        QCOMPARE(back->sampling.top_k, 12);
        QCOMPARE(back->sampling.seed, 0x123456789ULL);
        QCOMPARE(back->sampling.stop.size(), size_t(1));
        // Atomic write: no temporary file left beside it.
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 1);
    }

    void rejectsForeignOrBrokenFiles() {
        QTemporaryDir dir;
        QFile f(dir.filePath("x.json"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("{\"format\": \"something-else\"}");
        f.close();
        QString error;
        QVERIFY(!Conversation::load(f.fileName(), &error));
        QVERIFY(error.contains("not a WhiteBox conversation"));
        QVERIFY(!Conversation::load(dir.filePath("missing.json"), &error));
    }

    // Through the controller: load restores messages, settings and system prompt into the views.
    void controllerLoadRestoresEverything() {
        QTemporaryDir dir;
        const QString path = dir.filePath("c.json");
        QVERIFY(sample().save(path, nullptr));
        ChatController controller;
        ChatPanel panel(&controller);
        QSignalSpy sampling(&controller, &ChatController::samplingParamsRestored);
        QString error;
        QVERIFY2(controller.loadConversation(path, &error), qPrintable(error));
        QCOMPARE(sampling.count(), 1);
        QCOMPARE(controller.conversation().messages.size(), 2);
        QCOMPARE(controller.worker()->samplingParams().top_k, 12);
        QCOMPARE(panel.systemPromptEdit()->toPlainText(), QString("Be brief."));
        QVERIFY(panel.view()->toPlainText().contains("x = 1"));
        const QString again = dir.filePath("again.json");
        QVERIFY(controller.saveConversation(again, &error));
        QCOMPARE(Conversation::load(again, &error)->messages[1].content, sample().messages[1].content);
    }

    void tokensAreLinksAndCodeIsCode() {
        QTextDocument doc;
        ChatDocument writer(&doc);
        const Conversation c = sample();
        writer.rebuild(c);
        QVERIFY(doc.toPlainText().contains("Show code"));
        // Find the fragment of token 4 ("x = 1"): its anchor and its fixed-pitch code font.
        bool found = false;
        for (QTextBlock b = doc.begin(); b.isValid(); b = b.next())
            for (auto it = b.begin(); !it.atEnd(); ++it) {
                const QTextFragment f = it.fragment();
                if (f.text() != "x = 1") continue;
                found = true;
                QCOMPARE(f.charFormat().anchorHref(), QString("tok:1:4"));
                QVERIFY(f.charFormat().fontFixedPitch() || f.charFormat().font().fixedPitch() ||
                        f.charFormat().font().styleHint() == QFont::TypeWriter || f.charFormat().background().style() != Qt::NoBrush);
            }
        QVERIFY(found);
        int m = -1, t = -1;
        QVERIFY(ChatDocument::parseTokenHref("tok:1:4", &m, &t));
        QCOMPARE(m, 1);
        QCOMPARE(t, 4);
        QVERIFY(!ChatDocument::parseTokenHref("https://x", &m, &t));
        QCOMPARE(writer.messageAt(0), 0);
        QCOMPARE(writer.messageAt(doc.characterCount() - 1), 1);
    }

    void probabilityColouring() {
        QTextDocument doc;
        ChatDocument writer(&doc);
        writer.setColorByProbability(true);
        writer.rebuild(sample());
        QTextCursor c(&doc);
        c.setPosition(doc.toPlainText().indexOf("Here") + 1);
        QCOMPARE(c.charFormat().background().color(), Theme::probabilityColor(0.1f));
        QVERIFY(Theme::probabilityColor(0.05f).hueF() < Theme::probabilityColor(0.95f).hueF());
    }

    // A token whose p nobody knows (a remote server's without logprobs, id -1) has no colour (not the
    // red of p = 0) and a tooltip with "—" for both, not "nan" and "-1".
    void unknownProbabilityIsUncoloured() {
        Conversation c = sample();
        c.messages[1].tokens[0].p = std::numeric_limits<float>::quiet_NaN();
        c.messages[1].tokens[0].id = -1;
        QTextDocument doc;
        ChatDocument writer(&doc);
        writer.setColorByProbability(true);
        writer.rebuild(c);
        QTextCursor cur(&doc);
        cur.setPosition(doc.toPlainText().indexOf("Here") + 1);
        QCOMPARE(cur.charFormat().background().style(), Qt::NoBrush);
        const QString tip = cur.charFormat().toolTip();
        QVERIFY2(tip.contains(QStringLiteral("p = \u2014")) && tip.contains(QStringLiteral("id \u2014")), qPrintable(tip));
        QVERIFY2(!tip.contains(QStringLiteral("nan")) && !tip.contains(QStringLiteral("-1")), qPrintable(tip));
        // A known one keeps its colour and numbers.
        cur.setPosition(doc.toPlainText().indexOf("Done") + 1);
        QVERIFY(cur.charFormat().background().style() != Qt::NoBrush);
        QVERIFY2(cur.charFormat().toolTip().contains(QStringLiteral("p = 0.700 · id 16")), qPrintable(cur.charFormat().toolTip()));
    }

    void enterSendsShiftEnterBreaksTheLine() {
        ChatController controller;
        ChatPanel panel(&controller);
        MessageEdit* input = panel.input();
        QSignalSpy send(input, &MessageEdit::sendRequested);
        QTest::keyClicks(input, "line one");
        QTest::keyClick(input, Qt::Key_Return, Qt::ShiftModifier);
        QTest::keyClicks(input, "line two");
        QCOMPARE(send.count(), 0);
        QCOMPARE(input->toPlainText(), QString("line one\nline two"));
        QTest::keyClick(input, Qt::Key_Return);
        QCOMPARE(send.count(), 1);
    }

    void editPutsTheMessageInTheBox() {
        QTemporaryDir dir;
        QVERIFY(sample().save(dir.filePath("c.json"), nullptr));
        ChatController controller;
        ChatPanel panel(&controller);
        QVERIFY(controller.loadConversation(dir.filePath("c.json"), nullptr));
        panel.beginEdit(0);
        QCOMPARE(panel.editingIndex(), 0);
        QCOMPARE(panel.input()->toPlainText(), QString("Show code"));
        panel.beginEdit(1);  // not a user message: ignored
        QCOMPARE(panel.editingIndex(), 0);
        panel.cancelEdit();
        QCOMPARE(panel.editingIndex(), -1);
    }

    void clickingATokenAsksForTheInspector() {
        QTemporaryDir dir;
        QVERIFY(sample().save(dir.filePath("c.json"), nullptr));
        ChatController controller;
        ChatPanel panel(&controller);
        QVERIFY(controller.loadConversation(dir.filePath("c.json"), nullptr));
        QSignalSpy clicked(&panel, &ChatPanel::tokenClicked);
        Q_EMIT panel.view()->anchorClicked(QUrl("tok:1:2"));
        QCOMPARE(clicked.count(), 1);
        QCOMPARE(clicked.at(0).at(0).toInt(), 1);
        QCOMPARE(clicked.at(0).at(1).toInt(), 2);
    }
};

QTEST_MAIN(TestChatPanel)
#include "test_chat_panel.moc"
