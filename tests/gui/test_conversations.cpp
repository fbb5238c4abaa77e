// Conversations and branches in the main window with the real default model (issue #15 items 2, 3):
// every reply is saved in the conversations folder at once and a new window (a restart) lists it and
// restores its messages, per-token data, system prompt, sampling settings and model name; New chat
// and quitting lose nothing; the sidebar renames, deletes with undo and searches. Regenerate, Edit
// and resend and "Continue with this token" in the token inspector make sibling versions, the
// "< 2/3 >" switcher changes between them, the fork reuses the cached prefix, and the whole tree is
// in the saved file.
#include <QDir>
#include <QFileInfo>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTextBrowser>
#include <QtTest>

#include "chat_controller.h"
#include "chat_panel.h"
#include "conversation_list.h"
#include "conversation_store.h"
#include "gui_test_support.h"
#include "main_window.h"
#include "message_edit.h"
#include "model/model_paths.h"
#include "sampling_panel.h"
#include "token_inspector.h"

namespace {

constexpr int kTimeoutMs = 180000;

bool startAndWait(MainWindow& w) {
    QSignalSpy loaded(w.controller(), &ChatController::modelLoaded);
    w.start();
    return loaded.wait(kTimeoutMs);
}

// Short greedy replies keep the test quick on a CPU.
wb::SamplingParams quick(int maxTokens) {
    wb::SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = maxTokens;
    return p;
}

// Runs `start` (which begins a reply) and waits for the reply to end.
template <typename F>
bool replyTo(MainWindow& w, F start) {
    QSignalSpy finished(w.controller(), &ChatController::generationFinished);
    if (!start()) return false;
    return finished.wait(kTimeoutMs);
}

std::optional<Conversation> savedFile(MainWindow& w) {
    QString error;
    std::optional<Conversation> c = Conversation::load(w.conversationStore()->pathOf(w.controller()->currentId()), &error);
    if (!c) qWarning() << error;
    return c;
}

QStringList contents(const Conversation& c) {
    QStringList out;
    for (const ChatEntry& m : c.messages) out << m.content;
    return out;
}

// Clicks a link of the chat view by its href.
void clickAnchor(MainWindow& w, const QString& href) {
    Q_EMIT w.chatPanel()->view()->anchorClicked(QUrl(href));
}

}  // namespace

class TestConversations : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() {
        wb_gui_test::isolateSettings("test_conversations");
        if (!QFileInfo::exists(QString::fromStdString(wb::default_model_path())))
            QFAIL(qPrintable(QString("default model missing at %1: run scripts/fetch-models.sh")
                                 .arg(QString::fromStdString(wb::default_model_path()))));
    }

    void init() {
        QDir(ConversationStore::defaultDirectory()).removeRecursively();
    }

    void everyReplyIsSavedAndRestoredAfterARestart() {
        QString id;
        Conversation onScreen;
        wb::SamplingParams params = quick(6);
        params.top_k = 17;
        params.repeat_penalty = 1.15f;
        {
            MainWindow w;
            w.show();
            QVERIFY(startAndWait(w));
            // The tests' folder, never the user's.
            QVERIFY(w.conversationStore()->directory().startsWith(qEnvironmentVariable("WHITEBOX_DATA_DIR")));
            w.samplingPanel()->setParams(params);
            w.controller()->setSamplingParams(params);
            w.chatPanel()->systemPromptEdit()->setPlainText("You answer in one word.");
            QVERIFY(replyTo(w, [&] { return w.controller()->sendMessage("Name a colour."); }));
            id = w.controller()->currentId();
            QVERIFY(!id.isEmpty());
            std::optional<Conversation> first = savedFile(w);
            QVERIFY(first);
            QCOMPARE(first->messages.size(), 2);
            QCOMPARE(first->messages[1].content, w.controller()->conversation().messages[1].content);
            QVERIFY(!first->messages[1].tokens.isEmpty());

            QVERIFY(replyTo(w, [&] { return w.controller()->sendMessage("Another one."); }));
            std::optional<Conversation> second = savedFile(w);
            QVERIFY(second);
            QCOMPARE(second->messages.size(), 4);  // saved again after the second reply
            QCOMPARE(w.conversationList()->shownIds(), QStringList{id});
            onScreen = w.controller()->conversation();
            // Quit: the window goes; the next one is a restart.
            w.close();
        }
        MainWindow again;
        again.show();
        QVERIFY(startAndWait(again));
        QCOMPARE(again.conversationList()->shownIds(), QStringList{id});
        QVERIFY(again.controller()->conversation().isEmpty());
        // Other values on screen, so the restore is the conversation's doing, not the settings'.
        again.chatPanel()->systemPromptEdit()->setPlainText("something else");
        again.samplingPanel()->setParams(quick(50));
        again.controller()->setSamplingParams(quick(50));

        QListWidget* list = again.conversationList()->listWidget();
        QCOMPARE(list->item(0)->text(), QString("Name a colour."));
        list->setCurrentRow(0);
        Q_EMIT list->itemClicked(list->item(0));
        const Conversation& c = again.controller()->conversation();
        QCOMPARE(again.controller()->currentId(), id);
        QCOMPARE(contents(c), contents(onScreen));
        QCOMPARE(c.systemPrompt, QString("You answer in one word."));
        QCOMPARE(again.chatPanel()->systemPromptEdit()->toPlainText(), QString("You answer in one word."));
        QCOMPARE(again.samplingPanel()->params().top_k, 17);
        QCOMPARE(again.samplingPanel()->params().repeat_penalty, 1.15f);
        QCOMPARE(again.controller()->samplingParams().max_tokens, 6);
        QCOMPARE(c.modelName, again.controller()->model().name);
        QVERIFY(!c.modelName.isEmpty());
        QCOMPARE(c.messages[1].tokens.size(), onScreen.messages[1].tokens.size());
        for (int i = 0; i < c.messages[1].tokens.size(); ++i) {
            QCOMPARE(c.messages[1].tokens[i].id, onScreen.messages[1].tokens[i].id);
            QCOMPARE(c.messages[1].tokens[i].position, onScreen.messages[1].tokens[i].position);
            QCOMPARE(c.messages[1].tokens[i].candidates.size(), onScreen.messages[1].tokens[i].candidates.size());
        }
        QVERIFY(!c.messages[1].tokens[0].candidates.empty());
        // The chat view shows it and its tokens open in the inspector.
        QVERIFY(again.chatPanel()->view()->toPlainText().contains(c.messages[3].content.trimmed()));
        clickAnchor(again, "tok:1:0");
        QVERIFY(again.tokenInspector()->hasToken());

        // A reply in the reopened conversation goes into the same file.
        QVERIFY(replyTo(again, [&] { return again.controller()->sendMessage("And a third."); }));
        QCOMPARE(savedFile(again)->messages.size(), 6);
        QCOMPARE(again.conversationStore()->conversations().size(), 1);
    }

    void newChatAndQuitLoseNothing() {
        MainWindow w;
        w.show();
        QVERIFY(startAndWait(w));
        w.controller()->setSamplingParams(quick(40));
        // Quit in the middle of a reply: what was written so far is kept.
        QSignalSpy tokens(w.controller(), &ChatController::tokenAppended);
        QVERIFY(w.controller()->sendMessage("Count from 1 to 50."));
        QVERIFY(tokens.wait(kTimeoutMs));
        const QString first = w.controller()->currentId();
        QSignalSpy finished(w.controller(), &ChatController::generationFinished);
        w.controller()->newChat();
        QVERIFY(w.controller()->conversation().isEmpty());
        QVERIFY(w.controller()->currentId().isEmpty());
        QVERIFY(finished.wait(kTimeoutMs));  // the stopped reply ends; it belongs to the old chat
        QVERIFY(w.controller()->conversation().isEmpty());
        const GenerationSummary stopped = finished.takeFirst().at(0).value<GenerationSummary>();
        QCOMPARE(stopped.reason, wb::StopReason::STOPPED);
        w.controller()->setSamplingParams(quick(4));
        QVERIFY(replyTo(w, [&] { return w.controller()->sendMessage("Hello"); }));
        const QString second = w.controller()->currentId();
        QVERIFY(!second.isEmpty() && second != first);
        QCOMPARE(w.conversationStore()->conversations().size(), 2);
        std::optional<Conversation> old = w.conversationStore()->load(first, nullptr);
        QVERIFY(old);
        QCOMPARE(old->messages.size(), 2);
        QCOMPARE(old->messages[0].content, QString("Count from 1 to 50."));
        QVERIFY(!old->messages[1].tokens.isEmpty());
        // The file has the reply as the worker ended it, not as far as it had streamed at New chat.
        QCOMPARE(old->messages[1].stopReason, QString("stopped"));
        QCOMPARE(old->messages[1].content, stopped.text);
        QString pieces;
        for (const TokenRecord& t : old->messages[1].tokens) pieces += t.piece;
        QVERIFY2(stopped.text.startsWith(pieces.left(stopped.text.size())), qPrintable(pieces));

        // Quit while a reply streams: the window stops it, stays open (the event loop runs) until the
        // worker has ended it, then closes with the complete reply saved.
        // A reply long enough to be still streaming when the window closes (the 4-token limit set for
        // "Hello" let it end by max_tokens first on an idle machine).
        w.controller()->setSamplingParams(quick(40));
        QSignalSpy more(w.controller(), &ChatController::tokenAppended);
        QVERIFY(w.controller()->sendMessage("Count from 1 to 50 again."));
        QVERIFY(more.wait(kTimeoutMs));
        QTRY_VERIFY(more.size() >= 2);
        QSignalSpy quitEnd(w.controller(), &ChatController::generationFinished);
        w.close();
        QTRY_VERIFY_WITH_TIMEOUT(!w.isVisible(), kTimeoutMs);
        QCOMPARE(quitEnd.size(), 1);
        std::optional<Conversation> closed = w.conversationStore()->load(second, nullptr);
        QVERIFY(closed);
        QCOMPARE(closed->messages.size(), 4);
        QVERIFY(!closed->messages[3].tokens.isEmpty());
        QCOMPARE(closed->messages[3].stopReason, QString("stopped"));
        QCOMPARE(closed->messages[3].content, quitEnd.at(0).at(0).value<GenerationSummary>().text);
    }

    // A window destroyed while a reply streams (no close first): the controller takes in the
    // worker's last events on its way out, so the file still has the reply's end.
    void destroyedWhileStreamingSavesTheEnd() {
        auto* w = new MainWindow;
        QVERIFY(startAndWait(*w));
        // A reply that cannot end on its own before the window goes, however slow the GUI thread is
        // on a loaded machine (with 40 tokens the worker sometimes finished it first: "eos").
        wb::SamplingParams params = quick(400);
        params.ignore_eos = true;
        w->controller()->setSamplingParams(params);
        QSignalSpy tokens(w->controller(), &ChatController::tokenAppended);
        QVERIFY(w->controller()->sendMessage("Count from 1 to 50."));
        QVERIFY(tokens.wait(kTimeoutMs));
        const QString id = w->controller()->currentId();
        const QString path = w->conversationStore()->pathOf(id);
        delete w;
        std::optional<Conversation> saved = Conversation::load(path, nullptr);
        QVERIFY(saved);
        QCOMPARE(saved->messages.size(), 2);
        QCOMPARE(saved->messages[1].stopReason, QString("stopped"));
        QVERIFY(!saved->messages[1].tokens.isEmpty());
    }

    // Without a model: conversations put in the folder are listed; rename, delete, undo and search
    // work from the sidebar and reach the files.
    void sidebarRenamesDeletesUndoesAndSearches() {
        const QStringList questions = {"Tell me about cats", "Tell me about dogs", "Explain quantum physics"};
        QStringList ids;
        {
            ConversationStore store;
            for (int i = 0; i < 3; ++i) {
                Conversation c;
                c.append({"user", questions[i], {}, {}});
                c.append({"assistant", "answer", {}, "eos"});
                c.modelName = "SmolLM2";
                c.updated = QDateTime::currentDateTimeUtc().addSecs(i - 10);
                ids << store.newId();
                QVERIFY(store.save(ids.last(), c, nullptr));
            }
        }
        MainWindow w;
        w.show();
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        ConversationList* side = w.conversationList();
        QListWidget* list = side->listWidget();
        QCOMPARE(side->shownIds(), QStringList({ids[2], ids[1], ids[0]}));
        QCOMPARE(list->item(0)->text(), questions[2]);
        QVERIFY(list->item(0)->toolTip().contains("SmolLM2"));

        // Search by title and by message text.
        QTest::keyClicks(side->searchEdit(), "tell");
        QCOMPARE(side->shownIds(), QStringList({ids[1], ids[0]}));
        side->searchEdit()->clear();
        QTest::keyClicks(side->searchEdit(), "DOGS");
        QCOMPARE(side->shownIds(), QStringList({ids[1]}));
        side->searchEdit()->clear();
        QCOMPARE(side->shownIds().size(), 3);

        // Rename in place (what the item editor does when the user types a name).
        QVERIFY(side->select(ids[0]));
        list->currentItem()->setText("Felines");
        QTRY_COMPARE(list->item(side->shownIds().indexOf(ids[0]))->text(), QString("Felines"));
        QCOMPARE(w.conversationStore()->load(ids[0], nullptr)->title, QString("Felines"));
        QTest::keyClicks(side->searchEdit(), "felines");
        QCOMPARE(side->shownIds(), QStringList({ids[0]}));
        side->searchEdit()->clear();

        // Open one, then delete it: the chat empties; Undo brings the file and the entry back.
        QVERIFY(side->select(ids[1]));
        Q_EMIT list->itemClicked(list->currentItem());
        QCOMPARE(w.controller()->currentId(), ids[1]);
        QCOMPARE(w.controller()->conversation().messages[0].content, questions[1]);
        QVERIFY(!side->undoButton()->isVisible());
        side->deleteSelected();
        QTRY_COMPARE(side->shownIds(), QStringList({ids[2], ids[0]}));
        QVERIFY(!QFileInfo::exists(w.conversationStore()->pathOf(ids[1])));
        QVERIFY(w.controller()->conversation().isEmpty());
        QVERIFY(w.controller()->currentId().isEmpty());
        QVERIFY(side->undoButton()->isVisible());
        QTest::mouseClick(side->undoButton(), Qt::LeftButton);
        QTRY_COMPARE(side->shownIds(), QStringList({ids[2], ids[1], ids[0]}));
        QVERIFY(QFileInfo::exists(w.conversationStore()->pathOf(ids[1])));
        QVERIFY(!side->undoButton()->isVisible());

        // The Delete key on the list deletes too; it stays gone after a restart.
        QVERIFY(side->select(ids[2]));
        list->setFocus();
        QTest::keyClick(list, Qt::Key_Delete);
        QTRY_COMPARE(side->shownIds(), QStringList({ids[1], ids[0]}));
        w.close();
        MainWindow again;
        QCOMPARE(again.conversationList()->shownIds(), QStringList({ids[1], ids[0]}));
    }

    void regenerateEditAndForkMakeVersionsThatAreSwitchedAndSaved() {
        MainWindow w;
        w.show();
        QVERIFY(startAndWait(w));
        ChatController* ctl = w.controller();
        ctl->setSamplingParams(quick(8));
        QVERIFY(replyTo(w, [&] { return ctl->sendMessage("Write a short poem about the sea."); }));
        const Conversation first = ctl->conversation();
        QCOMPARE(first.messages.size(), 2);

        // Regenerate (with other settings, so the new version differs): a sibling of the reply.
        wb::SamplingParams hot = quick(8);
        hot.temperature = 1.5f;
        hot.seed = 7;
        ctl->setSamplingParams(hot);
        QVERIFY(replyTo(w, [&] { return ctl->regenerate(); }));
        QCOMPARE(ctl->conversation().messages.size(), 2);
        QCOMPARE(ctl->conversation().versionCount(1), 2);
        QCOMPARE(ctl->conversation().versionIndex(1), 1);
        QVERIFY(w.chatPanel()->view()->toPlainText().contains("< 2/2 >"));
        const Conversation regenerated = ctl->conversation();

        // Fork from token 2 of the regenerated reply with another candidate.
        ctl->setSamplingParams(quick(8));
        const ChatEntry& base = regenerated.messages[1];
        QVERIFY(base.tokens.size() > 3);
        Q_EMIT w.chatPanel()->tokenClicked(1, 2);
        TokenInspector* inspector = w.tokenInspector();
        QVERIFY(inspector->hasToken());
        int row = 0;
        while (row < int(base.tokens[2].candidates.size()) && base.tokens[2].candidates[size_t(row)].id == base.tokens[2].id) ++row;
        QVERIFY(row < int(base.tokens[2].candidates.size()));
        const int chosen = base.tokens[2].candidates[size_t(row)].id;
        inspector->candidateTable()->setCurrentCell(row, 0);
        QVERIFY(inspector->forkButton()->isEnabled());
        QSignalSpy prompts(ctl, &ChatController::promptReady);
        QVERIFY(replyTo(w, [&] {
            QTest::mouseClick(inspector->forkButton(), Qt::LeftButton);
            return ctl->isGenerating();
        }));
        const Conversation forked = ctl->conversation();
        QCOMPARE(forked.versionCount(1), 3);
        QCOMPARE(forked.versionIndex(1), 2);
        const ChatEntry& fork = forked.messages[1];
        QVERIFY(fork.tokens.size() > 3);
        QCOMPARE(fork.tokens[0].id, base.tokens[0].id);
        QCOMPARE(fork.tokens[1].id, base.tokens[1].id);
        QCOMPARE(fork.tokens[2].id, chosen);
        QVERIFY(fork.content.startsWith(base.tokens[0].piece + base.tokens[1].piece));
        // The forced tokens are the end of the prompt, and the cache kept everything up to the fork.
        const PromptInfo info = prompts.last().at(0).value<PromptInfo>();
        QCOMPARE(info.ids.last(), chosen);
        const int promptLength = int(info.ids.size()) - 3;
        QCOMPARE(info.reused, promptLength + 2);
        QCOMPARE(fork.tokens[3].position, int(info.ids.size()));
        QVERIFY(w.chatPanel()->view()->toPlainText().contains("< 3/3 >"));

        // The switcher goes back to the first version and forward again.
        clickAnchor(w, "branch:1:prev");
        clickAnchor(w, "branch:1:prev");
        QCOMPARE(ctl->conversation().versionIndex(1), 0);
        QCOMPARE(ctl->conversation().messages[1].content, first.messages[1].content);
        QVERIFY(w.chatPanel()->view()->toPlainText().contains("< 1/3 >"));
        clickAnchor(w, "branch:1:prev");  // nothing before the first
        QCOMPARE(ctl->conversation().versionIndex(1), 0);
        clickAnchor(w, "branch:1:next");
        QCOMPARE(ctl->conversation().messages[1].content, regenerated.messages[1].content);

        // Edit and resend the question: a sibling of it, with a reply of its own.
        w.chatPanel()->beginEdit(0);
        w.chatPanel()->input()->setPlainText("Write a short poem about the moon.");
        {
            // Send waits for the message box's token count before it submits.
            QSignalSpy finished(ctl, &ChatController::generationFinished);
            w.chatPanel()->send();
            QTRY_VERIFY_WITH_TIMEOUT(ctl->isGenerating() || !finished.isEmpty(), 60000);
            QVERIFY(!finished.isEmpty() || finished.wait(kTimeoutMs));
        }
        QCOMPARE(ctl->conversation().versionCount(0), 2);
        QCOMPARE(ctl->conversation().messages[0].content, QString("Write a short poem about the moon."));
        QCOMPARE(ctl->conversation().versionCount(1), 1);
        clickAnchor(w, "branch:0:prev");
        QCOMPARE(ctl->conversation().messages[0].content, QString("Write a short poem about the sea."));
        QCOMPARE(ctl->conversation().versionCount(1), 3);
        QCOMPARE(ctl->conversation().versionIndex(1), 1);  // the version that was active there

        // All of it is in the file, with the active path as it is on screen.
        std::optional<Conversation> saved = savedFile(w);
        QVERIFY(saved);
        QCOMPARE(saved->totalMessages(), 6);
        QCOMPARE(contents(*saved), contents(ctl->conversation()));
        QCOMPARE(saved->versionCount(1), 3);
        QVERIFY(saved->selectVersion(1, 2));
        QCOMPARE(saved->messages[1].tokens[2].id, chosen);
        QCOMPARE(saved->messages[1].content, fork.content);
        QVERIFY(saved->selectVersion(0, 1));
        QCOMPARE(saved->messages[0].content, QString("Write a short poem about the moon."));
    }
};

QTEST_MAIN(TestConversations)
#include "test_conversations.moc"
