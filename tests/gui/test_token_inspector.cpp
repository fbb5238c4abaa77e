// Token inspector and model info: a token's alternatives, its sampler trace and its attention row for
// the selected layer and head; the model summary and its hash.
#include <QTableWidget>
#include <QTreeWidget>
#include <QtTest>

#include <cmath>
#include <memory>

#include <qcustomplot.h>

#include "attention_store.h"
#include "gui_test_support.h"
#include "model_info_panel.h"
#include "sampling/sampler.h"
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

    // Each stage's own account (SamplerStageTrace::detail, and the p cut-off it recorded) is a column of
    // the stage table, and the best tokens after a stage are named by their text where the candidates
    // have it.
    void stageTableShowsDetailAndTokenText() {
        AttentionStore store;
        TokenInspector inspector(&store);
        TokenRecord t;
        t.id = 101;
        t.piece = "t1";
        t.candidates = wb_gui_test::tokenEvent({0.6f, 0.3f}, {0.3f, 0.7f}, 1).candidates;
        wb::SamplerStageTrace s;
        s.stage = "min_p";
        s.n_before = 40;
        s.n_after = 2;
        s.detail = "p >= 0.05 x p_max";
        s.p_cutoff = 0.0301;  // as the chain recorded it
        s.top_after = {{101, 1.0f, 0.7f}, {777, 0.5f, 0.3f}};
        t.trace = {s};
        inspector.setToken(t);
        QTreeWidgetItem* row = inspector.traceTree()->topLevelItem(0);
        QCOMPARE(row->text(2), QString("p >= 0.05 x p_max · cut-off p = 0.0301"));
        QCOMPARE(row->text(3), QString("'t1' 0.700, #777 0.300"));
    }

    // Every stage of a real chain's trace is a row of the stage table with what it kept and the
    // threshold it applied: the original six, the new stages (logit bias, DRY, top-nσ, XTC), both
    // mirostats and the grammar, each run where it acts. A threshold shows as the stage wrote it (its
    // detail); a logit cut-off (min-p, top-nσ) also as the probability it cut at.
    void stageTableShowsEveryStageWithWhatItKeptAndItsThreshold_data() {
        QTest::addColumn<QString>("chain");
        QTest::addColumn<QStringList>("stages");
        QTest::newRow("every stage") << "all" << QStringList{"logit_bias", "penalties", "dry", "top_n_sigma", "top_k", "typical_p",
                                                          "top_p", "min_p", "xtc", "temperature", "dist"};
        QTest::newRow("mirostat 1") << "mirostat" << QStringList{"temperature", "mirostat"};
        QTest::newRow("mirostat 2") << "mirostat_v2" << QStringList{"temperature", "mirostat_v2"};
        // The model's favourite ("maybe") does not fit: the grammar filters, then the stages draw again.
        QTest::newRow("grammar") << "grammar" << QStringList{"grammar", "penalties", "top_k", "typical_p", "top_p", "min_p",
                                                           "temperature", "dist"};
    }
    void stageTableShowsEveryStageWithWhatItKeptAndItsThreshold() {
        QFETCH(QString, chain);
        QFETCH(QStringList, stages);
        const std::vector<std::string> pieces = {"maybe", "yes", "no", "perhaps", "sure", "never", "ok", "fine"};
        auto vocab = std::make_shared<wb::SamplerVocab>();
        vocab->n_vocab = int32_t(pieces.size());
        vocab->piece = [pieces](int32_t id) { return pieces.at(size_t(id)); };
        vocab->is_eog = [](int32_t) { return false; };
        wb::SamplingParams p;
        p.seed = 7;
        p.top_k = 6;
        p.top_p = 0.97f;
        p.min_p = 0.02f;
        p.typical_p = 0.99f;
        if (chain == "all") {
            p.logit_bias = {{7, -1.0f}};
            p.dry_multiplier = 0.8f;
            p.dry_sequence_breakers.clear();
            p.top_n_sigma = 2.0f;
            p.xtc_probability = 1.0f;
            p.xtc_threshold = 0.1f;
        } else if (chain.startsWith("mirostat")) {
            p.mirostat = chain == "mirostat" ? 1 : 2;
        } else {
            p.grammar = R"(root ::= "yes" | "no")";
        }
        wb::SamplerChain sampler(p, vocab);
        for (int32_t t : {3, 4, 5, 3, 4}) sampler.accept(t);  // "perhaps sure never perhaps sure": DRY penalises "never"
        std::vector<float> logits = {3.0f, 2.5f, 2.2f, 2.0f, 1.8f, 1.0f, 0.5f, 0.2f};
        if (chain == "grammar") logits[0] = 9.0f;  // the first draw surely takes "maybe"
        TokenRecord t;
        t.id = sampler.sample(logits.data(), int32_t(logits.size()), &t.trace, 5);
        t.piece = QString::fromStdString(pieces[size_t(t.id)]);
        for (int32_t id = 0; id < int32_t(pieces.size()); ++id) t.candidates.push_back({id, pieces[size_t(id)], 0.1f, 0.1f});
        AttentionStore store;
        TokenInspector inspector(&store);
        inspector.setToken(t);

        QTreeWidget* table = inspector.traceTree();
        QStringList shown;
        for (int r = 0; r < table->topLevelItemCount(); ++r) shown << table->topLevelItem(r)->text(0);
        QCOMPARE(shown, stages);
        for (int r = 0; r < table->topLevelItemCount(); ++r) {
            const wb::SamplerStageTrace& s = t.trace[size_t(r)];
            const QTreeWidgetItem* row = table->topLevelItem(r);
            const QString where = row->text(0) + ": " + row->text(2);
            QCOMPARE(row->text(1), QString("%1 → %2").arg(s.n_before).arg(s.n_after));
            // Only the draw has nothing to add to its name.
            QVERIFY2(row->text(2).startsWith(QString::fromStdString(s.detail)) && (!s.detail.empty() || s.stage == "dist"),
                     qPrintable(where));
            if (std::isfinite(s.p_cutoff)) {
                QVERIFY2(row->text(2).endsWith(QString(" · cut-off p = %1").arg(s.p_cutoff, 0, 'g', 3)), qPrintable(where));
            } else if (std::isfinite(s.threshold)) {
                QVERIFY2(row->text(2).contains(QString::asprintf("%.4g", s.threshold)), qPrintable(where));
            }
            // The best survivors by their text, the first as the stage left it.
            QVERIFY2(row->text(3).startsWith(QString("'%1' ").arg(QString::fromStdString(pieces[size_t(s.top_after.at(0).id)]))),
                     qPrintable(row->text(0) + ": " + row->text(3)));
        }
        // Each stage that cuts did, and recorded its threshold: the table explains the draw.
        const auto entry = [&](const char* stage) {
            for (const wb::SamplerStageTrace& s : t.trace)
                if (s.stage == stage) return s;
            return wb::SamplerStageTrace{};
        };
        if (chain == "all") {
            for (const char* stage : {"top_n_sigma", "top_k", "typical_p", "top_p", "min_p", "xtc"})
                QVERIFY2(std::isfinite(entry(stage).threshold), stage);
            QVERIFY(entry("top_n_sigma").n_after < entry("top_n_sigma").n_before && entry("xtc").n_after < entry("xtc").n_before);
            QVERIFY2(entry("dry").detail.find("penalised 1 tokens") != std::string::npos, entry("dry").detail.c_str());
            QVERIFY2(entry("logit_bias").detail.find("7-1") != std::string::npos, entry("logit_bias").detail.c_str());
        } else if (chain == "grammar") {
            QCOMPARE(entry("grammar").n_after, size_t(2));
            QVERIFY(t.id == 1 || t.id == 2);
        } else {
            QVERIFY(std::isfinite(entry(qPrintable(chain)).threshold));
        }
    }

    // The header names the token's own piece, also when the reply held its text back (it added nothing
    // yet: 'im' inside a typed "<|im_start|>"), and says what it added.
    void headerShowsTheTokensOwnPiece() {
        AttentionStore store;
        TokenInspector inspector(&store);
        TokenRecord t;
        t.id = 321;
        t.piece = "";
        t.tokenPiece = "im";
        inspector.setToken(t);
        QVERIFY2(inspector.headline().startsWith("'im' · id 321"), qPrintable(inspector.headline()));
        QVERIFY2(inspector.headline().contains("added ∅ to the reply"), qPrintable(inspector.headline()));
        // Bytes of a split character are shown escaped, not as replacement characters.
        QCOMPARE(tokenText(std::string("a\xE2\x82")), QString("a\\xE2\\x82"));
        QCOMPARE(tokenText(std::string("\xE2\x82\xAC")), QString::fromUtf8("€"));
        // A conversation file keeps it.
        ChatEntry reply{"assistant", "", {t}, {}};
        Conversation c;
        c.append({"user", "hi", {}, {}});
        c.append(reply);
        QString error;
        const std::optional<Conversation> back = Conversation::fromJson(c.toJson(), &error);
        QVERIFY2(back.has_value(), qPrintable(error));
        QCOMPARE(back->messages.last().tokens[0].tokenPiece, QString("im"));
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
        s.nLayer = 1;  // 4 kv heads x (256 B of K + 256 B of V) = 2048 B per position
        s.nHeadKv = 4;
        s.headDim = 128;
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
