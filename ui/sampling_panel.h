#pragma once
// Sampling panel: every SamplingParams knob (slider + spin box), the seed (fixed or random, 64-bit),
// max tokens and stop strings; DRY, XTC, top-nσ, Mirostat, logit bias and the order of the chain
// (sampler_chain_controls.h); a grammar or JSON Schema for the reply (grammar_controls.h); presets, with the preset the values came from and "modified" once a
// knob differs from it; and the chart of the latest token's candidates before and after sampling.
// Every change is emitted at once: the controller hands it to the running generation, so it applies
// to the very next token. The knobs scroll when the dock is short, so the panel never forces the
// window's height.
#include <QWidget>

#include "engine/observer.h"
#include "sampling/sampling_params.h"

class CandidatePlot;
class GrammarControls;
class ParamControl;
class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QScrollArea;
class SamplerChainControls;
class SeedEdit;

class SamplingPanel : public QWidget {
    Q_OBJECT

public:
    explicit SamplingPanel(QWidget* parent = nullptr);

    wb::SamplingParams params() const { return m_params; }
    CandidatePlot* plot() const { return m_plot; }
    ParamControl* control(const QString& name) const;  // "temperature", "top_k", ...
    QCheckBox* randomSeedBox() const { return m_randomSeed; }
    SeedEdit* seedBox() const { return m_seed; }
    QLineEdit* stopEdit() const { return m_stop; }
    QComboBox* presetBox() const { return m_presets; }
    QLabel* modifiedLabel() const { return m_modified; }
    QScrollArea* knobArea() const { return m_knobArea; }
    // DRY, XTC, top-nσ, Mirostat, logit bias and the sampler order (their numeric knobs are control()s too).
    SamplerChainControls* chainControls() const { return m_chain; }
    // The "Constrain output" group: a GBNF grammar or a JSON Schema the reply must follow.
    GrammarControls* grammarControls() const { return m_grammar; }
    // The preset the values started from, and whether a knob differs from it now.
    QString presetName() const { return m_presetName; }
    bool isModified() const;

public Q_SLOTS:
    // Fills the controls without emitting paramsChanged (a loaded conversation, a preset).
    void setParams(const wb::SamplingParams& params);
    // The engine did not apply the grammar chosen during the reply: shows params (the grammar in force)
    // without emitting paramsChanged, and why under the grammar until the next change there.
    void showGrammarRefused(const wb::SamplingParams& params, const QString& why);
    // setParams, with `preset` named as the values' origin (restored settings).
    void restore(const wb::SamplingParams& params, const QString& preset);
    void applyPreset(const QString& name);
    void handleTokenEvent(const wb::TokenEvent& event);
    void saveUserPreset(const QString& name);
    void deleteCurrentPreset();

Q_SIGNALS:
    void paramsChanged(const wb::SamplingParams& params);
    void presetChanged(const QString& name);

private:
    void readControls();
    void refreshPresets(const QString& select);
    void updateModified();
    void setAccessibleNames();
    ParamControl* addControl(const QString& name, const QString& label, double lo, double hi, double step, int decimals,
                             const QString& tip);

    wb::SamplingParams m_params;
    QHash<QString, ParamControl*> m_controls;
    class QFormLayout* m_form;
    QCheckBox* m_randomSeed;
    SeedEdit* m_seed;
    QLineEdit* m_stop;
    QComboBox* m_presets;
    QPushButton* m_savePreset;
    QPushButton* m_deletePreset;
    QLabel* m_modified;
    QScrollArea* m_knobArea;
    QString m_presetName;
    SamplerChainControls* m_chain;
    GrammarControls* m_grammar;
    QLabel* m_plotNote;
    CandidatePlot* m_plot;
    bool m_filling = false;
};
