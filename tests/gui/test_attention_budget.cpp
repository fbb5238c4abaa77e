// Captured attention within its memory budget, with the real default model: "capture all layers" over a
// long reply keeps the store's rows within the budget (the store's own accounting and the process's
// resident memory), the oldest rows are the ones dropped, and New chat gives the memory back (the store
// reports 0 and the resident memory drops). Before the budget a reply of this length took ~140 MB.
#include <QFile>
#include <QFileInfo>
#include <QSignalSpy>
#include <QtTest>

#include <unistd.h>

#include "attention_store.h"
#include "chat_controller.h"
#include "gui_test_support.h"
#include "model/model_paths.h"

namespace {

constexpr int kLoadTimeoutMs = 120000;
constexpr int kReplyTimeoutMs = 300000;
constexpr qint64 kBudget = qint64(16) << 20;
// Resident growth allowed beyond the budget: the KV cache of ~520 tokens (SmolLM2: 23 KiB a token),
// the engine's capture buffers, queued events and allocator slack.
constexpr qint64 kSlack = qint64(40) << 20;
constexpr int kTokens = 480;

qint64 residentBytes() {
    QFile f(QStringLiteral("/proc/self/statm"));
    if (!f.open(QIODevice::ReadOnly)) return 0;
    const QList<QByteArray> fields = f.readAll().split(' ');
    return fields.size() > 1 ? fields[1].toLongLong() * qint64(sysconf(_SC_PAGESIZE)) : 0;
}

wb::SamplingParams longGreedy(int tokens) {
    wb::SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = tokens;
    p.ignore_eos = true;  // the reply is as long as asked
    return p;
}

}  // namespace

class TestAttentionBudget : public QObject {
    Q_OBJECT

    bool reply(ChatController& c, const QString& text) {
        QSignalSpy finished(&c, &ChatController::generationFinished);
        return c.sendMessage(text) && finished.wait(kReplyTimeoutMs);
    }

private Q_SLOTS:
    void initTestCase() {
        wb_gui_test::isolateSettings("test_attention_budget");
        if (!QFileInfo::exists(QString::fromStdString(wb::default_model_path())))
            QFAIL("default model missing: run scripts/fetch-models.sh");
        if (residentBytes() == 0) QSKIP("no /proc/self/statm: resident memory cannot be measured here");
    }

    void longCaptureStaysWithinBudgetAndNewChatReleasesIt() {
        ChatController c;
        QSignalSpy loaded(&c, &ChatController::modelLoaded);
        c.loadModel(QString::fromStdString(wb::default_model_path()));
        QVERIFY(loaded.wait(kLoadTimeoutMs));
        AttentionStore* store = c.attentionStore();
        store->setBudgetBytes(kBudget);
        wb::CaptureSpec spec;  // every layer and head, prompt and reply: what "capture all layers" asks
        spec.prefill_attention = spec.decode_attention = true;
        c.setCaptureSpec(spec);

        // A short reply first: the engine, the worker and Qt make their steady allocations.
        c.setSamplingParams(longGreedy(8));
        QVERIFY(reply(c, QStringLiteral("Hi")));
        c.newChat();
        const qint64 rss0 = residentBytes();

        qint64 peakStore = 0, peakRss = 0;
        connect(store, &AttentionStore::memoryChanged, this, [&] {
            peakStore = std::max(peakStore, store->bytesUsed());
            peakRss = std::max(peakRss, residentBytes());
        });
        c.setSamplingParams(longGreedy(kTokens));
        QVERIFY(reply(c, QStringLiteral("Count from 1 to 1000, one number per line.")));
        QCOMPARE(c.conversation().messages.last().tokens.size(), kTokens);
        const int n = store->tokenCount();
        qInfo("%d positions; store peak %.1f MiB (budget %.0f MiB); resident +%.1f MiB; rows below %d dropped", n,
              double(peakStore) / (1 << 20), double(kBudget) / (1 << 20), double(peakRss - rss0) / (1 << 20),
              store->droppedBelow());
        QVERIFY(peakStore > kBudget / 2);  // the budget was reached, so it was what bounded the rows
        QVERIFY(peakStore <= kBudget);
        QVERIFY2(peakRss - rss0 <= kBudget + kSlack, "resident memory grew past the budget and slack");
        // The oldest rows went, the newest are all there.
        QVERIFY(store->droppedBelow() > 0);
        QVERIFY(store->row(0, 0, store->droppedBelow() - 1) == nullptr);
        for (int layer = 0; layer < store->layerCount(); ++layer)
            for (int head = 0; head < store->headCount(); ++head) QVERIFY(store->row(layer, head, n - 2) != nullptr);

        const qint64 held = store->bytesUsed(), rssBefore = residentBytes();
        c.newChat();
        QCOMPARE(store->bytesUsed(), qint64(0));
        const qint64 rssAfter = residentBytes();
        qInfo("New chat: store held %.1f MiB; resident %.1f -> %.1f MiB", double(held) / (1 << 20),
              double(rssBefore) / (1 << 20), double(rssAfter) / (1 << 20));
        QVERIFY2(rssBefore - rssAfter >= held / 2, "New chat did not give the captured rows' memory back");
    }
};

QTEST_MAIN(TestAttentionBudget)
#include "test_attention_budget.moc"
