// The message box against the context, with the real default model: the counter shows the length of
// the prompt the next send builds, equal to the engine's own build_chat_prompt of the same messages;
// a message that leaves the reply no room is refused before it enters the history and stays in the
// box; a prompt refused by the worker (sent past the panel) leaves the history too and comes back to
// the box; in both cases the next message gets its reply.
#include <QFileInfo>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QtTest>

#include "chat_controller.h"
#include "chat_panel.h"
#include "context_budget.h"
#include "engine/chat_prompt.h"
#include "engine/model.h"
#include "gui_test_support.h"
#include "message_edit.h"
#include "model/model_paths.h"
#include "prompt_counter.h"

namespace {

constexpr int kTimeoutMs = 180000;
constexpr int kContext = 512;

int engineCount(const wb::Model& m, const std::vector<wb::ChatMessage>& messages) {
    return int(wb::build_chat_prompt(m, messages, true).ids.size());
}

QString longText() {
    return QString("Please remember the following words carefully: ") + QString("apple banana cherry ").repeated(200);
}

}  // namespace

class TestChatContext : public QObject {
    Q_OBJECT

    std::unique_ptr<wb::Model> m_model;

    void loadInto(ChatController& controller) {
        QSignalSpy loaded(&controller, &ChatController::modelLoaded);
        controller.setContextSize(kContext);
        controller.loadModel(QString::fromStdString(wb::default_model_path()));
        QVERIFY(loaded.wait(kTimeoutMs));
        wb::SamplingParams p;
        p.temperature = 0.0f;
        p.max_tokens = 6;
        controller.setSamplingParams(p);
    }

    // Waits until the counter holds a count of what the box holds now.
    static void waitCounted(ChatPanel& panel) {
        QTRY_VERIFY_WITH_TIMEOUT(panel.promptCounter()->isFresh(), kTimeoutMs);
    }

private Q_SLOTS:
    void initTestCase() {
        wb_gui_test::isolateSettings("test_chat_context");
        const QString path = QString::fromStdString(wb::default_model_path());
        if (!QFileInfo::exists(path)) QFAIL(qPrintable(QString("default model missing at %1: run scripts/fetch-models.sh").arg(path)));
        m_model = wb::Model::load(path.toStdString());
    }

    void counterEqualsTheEnginesCount() {
        ChatController controller;
        ChatPanel panel(&controller);
        loadInto(controller);
        QTest::keyClicks(panel.input(), "How many tokens is this?");
        waitCounted(panel);
        int expected = engineCount(*m_model, {{"user", "How many tokens is this?"}});
        QCOMPARE(panel.promptCounter()->tokens(), expected);
        QCOMPARE(panel.tokenCountLabel()->text(), context_budget::counterText(expected, kContext));
        QVERIFY(panel.tokenCountLabel()->text().contains(QString("/ %1 tokens").arg(QLocale().toString(kContext))));
        // The system prompt is part of the prompt: the count follows it.
        panel.systemPromptEdit()->setPlainText("You are terse.");
        QVERIFY(!panel.promptCounter()->isFresh());
        waitCounted(panel);
        expected = engineCount(*m_model, {{"system", "You are terse."}, {"user", "How many tokens is this?"}});
        QCOMPARE(panel.promptCounter()->tokens(), expected);
        QCOMPARE(panel.tokenCountLabel()->text(), context_budget::counterText(expected, kContext));
    }

    void oversizedMessageIsRefusedAndTheNextWorks() {
        ChatController controller;
        ChatPanel panel(&controller);
        loadInto(controller);
        QSignalSpy appended(&controller, &ChatController::messageAppended);
        const QString big = longText();
        panel.input()->setPlainText(big);
        QTest::keyClick(panel.input(), Qt::Key_Return);  // sends once the count is in
        QTRY_VERIFY_WITH_TIMEOUT(panel.noticeLabel()->isVisibleTo(&panel), kTimeoutMs);
        const int tokens = engineCount(*m_model, {{"user", big.toStdString()}});
        QVERIFY(tokens + context_budget::replyRoom(kContext) > kContext);
        QCOMPARE(panel.noticeLabel()->text(), context_budget::refusal(tokens, kContext));
        QVERIFY(panel.noticeLabel()->text().contains("New chat"));
        QCOMPARE(appended.count(), 0);
        QVERIFY(controller.conversation().messages.isEmpty());
        QVERIFY(!controller.isGenerating());
        QCOMPARE(panel.input()->toPlainText(), big);

        // The next, shorter message gets its reply.
        QSignalSpy finished(&controller, &ChatController::generationFinished);
        panel.input()->setPlainText("Say hi.");
        QVERIFY(!panel.noticeLabel()->isVisibleTo(&panel));
        QTest::keyClick(panel.input(), Qt::Key_Return);
        QVERIFY(finished.wait(kTimeoutMs));
        QVERIFY(finished.last().at(0).value<GenerationSummary>().reason != wb::StopReason::ERROR);
        QCOMPARE(controller.conversation().messages.size(), 2);
        QCOMPARE(controller.conversation().messages[0].content, QString("Say hi."));
        QVERIFY(!controller.conversation().messages[1].tokens.isEmpty());
    }

    // Past the panel's check (the controller called directly), the worker refuses the same prompt:
    // the message leaves the history and comes back to the box, and the conversation goes on.
    void workerRefusalDoesNotGetStuck() {
        ChatController controller;
        ChatPanel panel(&controller);
        loadInto(controller);
        QSignalSpy finished(&controller, &ChatController::generationFinished);
        QSignalSpy refused(&controller, &ChatController::messageRefused);
        const QString big = longText();
        QVERIFY(controller.sendMessage(big));
        QVERIFY(finished.wait(kTimeoutMs));
        const GenerationSummary s = finished.last().at(0).value<GenerationSummary>();
        QVERIFY(s.promptTooLong);
        QCOMPARE(s.promptTokens, engineCount(*m_model, {{"user", big.toStdString()}}));
        QCOMPARE(s.contextSize, kContext);
        QCOMPARE(refused.count(), 1);
        QCOMPARE(refused.at(0).at(0).toString(), big);
        QVERIFY(controller.conversation().messages.isEmpty());
        QCOMPARE(panel.input()->toPlainText(), big);
        QVERIFY(panel.noticeLabel()->isVisibleTo(&panel));

        QVERIFY(controller.sendMessage("Say hi."));
        QVERIFY(finished.wait(kTimeoutMs));
        QVERIFY(finished.last().at(0).value<GenerationSummary>().reason != wb::StopReason::ERROR);
        QCOMPARE(controller.conversation().messages.size(), 2);
    }
};

QTEST_MAIN(TestChatContext)
#include "test_chat_context.moc"
