// The logit lens and head statistics views with the real default model: what they show for a token is
// what the engine recorded for that step, compared with a direct Session run of the same prompt
// (greedy, so the same tokens) that records the lens and the attention itself; each is recorded only
// while its panel is shown; a click on a head opens its attention map.
#include <QDockWidget>
#include <QSignalSpy>
#include <QTableWidget>
#include <QThread>
#include <QtTest>

#include <qcustomplot.h>

#include "attention_panel.h"
#include "chat_controller.h"
#include "engine/backend.h"
#include "engine/head_stats.h"
#include "engine/model.h"
#include "engine/session.h"
#include "gui_test_support.h"
#include "head_grid_panel.h"
#include "inference_worker.h"
#include "logit_lens_panel.h"
#include "main_window.h"
#include "model/model_paths.h"

namespace {

constexpr int kTimeoutMs = 180000;
constexpr int kTokens = 5;

wb::SamplingParams greedy() {
    wb::SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = kTokens;
    return p;
}

// The direct run: the lens as the engine gives it, and the head statistics of the last row of each
// pass before a token (the row whose logits drew it), as generate --head-stats reports them.
class DirectObserver : public wb::Observer {
public:
    explicit DirectObserver(int32_t window) : m_window(window) {}
    wb::CaptureSpec capture() const override {
        wb::CaptureSpec spec;
        spec.logit_lens = LogitLensPanel::kTop;
        spec.prefill_attention = spec.decode_attention = true;
        return spec;
    }
    void on_token(const wb::TokenEvent& e) override {
        events.push_back(e);
        heads.push_back(m_pass);
    }
    void on_attention(const wb::AttentionEvent& e) override {
        if (e.n_keys != m_passEnd) m_pass.clear();
        m_passEnd = e.n_keys;
        const std::vector<wb::HeadStats> h = wb::head_stats(e, e.n_queries - 1, m_window);
        m_pass.insert(m_pass.end(), h.begin(), h.end());
    }
    std::vector<wb::TokenEvent> events;
    std::vector<std::vector<wb::HeadStats>> heads;

private:
    int32_t m_window;
    int32_t m_passEnd = -1;
    std::vector<wb::HeadStats> m_pass;
};

}  // namespace

class TestInspectionViews : public QObject {
    Q_OBJECT

    std::unique_ptr<MainWindow> m_window;
    DirectObserver m_direct{0};
    std::vector<int32_t> m_promptIds;

    // A reply in the window (after a new chat), greedy; the prompt's ids are kept for the direct run.
    bool reply(const QString& message) {
        ChatController* c = m_window->controller();
        c->newChat();
        QSignalSpy prompt(c, &ChatController::promptReady);
        QSignalSpy finished(c, &ChatController::generationFinished);
        if (!c->sendMessage(message) || !finished.wait(kTimeoutMs) || prompt.isEmpty()) return false;
        const PromptInfo info = prompt.last().at(0).value<PromptInfo>();
        m_promptIds.assign(info.ids.begin(), info.ids.end());
        return c->conversation().messages.last().tokens.size() >= 3;
    }

    void runDirect() {
        const std::unique_ptr<wb::Model> model = wb::Model::load(wb::default_model_path());
        const int threads = m_window->controller()->threads() > 0 ? m_window->controller()->threads() : std::max(1, QThread::idealThreadCount());
        wb::BackendChoice backend = wb::create_backend(wb::BackendKind::CPU, threads);
        wb::SessionOptions options;
        options.n_ctx = m_window->controller()->model().contextSize;
        wb::Session session(*model, *backend.backend, options);
        m_direct = DirectObserver(0);  // SmolLM2 has no sliding window
        session.generate(m_promptIds, wb::LiveSamplingParams(greedy()), &m_direct);
    }

    void show(const char* dockName) {
        m_window->focusPanel(QLatin1String(dockName));
        QTRY_VERIFY(m_window->dock(QLatin1String(dockName))->isVisible());
    }

private Q_SLOTS:
    void initTestCase() {
        wb_gui_test::isolateSettings("test_inspection_views");
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

    // Neither view shown: the engine is asked for neither (nothing shown costs nothing).
    void hiddenViewsAskForNothing() {
        show("attentionDock");
        InferenceWorker* w = m_window->controller()->worker();
        QTRY_COMPARE(w->captureSpec().logit_lens, 0);
        QVERIFY(!w->headStatsWanted());
    }

    void lensShowsTheEngineRecordedLens() {
        show("logitLensDock");
        InferenceWorker* w = m_window->controller()->worker();
        QCOMPARE(w->captureSpec().logit_lens, LogitLensPanel::kTop);
        QVERIFY(!w->headStatsWanted());  // its tab is behind the lens's
        QVERIFY(reply("What is the capital of France?"));
        runDirect();
        const ChatEntry& r = m_window->controller()->conversation().messages.last();
        const int messageIndex = int(m_window->controller()->conversation().messages.size()) - 1;
        const int n = std::min(int(r.tokens.size()), int(m_direct.events.size()));
        QVERIFY(n >= 3);
        LogitLensPanel* panel = m_window->logitLensPanel();
        for (int t = 0; t < n; ++t) {
            QCOMPARE(r.tokens[t].id, m_direct.events[size_t(t)].id);  // the same greedy reply
            QVERIFY(r.tokens[t].inspection && r.tokens[t].inspection->heads.empty());
            m_window->inspectToken(messageIndex, t);
            QVERIFY(panel->hasLens());
            const std::vector<wb::LensLayer>& want = m_direct.events[size_t(t)].lens;
            QTableWidget* table = panel->table();
            QCOMPARE(table->rowCount(), int(want.size()));
            QCOMPARE(panel->drawnGraph()->data()->size(), int(want.size()));
            for (int l = 0; l < int(want.size()); ++l) {
                const wb::LensLayer& e = want[size_t(l)];
                const QString where = QString("token %1 layer %2").arg(t).arg(l);
                QCOMPARE(table->item(l, LogitLensPanel::LayerColumn)->data(LogitLensPanel::ValueRole).toInt(), e.layer);
                QVERIFY2(table->item(l, LogitLensPanel::DrawnColumn)->data(LogitLensPanel::ValueRole).toDouble() == double(e.p_drawn), qPrintable(where));
                QCOMPARE(table->item(l, LogitLensPanel::DrawnColumn)->text(), QString::number(double(e.p_drawn), 'f', 4));
                QVERIFY2(table->item(l, LogitLensPanel::EntropyColumn)->data(LogitLensPanel::ValueRole).toDouble() == double(e.entropy), qPrintable(where));
                QCOMPARE(panel->drawnGraph()->data()->at(l)->value, double(e.p_drawn));
                QCOMPARE(panel->entropyGraph()->data()->at(l)->value, double(e.entropy));
                QCOMPARE(int(e.top_ids.size()), LogitLensPanel::kTop);
                for (int k = 0; k < LogitLensPanel::kTop; ++k) {
                    QTableWidgetItem* cell = table->item(l, LogitLensPanel::FirstRankColumn + k);
                    QCOMPARE(cell->data(LogitLensPanel::TokenRole).toInt(), e.top_ids[size_t(k)]);
                    QVERIFY2(cell->data(LogitLensPanel::ValueRole).toDouble() == double(e.top_p[size_t(k)]), qPrintable(where));
                    QVERIFY(cell->text().endsWith(QString::number(double(e.top_p[size_t(k)]), 'f', 3)));
                }
            }
        }
    }

    void headGridShowsTheEngineRecordedStatistics() {
        show("headStatsDock");
        InferenceWorker* w = m_window->controller()->worker();
        QVERIFY(w->headStatsWanted());
        QCOMPARE(w->captureSpec().logit_lens, 0);  // the lens's tab is behind now
        QVERIFY(reply("Name three colours."));
        runDirect();
        const ChatEntry& r = m_window->controller()->conversation().messages.last();
        const int messageIndex = int(m_window->controller()->conversation().messages.size()) - 1;
        const int n = std::min(int(r.tokens.size()), int(m_direct.events.size()));
        QVERIFY(n >= 3);
        HeadGridPanel* grid = m_window->headGridPanel();
        using S = HeadGridPanel::Statistic;
        for (int t = 0; t < n; ++t) {
            QCOMPARE(r.tokens[t].id, m_direct.events[size_t(t)].id);
            QVERIFY(r.tokens[t].inspection && r.tokens[t].inspection->lens.empty());
            m_window->inspectToken(messageIndex, t);
            const std::vector<wb::HeadStats>& want = m_direct.heads[size_t(t)];
            QCOMPARE(int(want.size()), 30 * 9);  // SmolLM2: 30 layers, 9 query heads
            QCOMPARE(grid->layerCount(), 30);
            QCOMPARE(grid->headCount(), 9);
            for (S st : {S::Entropy, S::Sink, S::Prev, S::Distance, S::InWindow}) {
                grid->setStatistic(st);
                for (const wb::HeadStats& e : want) {
                    const double got = grid->cellValue(e.layer, e.head);
                    QVERIFY2(got == HeadGridPanel::value(e, st), qPrintable(QString("token %1 layer %2 head %3: %4 vs %5")
                                                                                .arg(t).arg(e.layer).arg(e.head).arg(got).arg(HeadGridPanel::value(e, st))));
                    // What the map is coloured with.
                    QCOMPARE(grid->colorMap()->data()->cell(e.head, e.layer), got);
                }
            }
            const wb::HeadStats& e = want[size_t(7 * 9 + 4)];
            QCOMPARE(grid->stats(7, 4)->kv_head, e.kv_head);
            QCOMPARE(e.kv_head, 4 / 3);  // 9 query heads over 3 KV heads
            QVERIFY(grid->describeCell(7, 4).contains(QString("entropy %1 nats").arg(double(e.entropy), 0, 'f', 3)));
            QVERIFY(grid->describeCell(7, 4).contains("reads KV head 1"));
        }
    }

    // A click on a cell shows that head in the attention panel.
    void clickOpensTheHeadsAttention() {
        HeadGridPanel* grid = m_window->headGridPanel();
        show("headStatsDock");
        QVERIFY(grid->stats(12, 5));
        grid->plot()->replot();
        const QPoint at(int(grid->plot()->xAxis->coordToPixel(5)), int(grid->plot()->yAxis->coordToPixel(12)));
        QTest::mouseClick(grid->plot(), Qt::LeftButton, {}, at);
        QCOMPARE(m_window->attentionPanel()->layer(), 12);
        QCOMPARE(m_window->attentionPanel()->head(), 5);
        QTRY_VERIFY(m_window->dock("attentionDock")->isVisible());
    }

    // Activating a lens row (double-click, Enter) shows that layer's attention.
    void lensRowOpensTheLayersAttention() {
        show("logitLensDock");
        LogitLensPanel* panel = m_window->logitLensPanel();
        QVERIFY(reply("Why is the sky blue?"));  // recorded with the lens shown
        m_window->inspectToken(int(m_window->controller()->conversation().messages.size()) - 1, 0);
        QVERIFY(panel->hasLens());
        QTableWidget* table = panel->table();
        QVERIFY(table->rowCount() > 20);
        for (const int row : {17, 3}) {
            const int layer = table->item(row, LogitLensPanel::LayerColumn)->data(LogitLensPanel::ValueRole).toInt();
            QCOMPARE(layer, row);
            table->setFocus();
            table->setCurrentCell(row, LogitLensPanel::EntropyColumn);
            QTest::keyClick(table, Qt::Key_Return);  // what a double-click does too (the view's activation)
            QCOMPARE(m_window->attentionPanel()->layer(), layer);
            QTRY_VERIFY(m_window->dock("attentionDock")->isVisible());
            show("logitLensDock");
        }
    }
};

QTEST_MAIN(TestInspectionViews)
#include "test_inspection_views.moc"
