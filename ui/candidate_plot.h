#pragma once
// Bar chart of the next token's top candidates: probability before the sampling transforms (raw
// softmax) beside the probability in the distribution the token was drawn from, with the cut-offs the
// sampler trace recorded: top-p (a vertical line after the candidates it kept) and min-p (a horizontal
// line at its probability cut-off, with ticks at each candidate's p in the distribution min-p saw).
// Nothing is recomputed here: without a trace entry for a stage, no line is drawn. The drawn token is
// named in a corner note when it is not among the bars. Colours come from the theme (Theme::Role).
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
    // Candidates kept by top-p (the line sits after this many); -1 when not marked.
    int topPCount() const { return m_topPCount; }
    // Height of the min-p line (the recorded cut-off); negative when not marked.
    double minPThreshold() const { return m_minPThreshold; }
    // Ticks at the candidates' p in the distribution min-p saw (empty when the line is not drawn).
    QCPGraph* minPSeen() const { return m_minPSeen; }
    // The corner note: the drawn token when outside the bars, or why no cut-off is drawn ("" = none).
    QString note() const { return m_note->visible() ? m_note->text() : QString(); }
    QString tickLabel(int index) const;

    static constexpr int kMaxShown = 12;

    // Series, marks, axes and background in the current theme's colours.
    void applyTheme();

private:
    void updateMarks();
    void markTopP(const wb::SamplerStageTrace* stage, int shown);
    double markMinP(const wb::SamplerStageTrace* stage, const wb::SamplerStageTrace* before, int shown);
    QStringList notes(int shown) const;

    QCPBars* m_raw;
    QCPBars* m_final;
    QCPGraph* m_minPSeen;
    QCPItemStraightLine* m_topPLine;
    QCPItemText* m_topPText;
    QCPItemStraightLine* m_minPLine;
    QCPItemText* m_minPText;
    QCPItemText* m_note;
    QSharedPointer<QCPAxisTickerText> m_ticker;
    wb::TokenEvent m_event;
    QStringList m_labels;
    int m_topPCount = -1;
    double m_minPThreshold = -1.0;
};
