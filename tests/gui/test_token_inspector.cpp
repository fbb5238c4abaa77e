// Token inspector and model info: a token's alternatives, its sampler trace and its attention row for
// the selected layer and head; the model summary and its hash.
#include <QTableWidget>
#include <QTreeWidget>
#include <QtTest>

#include <qcustomplot.h>

#include "attention_store.h"
#include "gui_test_support.h"
#include "model_info_panel.h"
#include "token_inspector.h"

class TestTokenInspector : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { wb_gui_test::isolateSettings("test_token_inspector"); }

    void showsAlternativesTraceAndAttentionRow() {
        AttentionStore store;
        store.setModelShape(2, 2);
        PromptInfo info;
        info.pieces = {"a", "b", "c", "d"};
        info.ids = {1, 2, 3, 4};
        store.handlePrompt(info);
        store.addEvents({wb_gui_test::attentionEvent(1, 2, 0, 4, [](int h, int q, int k) { return float(h * 100 + q * 10 + k); })});
        TokenInspector inspector(&store);
        inspector.setAttentionSelection(1, 1);

        TokenRecord t;
        t.id = 101;
        t.piece = "t1";
        t.p = 0.7f;
        t.position = 3;  // chosen by the step whose query was position 2
        t.candidates = wb_gui_test::tokenEvent({0.6f, 0.3f}, {0.3f, 0.7f}, 1).candidates;
        wb::SamplerStageTrace s;
        s.stage = "top_k";
        s.n_before = 49152;
        s.n_after = 40;
        s.top_after = {{101, 1.0f, 0.7f}};
        t.trace = {s};
        inspector.setToken(t);

        QVERIFY(inspector.headline().contains("'t1'") && inspector.headline().contains("0.7000"));
        QCOMPARE(inspector.candidateTable()->rowCount(), 2);
        QCOMPARE(inspector.candidateTable()->item(1, 1)->text(), QString("101"));
        QCOMPARE(inspector.candidateTable()->item(0, 2)->text(), QString("0.6000"));
        QVERIFY(inspector.candidateTable()->item(1, 0)->font().bold());
        QCOMPARE(inspector.traceTree()->topLevelItemCount(), 1);
        QCOMPARE(inspector.traceTree()->topLevelItem(0)->text(1), QString("49152 → 40"));
        QCPBars* bars = inspector.attentionBars();
        QCOMPARE(bars->data()->size(), 3);  // keys 0..2 of query 2
        QCOMPARE(bars->data()->at(1)->value, 100.0 + 20.0 + 1.0);
        inspector.setAttentionSelection(1, 0);
        QCOMPARE(bars->data()->at(2)->value, 22.0);
    }

    void modelInfoShowsSummaryAndHash() {
        ModelInfoPanel panel;
        ModelSummary s;
        s.path = "/m/x.gguf";
        s.name = "X";
        s.arch = "llama";
        s.metadata = {{"general.name", "X"}, {"llama.block_count", "30"}};
        s.architecture = {{"layers", "30"}};
        s.tensors = {{"token_embd.weight", "q4_1", "[576, 49152]", 1000}};
        s.tensorTypes = {{"q4_1", 1}};
        s.weightBytes = 1000;
        s.kvBytesPerToken = 2048;
        s.contextSize = 1024;
        panel.setModel(s);
        QCOMPARE(panel.metadataTable()->rowCount(), 2);
        QCOMPARE(panel.tensorTable()->item(0, 1)->text(), QString("q4_1"));
        QVERIFY(panel.memoryText().contains("2.0 MiB at the 1024-token context"));
        panel.setFileHash("/other.gguf", "dead");
        QVERIFY(panel.hashText() != "dead");
        panel.setFileHash("/m/x.gguf", "beef");
        QCOMPARE(panel.hashText(), QString("beef"));
    }
};

QTEST_MAIN(TestTokenInspector)
#include "test_token_inspector.moc"
