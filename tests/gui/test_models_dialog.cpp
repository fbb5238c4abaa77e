// The Models dialog over a model folder ($WHITEBOX_MODELS) holding two small GGUFs and a partial
// download: the table shows size, architecture, quantization and a SHA-256 computed off the GUI thread
// (and remembered until the file changes); Load emits modelChosen; Remove asks first; a download from a
// local HTTP server lands in the table; a canceled one resumes from its table row; "Fetch default
// model" runs the script and says when pip is missing; and the main window's first start with an empty
// folder shows the dialog, while a folder holding the default model still loads it directly.
#include <QFileInfo>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTimer>
#include <QElapsedTimer>
#include <QtTest>

#include "chat_controller.h"
#include "download_test_support.h"
#include "gui_test_support.h"
#include "main_window.h"
#include "model/model_paths.h"
#include "model_cache.h"
#include "model_downloader.h"
#include "models_dialog.h"
#include "random_llama.h"

using wb_download_test::LocalHttpServer;

namespace {
constexpr int kTimeoutMs = 30000;

QString cell(const ModelsDialog& d, const QString& path, int column) {
    const int row = d.rowOf(path);
    return row < 0 || !d.table()->item(row, column) ? QString() : d.table()->item(row, column)->text();
}

void writeExecutable(const QString& path, const QByteArray& text) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
    f.close();
    QVERIFY(f.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner | QFileDevice::ExeOwner));
}
}  // namespace

class TestModelsDialog : public QObject {
    Q_OBJECT

    QTemporaryDir m_cache;
    QTemporaryDir m_scratch;
    QString m_llama;   // Q4_0 with general.file_type = 2
    QString m_gemma;   // Q8_0 weights, no general.file_type: the dominant type names the quantization
    QString m_part;    // a partial download
    QByteArray m_llamaBytes;

    void useCache(const QString& dir) { qputenv("WHITEBOX_MODELS", QFile::encodeName(dir)); }

private Q_SLOTS:
    void initTestCase() {
        wb_gui_test::isolateSettings("test_models_dialog");
        QVERIFY(m_cache.isValid() && m_scratch.isValid());
        useCache(m_cache.path());
        m_llama = m_cache.filePath("tiny-llama.gguf");
        m_gemma = m_cache.filePath("tiny-gemma.gguf");
        m_part = m_cache.filePath("unfinished.gguf.part");
        m_llamaBytes = wb_download_test::writeGguf(m_llama, {"llama", 2, wb::GgmlType::Q4_0, 4, 1});
        wb_download_test::writeGguf(m_gemma, {"gemma3", -1, wb::GgmlType::Q8_0, 3, 2});
        QFile part(m_part);
        QVERIFY(part.open(QIODevice::WriteOnly));
        part.write(m_llamaBytes.left(1000));
        part.close();
        // Not a model: not listed.
        QFile notes(m_cache.filePath("notes.txt"));
        QVERIFY(notes.open(QIODevice::WriteOnly));
    }

    void listsModelsWithSizeArchitectureQuantizationAndHash() {
        ModelsDialog d;
        d.show();
        QCOMPARE(d.table()->rowCount(), 3);
        QCOMPARE(cell(d, m_llama, ModelsDialog::ArchColumn), QString("llama"));
        QCOMPARE(cell(d, m_llama, ModelsDialog::QuantColumn), QString("Q4_0"));
        QCOMPARE(cell(d, m_gemma, ModelsDialog::ArchColumn), QString("gemma3"));
        QCOMPARE(cell(d, m_gemma, ModelsDialog::QuantColumn), QString("Q8_0"));
        QCOMPARE(cell(d, m_part, ModelsDialog::ArchColumn), QString("partial download"));
        for (const QString& path : {m_llama, m_gemma, m_part}) {
            const int row = d.rowOf(path);
            QVERIFY(row >= 0);
            QCOMPARE(d.table()->item(row, ModelsDialog::SizeColumn)->data(Qt::UserRole).toLongLong(), QFileInfo(path).size());
        }
        // Hashing runs on a pool thread and reports through the event loop: nothing is known yet.
        QCOMPARE(cell(d, m_llama, ModelsDialog::HashColumn), QString("computing…"));
        QVERIFY(d.cache()->isHashing());
        for (const QString& path : {m_llama, m_gemma})
            QTRY_COMPARE_WITH_TIMEOUT(cell(d, path, ModelsDialog::HashColumn),
                                      wb_download_test::sha256Hex(wb_download_test::readFile(path)), kTimeoutMs);
        QVERIFY(cell(d, m_part, ModelsDialog::HashColumn).isEmpty());
        QVERIFY(!d.banner()->isVisible());
    }

    // Each file says whether WhiteBox can run it and, if not, why (in the cell, its tooltip and, once
    // selected, the status line): a random llama model runs, the same with a tensor no architecture
    // reads does not, and the header-only test files lack hyperparameters.
    void saysWhichFilesCanRunAndWhyNot() {
        QTemporaryDir dir;
        useCache(dir.path());
        const auto restore = qScopeGuard([this] { useCache(m_cache.path()); });
        const QString good = dir.filePath("runs.gguf"), bad = dir.filePath("extra-tensor.gguf");
        wb::write_random_llama(wb::RandomLlamaSpec::tiny(), good.toStdString());
        wb::RandomLlamaSpec spec = wb::RandomLlamaSpec::tiny();
        spec.extra_tensors = {"blk.0.attn_qkv.weight"};
        wb::write_random_llama(spec, bad.toStdString());
        wb_download_test::writeGguf(dir.filePath("header-only.gguf"), {"llama", 2, wb::GgmlType::Q4_0, 2, 9});
        ModelsDialog d;
        d.show();
        QTRY_COMPARE_WITH_TIMEOUT(cell(d, good, ModelsDialog::RunsColumn), QString("yes"), kTimeoutMs);
        const QString why = "model file has tensor 'blk.0.attn_qkv.weight', which the llama architecture does not use "
                            "here (not supported)";
        QTRY_COMPARE_WITH_TIMEOUT(cell(d, bad, ModelsDialog::RunsColumn), "no: " + why, kTimeoutMs);
        QCOMPARE(d.table()->item(d.rowOf(bad), ModelsDialog::RunsColumn)->toolTip(), why);
        QVERIFY(cell(d, dir.filePath("header-only.gguf"), ModelsDialog::RunsColumn).startsWith("no: model metadata is missing"));
        d.selectPath(bad);
        QCOMPARE(d.statusText(), "extra-tensor.gguf cannot be run: " + why);
        d.selectPath(good);
        QVERIFY(d.statusText().isEmpty());
    }

    // Model::check builds the tokenizer (about 0.5 s for Gemma 3's 262k tokens) and runs on the cache's
    // worker: the dialog is up with "checking…" before any verdict (results come through the event loop,
    // so this holds however fast the worker is), the event loop keeps turning while a 262k-token
    // vocabulary is checked, the verdict then arrives, and a file selected meanwhile gets its reason in
    // the status line when it comes.
    void checksFilesOffTheGuiThread() {
        QTemporaryDir dir;
        useCache(dir.path());
        const auto restore = qScopeGuard([this] { useCache(m_cache.path()); });
        const QString big = dir.filePath("big-vocabulary.gguf"), bad = dir.filePath("extra-tensor.gguf");
        wb::RandomLlamaSpec spec = wb::RandomLlamaSpec::tiny();
        spec.n_embd = 64;
        spec.n_ff = 128;
        spec.n_vocab = 262144;
        spec.tied_output = true;
        spec.random_blocks = true;
        wb::write_random_llama(spec, big.toStdString());
        wb::RandomLlamaSpec extra = wb::RandomLlamaSpec::tiny();
        extra.extra_tensors = {"blk.0.attn_qkv.weight"};
        wb::write_random_llama(extra, bad.toStdString());

        QElapsedTimer clock;
        clock.start();
        ModelsDialog d;
        d.show();
        const qint64 shown_ms = clock.elapsed();
        QCOMPARE(cell(d, big, ModelsDialog::RunsColumn), QString("checking…"));
        QCOMPARE(cell(d, bad, ModelsDialog::RunsColumn), QString("checking…"));
        QVERIFY(d.cache()->isChecking());
        d.selectPath(bad);
        QVERIFY(d.statusText().isEmpty());  // no verdict yet, no reason

        int ticks = 0, ticks_before_verdict = -1;
        QTimer tick;
        connect(&tick, &QTimer::timeout, [&] { ++ticks; });
        connect(d.cache(), &ModelCache::checkReady, &d, [&](const QString& path) {
            if (path == big) ticks_before_verdict = ticks;
        });
        tick.start(1);
        QTRY_COMPARE_WITH_TIMEOUT(cell(d, big, ModelsDialog::RunsColumn), QString("yes"), kTimeoutMs);
        qInfo("dialog shown in %lld ms, the 262k-token check done %lld ms later, %d timer ticks meanwhile", shown_ms,
              clock.elapsed() - shown_ms, ticks_before_verdict);
        QVERIFY2(ticks_before_verdict > 0, "the event loop did not turn while the file was checked");
        QTRY_VERIFY_WITH_TIMEOUT(!d.cache()->isChecking(), kTimeoutMs);
        QCOMPARE(d.statusText(), "extra-tensor.gguf cannot be run: model file has tensor 'blk.0.attn_qkv.weight', which "
                                 "the llama architecture does not use here (not supported)");
    }

    void hashesAreRememberedUntilTheFileChanges() {
        ModelCache cache;
        cache.refresh();
        QVERIFY(!cache.isHashing());
        QCOMPARE(cache.find(m_gemma)->sha256, wb_download_test::sha256Hex(wb_download_test::readFile(m_gemma)));

        const QByteArray other = wb_download_test::writeGguf(m_gemma, {"gemma3", -1, wb::GgmlType::Q8_0, 2, 3});
        cache.refresh();
        QVERIFY(cache.find(m_gemma)->sha256.isEmpty());
        QSignalSpy ready(&cache, &ModelCache::hashReady);
        QVERIFY(ready.wait(kTimeoutMs));
        QCOMPARE(ready.last().at(0).toString(), m_gemma);
        QCOMPARE(ready.last().at(1).toString(), wb_download_test::sha256Hex(other));
        QCOMPARE(cache.find(m_gemma)->sha256, wb_download_test::sha256Hex(other));
    }

    void loadEmitsModelChosenWithThePath() {
        ModelsDialog d;
        d.open();
        QSignalSpy chosen(&d, &ModelsDialog::modelChosen);
        d.selectPath(m_part);
        QVERIFY(!d.loadButton()->isEnabled());
        QVERIFY(d.resumeButton()->isEnabled());
        d.selectPath(m_llama);
        QVERIFY(d.loadButton()->isEnabled());
        QVERIFY(!d.resumeButton()->isEnabled());
        QTest::mouseClick(d.loadButton(), Qt::LeftButton);
        QCOMPARE(chosen.size(), 1);
        QCOMPARE(chosen.at(0).at(0).toString(), m_llama);
        QVERIFY(!d.isVisible());
    }

    void removeAsksFirstThenDeletes() {
        const QString doomed = m_cache.filePath("doomed.gguf");
        wb_download_test::writeGguf(doomed, {"llama", 7, wb::GgmlType::Q8_0, 1, 4});
        ModelsDialog d;
        d.show();
        d.selectPath(doomed);
        QVERIFY(d.removeButton()->isEnabled());
        d.removeButton()->click();
        QMessageBox* box = d.findChild<QMessageBox*>();
        QVERIFY(box);
        box->button(QMessageBox::No)->click();
        QVERIFY(QFileInfo::exists(doomed));
        d.removeButton()->click();
        QTRY_VERIFY(d.findChild<QMessageBox*>());
        d.findChild<QMessageBox*>()->button(QMessageBox::Yes)->click();
        QVERIFY(!QFileInfo::exists(doomed));
        QCOMPARE(d.rowOf(doomed), -1);
    }

    void downloadThroughTheDialogLandsInTheTable() {
        LocalHttpServer server;
        QVERIFY(server.listen());
        server.serve("/served.gguf", m_llamaBytes);
        ModelsDialog d;
        d.show();
        QTest::keyClicks(d.urlEdit(), server.url("/served.gguf").toString());
        QCOMPARE(d.nameEdit()->text(), QString("served.gguf"));  // the name follows the address
        d.sha256Edit()->setText(wb_download_test::sha256Hex(m_llamaBytes));
        QVERIFY(d.downloadButton()->isEnabled());
        d.downloadButton()->click();
        const QString dest = m_cache.filePath("served.gguf");
        QTRY_VERIFY_WITH_TIMEOUT(d.rowOf(dest) >= 0, kTimeoutMs);
        QVERIFY2(d.statusText().contains("Downloaded"), qPrintable(d.statusText()));
        QCOMPARE(wb_download_test::readFile(dest), m_llamaBytes);
        QCOMPARE(cell(d, dest, ModelsDialog::ArchColumn), QString("llama"));
        QTRY_COMPARE_WITH_TIMEOUT(cell(d, dest, ModelsDialog::HashColumn), wb_download_test::sha256Hex(m_llamaBytes), kTimeoutMs);
        QVERIFY(!d.progressBar()->isVisible());
        QVERIFY(QFile::remove(dest));
    }

    void canceledDownloadResumesFromItsTableRow() {
        LocalHttpServer server;
        QVERIFY(server.listen());
        server.serve("/slow.gguf", m_llamaBytes);
        server.bytesPerTick = 4096;
        ModelsDialog d;
        d.show();
        d.urlEdit()->setText(server.url("/slow.gguf").toString());
        d.nameEdit()->setText("slow.gguf");
        d.downloadButton()->click();
        QVERIFY(d.progressBar()->isVisible());
        QTRY_VERIFY_WITH_TIMEOUT(d.progressBar()->value() > 0, kTimeoutMs);
        d.cancelButton()->click();
        QVERIFY2(d.statusText().contains("kept"), qPrintable(d.statusText()));
        const QString part = ModelDownloader::partPath(m_cache.filePath("slow.gguf"));
        QVERIFY(d.rowOf(part) >= 0);

        // Resume from the table: the address comes from what the dialog remembered, not the field.
        server.bytesPerTick = 0;
        d.urlEdit()->clear();
        d.selectPath(part);
        QVERIFY(d.resumeButton()->isEnabled());
        d.resumeButton()->click();
        const QString dest = m_cache.filePath("slow.gguf");
        QTRY_VERIFY_WITH_TIMEOUT(d.rowOf(dest) >= 0, kTimeoutMs);
        QCOMPARE(d.rowOf(part), -1);
        QCOMPARE(wb_download_test::readFile(dest), m_llamaBytes);
        QVERIFY(server.requests().last().range.startsWith("bytes="));
        QVERIFY(QFile::remove(dest));
    }

    void fetchDefaultModelRunsTheScript() {
        const QString python = m_scratch.filePath("python3-with-pip");
        writeExecutable(python, "#!/bin/sh\nexit 0\n");
        const QString script = m_scratch.filePath("fetch-models.sh");
        writeExecutable(script, "echo \"fetching into $WHITEBOX_MODELS\"\ncp '" + QFile::encodeName(m_llama) + "' \"$WHITEBOX_MODELS/" +
                                    wb::default_model_file() + "\"\n");
        qputenv("PYTHON", QFile::encodeName(python));
        ModelsDialog d;
        d.show();
        d.setFetchScript(script);
        d.fetchButton()->click();
        QVERIFY(!d.fetchButton()->isEnabled());
        QVERIFY(d.progressBar()->isVisible());
        QTRY_VERIFY_WITH_TIMEOUT(d.statusText().contains("default model is in the cache"), kTimeoutMs);
        qunsetenv("PYTHON");
        QVERIFY2(d.fetchOutput().contains("fetching into " + m_cache.path()), qPrintable(d.fetchOutput()));
        const QString fetched = m_cache.filePath(wb::default_model_file());
        QVERIFY(d.rowOf(fetched) >= 0);
        QVERIFY(d.fetchButton()->isEnabled());
        QVERIFY(QFile::remove(fetched));
    }

    void fetchWithoutPipSaysWhatIsMissing() {
        qputenv("PYTHON", QFile::encodeName(m_scratch.filePath("no-such-python")));
        ModelsDialog d;
        d.show();
        d.setFetchScript(m_scratch.filePath("never-run.sh"));
        d.fetchButton()->click();
        QTRY_VERIFY_WITH_TIMEOUT(d.statusText().contains("python3-pip"), kTimeoutMs);
        qunsetenv("PYTHON");
        QVERIFY(d.statusText().contains("needs Python 3 with pip"));
        QVERIFY(d.fetchButton()->isEnabled());
    }

    void firstStartWithAnEmptyCacheShowsTheDialog() {
        QTemporaryDir empty;
        useCache(empty.path());
        QSettings().remove("lastModel");
        MainWindow w;
        w.show();
        QSignalSpy loading(w.controller(), &ChatController::loadStarted);
        w.start();
        QTRY_VERIFY(w.modelsDialog() && w.modelsDialog()->isVisible());
        QVERIFY(w.modelsDialog()->banner()->isVisible());
        QCOMPARE(w.modelsDialog()->table()->rowCount(), 0);
        QVERIFY(w.findChildren<QMessageBox*>().isEmpty());
        QCOMPARE(loading.size(), 0);

        // What is chosen in the dialog is loaded like File > Open model.
        const QString model = empty.filePath("picked.gguf");
        wb_download_test::writeGguf(model);
        w.modelsDialog()->refresh();
        QVERIFY(!w.modelsDialog()->banner()->isVisible());
        w.modelsDialog()->selectPath(model);
        QSignalSpy failed(w.controller(), &ChatController::loadFailed);  // a test file, not a real model
        w.modelsDialog()->loadButton()->click();
        QTRY_COMPARE_WITH_TIMEOUT(loading.size(), 1, kTimeoutMs);
        QCOMPARE(loading.at(0).at(0).toString(), model);
        QTRY_COMPARE_WITH_TIMEOUT(failed.size(), 1, kTimeoutMs);
        useCache(m_cache.path());
    }

    void defaultModelInTheCacheIsStillLoadedDirectly() {
        QTemporaryDir dir;
        useCache(dir.path());
        QSettings().remove("lastModel");
        const QString model = QString::fromStdString(wb::default_model_path());
        QVERIFY(model.startsWith(dir.path()));
        wb_download_test::writeGguf(model);
        MainWindow w;
        w.show();
        QSignalSpy loading(w.controller(), &ChatController::loadStarted);
        QSignalSpy failed(w.controller(), &ChatController::loadFailed);
        w.start();
        QTRY_COMPARE_WITH_TIMEOUT(loading.size(), 1, kTimeoutMs);
        QCOMPARE(loading.at(0).at(0).toString(), model);
        QTRY_COMPARE_WITH_TIMEOUT(failed.size(), 1, kTimeoutMs);
        QVERIFY(!w.modelsDialog());
        useCache(m_cache.path());
    }
};

QTEST_MAIN(TestModelsDialog)
#include "test_models_dialog.moc"
