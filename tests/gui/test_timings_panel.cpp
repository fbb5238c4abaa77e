// The Timings panel with the real default model: what it plots is what the worker recorded of the
// reply (every token's latency and every decode step's forward pass, each layer's time when asked),
// checked against the engine's own totals (the generation's summary and the coalesced timingsChanged
// reports); nothing is recorded while the panel is hidden; the per-layer time only when ticked.
#include <QCheckBox>
#include <QDockWidget>
#include <QSignalSpy>
#include <QtTest>

#include <qcustomplot.h>

#include "chat_controller.h"
#include "gui_test_support.h"
#include "inference_worker.h"
#include "main_window.h"
#include "model/model_paths.h"
#include "timings_panel.h"

namespace {

constexpr int kTimeoutMs = 180000;
constexpr int kTokens = 8;

wb::SamplingParams greedy() {
    wb::SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = kTokens;
    return p;
}

}  // namespace

class TestTimingsPanel : public QObject {
    Q_OBJECT

    std::unique_ptr<MainWindow> m_window;
    GenerationSummary m_summary;
    QList<wb::Timings> m_reports;   // the coalesced timingsChanged of the last reply
    QList<TimingRecordPtr> m_records;

    // A reply in the window after a new chat (or, not fresh, in the same chat); what it sent is kept.
    bool reply(const QString& message, bool fresh = true) {
        ChatController* c = m_window->controller();
        if (fresh) c->newChat();
        QSignalSpy finished(c, &ChatController::generationFinished);
        QSignalSpy reports(c, &ChatController::timingsChanged);
        QSignalSpy records(c, &ChatController::timingsRecorded);
        if (!c->sendMessage(message) || !finished.wait(kTimeoutMs)) return false;
        QCoreApplication::processEvents();
        m_summary = finished.last().at(0).value<GenerationSummary>();
        m_reports.clear();
        for (const QList<QVariant>& r : reports) m_reports << r.at(0).value<wb::Timings>();
        m_records.clear();
        for (const QList<QVariant>& r : records) m_records << r.at(0).value<TimingRecordPtr>();
        return m_summary.reason != wb::StopReason::ERROR && c->conversation().messages.last().tokens.size() >= 3;
    }

    void show(const char* dockName) {
        m_window->focusPanel(QLatin1String(dockName));
        QTRY_VERIFY(m_window->dock(QLatin1String(dockName))->isVisible());
    }

    // The record against the engine's totals of the same reply.
    void verifyRecordIsTheEngines(const TimingRecord& rec) {
        const wb::Timings& t = m_summary.timings;
        QCOMPARE(rec.totals.prefill_ms, t.prefill_ms);
        QCOMPARE(rec.totals.n_prefill, t.n_prefill);
        QCOMPARE(rec.totals.n_reused, t.n_reused);
        QCOMPARE(rec.totals.ttft_ms, t.ttft_ms);
        QCOMPARE(rec.totals.decode_ms, t.decode_ms);
        QCOMPARE(rec.totals.n_decode, t.n_decode);
        QVERIFY(rec.totals.layer_ms == t.layer_ms);
        // One forward pass per decode step, one interval per token after the first.
        QCOMPARE(int(rec.stepMs.size()), t.n_decode);
        const int tokens = int(m_window->controller()->conversation().messages.last().tokens.size());
        QCOMPARE(int(rec.tokenMs.size()), tokens - 1);
        double steps = 0.0;
        for (double ms : rec.stepMs) {
            QVERIFY(ms > 0.0);
            steps += ms;
        }
        QVERIFY(steps <= t.decode_ms);
        for (double ms : rec.tokenMs) QVERIFY(ms > 0.0);
        // Every step time the engine reported in passing is the recorded one.
        int checked = 0;
        for (const wb::Timings& r : m_reports)
            if (r.n_decode > 0) {
                QCOMPARE(rec.stepMs[size_t(r.n_decode - 1)], r.last_token_ms);
                ++checked;
            }
        QVERIFY(checked >= 1);
    }

    // What the panel plots and says is the record, point for point.
    void verifyPanelDrawsTheRecord(const TimingRecord& rec) {
        TimingsPanel* p = m_window->timingsPanel();
        QCOMPARE(p->tokenGraph()->data()->size(), int(rec.tokenMs.size()));
        for (int i = 0; i < int(rec.tokenMs.size()); ++i) {
            QCOMPARE(p->tokenGraph()->data()->at(i)->key, double(i + 1));
            QVERIFY(p->tokenGraph()->data()->at(i)->value == rec.tokenMs[size_t(i)]);
        }
        QCOMPARE(p->stepGraph()->data()->size(), int(rec.stepMs.size()));
        for (int k = 0; k < int(rec.stepMs.size()); ++k) {
            QCOMPARE(p->stepGraph()->data()->at(k)->key, double(k + 1));
            QVERIFY(p->stepGraph()->data()->at(k)->value == rec.stepMs[size_t(k)]);
        }
        QCOMPARE(p->layerBars()->data()->size(), int(rec.totals.layer_ms.size()));
        for (int l = 0; l < int(rec.totals.layer_ms.size()); ++l) {
            QCOMPARE(p->layerBars()->data()->at(l)->key, double(l));
            QVERIFY(p->layerBars()->data()->at(l)->value == rec.totals.layer_ms[size_t(l)]);
        }
        const QString text = p->summaryText();
        QVERIFY2(text.contains(QString("TTFT %1 ms").arg(rec.totals.ttft_ms, 0, 'f', 1)), qPrintable(text));
        QVERIFY2(text.contains(QString("= %1 tokens/s").arg(rec.totals.prefill_tps(), 0, 'f', 1)), qPrintable(text));
        QVERIFY2(text.contains(QString("decode %1 steps").arg(rec.totals.n_decode)), qPrintable(text));
    }

private Q_SLOTS:
    void initTestCase() {
        wb_gui_test::isolateSettings("test_timings_panel");
        if (!QFileInfo::exists(QString::fromStdString(wb::default_model_path())))
            QFAIL("default model missing: run scripts/fetch-models.sh");
        m_window = std::make_unique<MainWindow>();
        m_window->resize(1366, 768);
        m_window->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
        QSignalSpy loaded(m_window->controller(), &ChatController::modelLoaded);
        m_window->start();
        QVERIFY(loaded.wait(kTimeoutMs));
        m_window->controller()->setSamplingParams(greedy());
    }

    void cleanupTestCase() { m_window.reset(); }

    // Hidden (its tab behind the attention panel's): the worker is asked for nothing and sends nothing.
    void hiddenRecordsNothing() {
        show("attentionDock");
        InferenceWorker* w = m_window->controller()->worker();
        QTRY_VERIFY(!w->timingsWanted());
        QVERIFY(!w->captureSpec().layer_timing);
        QVERIFY(reply("Say hello."));
        QVERIFY(m_records.isEmpty());
        QVERIFY(!m_window->timingsPanel()->hasRecord());
        QCOMPARE(m_window->timingsPanel()->tokenGraph()->data()->size(), 0);
    }

    void shownPlotsTheRecordedTimings() {
        show("timingsDock");
        InferenceWorker* w = m_window->controller()->worker();
        QVERIFY(w->timingsWanted());
        QVERIFY(!w->captureSpec().layer_timing);  // not ticked
        QVERIFY(reply("What is the capital of France?"));
        QVERIFY(!m_records.isEmpty());
        const TimingRecordPtr rec = m_records.last();
        QCOMPARE(m_window->timingsPanel()->record(), rec);
        verifyRecordIsTheEngines(*rec);
        QVERIFY(rec->totals.layer_ms.empty());
        verifyPanelDrawsTheRecord(*rec);
        // New chat: the panel forgets the reply.
        m_window->controller()->newChat();
        QVERIFY(!m_window->timingsPanel()->hasRecord());
        QCOMPARE(m_window->timingsPanel()->stepGraph()->data()->size(), 0);
    }

    // A reply made while the panel is hidden is not recorded, and the panel shown again does not go on
    // showing the reply before it as if it were the one on screen.
    void aReplyWhileHiddenLeavesNoStaleRecord() {
        show("timingsDock");
        QVERIFY(reply("Name a fruit."));
        QVERIFY(m_window->timingsPanel()->hasRecord());
        show("attentionDock");
        QTRY_VERIFY(!m_window->controller()->worker()->timingsWanted());
        QVERIFY(reply("And a vegetable?", false));
        QVERIFY(m_records.isEmpty());
        show("timingsDock");
        QVERIFY(!m_window->timingsPanel()->hasRecord());
        QCOMPARE(m_window->timingsPanel()->tokenGraph()->data()->size(), 0);
    }

    void layerTimesOnDemand() {
        show("timingsDock");
        TimingsPanel* p = m_window->timingsPanel();
        p->layerTimingBox()->setChecked(true);
        InferenceWorker* w = m_window->controller()->worker();
        QVERIFY(w->captureSpec().layer_timing);
        QVERIFY(reply("Name three colours."));
        const TimingRecordPtr rec = m_records.last();
        verifyRecordIsTheEngines(*rec);
        QCOMPARE(int(rec->totals.layer_ms.size()), m_window->controller()->model().nLayer);
        double sum = 0.0;
        for (double ms : rec->totals.layer_ms) {
            QVERIFY(ms > 0.0);
            sum += ms;
        }
        // Inside the forward passes they were measured in.
        QVERIFY(sum <= rec->totals.prefill_ms + rec->totals.decode_ms);
        verifyPanelDrawsTheRecord(*rec);
        QVERIFY(p->layerPlot()->isVisibleTo(p));
        // Hidden again: neither the tokens nor the layers are timed, ticked or not.
        show("attentionDock");
        QTRY_VERIFY(!w->timingsWanted());
        QVERIFY(!w->captureSpec().layer_timing);
        p->layerTimingBox()->setChecked(false);
    }

    // View › Go to › Timings, Ctrl+Shift+T.
    void shortcutShowsThePanel() {
        show("attentionDock");
        m_window->activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(m_window.get()));
        QTest::keyClick(m_window.get(), Qt::Key_T, Qt::ControlModifier | Qt::ShiftModifier);
        QTRY_VERIFY(m_window->dock("timingsDock")->isVisible());
        QWidget* f = QApplication::focusWidget();
        QVERIFY(f && m_window->dock("timingsDock")->isAncestorOf(f));
        QTRY_VERIFY(m_window->controller()->worker()->timingsWanted());
    }
};

QTEST_MAIN(TestTimingsPanel)
#include "test_timings_panel.moc"
