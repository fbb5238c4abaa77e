// The main window with the real default model: the title names the model, the backend (and why the GPU
// is not used) is visible, the message box has focus, Enter sends, Esc stops, clicking a token fills
// the inspector, the dock layout persists, and a bad GGUF gives a message box instead of a crash.
#include <QDockWidget>
#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QProgressBar>
#include <QtTest>

#include "chat_controller.h"
#include "chat_panel.h"
#include "gui_test_support.h"
#include "main_window.h"
#include "message_edit.h"
#include "model/model_paths.h"
#include "token_inspector.h"

namespace {
constexpr int kTimeoutMs = 180000;
}

class TestMainWindow : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() {
        wb_gui_test::isolateSettings("test_main_window");
        if (!QFileInfo::exists(QString::fromStdString(wb::default_model_path())))
            QFAIL(qPrintable(QString("default model missing at %1: run scripts/fetch-models.sh")
                                 .arg(QString::fromStdString(wb::default_model_path()))));
    }

    void startsWithTheDefaultModelAndTheKeyboardWorks() {
        MainWindow w;
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QSignalSpy loaded(w.controller(), &ChatController::modelLoaded);
        w.start();
        QVERIFY(loaded.wait(kTimeoutMs));
        const ModelSummary m = loaded.at(0).at(0).value<ModelSummary>();
        QCOMPARE(w.windowTitle(), QString("WhiteBox — %1").arg(m.name));
        // The backend is named; when the GPU is not used, the reason is shown.
        QVERIFY(!w.backendLabel()->text().isEmpty());
        if (!m.backendNote.isEmpty()) QVERIFY(w.backendLabel()->text().contains("GPU not used"));
        QVERIFY(!w.memoryLabel()->text().isEmpty());

        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));
        QCOMPARE(QApplication::focusWidget(), static_cast<QWidget*>(w.chatPanel()->input()));

        wb::SamplingParams p;
        p.temperature = 0.0f;
        p.max_tokens = 300;
        w.controller()->setSamplingParams(p);
        QSignalSpy finished(w.controller(), &ChatController::generationFinished);
        QSignalSpy tokens(w.controller(), &ChatController::tokenAppended);
        QTest::keyClicks(w.chatPanel()->input(), "Count from 1 to 100, one number per line.");
        QTest::keyClick(w.chatPanel()->input(), Qt::Key_Return);
        // Send waits for the message box's token count (a few milliseconds) before it submits.
        QTRY_VERIFY_WITH_TIMEOUT(w.controller()->isGenerating(), kTimeoutMs);
        QVERIFY(w.chatPanel()->input()->toPlainText().isEmpty());
        QVERIFY(tokens.wait(kTimeoutMs));
        QTest::keyClick(&w, Qt::Key_Escape);
        QVERIFY(finished.wait(kTimeoutMs));
        QCOMPARE(finished.last().at(0).value<GenerationSummary>().reason, wb::StopReason::STOPPED);
        QVERIFY(!w.speedLabel()->text().isEmpty() || !w.ttftLabel()->text().isEmpty());

        // Clicking a token (its link) opens it in the inspector.
        const int reply = int(w.controller()->conversation().messages.size()) - 1;
        Q_EMIT w.chatPanel()->view()->anchorClicked(QUrl(QString("tok:%1:0").arg(reply)));
        QVERIFY(w.tokenInspector()->hasToken());
        QVERIFY(w.tokenInspector()->headline().contains(QString("id %1").arg(w.controller()->conversation().messages[reply].tokens[0].id)));
    }

    // A long prompt shows its progress in the status bar; the bar goes away when the prompt is read.
    void prefillProgressShowsInTheStatusBar() {
        MainWindow w;
        w.show();
        Q_EMIT w.controller()->prefillProgress(256, 1000);
        QVERIFY(w.prefillBar()->isVisible());
        QCOMPARE(w.prefillBar()->value(), 256);
        QCOMPARE(w.prefillBar()->maximum(), 1000);
        Q_EMIT w.controller()->prefillProgress(1000, 1000);
        QVERIFY(!w.prefillBar()->isVisible());
    }

    void dockLayoutPersists() {
        {
            MainWindow w;
            w.show();
            w.dock("modelInfoDock")->hide();
            w.close();
        }
        MainWindow again;
        again.show();
        QVERIFY(!again.dock("modelInfoDock")->isVisible());
        QVERIFY(again.dock("attentionDock")->isVisible());
    }

    void badGgufShowsAMessageBox() {
        QTemporaryDir dir;
        const QString path = dir.filePath("bad.gguf");
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(64, 'x'));
        f.close();
        MainWindow w;
        w.show();
        QSignalSpy failed(w.controller(), &ChatController::loadFailed);
        w.controller()->loadModel(path);
        QVERIFY(failed.wait(kTimeoutMs));
        QTRY_VERIFY(!w.findChildren<QMessageBox*>().isEmpty());
        const QMessageBox* box = w.findChildren<QMessageBox*>().first();
        QVERIFY(box->text().contains("bad.gguf"));
        QVERIFY(box->text().contains(failed.at(0).at(1).toString()));
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
