#pragma once
// Bar chart of the next token's top candidates: probability before the sampling transforms (raw
// softmax) beside the probability in the distribution the token was drawn from, with the top-p
// cut-off (a vertical line after the last kept candidate) and the min-p threshold (a horizontal line
// at min_p x the best raw probability) marked. Colours come from the theme (Theme::Role).
#include <qcustomplot.h>

#include "engine/observer.h"
#include "sampling/sampling_params.h"

class CandidatePlot : public QCustomPlot {
    Q_OBJECT

public:
    explicit CandidatePlot(QWidget* parent = nullptr);

    // Candidates of one token event (sorted by raw probability, as the engine sends them).
    void setCandidates(const wb::TokenEvent& event, const wb::SamplingParams& params);
    // Redraws the cut-off marks for new settings without new candidates.
    void setParams(const wb::SamplingParams& params);

    QCPBars* rawBars() const { return m_raw; }
    QCPBars* finalBars() const { return m_final; }
    // Candidates kept by top-p (the line sits after this many); -1 when not marked.
    int topPCount() const { return m_topPCount; }
    // Height of the min-p line; negative when not marked.
    double minPThreshold() const { return m_minPThreshold; }
    QString tickLabel(int index) const;

    static constexpr int kMaxShown = 12;

    // Series, marks, axes and background in the current theme's colours.
    void applyTheme();

private:
    void updateMarks();

    QCPBars* m_raw;
    QCPBars* m_final;
    QCPItemStraightLine* m_topPLine;
    QCPItemText* m_topPText;
    QCPItemStraightLine* m_minPLine;
    QCPItemText* m_minPText;
    QSharedPointer<QCPAxisTickerText> m_ticker;
    wb::TokenEvent m_event;
    wb::SamplingParams m_params;
    QStringList m_labels;
    int m_topPCount = -1;
    double m_minPThreshold = -1.0;
};
