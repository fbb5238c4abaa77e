// A full context in the desktop app (issue #20 item 2), with the real default model (SmolLM2) on a
// 256-token context and replies that never end early (ignore_eos): a scripted multi-turn chat goes on
// past the context under Shift and under Trim, every reply ends by its token limit and every message
// typed is kept; under Stop the reply that fills the context ends with the notice, and its "Shift and
// continue" / "Trim old turns and continue" continue that same reply. The KV panel and the attention
// panel show the cut the engine reported, which is also what the KV cache recorded (KvStats) and what
// the generation returned (GenerationSummary::cuts).
#include <QFileInfo>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QtTest>

#include <qcustomplot.h>

#include "attention_panel.h"
#include "chat_controller.h"
#include "chat_panel.h"
#include "context_full_notice.h"
#include "gui_test_support.h"
#include "kv_cache_panel.h"
#include "model/model_paths.h"

namespace {

constexpr int kTimeoutMs = 180000;
constexpr int kContext = 256;

QString turnText(int i) {
    return QString("Turn %1: tell me something about the number %1.").arg(i);
}

}  // namespace

class TestContextFull : public QObject {
    Q_OBJECT

    // The panels as the main window wires them (MainWindow's constructor).
    struct Window {
        ChatController controller;
        ChatPanel chat{&controller};
        KvCachePanel kv;
        AttentionPanel attention{controller.attentionStore()};
        wb::KvStats stats;
        QVector<GenerationSummary> finished;
        Window() {
            QObject::connect(&controller, &ChatController::contextCut, &kv, &KvCachePanel::handleCut);
            QObject::connect(&controller, &ChatController::currentConversationChanged, &kv, &KvCachePanel::clearCut);
            QObject::connect(&controller, &ChatController::kvStatsChanged, &kv, [this](const wb::KvStats& s) { stats = s; });
            QObject::connect(&controller, &ChatController::generationFinished, &kv,
                             [this](const GenerationSummary& s) { finished.append(s); });
        }
    };

    static void load(Window& w, wb::ContextPolicy policy, int maxTokens) {
        QSignalSpy loaded(&w.controller, &ChatController::modelLoaded);
        w.controller.setContextSize(kContext);
        w.controller.loadModel(QString::fromStdString(wb::default_model_path()));
        QVERIFY(loaded.wait(kTimeoutMs));
        w.controller.setContextPolicy(policy);
        setMaxTokens(w, maxTokens);
    }

    static void setMaxTokens(Window& w, int maxTokens) {
        wb::SamplingParams p;
        p.temperature = 0.0f;
        p.ignore_eos = true;  // every reply runs to its limit (or the end of the context)
        p.max_tokens = maxTokens;
        w.controller.setSamplingParams(p);
    }

    static void waitIdle(Window& w) {
        QTRY_VERIFY_WITH_TIMEOUT(!w.controller.isGenerating(), kTimeoutMs);
    }

    static void send(Window& w, const QString& text) {
        QVERIFY(w.controller.sendMessage(text));
        waitIdle(w);
    }

    // The panels show the engine's last cut: the KV panel's and the attention store's equal the last
    // one the generation returned, and a shift's equals the KV cache's own record of it.
    static void checkPanelsShow(Window& w, wb::ContextPolicy how) {
        wb::ContextCut engine;
        for (const GenerationSummary& s : w.finished)
            if (!s.cuts.empty()) engine = s.cuts.back();
        QCOMPARE(int(engine.how), int(how));
        QVERIFY(engine.dropped > 0);
        const wb::ContextCut& kv = w.kv.lastCut();
        QCOMPARE(int(kv.how), int(engine.how));
        QCOMPARE(kv.position, engine.position);
        QCOMPARE(kv.dropped, engine.dropped);
        QVERIFY2(w.kv.cutText().contains(QString("position %1: %2 tokens").arg(engine.position).arg(engine.dropped)),
                 qPrintable(w.kv.cutText()));
        if (how == wb::ContextPolicy::SHIFT) {
            QVERIFY(w.stats.n_shifts > 0);
            QCOMPARE(w.stats.shift_keep, engine.position);
            QCOMPARE(w.stats.shift_dropped, engine.dropped);
        }
        const wb::ContextCut& store = w.controller.attentionStore()->cut();
        QCOMPARE(store.position, engine.position);
        QCOMPARE(store.dropped, engine.dropped);
        w.attention.refreshNow();
        QVERIFY(w.attention.cutLine() != nullptr);
        QCOMPARE(w.attention.cutLine()->point1->coords().x(), engine.position - 0.5);
        QVERIFY(w.attention.cutText().contains(QString::number(engine.dropped)));
    }

    // A scripted chat of `turns` turns: every reply ends by its limit, every message stays as typed.
    static void chat(Window& w, int turns) {
        for (int i = 0; i < turns; ++i) {
            send(w, turnText(i));
            const auto& m = w.controller.conversation().messages;
            QCOMPARE(m.size(), qsizetype(2 * (i + 1)));
            QCOMPARE(m.last().stopReason, QString("max_tokens"));
            QCOMPARE(m.last().tokens.size(), qsizetype(48));
        }
        const auto& m = w.controller.conversation().messages;
        for (int i = 0; i < turns; ++i) QCOMPARE(m[2 * i].content, turnText(i));
    }

private Q_SLOTS:
    void initTestCase() {
        wb_gui_test::isolateSettings("test_context_full");
        const QString path = QString::fromStdString(wb::default_model_path());
        if (!QFileInfo::exists(path)) QFAIL(qPrintable(QString("default model missing at %1: run scripts/fetch-models.sh").arg(path)));
    }

    void shiftGoesOnPastTheContext() {
        Window w;
        load(w, wb::ContextPolicy::SHIFT, 48);
        QSignalSpy cuts(&w.controller, &ChatController::contextCut);
        chat(w, 8);  // about 8 x 70 tokens on a 256-token context
        QVERIFY(cuts.count() >= 2);
        QVERIFY(!w.chat.contextFullNotice()->isVisibleTo(&w.chat));
        checkPanelsShow(w, wb::ContextPolicy::SHIFT);
    }

    void trimGoesOnPastTheContext() {
        Window w;
        load(w, wb::ContextPolicy::TRIM, 48);
        QSignalSpy cuts(&w.controller, &ChatController::contextCut);
        chat(w, 8);
        QVERIFY(cuts.count() >= 2);
        for (const QList<QVariant>& c : cuts) QCOMPARE(int(c[0].value<wb::ContextCut>().how), int(wb::ContextPolicy::TRIM));
        checkPanelsShow(w, wb::ContextPolicy::TRIM);
    }

    // Under Trim, a reply continued after old turns are dropped keeps to max_tokens over all its
    // rounds, and one that fills the context with no turn left to drop ends as full, not as an error.
    void trimContinuesWithinMaxTokensAndEndsFull() {
        Window w;
        load(w, wb::ContextPolicy::TRIM, 48);
        send(w, turnText(0));
        send(w, turnText(1));
        setMaxTokens(w, 150);  // the third reply fills the context, is trimmed and continued
        QSignalSpy cuts(&w.controller, &ChatController::contextCut);
        send(w, turnText(2));
        {
            const auto& m = w.controller.conversation().messages;
            QVERIFY(cuts.count() >= 1);
            QCOMPARE(m.last().stopReason, QString("max_tokens"));
            QCOMPARE(m.last().tokens.size(), qsizetype(150));
        }
        Window fresh;
        load(fresh, wb::ContextPolicy::TRIM, 2000);
        send(fresh, turnText(0));  // one turn and a reply longer than the context: nothing to drop
        const auto& m = fresh.controller.conversation().messages;
        QCOMPARE(m.last().stopReason, QString("context_full"));
        QVERIFY(m.last().tokens.size() > 100);
    }

    void stopOffersShiftAndTrim() {
        Window w;
        load(w, wb::ContextPolicy::STOP, 48);
        send(w, turnText(0));
        // The second reply has no limit short of the context: it stops there, with the notice.
        setMaxTokens(w, 1000);
        send(w, turnText(1));
        ContextFullNotice* notice = w.chat.contextFullNotice();
        QCOMPARE(w.controller.conversation().messages.last().stopReason, QString("context_full"));
        QVERIFY(notice->isVisibleTo(&w.chat));
        QVERIFY(notice->shiftButton()->isEnabled());
        const QString stopped = w.controller.conversation().messages.last().content;
        const qsizetype tokens = w.controller.conversation().messages.last().tokens.size();

        // Trim old turns and continue: the first turn goes, the same reply goes on by 24 tokens.
        setMaxTokens(w, 24);
        QTest::mouseClick(notice->trimButton(), Qt::LeftButton);
        QVERIFY(w.controller.isGenerating());
        waitIdle(w);
        auto m = w.controller.conversation().messages;
        QCOMPARE(m.size(), qsizetype(4));
        QCOMPARE(m[0].content, turnText(0));
        QCOMPARE(m[2].content, turnText(1));
        QCOMPARE(m.last().stopReason, QString("max_tokens"));
        QCOMPARE(m.last().tokens.size(), tokens + 24);
        QVERIFY(m.last().content.startsWith(stopped));
        QVERIFY(!notice->isVisibleTo(&w.chat));
        checkPanelsShow(w, wb::ContextPolicy::TRIM);

    }

    void stopThenShiftAndContinue() {
        Window w;
        load(w, wb::ContextPolicy::STOP, 1000);
        send(w, turnText(0));
        ContextFullNotice* notice = w.chat.contextFullNotice();
        QCOMPARE(w.controller.conversation().messages.last().stopReason, QString("context_full"));
        QVERIFY(notice->isVisibleTo(&w.chat));
        const QString stopped = w.controller.conversation().messages.last().content;
        const qsizetype before = w.controller.conversation().messages.last().tokens.size();
        setMaxTokens(w, 24);
        QTest::mouseClick(notice->shiftButton(), Qt::LeftButton);
        waitIdle(w);
        const auto m = w.controller.conversation().messages;
        QCOMPARE(m.size(), qsizetype(2));
        QCOMPARE(m[0].content, turnText(0));
        QCOMPARE(m.last().stopReason, QString("max_tokens"));
        QCOMPARE(m.last().tokens.size(), before + 24);
        QVERIFY(m.last().content.startsWith(stopped));
        QVERIFY(!notice->isVisibleTo(&w.chat));
        checkPanelsShow(w, wb::ContextPolicy::SHIFT);
        // New chat from the notice of the next fill empties the chat and the KV panel's cut.
        setMaxTokens(w, 1000);
        QVERIFY(w.controller.regenerate());
        waitIdle(w);
        QVERIFY(notice->isVisibleTo(&w.chat));
        QTest::mouseClick(notice->newChatButton(), Qt::LeftButton);
        QVERIFY(w.controller.conversation().messages.isEmpty());
        QVERIFY(w.kv.cutText().startsWith("none"));
    }
};

QTEST_MAIN(TestContextFull)
#include "test_context_full.moc"
