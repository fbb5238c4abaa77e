// KV-cache panel: bars per layer in MiB, the running total, the fill gauge, the element type and the
// formula estimate beside the measured figure.
#include <QProgressBar>
#include <QtTest>

#include <qcustomplot.h>

#include "gui_test_support.h"
#include "kv_cache_panel.h"
#include "model_summary.h"

class TestKvCachePanel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { wb_gui_test::isolateSettings("test_kv_cache_panel"); }

    void rendersStats() {
        KvCachePanel panel;
        ModelSummary m;
        m.nLayer = 2;
        m.nHeadKv = 3;
        m.headDim = 64;
        m.contextSize = 1024;
        panel.setModel(m);
        // 100 tokens: 2 (K and V) x 3 heads x 64 dims x 2 bytes = 768 bytes per token and layer.
        wb::KvStats s;
        s.n_tokens = 100;
        s.capacity = 1024;
        s.block_tokens = 128;
        for (int i = 0; i < 2; ++i) {
            wb::KvLayerStats l;
            l.tokens = 100;
            l.bytes_used = 76800;
            l.bytes_reserved = 98304;
            s.layers.push_back(l);
        }
        s.bytes_used = 2 * 76800;
        s.bytes_reserved = 2 * 98304;
        panel.handleStats(s);
        QCOMPARE(panel.usedBars()->data()->size(), 2);
        QCOMPARE(panel.usedBars()->data()->at(1)->value, 76800.0 / 1048576.0);
        QCOMPARE(panel.reservedBars()->data()->at(0)->value, 98304.0 / 1048576.0);
        QCOMPARE(panel.fillGauge()->value(), 100);
        QCOMPARE(panel.fillGauge()->maximum(), 1024);
        QVERIFY(panel.typeText().startsWith("f16"));
        QCOMPARE(KvCachePanel::formulaBytes(2, 3, 128, 128, 100), quint64(2 * 76800));
        QVERIFY2(panel.estimateText().contains("150.0 KiB"), qPrintable(panel.estimateText()));
        QVERIFY2(panel.measuredText().contains("150.0 KiB used"), qPrintable(panel.measuredText()));
        QCOMPARE(panel.totalUsedGraph()->data()->size(), 1);
        s.n_tokens = 200;
        s.bytes_used *= 2;
        panel.handleStats(s);
        QCOMPARE(panel.totalUsedGraph()->data()->size(), 2);
        QCOMPARE(panel.totalUsedGraph()->data()->at(1)->value, 4 * 76800.0 / 1048576.0);

        // A quantized cache: each type with its bits per value, and the formula in its block sizes
        // (a 64-value head row is 2 blocks: 68 bytes in q8_0, 36 in q4_0).
        s.type_k = wb::KvType::Q8_0;
        s.type_v = wb::KvType::Q4_0;
        s.n_tokens = 100;
        panel.handleStats(s);
        QVERIFY2(panel.typeText().startsWith("K q8_0 (8.5 bits per value), V q4_0 (4.5 bits per value)"),
                 qPrintable(panel.typeText()));
        QVERIFY2(panel.estimateText().contains("(68 B of K + 36 B of V per head)"), qPrintable(panel.estimateText()));
        QVERIFY2(panel.estimateText().contains("60.9 KiB"), qPrintable(panel.estimateText()));
    }

    // Prefix reuse as the engine's timings report it: the tokens the turn before left in the cache (not
    // recomputed) beside those evaluated; a reply's timings with no prompt leave it, a new model clears it.
    void showsPrefixReuse() {
        KvCachePanel panel;
        ModelSummary m;
        m.nLayer = 2;
        m.contextSize = 1024;
        panel.setModel(m);
        QCOMPARE(panel.reuseText(), QString("—"));
        wb::Timings t;
        t.n_reused = 120;
        t.n_prefill = 30;
        panel.handleTimings(t);
        QCOMPARE(panel.reuseText(),
                 QString("120 of the last prompt's 150 tokens reused from the turn before (not recomputed), 30 evaluated"));
        panel.handleTimings(wb::Timings{});
        QVERIFY(panel.reuseText().startsWith("120 of"));
        panel.setModel(m);
        QCOMPARE(panel.reuseText(), QString("—"));
    }
};

QTEST_MAIN(TestKvCachePanel)
#include "test_kv_cache_panel.moc"
