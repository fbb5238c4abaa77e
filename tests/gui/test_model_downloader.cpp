// ModelDownloader against a local HTTP server serving a small GGUF written at test time: a full
// download with its hash, resume after a dropped connection (only the rest travels), cancel and resume,
// a wrong hash (rejected, nothing left), a full disk (found before anything is written), a write
// failure mid-download, a server that ignores Range, a web page instead of a model, 404, redirects, a
// .part that already holds everything (416), and the arguments it refuses.
#include <QDir>
#include <QFileInfo>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <csignal>
#include <sys/resource.h>

#include "download_test_support.h"
#include "model_downloader.h"

using wb_download_test::LocalHttpServer;

namespace {
constexpr int kTimeoutMs = 30000;
}

class TestModelDownloader : public QObject {
    Q_OBJECT

    QTemporaryDir m_source;
    QByteArray m_model;  // the served GGUF
    QString m_sha;       // its SHA-256
    std::unique_ptr<QTemporaryDir> m_dir;
    std::unique_ptr<LocalHttpServer> m_server;

    QString dest() const { return m_dir->filePath("model.gguf"); }
    QString part() const { return ModelDownloader::partPath(dest()); }

    struct Run {
        explicit Run(ModelDownloader* d)
            : finished(d, &ModelDownloader::finished), failed(d, &ModelDownloader::failed), canceled(d, &ModelDownloader::canceled),
              progress(d, &ModelDownloader::progress) {}
        QSignalSpy finished, failed, canceled, progress;
        // Waits for an outcome; the spies' counts as "finished/failed/canceled" (0/0/0 on a timeout).
        QString wait() {
            if (!QTest::qWaitFor([this] { return finished.size() + failed.size() + canceled.size() > 0; }, kTimeoutMs))
                qInfo("no outcome within %d ms", kTimeoutMs);
            if (!failed.isEmpty()) qInfo("failed: %s", qPrintable(error()));
            return QStringLiteral("%1/%2/%3").arg(finished.size()).arg(failed.size()).arg(canceled.size());
        }
        QString error() const { return failed.isEmpty() ? QString() : failed.last().at(0).toString(); }
    };

private Q_SLOTS:
    void initTestCase() {
        QVERIFY(m_source.isValid());
        m_model = wb_download_test::writeGguf(m_source.filePath("served.gguf"));
        QVERIFY(m_model.size() > 200000);
        m_sha = wb_download_test::sha256Hex(m_model);
    }

    void init() {
        m_dir = std::make_unique<QTemporaryDir>();
        QVERIFY(m_dir->isValid());
        m_server = std::make_unique<LocalHttpServer>();
        QVERIFY(m_server->listen());
        m_server->serve("/model.gguf", m_model);
        m_server->serve("/page.html", "<!DOCTYPE html><html><body>Download model.gguf here</body></html>\n");
        m_server->redirect("/moved.gguf", "/model.gguf");
    }

    void fullDownloadIsIdenticalAndHashed() {
        ModelDownloader d;
        Run run(&d);
        // Upper case on purpose: the expected hash is compared without regard to case.
        d.start(m_server->url("/model.gguf"), dest(), m_sha.toUpper());
        QCOMPARE(run.wait(), QString("1/0/0"));
        QCOMPARE(run.finished.at(0).at(0).toString(), dest());
        QCOMPARE(run.finished.at(0).at(1).toString(), m_sha);
        QCOMPARE(wb_download_test::readFile(dest()), m_model);
        QVERIFY(!QFileInfo::exists(part()));
        QCOMPARE(m_server->requests().size(), 1);
        QVERIFY(m_server->requests()[0].range.isEmpty());
        QCOMPARE(run.progress.last().at(0).toLongLong(), qint64(m_model.size()));
        QCOMPARE(run.progress.last().at(1).toLongLong(), qint64(m_model.size()));
        QVERIFY(!d.isActive());
    }

    void redirectIsFollowed() {
        ModelDownloader d;
        Run run(&d);
        d.start(m_server->url("/moved.gguf"), dest());
        QCOMPARE(run.wait(), QString("1/0/0"));
        QCOMPARE(wb_download_test::readFile(dest()), m_model);
        QCOMPARE(m_server->requests().size(), 2);
        QCOMPARE(m_server->requests()[0].status, 302);
    }

    void resumeAfterAnInterruptionFetchesOnlyTheRest() {
        const qint64 cut = 100000;
        m_server->dropAfter = cut;
        ModelDownloader d;
        Run first(&d);
        d.start(m_server->url("/model.gguf"), dest(), m_sha);
        QCOMPARE(first.wait(), QString("0/1/0"));
        QVERIFY2(first.error().contains("kept"), qPrintable(first.error()));
        QCOMPARE(QFileInfo(part()).size(), cut);
        QVERIFY(!QFileInfo::exists(dest()));

        Run second(&d);
        d.start(m_server->url("/model.gguf"), dest(), m_sha);
        QCOMPARE(second.wait(), QString("1/0/0"));
        QCOMPARE(m_server->requests().size(), 2);
        const LocalHttpServer::Request& resumed = m_server->requests()[1];
        QCOMPARE(resumed.range, QByteArray("bytes=100000-"));
        QCOMPARE(resumed.status, 206);
        QCOMPARE(resumed.bodyBytesSent, qint64(m_model.size()) - cut);
        QCOMPARE(wb_download_test::readFile(dest()), m_model);
        // The hash covers the bytes of the first transfer too (re-read from the .part).
        QCOMPARE(second.finished.at(0).at(1).toString(), m_sha);
        QVERIFY(!QFileInfo::exists(part()));
    }

    void cancelKeepsThePartAndALaterResumeCompletes() {
        m_server->bytesPerTick = 4096;  // ~75 ticks of 10 ms: the transfer is still running when canceled
        ModelDownloader d;
        Run run(&d);
        d.start(m_server->url("/model.gguf"), dest(), m_sha);
        QTRY_VERIFY_WITH_TIMEOUT(!run.progress.isEmpty() && run.progress.last().at(0).toLongLong() > 0, kTimeoutMs);
        d.cancel();
        QCOMPARE(run.canceled.size(), 1);
        QVERIFY(!d.isActive());
        const qint64 kept = QFileInfo(part()).size();
        QCOMPARE(run.canceled.at(0).at(1).toLongLong(), kept);
        QVERIFY(kept > 0 && kept < m_model.size());
        QVERIFY(!QFileInfo::exists(dest()));
        QCOMPARE(run.finished.size() + run.failed.size(), 0);

        m_server->bytesPerTick = 0;
        Run resume(&d);
        d.start(m_server->url("/model.gguf"), dest(), m_sha);
        QCOMPARE(resume.wait(), QString("1/0/0"));
        QCOMPARE(m_server->requests().last().range, QByteArray("bytes=" + QByteArray::number(kept) + "-"));
        QCOMPARE(wb_download_test::readFile(dest()), m_model);
    }

    void wrongHashIsRejectedAndTheDownloadRemoved() {
        const QString wrong = wb_download_test::sha256Hex("not the model");
        ModelDownloader d;
        Run run(&d);
        d.start(m_server->url("/model.gguf"), dest(), wrong);
        QCOMPARE(run.wait(), QString("0/1/0"));
        QVERIFY2(run.error().contains(wrong) && run.error().contains(m_sha), qPrintable(run.error()));
        QVERIFY(!QFileInfo::exists(part()));
        QVERIFY(!QFileInfo::exists(dest()));
    }

    // The guide promises that a file failing its hash is deleted: when the deletion fails the error
    // says so and names the file (before the fix QFile::remove's result was ignored and the message
    // said "removed" while the file stayed).
    void wrongHashAndAFailedDeletionSaySo() {
        const QString wrong = wb_download_test::sha256Hex("not the model");
        ModelDownloader d;
        QStringList asked;
        d.setRemoveFunction([&](const QString& path) {
            asked << path;
            return QStringLiteral("Operation not permitted");
        });
        Run run(&d);
        d.start(m_server->url("/model.gguf"), dest(), wrong);
        QCOMPARE(run.wait(), QString("0/1/0"));
        QCOMPARE(asked, QStringList{part()});
        QVERIFY2(run.error().contains(wrong) && run.error().contains("could not be deleted (Operation not permitted)") &&
                     run.error().contains(part()) && !run.error().contains("was removed"),
                 qPrintable(run.error()));
        QVERIFY(!QFileInfo::exists(dest()));
        // With the system's deletion the same failure removes it and says so.
        Run again(&d);
        d.setRemoveFunction(&ModelDownloader::systemRemove);
        d.start(m_server->url("/model.gguf"), dest(), wrong);
        QCOMPARE(again.wait(), QString("0/1/0"));
        QVERIFY2(again.error().contains("was removed"), qPrintable(again.error()));
        QVERIFY(!QFileInfo::exists(part()));
    }

    void fullDiskIsFoundBeforeWriting() {
        ModelDownloader d;
        QStringList askedFor;
        d.setFreeSpaceFunction([&](const QString& dir) {
            askedFor << dir;
            return qint64(m_model.size()) - 1;
        });
        Run run(&d);
        d.start(m_server->url("/model.gguf"), dest());
        QCOMPARE(run.wait(), QString("0/1/0"));
        QVERIFY2(run.error().contains("disk space"), qPrintable(run.error()));
        QCOMPARE(askedFor, QStringList{QFileInfo(dest()).absolutePath()});
        QVERIFY(!QFileInfo::exists(part()));
        QVERIFY(!QFileInfo::exists(dest()));

        // The same download fits when the space is there.
        d.setFreeSpaceFunction([&](const QString&) { return qint64(m_model.size()); });
        Run again(&d);
        d.start(m_server->url("/model.gguf"), dest());
        QCOMPARE(again.wait(), QString("1/0/0"));
    }

    // A disk that fills up during the transfer: the process's file-size limit makes write() fail
    // (EFBIG) past 64 KiB, as ENOSPC would. The bytes written so far stay for a resume.
    void writeFailureMidDownloadIsReported() {
        const qint64 limit = 64 * 1024;
        rlimit old {};
        QCOMPARE(getrlimit(RLIMIT_FSIZE, &old), 0);
        ::signal(SIGXFSZ, SIG_IGN);  // else the kernel ends the process at the limit
        rlimit low = old;
        low.rlim_cur = rlim_t(limit);
        QCOMPARE(setrlimit(RLIMIT_FSIZE, &low), 0);
        ModelDownloader d;
        Run run(&d);
        d.start(m_server->url("/model.gguf"), dest(), m_sha);
        const QString result = run.wait();
        QCOMPARE(setrlimit(RLIMIT_FSIZE, &old), 0);
        QCOMPARE(result, QString("0/1/0"));
        QVERIFY2(run.error().contains("Could not write") && run.error().contains("Resume"), qPrintable(run.error()));
        QVERIFY(QFileInfo(part()).size() <= limit);
        QVERIFY(!QFileInfo::exists(dest()));

        Run resume(&d);
        d.start(m_server->url("/model.gguf"), dest(), m_sha);
        QCOMPARE(resume.wait(), QString("1/0/0"));
        QCOMPARE(wb_download_test::readFile(dest()), m_model);
    }

    void serverIgnoringRangeRestartsFromZero() {
        m_server->honourRange = false;
        // A .part whose bytes are not the model's: appending to it would give a wrong file.
        QFile stale(part());
        QVERIFY(stale.open(QIODevice::WriteOnly));
        stale.write(QByteArray("GGUF") + QByteArray(50000 - 4, 'z'));
        stale.close();
        ModelDownloader d;
        Run run(&d);
        d.start(m_server->url("/model.gguf"), dest(), m_sha);
        QCOMPARE(run.wait(), QString("1/0/0"));
        QCOMPARE(m_server->requests().size(), 1);
        QCOMPARE(m_server->requests()[0].range, QByteArray("bytes=50000-"));
        QCOMPARE(m_server->requests()[0].status, 200);
        QCOMPARE(wb_download_test::readFile(dest()), m_model);
    }

    void partHoldingTheWholeFileIsVerifiedAndKept() {
        // The app stopped between the last byte and the rename: the server answers 416.
        QFile whole(part());
        QVERIFY(whole.open(QIODevice::WriteOnly));
        whole.write(m_model);
        whole.close();
        ModelDownloader d;
        Run run(&d);
        d.start(m_server->url("/model.gguf"), dest(), m_sha);
        QCOMPARE(run.wait(), QString("1/0/0"));
        QCOMPARE(m_server->requests()[0].status, 416);
        QCOMPARE(wb_download_test::readFile(dest()), m_model);
    }

    void nonGgufContentIsRejected() {
        ModelDownloader d;
        Run run(&d);
        d.start(m_server->url("/page.html"), dest());
        QCOMPARE(run.wait(), QString("0/1/0"));
        QVERIFY2(run.error().contains("not a GGUF") && run.error().contains("<!DO"), qPrintable(run.error()));
        QVERIFY(!QFileInfo::exists(part()));
        QVERIFY(!QFileInfo::exists(dest()));
    }

    void missingFileGivesTheServersAnswer() {
        ModelDownloader d;
        Run run(&d);
        d.start(m_server->url("/nothing-here.gguf"), dest());
        QCOMPARE(run.wait(), QString("0/1/0"));
        QVERIFY2(run.error().contains("404") && run.error().contains("Not Found"), qPrintable(run.error()));
        QVERIFY(!QFileInfo::exists(part()));
        QVERIFY(!QFileInfo::exists(dest()));
    }

    void existingFileIsNeverOverwritten() {
        QFile existing(dest());
        QVERIFY(existing.open(QIODevice::WriteOnly));
        existing.write("keep me");
        existing.close();
        ModelDownloader d;
        Run run(&d);
        d.start(m_server->url("/model.gguf"), dest());
        QCOMPARE(run.wait(), QString("0/1/0"));
        QVERIFY2(run.error().contains("already exists"), qPrintable(run.error()));
        QCOMPARE(wb_download_test::readFile(dest()), QByteArray("keep me"));
        QVERIFY(m_server->requests().isEmpty());
    }

    void badArgumentsAreRefused_data() {
        QTest::addColumn<QString>("url");
        QTest::addColumn<QString>("sha");
        QTest::addColumn<QString>("message");
        QTest::newRow("ftp") << "ftp://127.0.0.1/model.gguf" << "" << "Only http";
        QTest::newRow("local file") << "file:///etc/hostname" << "" << "Only http";
        QTest::newRow("not a url") << "model.gguf" << "" << "Only http";
        QTest::newRow("short hash") << "http://127.0.0.1:1/model.gguf" << "abc123" << "64 hexadecimal";
    }

    void badArgumentsAreRefused() {
        QFETCH(QString, url);
        QFETCH(QString, sha);
        QFETCH(QString, message);
        ModelDownloader d;
        Run run(&d);
        d.start(QUrl(url), dest(), sha);
        QCOMPARE(run.failed.size(), 1);
        QVERIFY2(run.error().contains(message), qPrintable(run.error()));
        QVERIFY(!d.isActive());
        QVERIFY(!QFileInfo::exists(part()));
    }
};

QTEST_GUILESS_MAIN(TestModelDownloader)
#include "test_model_downloader.moc"
