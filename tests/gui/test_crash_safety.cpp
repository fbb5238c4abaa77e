// Crash safety of user data (issue #18 item 6): a child process (conversation_writer) saves three
// conversations through ConversationStore, the store's index and a QSettings file over and over,
// 0.3-1.5 MB each, so it is writing nearly all the time; the test kills it with SIGKILL at random
// moments, 20 times, and after each kill every file must hold one complete version (the old or the
// new one, never a torn, mixed or empty file), versions never go back, and a store opened afterwards
// lists all three conversations with nothing unreadable.
#include <QJsonDocument>
#include <QProcess>
#include <QRandomGenerator>
#include <QSettings>
#include <QTemporaryDir>
#include <QtTest>

#include "conversation_store.h"
#include "gui_test_support.h"
#include "writer_content.h"

class TestCrashSafety : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { wb_gui_test::isolateSettings("test_crash_safety"); }

    void filesAreWholeAfterAKillAtAnyMoment() {
        QTemporaryDir dir;
        const QString settingsPath = QDir(dir.path()).filePath("settings.ini");
        const quint32 seed = QRandomGenerator::global()->generate();
        qInfo("kill times from seed %u", seed);
        QRandomGenerator random(seed);
        qint64 seen[writer_content::kFiles] = {-1, -1, -1};
        qint64 seenSettings = -1;
        qint64 start = 0;
        int rounds = 0;
        for (; rounds < 20; ++rounds) {
            QProcess writer;
            writer.start(QStringLiteral(WB_CONVERSATION_WRITER), {"write", dir.path(), settingsPath, QString::number(start)});
            QVERIFY(writer.waitForStarted());
            // Killed after the first complete round, at a random moment of the following ones.
            QVERIFY2(writer.waitForReadyRead(60000), writer.readAllStandardError().constData());
            QTest::qWait(int(random.bounded(400)));
            writer.kill();  // SIGKILL
            QVERIFY(writer.waitForFinished(10000));
            QCOMPARE(writer.exitStatus(), QProcess::CrashExit);
            const QList<QByteArray> lines = writer.readAllStandardOutput().split('\n');
            QVERIFY2(lines.value(0) == "ready", writer.readAllStandardError().constData());

            for (int k = 0; k < writer_content::kFiles; ++k) {
                const QString path = QDir(dir.path()).filePath(writer_content::fileId(k) + ".json");
                QString error;
                std::optional<Conversation> c = Conversation::load(path, &error);
                QVERIFY2(c, qPrintable(QString("round %1: %2: %3").arg(rounds).arg(path, error)));
                const qint64 v = writer_content::versionOf(*c, k, &error);
                QVERIFY2(v >= 0, qPrintable(QString("round %1: %2: %3").arg(rounds).arg(path, error)));
                QVERIFY2(v >= seen[k] && v >= start, qPrintable(QString("round %1: %2 went back to %3").arg(rounds).arg(path).arg(v)));
                seen[k] = v;
            }
            QFile index(QDir(dir.path()).filePath(".index.json"));
            QVERIFY(index.open(QIODevice::ReadOnly));
            QVERIFY2(QJsonDocument::fromJson(index.readAll()).isObject(), qPrintable(QString("round %1: the index is torn").arg(rounds)));

            QSettings settings(settingsPath, QSettings::IniFormat);
            QCOMPARE(settings.status(), QSettings::NoError);
            const qint64 v = settings.value("version", -1).toLongLong();
            QVERIFY2(v >= seenSettings && v >= start, qPrintable(QString("round %1: settings at version %2").arg(rounds).arg(v)));
            QVERIFY2(settings.value("blob").toString() == writer_content::settingsBlob(v),
                     qPrintable(QString("round %1: the settings file is not version %2's").arg(rounds).arg(v)));
            seenSettings = v;

            ConversationStore store(dir.path());
            QCOMPARE(store.conversations().size(), writer_content::kFiles);
            QVERIFY2(store.unreadable().isEmpty(), qPrintable(store.unreadable().join("; ")));
            // The next writer starts past every version written so far.
            start = std::max({seen[0], seen[1], seen[2], seenSettings}) + 1;
        }
        QCOMPARE(rounds, 20);
        qInfo("20 kills; the last versions seen: %lld %lld %lld, settings %lld", seen[0], seen[1], seen[2], seenSettings);
    }
};

QTEST_MAIN(TestCrashSafety)
#include "test_crash_safety.moc"
