#include "sampling_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QVBoxLayout>

#include "candidate_plot.h"
#include "grammar_controls.h"
#include "param_control.h"
#include "sampler_chain_controls.h"
#include "sampling_presets.h"
#include "seed_edit.h"

namespace {

// Stop strings are typed separated by "|" (they may contain spaces and commas); "\n" stands for a new line.
std::vector<std::string> parseStops(const QString& text) {
    std::vector<std::string> out;
    for (QString s : text.split(QLatin1Char('|'), Qt::SkipEmptyParts)) {
        s.replace(QStringLiteral("\\n"), QStringLiteral("\n"));
        if (!s.isEmpty()) out.push_back(s.toStdString());
    }
    return out;
}

QString formatStops(const std::vector<std::string>& stops) {
    QStringList parts;
    for (const auto& s : stops) parts << QString::fromStdString(s).replace(QLatin1Char('\n'), QStringLiteral("\\n"));
    return parts.join(QLatin1Char('|'));
}

// The knobs a preset sets (seed, reply length and stop strings are the user's).
bool sameKnobs(const wb::SamplingParams& a, const wb::SamplingParams& b) {
    return a.temperature == b.temperature && a.top_k == b.top_k && a.top_p == b.top_p && a.min_p == b.min_p &&
           a.typical_p == b.typical_p && a.repeat_penalty == b.repeat_penalty && a.repeat_last_n == b.repeat_last_n &&
           a.frequency_penalty == b.frequency_penalty && a.presence_penalty == b.presence_penalty &&
           a.dry_multiplier == b.dry_multiplier && a.dry_base == b.dry_base && a.dry_allowed_length == b.dry_allowed_length &&
           a.dry_penalty_last_n == b.dry_penalty_last_n && a.dry_sequence_breakers == b.dry_sequence_breakers &&
           a.xtc_probability == b.xtc_probability && a.xtc_threshold == b.xtc_threshold && a.top_n_sigma == b.top_n_sigma &&
           a.mirostat == b.mirostat && a.mirostat_tau == b.mirostat_tau && a.mirostat_eta == b.mirostat_eta &&
           a.samplers == b.samplers;
}

}  // namespace

SamplingPanel::SamplingPanel(QWidget* parent) : QWidget(parent) {
    m_presets = new QComboBox(this);
    // Sized to a few characters, not its longest name ("Varied (DRY + XTC)", a user's): the panel's
    // minimum width sets the window's, which must fit a 1280x720 screen.
    m_presets->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_presets->setMinimumContentsLength(8);
    m_savePreset = new QPushButton(tr("Save…"), this);
    m_savePreset->setToolTip(tr("Save the current settings as a preset"));
    m_deletePreset = new QPushButton(tr("Delete"), this);
    m_modified = new QLabel(tr("modified"), this);
    m_modified->setToolTip(tr("The values differ from the preset's"));
    m_modified->setForegroundRole(QPalette::PlaceholderText);
    // Reserve the label's width so the row does not jump when it appears.
    QSizePolicy keep = m_modified->sizePolicy();
    keep.setRetainSizeWhenHidden(true);
    m_modified->setSizePolicy(keep);
    auto* presetLabel = new QLabel(tr("Preset"), this);
    presetLabel->setBuddy(m_presets);
    auto* presetRow = new QHBoxLayout;
    presetRow->addWidget(presetLabel);
    presetRow->addWidget(m_presets, 1);
    presetRow->addWidget(m_modified);
    presetRow->addWidget(m_savePreset);
    presetRow->addWidget(m_deletePreset);

    auto* knobs = new QWidget;
    m_form = new QFormLayout(knobs);
    m_form->setContentsMargins(0, 0, 0, 0);
    m_form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    addControl(QStringLiteral("temperature"), tr("Temperature"), 0, 2, 0.01, 2, tr("0 = greedy (always the most likely token)"));
    addControl(QStringLiteral("top_k"), tr("Top-k"), 0, 200, 1, 0, tr("keep the k most likely tokens; 0 = off"));
    addControl(QStringLiteral("top_p"), tr("Top-p"), 0, 1, 0.01, 2, tr("smallest set with cumulative p >= top-p; 1 = off"));
    addControl(QStringLiteral("min_p"), tr("Min-p"), 0, 1, 0.01, 2, tr("drop tokens below min-p x the best p; 0 = off"));
    addControl(QStringLiteral("typical_p"), tr("Typical-p"), 0, 1, 0.01, 2, tr("locally typical sampling; 1 = off"));
    addControl(QStringLiteral("repeat_penalty"), tr("Repetition penalty"), 0.5, 2, 0.01, 2, tr("1 = off"));
    addControl(QStringLiteral("repeat_last_n"), tr("Penalty window"), -1, 2048, 1, 0, tr("tokens the penalties look at; 0 = off, -1 = all"));
    addControl(QStringLiteral("frequency_penalty"), tr("Frequency penalty"), -2, 2, 0.01, 2, tr("logit -= count x penalty"));
    addControl(QStringLiteral("presence_penalty"), tr("Presence penalty"), -2, 2, 0.01, 2, tr("logit -= penalty if the token occurred"));
    addControl(QStringLiteral("max_tokens"), tr("Max tokens"), 1, 4096, 1, 0, tr("generated tokens per reply"));

    m_randomSeed = new QCheckBox(tr("random"), this);
    m_seed = new SeedEdit(this);
    auto* seedRow = new QHBoxLayout;
    seedRow->addWidget(m_seed, 1);
    seedRow->addWidget(m_randomSeed);
    m_form->addRow(tr("Seed"), seedRow);
    m_stop = new QLineEdit(this);
    m_stop->setPlaceholderText(tr("stop strings, separated by |"));
    m_form->addRow(tr("Stop"), m_stop);
    m_chain = new SamplerChainControls(this, m_form, [this](const QString& name, const QString& label, double lo, double hi,
                                                           double step, int decimals, const QString& tip) {
        return addControl(name, label, lo, hi, step, decimals, tip);
    });
    connect(m_chain, &SamplerChainControls::changed, this, [this] { readControls(); });
    m_grammar = new GrammarControls(this, m_form);
    connect(m_grammar, &GrammarControls::changed, this, [this] { readControls(); });

    m_knobArea = new QScrollArea(this);
    m_knobArea->setWidget(knobs);
    m_knobArea->setWidgetResizable(true);
    m_knobArea->setFrameShape(QFrame::NoFrame);
    m_knobArea->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);

    m_plot = new CandidatePlot(this);
    m_plotNote = new QLabel(tr("Next-token candidates appear here while the model answers."), this);
    m_plotNote->setWordWrap(true);
    m_plotNote->setForegroundRole(QPalette::PlaceholderText);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(presetRow);
    // The knobs get their full height when the dock has it; the chart takes the rest, and the knobs
    // scroll only when the dock is shorter than both at their minimum.
    layout->addWidget(m_knobArea);
    layout->addWidget(m_plotNote);
    layout->addWidget(m_plot, 1);

    connect(m_randomSeed, &QCheckBox::toggled, this, [this](bool on) {
        m_seed->setEnabled(!on);
        readControls();
    });
    connect(m_seed, &SeedEdit::valueChanged, this, [this] { readControls(); });
    connect(m_stop, &QLineEdit::textChanged, this, [this] { readControls(); });
    connect(m_presets, &QComboBox::textActivated, this, &SamplingPanel::applyPreset);
    connect(m_savePreset, &QPushButton::clicked, this, [this] {
        bool ok = false;
        const QString name = QInputDialog::getText(this, tr("Save preset"), tr("Preset name:"), QLineEdit::Normal, QString(), &ok);
        if (ok && !name.trimmed().isEmpty()) saveUserPreset(name.trimmed());
    });
    connect(m_deletePreset, &QPushButton::clicked, this, &SamplingPanel::deleteCurrentPreset);

    setAccessibleNames();
    m_presetName = QStringLiteral("Balanced");
    refreshPresets(m_presetName);
    setParams(wb::SamplingParams{});
}

void SamplingPanel::setAccessibleNames() {
    m_presets->setAccessibleName(tr("Sampling preset"));
    m_savePreset->setAccessibleName(tr("Save the settings as a preset"));
    m_deletePreset->setAccessibleName(tr("Delete the preset"));
    m_seed->setAccessibleName(tr("Seed"));
    m_randomSeed->setAccessibleName(tr("Random seed"));
    m_stop->setAccessibleName(tr("Stop strings"));
    m_plot->setAccessibleName(tr("Next-token candidates before and after sampling"));
    m_knobArea->setAccessibleName(tr("Sampling settings"));
}

ParamControl* SamplingPanel::addControl(const QString& name, const QString& label, double lo, double hi, double step,
                                        int decimals, const QString& tip) {
    auto* c = new ParamControl(lo, hi, step, decimals, this);
    c->setToolTip(tip);
    c->setObjectName(name);
    c->setAccessibleNames(label);
    m_controls.insert(name, c);
    m_form->addRow(label, c);
    connect(c, &ParamControl::valueChanged, this, [this] { readControls(); });
    return c;
}

ParamControl* SamplingPanel::control(const QString& name) const {
    return m_controls.value(name);
}

void SamplingPanel::readControls() {
    if (m_filling) return;
    wb::SamplingParams p;
    auto v = [this](const char* k) { return m_controls.value(QLatin1String(k))->value(); };
    p.temperature = float(v("temperature"));
    p.top_k = int(v("top_k"));
    p.top_p = float(v("top_p"));
    p.min_p = float(v("min_p"));
    p.typical_p = float(v("typical_p"));
    p.repeat_penalty = float(v("repeat_penalty"));
    p.repeat_last_n = int(v("repeat_last_n"));
    p.frequency_penalty = float(v("frequency_penalty"));
    p.presence_penalty = float(v("presence_penalty"));
    p.max_tokens = int(v("max_tokens"));
    p.seed = m_randomSeed->isChecked() ? wb::SamplingParams::kRandomSeed : m_seed->value();
    p.stop = parseStops(m_stop->text());
    m_chain->read(p);
    m_grammar->read(p);
    m_params = p;
    updateModified();
    Q_EMIT paramsChanged(p);
}

void SamplingPanel::setParams(const wb::SamplingParams& p) {
    m_filling = true;
    auto set = [this](const char* k, double value) { m_controls.value(QLatin1String(k))->setValue(value); };
    set("temperature", p.temperature);
    set("top_k", p.top_k);
    set("top_p", p.top_p);
    set("min_p", p.min_p);
    set("typical_p", p.typical_p);
    set("repeat_penalty", p.repeat_penalty);
    set("repeat_last_n", p.repeat_last_n);
    set("frequency_penalty", p.frequency_penalty);
    set("presence_penalty", p.presence_penalty);
    set("max_tokens", p.max_tokens);
    const bool random = p.seed == wb::SamplingParams::kRandomSeed;
    m_randomSeed->setChecked(random);
    m_seed->setEnabled(!random);
    if (!random) m_seed->setValue(p.seed);
    m_stop->setText(formatStops(p.stop));
    m_chain->fill(p);
    m_grammar->fill(p);
    m_filling = false;
    m_params = p;
    updateModified();
}

void SamplingPanel::showGrammarRefused(const wb::SamplingParams& params, const QString& why) {
    setParams(params);
    m_grammar->showNotice(why);
}

void SamplingPanel::restore(const wb::SamplingParams& params, const QString& preset) {
    wb::SamplingParams unused;
    m_presetName = SamplingPresets::find(preset, &unused) ? preset : QStringLiteral("Balanced");
    refreshPresets(m_presetName);
    setParams(params);
}

bool SamplingPanel::isModified() const {
    wb::SamplingParams preset;
    if (!SamplingPresets::find(m_presetName, &preset) || !sameKnobs(preset, m_params)) return true;
    // A preset with a grammar of its own sets it too (applyPreset): another one differs from it.
    return preset.grammar_mode != wb::GrammarMode::NONE &&
           (preset.grammar_mode != m_params.grammar_mode || preset.grammar_source != m_params.grammar_source);
}

void SamplingPanel::updateModified() {
    m_modified->setVisible(isModified());
}

void SamplingPanel::applyPreset(const QString& name) {
    wb::SamplingParams p;
    if (!SamplingPresets::find(name, &p)) return;
    // A preset sets the sampling knobs; the seed, the reply length, stop strings and logit bias are the
    // user's, and so is the grammar (its mode and text too) unless the preset has one of its own (a
    // user preset saved with a mode other than None).
    if (p.grammar_mode == wb::GrammarMode::NONE && p.grammar.empty()) {
        p.grammar = m_params.grammar;
        p.grammar_mode = m_params.grammar_mode;
        p.grammar_source = m_params.grammar_source;
    }
    p.seed = m_params.seed;
    p.logit_bias = m_params.logit_bias;
    p.max_tokens = m_params.max_tokens;
    p.stop = m_params.stop;
    m_presetName = name;
    setParams(p);
    {
        // Shown also when applied from code (the box's own choice already shows it).
        QSignalBlocker block(m_presets);
        m_presets->setCurrentText(name);
    }
    m_deletePreset->setEnabled(!SamplingPresets::isBuiltin(name));
    Q_EMIT presetChanged(name);
    Q_EMIT paramsChanged(m_params);
}

void SamplingPanel::saveUserPreset(const QString& name) {
    SamplingPresets::saveUser(name, m_params);
    m_presetName = name;
    refreshPresets(name);
    updateModified();
    Q_EMIT presetChanged(name);
}

void SamplingPanel::deleteCurrentPreset() {
    const QString name = m_presets->currentText();
    if (SamplingPresets::isBuiltin(name)) return;
    SamplingPresets::removeUser(name);
    m_presetName = QStringLiteral("Balanced");
    refreshPresets(m_presetName);
    updateModified();
    Q_EMIT presetChanged(m_presetName);
}

void SamplingPanel::refreshPresets(const QString& select) {
    QSignalBlocker block(m_presets);
    m_presets->clear();
    m_presets->addItems(SamplingPresets::names());
    m_presets->setCurrentText(select);
    m_deletePreset->setEnabled(!SamplingPresets::isBuiltin(select));
}

void SamplingPanel::handleTokenEvent(const wb::TokenEvent& event) {
    if (event.candidates.empty()) return;
    m_plotNote->setText(tr("Token %1: top candidates before and after sampling").arg(event.index));
    m_plot->setCandidates(event);
}
