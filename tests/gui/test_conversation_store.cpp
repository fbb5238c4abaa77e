// The conversations folder without a model (issue #15): start-up reads the list from the index and
// parses only files the index does not know or that changed (500 conversations); the search finds
// words in every branch, not only the one on screen; a second instance (in this process or another
// one) leaves the first one's undo folder alone, and the folder of an instance that was killed is
// emptied; an instance that cannot take its undo folder's lock keeps its deleted files out of every
// other instance's reach (in memory) and leaves the folder of its name alone; files an older version
// left directly in .trash are kept; a title being typed in the sidebar survives an autosave that
// refreshes the list.
#include <QDirIterator>
#include <memory>
#include <QElapsedTimer>
#include <QLineEdit>
#include <QListWidget>
#include <QPointer>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "chat_controller.h"
#include "conversation_list.h"
#include "conversation_store.h"
#include "gui_test_support.h"

namespace {

// A conversation of the size the app saves: three replies of 30 tokens with 8 candidates each.
Conversation typical(int n) {
    Conversation c;
    for (int turn = 0; turn < 3; ++turn) {
        c.append({"user", QString("Question %1 number %2 about topic%3").arg(turn).arg(n).arg(n % 17), {}, {}});
        ChatEntry reply{"assistant", {}, {}, "eos"};
        for (int t = 0; t < 30; ++t) {
            TokenRecord r;
            r.id = 1000 + t;
            r.piece = QString(" word%1").arg(t);
            r.p = 0.5f;
            r.position = 20 + t;
            for (int k = 0; k < 8; ++k) r.candidates.push_back({1000 + k, " cand" + std::to_string(k), 0.1f, 0.1f});
            reply.tokens.append(r);
            reply.content += r.piece;
        }
        c.append(reply);
    }
    c.modelName = "SmolLM2";
    c.updated = QDateTime::currentDateTimeUtc().addSecs(-n);
    return c;
}

QStringList ids(const QVector<ConversationInfo>& list) {
    QStringList out;
    for (const ConversationInfo& i : list) out << i.id;
    return out;
}

QByteArray contentsOf(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QString findUnder(const QString& dir, const QString& name) {
    QDirIterator it(dir, {name}, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
    return it.hasNext() ? it.next() : QString();
}

}  // namespace

class TestConversationStore : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { wb_gui_test::isolateSettings("test_conversation_store"); }

    void startUpReadsTheIndexNotEveryFile() {
        QTemporaryDir dir;
        constexpr int kCount = 500;
        {
            ConversationStore writer(dir.path());
            for (int n = 0; n < kCount; ++n) QVERIFY(typical(n).save(writer.pathOf(QString("conv%1").arg(n, 3, 10, QChar('0'))), nullptr));
        }
        QFile::remove(QDir(dir.path()).filePath(".index.json"));
        QElapsedTimer timer;
        timer.start();
        ConversationStore cold(dir.path());
        const qint64 coldMs = timer.elapsed();
        // Without an index every file is parsed (what every start-up did before the index).
        QCOMPARE(cold.parsedAtScan(), kCount);
        QCOMPARE(cold.conversations().size(), kCount);
        QVERIFY(QFileInfo::exists(cold.indexPath()));

        timer.restart();
        ConversationStore warm(dir.path());
        const qint64 warmMs = timer.elapsed();
        qInfo("start-up with %d conversations: %lld ms parsing every file, %lld ms from the index", kCount, coldMs, warmMs);
        QCOMPARE(warm.parsedAtScan(), 0);
        QCOMPARE(ids(warm.conversations()), ids(cold.conversations()));
        for (int i = 0; i < kCount; ++i) {
            const ConversationInfo& a = cold.conversations()[i];
            const ConversationInfo& b = warm.conversations()[i];
            QCOMPARE(b.title, a.title);
            QCOMPARE(b.model, a.model);
            QCOMPARE(b.updated, a.updated);
            QCOMPARE(b.messages, a.messages);
            QCOMPARE(b.text, a.text);
        }
        QCOMPARE(ids(warm.search("topic5")), ids(cold.search("topic5")));

        // A file changed behind the index's back (another instance, a copy) is parsed again.
        Conversation changed = typical(7);
        changed.title = "Changed elsewhere";
        QVERIFY(changed.save(warm.pathOf("conv007"), nullptr));
        QFile::remove(warm.pathOf("conv008"));
        ConversationStore after(dir.path());
        QCOMPARE(after.parsedAtScan(), 1);
        QCOMPARE(after.conversations().size(), kCount - 1);
        QCOMPARE(after.conversations()[after.indexOf("conv007")].title, QString("Changed elsewhere"));
        QCOMPARE(after.indexOf("conv008"), -1);

        // A broken index costs parsing, never an entry.
        QFile index(after.indexPath());
        QVERIFY(index.open(QIODevice::WriteOnly | QIODevice::Truncate));
        index.write("{\"version\":1,\"entr");
        index.close();
        ConversationStore broken(dir.path());
        QCOMPARE(broken.parsedAtScan(), kCount - 1);
        QCOMPARE(ids(broken.conversations()), ids(after.conversations()));
    }

    void savesAndDeletesReachTheIndex() {
        QTemporaryDir dir;
        QString id;
        {
            ConversationStore store(dir.path());
            id = store.newId();
            QVERIFY(store.save(id, typical(1), nullptr));
            QVERIFY(store.save("gone", typical(2), nullptr));
            QVERIFY(store.remove("gone", nullptr));
        }  // the index is written at the end at the latest
        ConversationStore again(dir.path());
        QCOMPARE(again.parsedAtScan(), 0);
        QCOMPARE(ids(again.conversations()), QStringList{id});
    }

    void searchFindsWordsInEveryBranch() {
        QTemporaryDir dir;
        Conversation c;
        c.append({"user", "first question", {}, {}});
        c.append({"assistant", "an answer with zebra", {}, "eos"});
        c.addVersion(1, {"assistant", "a regenerated answer", {}, "eos"});
        c.append({"user", "then platypus", {}, {}});
        // Edit and resend of the first message: the whole path above is now off screen.
        c.addVersion(0, {"user", "edited question", {}, {}});
        QCOMPARE(c.messages.size(), 1);
        {
            ConversationStore store(dir.path());
            QVERIFY(store.save("tree", c, nullptr));
            for (const char* word : {"zebra", "platypus", "regenerated", "edited", "first question"})
                QVERIFY2(ids(store.search(QString::fromUtf8(word))) == QStringList{"tree"}, word);
            QVERIFY(store.search("giraffe").isEmpty());
        }
        // From the index at the next start too.
        ConversationStore again(dir.path());
        QCOMPARE(again.parsedAtScan(), 0);
        QCOMPARE(ids(again.search("zebra platypus")), QStringList{"tree"});
    }

    void aSecondInstanceLeavesTheUndoFolderAlone() {
        QTemporaryDir dir;
        ConversationStore first(dir.path());
        QVERIFY(first.save("kept", typical(1), nullptr));
        QVERIFY(first.remove("kept", nullptr));
        ConversationStore second(dir.path());  // a second window starts
        QVERIFY(!second.conversations().size());
        QString error;
        QCOMPARE(first.undoRemove(&error), QString("kept"));
        QVERIFY2(QFileInfo::exists(first.pathOf("kept")), qPrintable(error));
    }

    void anotherProcessesUndoIsKeptWhileItRunsAndEmptiedAfter() {
        QTemporaryDir dir;
        QProcess helper;
        helper.start(QStringLiteral(WB_CONVERSATION_WRITER), {"trash", dir.path()});
        QVERIFY(helper.waitForStarted());
        QVERIFY(helper.waitForReadyRead(30000));
        QCOMPARE(helper.readLine().trimmed(), QByteArray("ready"));
        const QString deleted = findUnder(QDir(dir.path()).filePath(".trash"), "helper.json");
        QVERIFY(!deleted.isEmpty());
        {
            ConversationStore here(dir.path());
            QVERIFY(QFileInfo::exists(deleted));  // the helper can still undo
        }
        QVERIFY(QFileInfo::exists(deleted));
        helper.kill();  // SIGKILL: no clean-up of its own
        QVERIFY(helper.waitForFinished());
        QVERIFY(QFileInfo::exists(deleted));
        ConversationStore next(dir.path());
        QVERIFY(!QFileInfo::exists(deleted));
        QVERIFY(!QFileInfo::exists(QFileInfo(deleted).path()));
        // Left: this instance's own lock file.
        QCOMPARE(QDir(QDir(dir.path()).filePath(".trash")).entryList(QDir::AllEntries | QDir::NoDotAndDotDot).size(), 1);
    }

    // The lock of an instance's undo folder can fail (a full disk, a read-only .trash; here: its name
    // is one another instance holds). Such an instance has no folder another one leaves alone.
    void anInstanceWithoutItsLockKeepsUndoOutOfOthersReach() {
        QTemporaryDir dir;
        auto first = std::make_unique<ConversationStore>(dir.path(), nullptr, "shared");
        QVERIFY(first->hasUndoFolder());
        QVERIFY(first->save("firsts", typical(1), nullptr));
        QVERIFY(first->remove("firsts", nullptr));
        {
            ConversationStore second(dir.path(), nullptr, "shared");
            QVERIFY(!second.hasUndoFolder());
        }  // its end must not empty the folder of its name: that is first's
        QString error;
        QCOMPARE(first->undoRemove(&error), QString("firsts"));
        QVERIFY2(QFileInfo::exists(first->pathOf("firsts")), qPrintable(error));

        ConversationStore second(dir.path(), nullptr, "shared");
        QVERIFY(!second.hasUndoFolder());
        const Conversation mine = typical(2);
        QVERIFY(second.save("seconds", mine, nullptr));
        const QByteArray bytes = contentsOf(second.pathOf("seconds"));
        QVERIFY(second.remove("seconds", nullptr));
        QVERIFY(!QFileInfo::exists(second.pathOf("seconds")));
        QVERIFY(second.canUndoRemove());
        first.reset();                                // empties the folder "shared" on its way out
        { ConversationStore third(dir.path()); }      // and a new instance empties unlocked folders
        QCOMPARE(second.undoRemove(&error), QString("seconds"));
        QCOMPARE(contentsOf(second.pathOf("seconds")), bytes);
        QCOMPARE(second.conversations().size(), 2);
        QVERIFY(second.indexOf("seconds") >= 0);
        // The index knows the file as it is now: the next start parses nothing.
        QVERIFY(second.writeIndex());
        ConversationStore again(dir.path());
        QCOMPARE(again.parsedAtScan(), 0);
        QCOMPARE(again.load("seconds", nullptr)->messages.size(), mine.messages.size());
    }

    // Before undo folders per instance, deleted files sat directly in .trash (that version's Undo
    // moved them back): they are neither deleted nor listed.
    void filesAnOlderVersionDeletedAreKept() {
        QTemporaryDir dir;
        const QString old = QDir(dir.path()).filePath(".trash/older.json");
        QVERIFY(QDir().mkpath(QFileInfo(old).path()));
        QVERIFY(typical(1).save(old, nullptr));
        const QByteArray bytes = contentsOf(old);
        QVERIFY(!bytes.isEmpty());
        {
            ConversationStore store(dir.path());
            QCOMPARE(store.conversations().size(), 0);
            QVERIFY(store.save("new", typical(2), nullptr));
            QVERIFY(store.remove("new", nullptr));
        }
        ConversationStore next(dir.path());
        QCOMPARE(contentsOf(old), bytes);
        QCOMPARE(next.conversations().size(), 0);
    }

    void aTitleBeingTypedSurvivesAnAutosave() {
        QTemporaryDir dir;
        ConversationStore store(dir.path());
        QVERIFY(store.save("a", typical(1), nullptr));
        QVERIFY(store.save("b", typical(2), nullptr));
        ChatController controller;
        controller.setStore(&store);
        ConversationList side(&controller, &store);
        side.resize(300, 400);
        side.show();
        QVERIFY(QTest::qWaitForWindowExposed(&side));
        QVERIFY(side.select("a"));
        side.renameSelected();
        QPointer<QLineEdit> editor = side.listWidget()->viewport()->findChild<QLineEdit*>();
        QVERIFY(editor);
        editor->selectAll();
        QTest::keyClicks(editor, "Typed name");
        // An autosave of another conversation refreshes the list.
        QVERIFY(store.save("b", typical(3), nullptr));
        QTest::qWait(50);
        QVERIFY2(editor, "the refresh closed the editor");
        QCOMPARE(editor->text(), QString("Typed name"));
        QTest::keyClick(editor, Qt::Key_Return);
        QTRY_COMPARE(store.load("a", nullptr)->title, QString("Typed name"));
        QTRY_COMPARE(side.listWidget()->item(side.shownIds().indexOf("a"))->text(), QString("Typed name"));
        // The refresh that waited has run: b's new date put it first.
        QCOMPARE(side.shownIds(), ids(store.conversations()));
    }
};

QTEST_MAIN(TestConversationStore)
#include "test_conversation_store.moc"
