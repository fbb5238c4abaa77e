#pragma once
// Bar chart of the next token's top candidates: probability before the sampling transforms (raw
// softmax) beside the probability in the distribution the token was drawn from, with the cut-offs the
// sampler trace recorded. Two kinds of mark:
// - a vertical line after the candidates a stage kept, where they are the first bars: top-p (the mass
//   it reached) and mirostat (its k; mirostat 2 also its mu);
// - a horizontal line at a stage's cut-off as a probability in the distribution that stage saw, with
//   ticks at each candidate's p there: min-p and top-nσ (their logit cut-off as p_cutoff) and XTC (its
//   threshold, when it triggered; the label says how many top choices it removed).
// Nothing is recomputed here: without a trace entry for a stage, no line is drawn. The drawn token is
// named in a corner note when it is not among the bars. Colours come from the theme (Theme::Role) for
// top-p and min-p; the newer marks take theirs from this file's table, light and dark.
#include <vector>

#include <qcustomplot.h>

#include "engine/observer.h"

class CandidatePlot : public QCustomPlot {
    Q_OBJECT

public:
    explicit CandidatePlot(QWidget* parent = nullptr);

    // Candidates of one token event (sorted by raw probability, as the engine sends them) and its
    // sampler trace.
    void setCandidates(const wb::TokenEvent& event);

    QCPBars* rawBars() const { return m_raw; }
    QCPBars* finalBars() const { return m_final; }
    // Candidates a stage that keeps its best few ("top_p", "mirostat", "mirostat_v2") kept: its line
    // sits after this many; -1 when not marked (or an unknown stage).
    int keptCount(const char* stage) const;
    // The height of a stage's cut-off line ("min_p", "top_n_sigma", "xtc"), a probability in the
    // distribution the stage saw; negative when not marked (or an unknown stage).
    double cutOff(const char* stage) const;
    // The ticks at the candidates' p as that stage saw them (hidden when its line is); null for an
    // unknown stage.
    QCPGraph* seenTicks(const char* stage) const;
    // The label of a stage's line ("" when not marked).
    QString markLabel(const char* stage) const;
    int topPCount() const { return keptCount("top_p"); }
    double minPThreshold() const { return cutOff("min_p"); }
    QCPGraph* minPSeen() const { return seenTicks("min_p"); }
    // The corner note: the drawn token when outside the bars, or why no cut-off is drawn ("" = none).
    QString note() const { return m_note->visible() ? m_note->text() : QString(); }
    QString tickLabel(int index) const;

    static constexpr int kMaxShown = 12;

    // Series, marks, axes and background in the current theme's colours.
    void applyTheme();

private:
    // A vertical line after the candidates a stage kept.
    struct KeptMark {
        const char* stage;
        QCPItemStraightLine* line;
        QCPItemText* text;
        int count = -1;
    };
    // A horizontal line at a stage's probability cut-off, with ticks at the candidates' p as it saw them.
    struct LevelMark {
        const char* stage;
        QCPItemStraightLine* line;
        QCPItemText* text;
        QCPGraph* seen;
        double value = -1.0;
    };

    void updateMarks();
    void markKept(KeptMark& mark, int shown);
    double markLevel(LevelMark& mark, int shown);
    void placeLevelLabels();
    QStringList notes(int shown) const;
    const KeptMark* kept(const char* stage) const;
    const LevelMark* level(const char* stage) const;

    QCPBars* m_raw;
    QCPBars* m_final;
    std::vector<KeptMark> m_kept;     // top_p, mirostat, mirostat_v2
    std::vector<LevelMark> m_levels;  // min_p, top_n_sigma, xtc
    QCPItemText* m_note;
    QSharedPointer<QCPAxisTickerText> m_ticker;
    wb::TokenEvent m_event;
    QStringList m_labels;
};
