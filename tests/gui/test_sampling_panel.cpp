// Sampling panel: every knob reaches the live parameters the worker hands to the session; presets;
// the candidate chart draws the given probabilities and marks the cut-offs.
#include <algorithm>
#include <cmath>

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QJsonDocument>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSignalSpy>
#include <QSlider>
#include <QLabel>
#include <QtTest>

#include "candidate_plot.h"
#include "chat_controller.h"
#include "conversation.h"
#include "grammar_controls.h"
#include "gui_test_support.h"
#include "param_control.h"
#include "sampler_chain_controls.h"
#include "sampling_panel.h"
#include "inference_worker.h"
#include "main_window.h"
#include <QListWidget>
#include <QPushButton>
#include "sampling/grammar/gbnf.h"
#include "sampling/grammar/grammar_matcher.h"
#include "sampling/sampler.h"
#include "sampling_presets.h"
#include "seed_edit.h"
#include "theme.h"

namespace {

// Whether the whole text matches a GBNF grammar.
bool grammarMatches(const std::string& gbnf, const std::string& text) {
    wb::GrammarMatcher m(std::make_shared<wb::Grammar>(wb::parse_gbnf(gbnf)));
    if (!m.allows(text)) return false;
    m.accept(text);
    return m.complete();
}

// For a failure message: the settings as the preset file writes them.
QByteArray jsonText(const wb::SamplingParams& p) {
    return QJsonDocument(samplingToJson(p)).toJson(QJsonDocument::Compact);
}

// WCAG 2's contrast ratio of two colours (4.5 is its minimum for body text).
double contrastRatio(const QColor& a, const QColor& b) {
    const auto luminance = [](const QColor& c) {
        const auto channel = [](double v) { return v <= 0.03928 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
        return 0.2126 * channel(c.redF()) + 0.7152 * channel(c.greenF()) + 0.0722 * channel(c.blueF());
    };
    const double la = luminance(a), lb = luminance(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

}  // namespace

class TestSamplingPanel : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() { wb_gui_test::isolateSettings("test_sampling_panel"); }

    void knobReachesLiveParams_data() {
        QTest::addColumn<QString>("knob");
        QTest::addColumn<double>("value");
        QTest::newRow("temperature") << "temperature" << 1.25;
        QTest::newRow("top_k") << "top_k" << 7.0;
        QTest::newRow("top_p") << "top_p" << 0.5;
        QTest::newRow("min_p") << "min_p" << 0.2;
        QTest::newRow("typical_p") << "typical_p" << 0.9;
        QTest::newRow("repeat_penalty") << "repeat_penalty" << 1.3;
        QTest::newRow("repeat_last_n") << "repeat_last_n" << 128.0;
        QTest::newRow("frequency_penalty") << "frequency_penalty" << 0.4;
        QTest::newRow("presence_penalty") << "presence_penalty" << -0.6;
        QTest::newRow("max_tokens") << "max_tokens" << 99.0;
        QTest::newRow("dry_multiplier") << "dry_multiplier" << 0.8;
        QTest::newRow("dry_base") << "dry_base" << 2.5;
        QTest::newRow("dry_allowed_length") << "dry_allowed_length" << 4.0;
        QTest::newRow("dry_penalty_last_n") << "dry_penalty_last_n" << -1.0;
        QTest::newRow("xtc_probability") << "xtc_probability" << 0.5;
        QTest::newRow("xtc_threshold") << "xtc_threshold" << 0.15;
        QTest::newRow("top_n_sigma") << "top_n_sigma" << 1.5;
        QTest::newRow("mirostat_tau") << "mirostat_tau" << 3.5;
        QTest::newRow("mirostat_eta") << "mirostat_eta" << 0.25;
    }

    // Spin box -> panel -> controller -> InferenceWorker::setSamplingParams (LiveSamplingParams::set).
    void knobReachesLiveParams() {
        QFETCH(QString, knob);
        QFETCH(double, value);
        ChatController controller;
        SamplingPanel panel;
        connect(&panel, &SamplingPanel::paramsChanged, &controller, &ChatController::setSamplingParams);
        QSignalSpy changed(&panel, &SamplingPanel::paramsChanged);
        panel.control(knob)->spinBox()->setValue(value);
        QCOMPARE(changed.count(), 1);
        const wb::SamplingParams p = controller.worker()->samplingParams();
        const QMap<QString, double> got = {
            {"temperature", p.temperature}, {"top_k", p.top_k}, {"top_p", p.top_p}, {"min_p", p.min_p},
            {"typical_p", p.typical_p}, {"repeat_penalty", p.repeat_penalty}, {"repeat_last_n", p.repeat_last_n},
            {"frequency_penalty", p.frequency_penalty}, {"presence_penalty", p.presence_penalty}, {"max_tokens", p.max_tokens},
            {"dry_multiplier", p.dry_multiplier}, {"dry_base", p.dry_base}, {"dry_allowed_length", p.dry_allowed_length},
            {"dry_penalty_last_n", p.dry_penalty_last_n}, {"xtc_probability", p.xtc_probability}, {"xtc_threshold", p.xtc_threshold},
            {"top_n_sigma", p.top_n_sigma}, {"mirostat_tau", p.mirostat_tau}, {"mirostat_eta", p.mirostat_eta}};
        QVERIFY2(got.contains(knob), qPrintable(knob));
        QVERIFY2(qAbs(got.value(knob) - value) < 1e-5, qPrintable(QString("%1 = %2").arg(knob).arg(got.value(knob))));
    }

    // Every control of the new samplers and of the grammar says what it does in its tooltip.
    void newControlsHaveTooltips() {
        SamplingPanel panel;
        QStringList missing;
        for (const char* knob : {"dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n", "xtc_probability",
                                 "xtc_threshold", "top_n_sigma", "mirostat_tau", "mirostat_eta"})
            if (panel.control(knob)->toolTip().trimmed().size() < 10) missing << knob;
        const SamplerChainControls* c = panel.chainControls();
        const GrammarControls* g = panel.grammarControls();
        const QList<QPair<const char*, QWidget*>> widgets = {
            {"mirostat mode", c->mirostatBox()},  {"DRY breakers", c->breakersEdit()}, {"logit bias", c->logitBiasEdit()},
            {"order", c->orderList()},            {"grammar mode", g->modeBox()},      {"grammar examples", g->exampleBox()},
            {"grammar editor", g->editor()}};
        for (const auto& [name, w] : widgets)
            if (w->toolTip().trimmed().size() < 10) missing << name;
        QVERIFY2(missing.isEmpty(), qPrintable("no tooltip: " + missing.join(", ")));
    }

    // Mirostat's mode, DRY's breakers, the logit bias (by id and by text) and the sampler order reach
    // the worker's live parameters; a bias that cannot be read is said and leaves the last valid one.
    void chainControlsReachLiveParams() {
        ChatController controller;
        SamplingPanel panel;
        connect(&panel, &SamplingPanel::paramsChanged, &controller, &ChatController::setSamplingParams);
        SamplerChainControls* chain = panel.chainControls();
        auto live = [&controller] { return controller.worker()->samplingParams(); };

        chain->mirostatBox()->setCurrentIndex(chain->mirostatBox()->findData(2));
        QCOMPARE(live().mirostat, 2);
        chain->breakersEdit()->setText("\\n|;|and");
        QCOMPARE(live().dry_sequence_breakers, (std::vector<std::string>{"\n", ";", "and"}));

        // A text key is encoded by the model's tokenizer: here a stand-in that gives two tokens.
        chain->setTokenEncoder([](const QString& text, std::vector<int32_t>* ids, QString*) {
            *ids = text == "Paris" ? std::vector<int32_t>{7, 8} : std::vector<int32_t>{};
            return true;
        });
        QSignalSpy accepted(chain, &SamplerChainControls::logitBiasAccepted);
        chain->logitBiasEdit()->setText("13=-inf, 'Paris'=+2.5");
        std::vector<wb::LogitBias> b = live().logit_bias;
        QCOMPARE(b.size(), size_t(3));
        QCOMPARE(b[0].token, 13);
        QVERIFY(std::isinf(b[0].bias) && b[0].bias < 0);
        QCOMPARE(b[1].token, 7);
        QCOMPARE(b[2].token, 8);
        QCOMPARE(b[2].bias, 2.5f);
        QCOMPARE(accepted.last().at(0).toString(), QString("13=-inf, 'Paris'=+2.5"));
        // Unreadable: the error is shown, the biases in force stay, nothing is accepted (saved).
        const int acceptedBefore = int(accepted.count());
        chain->logitBiasEdit()->setText("13=lots");
        QVERIFY(!chain->logitBiasError()->isHidden());
        QVERIFY(chain->logitBiasError()->text().contains("13=lots"));
        QCOMPARE(live().logit_bias.size(), size_t(3));
        QCOMPARE(accepted.count(), acceptedBefore);
        chain->logitBiasEdit()->setText("'nothing'=1");
        QVERIFY(chain->logitBiasError()->text().contains("no token"));
        chain->logitBiasEdit()->setText("");
        QVERIFY(chain->logitBiasError()->isHidden());
        QVERIFY(live().logit_bias.empty());

        // The order: Up moves the current stage, unticking leaves it out.
        QCOMPARE(live().samplers, wb::default_sampler_sequence());
        chain->orderList()->setCurrentRow(3);  // top_k
        chain->upButton()->click();
        std::vector<std::string> want = wb::default_sampler_sequence();
        std::swap(want[2], want[3]);
        QCOMPARE(live().samplers, want);
        chain->orderList()->item(0)->setCheckState(Qt::Unchecked);  // penalties
        want.erase(want.begin());
        QCOMPARE(live().samplers, want);
        QCOMPARE(panel.params().samplers, want);
        QVERIFY(panel.isModified());
        // setParams shows another order (a loaded conversation) with the left-out stages unticked at the end.
        wb::SamplingParams q;
        q.samplers = {"temperature", "min_p"};
        panel.setParams(q);
        QCOMPARE(chain->orderList()->item(0)->text(), QString("temperature"));
        QCOMPARE(chain->orderList()->item(2)->checkState(), Qt::Unchecked);
        QCOMPARE(chain->order(), q.samplers);
    }

    // The "Constrain output" group: a GBNF grammar typed key by key, or a JSON Schema from an example,
    // reaches the worker's live parameters as GBNF; a text that does not compile is shown with its
    // line and column (or the schema keyword) and never applied.
    void grammarReachesLiveParams() {
        ChatController controller;
        SamplingPanel panel;
        connect(&panel, &SamplingPanel::paramsChanged, &controller, &ChatController::setSamplingParams);
        GrammarControls* g = panel.grammarControls();
        auto live = [&controller] { return controller.worker()->samplingParams().grammar; };
        QVERIFY(g->editor()->isHidden());
        QVERIFY(live().empty());

        g->modeBox()->setCurrentIndex(g->modeBox()->findData(int(GrammarControls::Mode::GBNF)));
        QVERIFY(!g->editor()->isHidden());
        QVERIFY(live().empty());  // nothing typed yet: no grammar, no error
        QVERIFY(g->errorLabel()->isHidden());
        const std::string yesNo = R"(root ::= "yes" | "no")";
        QTest::keyClicks(g->editor(), QString::fromStdString(yesNo));
        QCOMPARE(live(), yesNo);
        QVERIFY(g->errorLabel()->isHidden());

        QSignalSpy changed(&panel, &SamplingPanel::paramsChanged);
        g->editor()->setPlainText(R"(root ::= ("yes" | "no")");
        QVERIFY(!g->errorLabel()->isHidden());
        QVERIFY2(g->errorLabel()->text().contains("line 1, column 10"), qPrintable(g->errorLabel()->text()));
        QVERIFY2(g->errorLabel()->text().contains("the last valid grammar stays in force"), qPrintable(g->errorLabel()->text()));
        QCOMPARE(live(), yesNo);
        // The text is passed on to be kept (settings, the conversation), not applied.
        QCOMPARE(changed.count(), 1);
        QCOMPARE(controller.worker()->samplingParams().grammar_source, std::string(R"(root ::= ("yes" | "no")"));

        g->loadExample(g->exampleBox()->findText("List of strings"));
        QCOMPARE(g->mode(), GrammarControls::Mode::JSON_SCHEMA);
        QVERIFY(g->errorLabel()->isHidden());
        QVERIFY(grammarMatches(live(), R"(["a", "b c"])") && grammarMatches(live(), "[]"));
        QVERIFY(!grammarMatches(live(), "{}") && !grammarMatches(live(), "[1]"));
        const std::string list = live();
        g->editor()->setPlainText(R"({"type": "string", "format": "date"})");
        QVERIFY2(g->errorLabel()->text().contains("'format'"), qPrintable(g->errorLabel()->text()));
        QCOMPARE(live(), list);

        g->modeBox()->setCurrentIndex(g->modeBox()->findData(int(GrammarControls::Mode::NONE)));
        QVERIFY(live().empty());
        QVERIFY(g->editor()->isHidden() && g->errorLabel()->isHidden());
    }

    // Every ready example compiles, and they give what their titles promise.
    void grammarExamplesCompile() {
        SamplingPanel panel;
        GrammarControls* g = panel.grammarControls();
        QCOMPARE(g->exampleBox()->count(), 5);  // the title and four examples
        for (int i = 1; i < g->exampleBox()->count(); ++i) {
            g->loadExample(i);
            QVERIFY2(g->errorLabel()->isHidden() && !panel.params().grammar.empty(),
                     qPrintable(g->exampleBox()->itemText(i) + ": " + g->errorLabel()->text()));
        }
        const auto example = [&](const char* title) {
            g->loadExample(g->exampleBox()->findText(title));
            return panel.params().grammar;
        };
        QVERIFY(grammarMatches(example("Yes or no"), "Yes.") && !grammarMatches(example("Yes or no"), "Maybe."));
        QVERIFY(grammarMatches(example("Any JSON object"), R"({"x": [1, {"y": null}]})"));
        const std::string person = example("JSON object (name, age)");
        QVERIFY(grammarMatches(person, R"({"name": "Ada", "age": 36})") && !grammarMatches(person, R"({"name": "Ada"})"));
    }

    // A grammar set from outside (a loaded conversation) is shown as GBNF without a change signal; a
    // preset keeps the user's grammar; conversations and presets keep it, and drop one that does not parse.
    void grammarIsFilledKeptAndSaved() {
        SamplingPanel panel;
        GrammarControls* g = panel.grammarControls();
        QSignalSpy changed(&panel, &SamplingPanel::paramsChanged);
        wb::SamplingParams q;
        q.grammar = R"(root ::= [a-z]+)";
        panel.setParams(q);
        QCOMPARE(changed.count(), 0);
        QCOMPARE(g->mode(), GrammarControls::Mode::GBNF);
        QCOMPARE(g->editor()->toPlainText(), QString::fromStdString(q.grammar));
        panel.applyPreset("Precise");
        QCOMPARE(panel.params().grammar, q.grammar);
        QCOMPARE(panel.params().temperature, 0.2f);
        QCOMPARE(wb::SamplingParams(samplingFromJson(samplingToJson(q))).grammar, q.grammar);
        QJsonObject broken = samplingToJson(q);
        broken["grammar"] = "root ::= (";
        QVERIFY(samplingFromJson(broken).grammar.empty());
    }

    // What the user wrote is kept as written: the mode and the text, one that does not compile too,
    // go through the file format (settings, presets, conversations) and back into an editor exactly,
    // with the error shown and the last valid grammar in force; None keeps the text; a file from
    // before the text was kept shows its GBNF.
    void grammarTextIsKeptAsTyped() {
        SamplingPanel panel;
        GrammarControls* g = panel.grammarControls();
        g->loadExample(g->exampleBox()->findText("JSON object (name, age)"));
        const wb::SamplingParams valid = panel.params();
        QCOMPARE(valid.grammar_mode, wb::GrammarMode::JSON_SCHEMA);
        QCOMPARE(QString::fromStdString(valid.grammar_source), g->editor()->toPlainText());
        QVERIFY(grammarMatches(valid.grammar, R"({"name": "Ada", "age": 36})"));
        const QString broken = g->editor()->toPlainText() + ",";
        g->editor()->setPlainText(broken);
        const wb::SamplingParams typed = panel.params();
        QCOMPARE(typed.grammar_source, broken.toStdString());
        QCOMPARE(typed.grammar, valid.grammar);

        const wb::SamplingParams back = samplingFromJson(samplingToJson(typed));
        QCOMPARE(back.grammar_mode, wb::GrammarMode::JSON_SCHEMA);
        QCOMPARE(back.grammar_source, typed.grammar_source);
        QCOMPARE(back.grammar, valid.grammar);
        SamplingPanel other;
        GrammarControls* h = other.grammarControls();
        QSignalSpy changed(&other, &SamplingPanel::paramsChanged);
        other.setParams(back);
        QCOMPARE(changed.count(), 0);
        QCOMPARE(h->mode(), wb::GrammarMode::JSON_SCHEMA);
        QCOMPARE(h->editor()->toPlainText(), broken);
        QVERIFY2(!h->errorLabel()->isHidden() && h->errorLabel()->text().contains("not valid JSON"),
                 qPrintable(h->errorLabel()->text()));
        QCOMPARE(other.params().grammar, valid.grammar);

        g->modeBox()->setCurrentIndex(g->modeBox()->findData(int(wb::GrammarMode::NONE)));
        const wb::SamplingParams none = samplingFromJson(samplingToJson(panel.params()));
        QCOMPARE(none.grammar_mode, wb::GrammarMode::NONE);
        QVERIFY(none.grammar.empty());
        QCOMPARE(none.grammar_source, broken.toStdString());
        other.setParams(none);
        QVERIFY(h->editor()->isHidden() && h->errorLabel()->isHidden());
        QCOMPARE(h->editor()->toPlainText(), broken);
        QVERIFY(other.params().grammar.empty());

        QJsonObject old = samplingToJson(valid);
        old.remove("grammar_mode");
        old.remove("grammar_source");
        const wb::SamplingParams fromOld = samplingFromJson(old);
        QCOMPARE(fromOld.grammar_mode, wb::GrammarMode::GBNF);
        QCOMPARE(fromOld.grammar_source, valid.grammar);
        QCOMPARE(fromOld.grammar, valid.grammar);
        old.remove("grammar");
        const wb::SamplingParams none_old = samplingFromJson(old);
        QVERIFY(none_old.grammar_mode == wb::GrammarMode::NONE && none_old.grammar_source.empty() && none_old.grammar.empty());

        // A hand-edited file saying mode none beside a GBNF: none means no grammar, with or without
        // the text kept for the editor (the panel shows None, so no grammar may constrain the reply).
        QJsonObject edited = samplingToJson(valid);
        edited["grammar_mode"] = "none";
        const wb::SamplingParams edited_none = samplingFromJson(edited);
        QCOMPARE(edited_none.grammar_mode, wb::GrammarMode::NONE);
        QVERIFY2(edited_none.grammar.empty(), edited_none.grammar.c_str());
        QCOMPARE(edited_none.grammar_source, valid.grammar_source);
        edited.remove("grammar_source");
        const wb::SamplingParams edited_bare = samplingFromJson(edited);
        QCOMPARE(edited_bare.grammar_mode, wb::GrammarMode::NONE);
        QVERIFY2(edited_bare.grammar.empty(), edited_bare.grammar.c_str());
    }

    // A user preset saved with a grammar brings back its mode and text; one without (a built-in
    // preset) leaves the user's as they are.
    void presetsKeepTheGrammarText() {
        SamplingPanel panel;
        GrammarControls* g = panel.grammarControls();
        g->setSource(GrammarControls::Mode::GBNF, R"(root ::= "a"+)");
        panel.saveUserPreset("with a grammar");
        const QString schema = "{\"type\": \"array\"}";
        g->setSource(GrammarControls::Mode::JSON_SCHEMA, schema);
        panel.applyPreset("Precise");
        QCOMPARE(g->mode(), GrammarControls::Mode::JSON_SCHEMA);
        QCOMPARE(g->editor()->toPlainText(), schema);
        QCOMPARE(panel.params().grammar_source, schema.toStdString());
        QVERIFY(grammarMatches(panel.params().grammar, "[1, 2]"));
        panel.applyPreset("with a grammar");
        QCOMPARE(g->mode(), GrammarControls::Mode::GBNF);
        QCOMPARE(g->editor()->toPlainText(), QString(R"(root ::= "a"+)"));
        QCOMPARE(panel.params().grammar, std::string(R"(root ::= "a"+)"));
    }

    // A grammar that can never finish, or a schema no finite value satisfies, shows its error in the
    // editor (the rule, its line) and is not applied.
    void endlessGrammarIsShownNotApplied() {
        SamplingPanel panel;
        GrammarControls* g = panel.grammarControls();
        g->setSource(GrammarControls::Mode::GBNF, "root ::= a\na ::= \"x\" a");
        QVERIFY2(!g->errorLabel()->isHidden() &&
                     g->errorLabel()->text().contains("grammar line 2, column 1: rule 'a' can never finish") &&
                     g->errorLabel()->text().contains("no grammar is in force"),
                 qPrintable(g->errorLabel()->text()));
        QVERIFY(panel.params().grammar.empty());
        // (A plain literal: moc misreads a raw string holding "#".)
        g->setSource(GrammarControls::Mode::JSON_SCHEMA,
                     "{\"type\": \"object\", \"properties\": {\"next\": {\"$ref\": \"#\"}}, \"required\": [\"next\"]}");
        QVERIFY2(g->errorLabel()->text().contains("JSON Schema at #: no finite JSON value is valid against it"),
                 qPrintable(g->errorLabel()->text()));
        QVERIFY(panel.params().grammar.empty());
    }

    // The error text takes the theme's red when the theme changes after the panel was built (as the
    // main window's is, before the saved theme is applied), readable on the window in both themes.
    void grammarErrorIsReadableInBothThemes() {
        Theme::apply(ThemeMode::Light);
        SamplingPanel panel;
        GrammarControls* g = panel.grammarControls();
        g->setSource(GrammarControls::Mode::GBNF, "root ::= (");
        for (ThemeMode mode : {ThemeMode::Dark, ThemeMode::Light}) {
            Theme::apply(mode);
            const QColor text = g->errorLabel()->palette().color(QPalette::WindowText);
            const QColor window = QApplication::palette().color(QPalette::Window);
            QCOMPARE(text, Theme::color(Theme::Role::Error));
            QVERIFY2(contrastRatio(text, window) >= 4.5,
                     qPrintable(QString("%1 on %2: %3").arg(text.name(), window.name()).arg(contrastRatio(text, window))));
        }
        Theme::apply(ThemeMode::System);
    }

    void sliderAndSpinBoxStayInStep() {
        SamplingPanel panel;
        ParamControl* t = panel.control("temperature");
        t->slider()->setValue(150);  // 0 + 150 x 0.01
        QCOMPARE(t->spinBox()->value(), 1.5);
        QCOMPARE(panel.params().temperature, 1.5f);
        t->spinBox()->setValue(0.3);
        QCOMPARE(t->slider()->value(), 30);
    }

    void seedStopStringsAndRandomSeed() {
        SamplingPanel panel;
        panel.randomSeedBox()->setChecked(false);
        panel.seedBox()->setValue(1234);
        QCOMPARE(panel.params().seed, quint64(1234));
        panel.stopEdit()->setText("END|\\n\\n");
        QCOMPARE(panel.params().stop.size(), size_t(2));
        QCOMPARE(QString::fromStdString(panel.params().stop[1]), QString("\n\n"));
        panel.randomSeedBox()->setChecked(true);
        QCOMPARE(panel.params().seed, wb::SamplingParams::kRandomSeed);
    }

    // "Varied (DRY + XTC)": DRY 0.8 / 1.75 / 2 and XTC 0.5 / 0.1 at every other default; saved as a
    // user preset and read back by another panel it gives the same knobs, not "modified".
    void variedPresetSetsDryAndXtc() {
        SamplingPanel panel;
        QVERIFY(panel.presetBox()->findText("Varied (DRY + XTC)") >= 0);
        panel.applyPreset("Varied (DRY + XTC)");
        QCOMPARE(panel.presetBox()->currentText(), QString("Varied (DRY + XTC)"));
        wb::SamplingParams want;
        want.dry_multiplier = 0.8f;
        want.dry_base = 1.75f;
        want.dry_allowed_length = 2;
        want.xtc_probability = 0.5f;
        want.xtc_threshold = 0.1f;
        want.seed = panel.params().seed;
        QVERIFY2(samplingToJson(panel.params()) == samplingToJson(want), jsonText(panel.params()).constData());
        QCOMPARE(panel.control("dry_multiplier")->value(), 0.8);
        QCOMPARE(panel.control("xtc_probability")->value(), 0.5);
        QVERIFY(!panel.isModified());
        panel.saveUserPreset("varied copy");
        SamplingPanel other;
        other.applyPreset("varied copy");
        QVERIFY2(samplingToJson(other.params()) == samplingToJson(want), jsonText(other.params()).constData());
        other.applyPreset("Varied (DRY + XTC)");
        QVERIFY(!other.isModified());
        other.control("xtc_threshold")->spinBox()->setValue(0.2);
        QVERIFY(other.isModified());
    }

    // "JSON output": the "Any JSON object" example in force with a low temperature; the grammar comes
    // back from a saved copy, and another grammar marks the preset modified.
    void jsonOutputPresetConstrainsToAnObject() {
        SamplingPanel panel;
        QVERIFY(panel.presetBox()->findText("JSON output") >= 0);
        panel.applyPreset("JSON output");
        GrammarControls* g = panel.grammarControls();
        QCOMPARE(g->mode(), GrammarControls::Mode::JSON_SCHEMA);
        QCOMPARE(g->editor()->toPlainText(), QString("{\"type\": \"object\"}"));
        QVERIFY(g->errorLabel()->text().isEmpty());
        QCOMPARE(panel.params().temperature, 0.3f);
        QCOMPARE(panel.params().top_k, wb::SamplingParams{}.top_k);
        const std::string gbnf = panel.params().grammar;
        QVERIFY(grammarMatches(gbnf, R"({"a": 1, "b": [true]})") && grammarMatches(gbnf, "{}"));
        QVERIFY(!grammarMatches(gbnf, "[1]") && !grammarMatches(gbnf, "\"x\""));
        QVERIFY(!panel.isModified());
        panel.saveUserPreset("json copy");
        SamplingPanel other;
        other.applyPreset("json copy");
        QCOMPARE(other.params().grammar, gbnf);
        QCOMPARE(other.params().grammar_mode, wb::GrammarMode::JSON_SCHEMA);
        QCOMPARE(other.params().temperature, 0.3f);
        other.applyPreset("JSON output");
        QVERIFY(!other.isModified());
        other.grammarControls()->setSource(GrammarControls::Mode::JSON_SCHEMA, "{\"type\": \"array\"}");
        QVERIFY(other.isModified());
    }

    void presetsApplyAndUserPresetsPersist() {
        SamplingPanel panel;
        QSignalSpy changed(&panel, &SamplingPanel::paramsChanged);
        panel.applyPreset("Precise");
        QCOMPARE(changed.count(), 1);
        QCOMPARE(panel.params().temperature, 0.2f);
        QCOMPARE(panel.control("top_k")->value(), 20.0);
        panel.control("temperature")->spinBox()->setValue(0.55);
        panel.saveUserPreset("mine");
        QVERIFY(SamplingPresets::names().contains("mine"));
        panel.applyPreset("Creative");
        QCOMPARE(panel.params().temperature, 1.1f);
        SamplingPanel other;  // a new panel reads the preset back from QSettings
        other.applyPreset("mine");
        QCOMPARE(other.params().temperature, 0.55f);
        QVERIFY(other.presetBox()->findText("mine") >= 0);
    }

    void setParamsFillsControlsSilently() {
        SamplingPanel panel;
        QSignalSpy changed(&panel, &SamplingPanel::paramsChanged);
        wb::SamplingParams p;
        p.temperature = 0.0f;
        p.top_k = 3;
        p.seed = 42;
        panel.setParams(p);
        QCOMPARE(changed.count(), 0);
        QCOMPARE(panel.control("top_k")->value(), 3.0);
        QVERIFY(!panel.randomSeedBox()->isChecked());
        QCOMPARE(panel.seedBox()->value(), quint64(42));
    }

    // A seed above 2^31 (and above 2^53, where a double would round it) is neither clamped by the
    // control nor changed on the way back out.
    void seedKeepsAll64Bits_data() {
        QTest::addColumn<quint64>("seed");
        QTest::newRow("2^31") << (quint64(1) << 31);
        QTest::newRow("2^53+1") << (quint64(1) << 53) + 1;
        QTest::newRow("2^64-2") << quint64(0xFFFFFFFFFFFFFFFEull);
    }

    void seedKeepsAll64Bits() {
        QFETCH(quint64, seed);
        SamplingPanel panel;
        wb::SamplingParams p;
        p.seed = seed;
        panel.setParams(p);
        QCOMPARE(panel.seedBox()->value(), seed);
        QCOMPARE(panel.seedBox()->text(), QString::number(seed));
        // Another knob changes: the seed sent along is the one loaded.
        QSignalSpy changed(&panel, &SamplingPanel::paramsChanged);
        panel.control("temperature")->spinBox()->setValue(0.5);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(changed.at(0).at(0).value<wb::SamplingParams>().seed, seed);
        // Typed in: the same.
        panel.seedBox()->clear();
        QTest::keyClicks(panel.seedBox(), QString::number(seed));
        QCOMPARE(panel.params().seed, seed);
    }

    void presetIsNamedAndMarkedModifiedOnceEdited() {
        SamplingPanel panel;
        panel.show();
        QSignalSpy preset(&panel, &SamplingPanel::presetChanged);
        panel.applyPreset("Precise");
        QCOMPARE(preset.count(), 1);
        QCOMPARE(panel.presetName(), QString("Precise"));
        QVERIFY(!panel.isModified());
        QVERIFY(!panel.modifiedLabel()->isVisible());
        panel.control("top_k")->spinBox()->setValue(33);
        QVERIFY(panel.isModified());
        QVERIFY(panel.modifiedLabel()->isVisible());
        // Back to the preset's value: no longer modified.
        panel.control("top_k")->spinBox()->setValue(20);
        QVERIFY(!panel.isModified());
        // restore() names the preset the values came from.
        wb::SamplingParams p;
        p.temperature = 1.7f;
        panel.restore(p, "Creative");
        QCOMPARE(panel.presetName(), QString("Creative"));
        QCOMPARE(panel.presetBox()->currentText(), QString("Creative"));
        QVERIFY(panel.isModified());
    }

    // Bar heights are the raw and final probabilities; the tick labels are the pieces, the drawn one
    // marked. Without a sampler trace no cut-off is drawn (none is guessed from the settings).
    void chartShowsCandidates() {
        SamplingPanel panel;
        wb::SamplingParams p;
        p.top_k = 0;
        p.top_p = 0.8f;
        p.min_p = 0.25f;
        panel.setParams(p);
        panel.handleTokenEvent(wb_gui_test::tokenEvent({0.5f, 0.25f, 0.15f, 0.1f}, {0.6f, 0.4f, 0.0f, 0.0f}, 1));
        CandidatePlot* plot = panel.plot();
        QCOMPARE(plot->rawBars()->data()->size(), 4);
        QCOMPARE(plot->rawBars()->data()->at(0)->value, 0.5);
        QCOMPARE(plot->rawBars()->data()->at(3)->value, double(0.1f));
        QCOMPARE(plot->finalBars()->data()->at(1)->value, double(0.4f));
        QCOMPARE(plot->finalBars()->data()->at(2)->value, 0.0);
        QCOMPARE(plot->tickLabel(0), QString("t0"));
        QVERIFY(plot->tickLabel(1).endsWith("t1") && plot->tickLabel(1).startsWith("▶"));
        QCOMPARE(plot->topPCount(), -1);
        QVERIFY(plot->minPThreshold() < 0.0);
        QVERIFY(!plot->minPSeen()->visible());
        QVERIFY2(plot->note().contains("no sampler trace"), qPrintable(plot->note()));
    }

    // The chart draws the cut-offs the sampler recorded. A logit bias of log 4 on token 3 turns the raw
    // {.4 .3 .2 .1} into {.4 .3 .2 .4} / 1.3: top-p 0.8 keeps tokens 0, 3, 1 (not the first three
    // bars, so no top-p line), and min-p 0.6 then cuts at 0.6 x 4/11 in what it saw: not at
    // min_p x the best raw p (0.24), the number the chart used to compute itself.
    void chartDrawsTheRecordedMinPCutOff() {
        wb::SamplingParams p;
        p.temperature = 1.0f;
        p.top_k = 0;
        p.top_p = 0.8f;
        p.min_p = 0.6f;
        p.seed = 1;
        p.samplers = {"top_p", "min_p"};
        p.logit_bias = {{3, std::log(4.0f)}};
        const wb::TokenEvent e = sampledEvent({0.4, 0.3, 0.2, 0.1}, p);
        CandidatePlot plot;
        plot.setCandidates(e);
        const wb::SamplerStageTrace& minP = e.trace.at(2);
        QCOMPARE(QString::fromStdString(minP.stage), QString("min_p"));
        QCOMPARE(plot.minPThreshold(), minP.p_cutoff);
        QVERIFY(std::fabs(plot.minPThreshold() - 0.6 * 4.0 / 11.0) < 1e-6);
        // The ticks are the candidates' p as min-p saw them (top-p's survivors); token 2 had gone.
        QCPGraphDataContainer& seen = *plot.minPSeen()->data();
        QCOMPARE(seen.size(), 3);
        QCOMPARE(seen.at(0)->key, 1.0);
        QVERIFY(std::fabs(seen.at(0)->value - 4.0 / 11.0) < 1e-6);
        QCOMPARE(seen.at(1)->key, 2.0);
        QVERIFY(std::fabs(seen.at(1)->value - 3.0 / 11.0) < 1e-6);
        QCOMPARE(seen.at(2)->key, 4.0);
        QCOMPARE(plot.topPCount(), -1);
        QVERIFY2(plot.note().contains("top-p kept 3") && plot.note().contains("not the first bars"), qPrintable(plot.note()));
    }

    // Where top-p's survivors are the first bars, the line sits after them and names the mass reached.
    void chartDrawsTheRecordedTopPCut() {
        wb::SamplingParams p;
        p.temperature = 1.0f;
        p.top_k = 0;
        p.top_p = 0.7f;
        p.min_p = 0.0f;
        p.seed = 1;
        p.samplers = {"top_p"};
        CandidatePlot plot;
        plot.setCandidates(sampledEvent({0.5, 0.3, 0.15, 0.05}, p));
        QCOMPARE(plot.topPCount(), 2);
        QVERIFY(plot.minPThreshold() < 0.0);  // min-p is not in the chain
        QVERIFY(plot.note().isEmpty());
    }

    // Top-nσ and XTC get the min-p kind of mark, at what the trace recorded. Over raw {.4 .3 .2 .06 .04}
    // top-nσ 1.5 keeps the first three (its cut-off falls between .2 and .06 in the raw distribution it
    // saw); XTC then sees {4 3 2}/9 and, triggering, removes the one top choice above the least likely
    // one over its threshold 0.25.
    void chartDrawsTheRecordedTopNSigmaAndXtcCutOffs() {
        wb::SamplingParams p;
        p.temperature = 1.0f;
        p.seed = 1;
        p.top_n_sigma = 1.5f;
        p.xtc_probability = 1.0f;
        p.xtc_threshold = 0.25f;
        p.samplers = {"top_n_sigma", "xtc"};
        const wb::TokenEvent e = sampledEvent({0.4, 0.3, 0.2, 0.06, 0.04}, p);
        CandidatePlot plot;
        plot.setCandidates(e);
        const wb::SamplerStageTrace& sigma = e.trace.at(0);
        QCOMPARE(QString::fromStdString(sigma.stage), QString("top_n_sigma"));
        QCOMPARE(sigma.n_after, size_t(3));
        QCOMPARE(plot.cutOff("top_n_sigma"), sigma.p_cutoff);
        QVERIFY(plot.cutOff("top_n_sigma") > 0.06 && plot.cutOff("top_n_sigma") <= 0.2);
        QCOMPARE(plot.seenTicks("top_n_sigma")->data()->size(), 5);  // it came first: the raw p
        QVERIFY(plot.markLabel("top_n_sigma").startsWith("top-nσ cut-off"));

        QCOMPARE(plot.cutOff("xtc"), double(0.25f));
        const QCPGraphDataContainer& seen = *plot.seenTicks("xtc")->data();
        QCOMPARE(seen.size(), 3);  // top-nσ's survivors, as XTC saw them
        QVERIFY(std::fabs(seen.at(0)->value - 4.0 / 9.0) < 1e-6);
        QVERIFY(std::fabs(seen.at(2)->value - 2.0 / 9.0) < 1e-6);
        QVERIFY2(plot.markLabel("xtc").contains("removed 1"), qPrintable(plot.markLabel("xtc")));
        QVERIFY(plot.minPThreshold() < 0.0);  // min-p is not in the chain
        QVERIFY2(plot.note().isEmpty(), qPrintable(plot.note()));

        // Where XTC's draw lets the token through it records no threshold: no line, a note.
        p.xtc_probability = 1e-9f;
        plot.setCandidates(sampledEvent({0.4, 0.3, 0.2, 0.06, 0.04}, p));
        QVERIFY(plot.cutOff("xtc") < 0.0);
        QVERIFY(!plot.seenTicks("xtc")->visible());
        QVERIFY(plot.cutOff("top_n_sigma") > 0.0);
        QVERIFY2(plot.note().contains("XTC did not trigger"), qPrintable(plot.note()));
    }

    // Mirostat keeps its best few: a line after them, with its k (and mirostat 2's mu).
    void chartDrawsMirostatsKeptCandidates_data() {
        QTest::addColumn<int>("version");
        QTest::addColumn<QString>("label");
        QTest::newRow("mirostat") << 1 << "mirostat: k = ";
        QTest::newRow("mirostat 2") << 2 << "mirostat 2: mu 2 bits, kept 2";
    }
    void chartDrawsMirostatsKeptCandidates() {
        QFETCH(int, version);
        QFETCH(QString, label);
        wb::SamplingParams p;
        p.temperature = 1.0f;
        p.seed = 1;
        p.mirostat = version;
        p.mirostat_tau = 1.0f;  // mu starts at 2 bits: mirostat 2 keeps p >= 1/4
        CandidatePlot plot;
        const wb::TokenEvent e = sampledEvent({0.4, 0.3, 0.2, 0.06, 0.04}, p);
        plot.setCandidates(e);
        const char* stage = version == 1 ? "mirostat" : "mirostat_v2";
        const wb::SamplerStageTrace& m = e.trace.back();
        QCOMPARE(QString::fromStdString(m.stage), QString(stage));
        QVERIFY2(m.n_after >= 1 && m.n_after < 5, qPrintable(QString::number(m.n_after)));
        QCOMPARE(plot.keptCount(stage), int(m.n_after));
        QVERIFY2(plot.markLabel(stage).contains(label), qPrintable(plot.markLabel(stage)));
        QCOMPARE(plot.keptCount(version == 1 ? "mirostat_v2" : "mirostat"), -1);
        QCOMPARE(plot.topPCount(), -1);
    }

    // Not a check: with WB_CHART_SCREENSHOTS=DIR set, the Sampling dock's chart with the top-nσ, XTC
    // and mirostat marks beside top-p and min-p, at 1366x768 and 1920x1080, light and dark, to look at.
    void chartPicturesOfTheNewMarks() {
        const QString dir = qEnvironmentVariable("WB_CHART_SCREENSHOTS");
        if (dir.isEmpty()) QSKIP("set WB_CHART_SCREENSHOTS=DIR to write the pictures");
        const std::vector<double> probs = {0.26, 0.2, 0.13, 0.1, 0.07, 0.05, 0.04, 0.03, 0.025, 0.02, 0.015, 0.012, 0.01, 0.008};
        const char* words[] = {" the", " a", " sea", " waves", " blue", " deep", " calm", " salt", " wind", " light", " dark", " foam", " tide", " sky"};
        wb::SamplingParams cuts;
        cuts.seed = 3;
        cuts.top_n_sigma = 2.0f;
        cuts.xtc_probability = 1.0f;
        cuts.xtc_threshold = 0.1f;
        cuts.top_p = 0.9f;
        wb::SamplingParams mirostat;
        mirostat.seed = 3;
        mirostat.mirostat = 2;
        mirostat.mirostat_tau = 2.0f;
        MainWindow w;
        w.show();
        for (const auto& [name, params] : {std::pair<QString, wb::SamplingParams>{"cuts", cuts}, {"mirostat", mirostat}}) {
            wb::TokenEvent e = sampledEvent(probs, params);
            for (wb::TokenCandidate& c : e.candidates) c.piece = words[c.id];
            e.piece = e.token_piece = words[e.id];
            for (const auto& [size, theme, suffix] : {std::tuple{QSize(1366, 768), ThemeMode::Light, "1366"},
                                                      std::tuple{QSize(1366, 768), ThemeMode::Dark, "1366-dark"},
                                                      std::tuple{QSize(1920, 1080), ThemeMode::Light, "1920"},
                                                      std::tuple{QSize(1920, 1080), ThemeMode::Dark, "1920-dark"}}) {
                w.setTheme(theme, false);
                w.resize(size);
                w.samplingPanel()->setParams(params);  // the knobs as the chart's token was drawn
                w.samplingPanel()->handleTokenEvent(e);
                QTest::qWait(300);
                QVERIFY(w.dock("samplingDock")->grab().save(QDir(dir).filePath(QString("chart-%1-%2.png").arg(name, suffix))));
            }
        }
        w.setTheme(ThemeMode::Light, false);
    }

    // A greedy reply records no cut-off stage: the chart says so instead of drawing the settings'.
    void greedyDrawsNoCutOffs() {
        wb::SamplingParams p;
        p.temperature = 0.0f;
        CandidatePlot plot;
        plot.setCandidates(sampledEvent({0.5, 0.3, 0.15, 0.05}, p));
        QCOMPARE(plot.topPCount(), -1);
        QVERIFY(plot.minPThreshold() < 0.0);
        QVERIFY2(plot.note().contains("greedy"), qPrintable(plot.note()));
    }

    // A drawn token beyond the bars is named, with its probability, in the chart's corner note.
    void drawnTokenOutsideTheBarsIsNamed() {
        std::vector<float> raw, fin;
        for (int i = 0; i < CandidatePlot::kMaxShown + 2; ++i) {
            raw.push_back(0.05f);
            fin.push_back(0.05f);
        }
        wb::TokenEvent e = wb_gui_test::tokenEvent(raw, fin, CandidatePlot::kMaxShown + 1);
        e.p_raw = 0.05f;
        e.trace.push_back({"dist", 14, 14, {}, {}});
        CandidatePlot plot;
        plot.setCandidates(e);
        QCOMPARE(plot.rawBars()->data()->size(), CandidatePlot::kMaxShown);
        const QString note = plot.note();
        QVERIFY2(note.contains("drawn: t13") && note.contains("p = 0.05") && note.contains("raw rank 14"), qPrintable(note));
        e.candidates.pop_back();  // not among the candidates at all
        e.candidates.pop_back();
        plot.setCandidates(e);
        QVERIFY2(plot.note().contains("drawn: t13") && plot.note().contains("not among the top 12"), qPrintable(plot.note()));
        e.id = 100;  // among the bars: the tick label marks it, no note
        plot.setCandidates(e);
        QVERIFY2(plot.note().isEmpty(), qPrintable(plot.note()));
    }

private:
    // A token event as the session builds it: one draw of a real chain over the given probabilities
    // (ids 0.., most likely first), its trace and its final distribution.
    static wb::TokenEvent sampledEvent(const std::vector<double>& probs, const wb::SamplingParams& params) {
        wb::SamplerChain chain(params);
        std::vector<float> logits;
        for (double q : probs) logits.push_back(float(std::log(q)));
        wb::TokenEvent e;
        e.id = chain.sample(logits.data(), int32_t(logits.size()), &e.trace, 20);
        // (QString: GCC 12 warns falsely on "t" + std::to_string() inlined here.)
        const auto piece = [](int id) { return QStringLiteral("t%1").arg(id).toStdString(); };
        e.piece = piece(e.id);
        const wb::CandidateSet& final = chain.last_candidates();
        e.p = final.data[size_t(final.selected)].p;
        e.p_raw = float(probs[size_t(e.id)]);
        for (size_t i = 0; i < probs.size(); ++i) {
            wb::TokenCandidate c{int32_t(i), piece(int(i)), float(probs[i]), 0.0f};
            for (const wb::Candidate& f : final.data)
                if (f.id == c.id) c.p_final = f.p;
            e.candidates.push_back(c);
        }
        return e;
    }
};

QTEST_MAIN(TestSamplingPanel)
#include "test_sampling_panel.moc"
