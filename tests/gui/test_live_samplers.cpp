// The new samplers' controls with the real default model, changed while a reply is being generated:
// a logit bias typed into the Sampling panel mid-reply bans its token from the next tokens on, and a
// DRY multiplier set mid-reply puts the DRY stage into the chain, as the sampler trace of each token
// shows (the panel -> controller -> worker -> LiveSamplingParams path the other knobs take).
#include <algorithm>

#include <QLineEdit>
#include <QSignalSpy>
#include <QtTest>

#include "chat_controller.h"
#include "gui_test_support.h"
#include "inference_worker.h"
#include "model/model_paths.h"
#include "param_control.h"
#include "sampler_chain_controls.h"
#include "sampling_panel.h"

#include <QDoubleSpinBox>

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
};

QTEST_MAIN(TestLiveSamplers)
#include "test_live_samplers.moc"
