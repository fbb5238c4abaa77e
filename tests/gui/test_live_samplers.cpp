// The new samplers' controls with the real default model, changed while a reply is being generated:
// a logit bias typed into the Sampling panel mid-reply bans its token from the next tokens on, and a
// DRY multiplier set mid-reply puts the DRY stage into the chain, as the sampler trace of each token
// shows (the panel -> controller -> worker -> LiveSamplingParams path the other knobs take); XTC with
// top-nσ and a new order, or mirostat, chosen mid-reply likewise rebuild the chain. A grammar
// chosen mid-reply constrains the next tokens; one the reply so far does not parse under is refused,
// the old one staying in force and shown again with a notice; None drops the constraint.
#include <algorithm>

#include <QLineEdit>
#include <QSignalSpy>
#include <QtTest>

#include "chat_controller.h"
#include "grammar_controls.h"
#include "gui_test_support.h"
#include "inference_worker.h"
#include "model/model_paths.h"
#include "param_control.h"
#include "sampler_chain_controls.h"
#include "sampling_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QPlainTextEdit>

namespace {

constexpr int kTimeoutMs = 180000;
constexpr int kChangeAt = 3;  // the token after which the settings change

bool hasStage(const TokenRecord& t, const char* stage, QString* detail = nullptr) {
    for (const wb::SamplerStageTrace& s : t.trace)
        if (s.stage == stage) {
            if (detail) *detail = QString::fromStdString(s.detail);
            return true;
        }
    return false;
}

// No '7' in the text: the counting reply wants one after "6", so the constraint has to bite.
const char* kNoSeven = "root ::= [^7]*";

bool hasSeven(const TokenRecord& t) { return t.tokenPiece.contains(QLatin1Char('7')); }

// A greedy "count to 50" reply in the app with the sampler trace on; `change` runs once, on the GUI
// thread, when the reply has kChangeAt tokens (the worker may be a token or two ahead).
struct GrammarRig {
    ChatController c;
    SamplingPanel panel;

    bool load() {
        QObject::connect(&panel, &SamplingPanel::paramsChanged, &c, &ChatController::setSamplingParams);
        // As the main window: a refused grammar is shown again in the panel.
        QObject::connect(&c, &ChatController::grammarRefused, &panel, &SamplingPanel::showGrammarRefused);
        QSignalSpy loaded(&c, &ChatController::modelLoaded);
        c.loadModel(QString::fromStdString(wb::default_model_path()));
        if (!loaded.wait(kTimeoutMs)) return false;
        wb::CaptureSpec spec;
        spec.sampler_trace = true;
        c.setCaptureSpec(spec);
        wb::SamplingParams p;
        p.temperature = 0.0f;
        p.max_tokens = 60;
        panel.setParams(p);
        c.setSamplingParams(panel.params());
        return true;
    }

    QVector<TokenRecord> reply(const std::function<void()>& change) {
        bool changed = false;
        auto conn = QObject::connect(&c, &ChatController::tokenAppended, &c, [&](int, int token) {
            if (changed || token < kChangeAt) return;
            changed = true;
            change();
        });
        QSignalSpy finished(&c, &ChatController::generationFinished);
        if (!c.sendMessage("Count from 1 to 50, one number per line.") || !finished.wait(kTimeoutMs)) return {};
        QObject::disconnect(conn);
        return c.conversation().messages.last().tokens;
    }
    QString replyText() const { return c.conversation().messages.last().content; }
};

}  // namespace

class TestLiveSamplers : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() {
        wb_gui_test::isolateSettings("test_live_samplers");
        if (!QFileInfo::exists(QString::fromStdString(wb::default_model_path())))
            QFAIL("default model missing: run scripts/fetch-models.sh");
    }

    void biasAndDryChangedMidReplyTakeEffect() {
        ChatController c;
        SamplingPanel panel;
        connect(&panel, &SamplingPanel::paramsChanged, &c, &ChatController::setSamplingParams);
        panel.chainControls()->setTokenEncoder([&c](const QString& text, std::vector<int32_t>* ids, QString* error) {
            return c.worker()->encodeText(text, ids, error);
        });
        QSignalSpy loaded(&c, &ChatController::modelLoaded);
        c.loadModel(QString::fromStdString(wb::default_model_path()));
        QVERIFY(loaded.wait(kTimeoutMs));
        wb::CaptureSpec spec;
        spec.sampler_trace = true;
        c.setCaptureSpec(spec);
        wb::SamplingParams p;
        p.temperature = 0.0f;
        p.max_tokens = 120;
        panel.setParams(p);
        c.setSamplingParams(panel.params());

        // The reply lists numbers: its most frequent token is the separator (a new line or a comma),
        // which greedy decoding would draw again and again.
        std::vector<int32_t> separators, ids;
        QString error;
        for (const char* s : {"\n", ","}) {
            QVERIFY(c.worker()->encodeText(s, &ids, &error));
            QCOMPARE(ids.size(), size_t(1));
            separators.push_back(ids[0]);
        }
        int32_t banned = -1;
        connect(&c, &ChatController::tokenAppended, this, [&](int message, int token) {
            if (banned >= 0) return;
            // The first separator drawn after the first few tokens is banned, and DRY switched on.
            const int id = c.conversation().messages[message].tokens[token].id;
            if (token < kChangeAt || std::find(separators.begin(), separators.end(), id) == separators.end()) return;
            banned = id;
            panel.chainControls()->logitBiasEdit()->setText(QString("%1=-inf").arg(banned));
            panel.control("dry_multiplier")->spinBox()->setValue(0.8);
        });
        QSignalSpy finished(&c, &ChatController::generationFinished);
        QVERIFY(c.sendMessage("Count from 1 to 50, one number per line."));
        QVERIFY(finished.wait(kTimeoutMs));
        const QVector<TokenRecord>& tokens = c.conversation().messages.last().tokens;

        // The first token whose draw the bias took part in: after the change (the worker may be a few
        // tokens ahead of this thread), and from there on the banned token never comes.
        int biasFrom = -1;
        for (int i = 0; i < tokens.size() && biasFrom < 0; ++i)
            if (hasStage(tokens[i], "logit_bias")) biasFrom = i;
        const QString reply = c.conversation().messages.last().content;
        QVERIFY2(banned >= 0, qPrintable("no separator in the reply: " + reply));
        QVERIFY2(biasFrom > kChangeAt, qPrintable(QString("first biased token %1 of %2").arg(biasFrom).arg(tokens.size())));
        // Drawn before the ban (at least once: that is when it was banned), never after it.
        int before = 0;
        for (int i = 0; i < biasFrom; ++i) before += tokens[i].id == banned;
        QVERIFY(before >= 1);
        QVERIFY2(tokens.size() > biasFrom + 10, qPrintable(QString("too few tokens after the ban: ") + reply));
        QString detail;
        for (int i = biasFrom; i < tokens.size(); ++i) {
            QVERIFY2(tokens[i].id != banned, qPrintable(QString("banned token drawn at %1: %2").arg(i).arg(reply)));
            QVERIFY(hasStage(tokens[i], "logit_bias", &detail));
            QVERIFY2(detail.startsWith(QString::number(banned) + "-inf"), qPrintable(detail));
        }
        // DRY: in no draw before the change, in every draw from some token after it on.
        int dryFrom = -1;
        for (int i = 0; i < tokens.size() && dryFrom < 0; ++i)
            if (hasStage(tokens[i], "dry", &detail)) dryFrom = i;
        QVERIFY2(dryFrom > kChangeAt, qPrintable(QString("first DRY token %1").arg(dryFrom)));
        QVERIFY2(detail.contains("0.8"), qPrintable(detail));
        for (int i = dryFrom; i < tokens.size(); ++i) QVERIFY(hasStage(tokens[i], "dry"));
        QCOMPARE(c.worker()->samplingParams().dry_multiplier, 0.8f);
    }

    // XTC with top-nσ and a new order, or mirostat, chosen in the panel mid-reply: every draw's trace
    // shows the chain in force when it was drawn, the default sequence up to some token after the
    // change and the new one (the new stages in the new order; mirostat after temperature, alone) from
    // there to the end (the chain is rebuilt between tokens, as for the other knobs).
    void newStagesAndOrderChangedMidReplyTakeEffect_data() {
        QTest::addColumn<QString>("change");
        QTest::addColumn<QStringList>("after");
        QTest::newRow("xtc, top-nσ, xtc first") << "xtc" << QStringList{"xtc", "penalties", "top_n_sigma", "top_k", "typical_p",
                                                                       "top_p", "min_p", "temperature", "dist"};
        QTest::newRow("mirostat 2") << "mirostat" << QStringList{"temperature", "mirostat_v2"};
    }
    void newStagesAndOrderChangedMidReplyTakeEffect() {
        QFETCH(QString, change);
        QFETCH(QStringList, after);
        GrammarRig rig;
        QVERIFY(rig.load());
        wb::SamplingParams p = rig.panel.params();
        p.temperature = 0.8f;
        p.seed = 11;
        rig.panel.setParams(p);
        rig.c.setSamplingParams(rig.panel.params());
        SamplerChainControls* chain = rig.panel.chainControls();
        const QVector<TokenRecord> tokens = rig.reply([&] {
            if (change == "mirostat") {
                chain->mirostatBox()->setCurrentIndex(chain->mirostatBox()->findData(2));
                return;
            }
            rig.panel.control("xtc_probability")->spinBox()->setValue(0.5);
            rig.panel.control("top_n_sigma")->spinBox()->setValue(2.0);
            const QList<QListWidgetItem*> xtc = chain->orderList()->findItems("xtc", Qt::MatchExactly);
            QCOMPARE(xtc.size(), 1);
            chain->orderList()->setCurrentItem(xtc[0]);
            while (chain->orderList()->currentRow() > 0) chain->upButton()->click();
        });
        const auto stages = [](const TokenRecord& t) {
            QStringList out;
            for (const wb::SamplerStageTrace& s : t.trace) out << QString::fromStdString(s.stage);
            return out;
        };
        const QStringList before{"penalties", "top_k", "typical_p", "top_p", "min_p", "temperature", "dist"};
        int from = 0;
        while (from < tokens.size() && stages(tokens[from]) == before) ++from;
        QVERIFY2(from >= kChangeAt && from + 10 < tokens.size(),
                 qPrintable(QString("the new chain from token %1 of %2: ").arg(from).arg(tokens.size()) + rig.replyText()));
        for (int i = from; i < tokens.size(); ++i)
            QVERIFY2(stages(tokens[i]) == after, qPrintable(QString("token %1: ").arg(i) + stages(tokens[i]).join(", ")));
    }

    // A grammar no token of the model can begin (a piece that starts with NUL counts as no text) is
    // the app's error before the prompt is even evaluated, naming what the grammar must start with;
    // no reply is kept. The editor cannot know it (the text parses): the engine, with the vocabulary, does.
    void grammarNoTokenCanBeginIsAnErrorBeforeTheReply() {
        GrammarRig rig;
        QVERIFY(rig.load());
        rig.panel.grammarControls()->setSource(wb::GrammarMode::GBNF, QStringLiteral("root ::= \"\\x00\" [a-z]+"));
        QVERIFY(rig.panel.grammarControls()->errorLabel()->text().isEmpty());
        QVERIFY(!rig.c.worker()->samplingParams().grammar.empty());
        QSignalSpy errors(&rig.c, &ChatController::errorOccurred);
        QSignalSpy tokens(&rig.c, &ChatController::tokenAppended);
        QSignalSpy finished(&rig.c, &ChatController::generationFinished);
        QVERIFY(rig.c.sendMessage("Say hello."));
        QVERIFY(finished.wait(kTimeoutMs));
        QCOMPARE(tokens.count(), 0);
        const GenerationSummary summary = finished.first().first().value<GenerationSummary>();
        QCOMPARE(summary.reason, wb::StopReason::ERROR);
        QCOMPARE(summary.timings.n_prefill, 0);  // refused before the prompt's prefill
        QCOMPARE(errors.count(), 1);
        const QString message = errors.first().first().toString();
        QVERIFY2(message.startsWith(QStringLiteral("the grammar cannot begin the reply: it must start with \"\\x00\"")),
                 qPrintable(message));
        QVERIFY(rig.c.conversation().messages.isEmpty() || rig.c.conversation().messages.last().role != QLatin1String("assistant"));
    }

    // A grammar chosen mid-reply applies from the next token the engine draws: no grammar stage in the
    // trace before it, one in every draw after it, and no '7' after it (the model's own choice refused).
    void grammarChosenMidReplyConstrainsTheNextTokens() {
        GrammarRig rig;
        QVERIFY(rig.load());
        const QVector<TokenRecord> tokens = rig.reply([&] {
            rig.panel.grammarControls()->setSource(wb::GrammarMode::GBNF, QString::fromLatin1(kNoSeven));
        });
        QVERIFY(tokens.size() > kChangeAt);
        int from = -1;
        for (int i = 0; i < tokens.size() && from < 0; ++i)
            if (hasStage(tokens[i], "grammar")) from = i;
        QVERIFY2(from > kChangeAt, qPrintable(QString("first constrained token %1: %2").arg(from).arg(rig.replyText())));
        int refusedDraws = 0;
        QString detail;
        for (int i = from; i < tokens.size(); ++i) {
            QVERIFY(hasStage(tokens[i], "grammar", &detail));
            refusedDraws += detail.contains("does not fit");
            QVERIFY2(!hasSeven(tokens[i]), qPrintable(QString("a 7 at token %1: %2").arg(i).arg(rig.replyText())));
        }
        QVERIFY2(refusedDraws > 0, qPrintable("the grammar never had to refuse the model's token: " + rig.replyText()));
    }

    // A grammar the reply so far does not parse under (it must start with "Z") is refused: the old one
    // constrains the whole reply, the panel shows it again (mode, text, grammar; the worker has it too)
    // with the reason under Constrain output and one notice.
    void grammarRefusedMidReplyKeepsTheOldOne() {
        GrammarRig rig;
        QVERIFY(rig.load());
        rig.panel.grammarControls()->setSource(wb::GrammarMode::GBNF, QString::fromLatin1(kNoSeven));
        const std::string kept = rig.panel.params().grammar;
        QVERIFY(!kept.empty());
        QSignalSpy refused(&rig.c, &ChatController::grammarRefused);
        QSignalSpy notices(&rig.c, &ChatController::notice);
        const QString mustStartWithZ = QStringLiteral("root ::= \"Z\" [^7]*");
        const QVector<TokenRecord> tokens = rig.reply([&] {
            rig.panel.grammarControls()->setSource(wb::GrammarMode::GBNF, mustStartWithZ);
            QCOMPARE(rig.c.worker()->samplingParams().grammar, mustStartWithZ.toStdString());  // sent to the engine
        });
        QVERIFY(tokens.size() > kChangeAt + 5);
        QCOMPARE(refused.size(), 1);
        QCOMPARE(notices.size(), 1);
        const QString why = notices.first().first().toString();
        QVERIFY2(why.contains("not applied") && why.contains("cannot start with"), qPrintable(why));
        GrammarControls* g = rig.panel.grammarControls();
        QCOMPARE(g->editor()->toPlainText(), QString::fromLatin1(kNoSeven));
        QCOMPARE(g->mode(), wb::GrammarMode::GBNF);
        QCOMPARE(rig.panel.params().grammar, kept);
        QCOMPARE(rig.c.worker()->samplingParams().grammar, kept);
        QCOMPARE(rig.c.conversation().sampling.grammar, kept);
        QVERIFY(!g->noticeLabel()->isHidden());
        QCOMPARE(g->noticeLabel()->text(), why);
        int refusedDraws = 0;
        QString detail;
        for (int i = 0; i < tokens.size(); ++i) {
            QVERIFY(hasStage(tokens[i], "grammar", &detail));
            if (i > kChangeAt) refusedDraws += detail.contains("does not fit");
            QVERIFY2(!hasSeven(tokens[i]), qPrintable(QString("a 7 at token %1: %2").arg(i).arg(rig.replyText())));
        }
        QVERIFY2(refusedDraws > 0, qPrintable("the kept grammar never refused a token after the change: " + rig.replyText()));
        // The next change in the editor clears the notice.
        g->setSource(wb::GrammarMode::GBNF, QStringLiteral("root ::= [^8]*"));
        QVERIFY(g->noticeLabel()->isHidden());
    }

    // None mid-reply drops the constraint: the grammar stage leaves the trace and the reply counts past 7.
    void noneMidReplyDropsTheConstraint() {
        GrammarRig rig;
        QVERIFY(rig.load());
        rig.panel.grammarControls()->setSource(wb::GrammarMode::GBNF, QString::fromLatin1(kNoSeven));
        const QVector<TokenRecord> tokens = rig.reply([&] {
            rig.panel.grammarControls()->modeBox()->setCurrentIndex(0);  // None
            QVERIFY(rig.c.worker()->samplingParams().grammar.empty());
        });
        int last = -1;
        for (int i = 0; i < tokens.size(); ++i)
            if (hasStage(tokens[i], "grammar")) last = i;
        QVERIFY2(last >= kChangeAt - 1 && last + 1 < tokens.size(), qPrintable(QString("last constrained token %1").arg(last)));
        for (int i = 0; i <= last; ++i) QVERIFY(!hasSeven(tokens[i]));
        bool seven = false;
        for (int i = last + 1; i < tokens.size(); ++i) {
            QVERIFY(!hasStage(tokens[i], "grammar"));
            seven = seven || hasSeven(tokens[i]);
        }
        QVERIFY2(seven, qPrintable("no 7 once the constraint was dropped: " + rig.replyText()));
    }
};

QTEST_MAIN(TestLiveSamplers)
#include "test_live_samplers.moc"
