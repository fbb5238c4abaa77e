#include "candidate_plot.h"

#include <algorithm>
#include <cmath>

#include <QApplication>
#include <QSet>

#include "theme.h"

namespace {

QString visibleText(QString s) {
    s.replace(QLatin1Char('\n'), QChar(0x21B5));
    s.replace(QLatin1Char(' '), QChar(0x00B7));
    if (s.isEmpty()) s = QStringLiteral("∅");
    return s.size() > 12 ? s.left(11) + QChar(0x2026) : s;
}

// The trace entry of a stage (the last one, should the sequence name it twice) and the entry before
// it, whose survivors are what the stage was given (null: the stage came first and saw the raw row).
struct StageEntry {
    const wb::SamplerStageTrace* stage = nullptr;
    const wb::SamplerStageTrace* before = nullptr;
};

StageEntry findStage(const std::vector<wb::SamplerStageTrace>& trace, const char* name) {
    StageEntry found;
    for (size_t i = 0; i < trace.size(); ++i) {
        if (trace[i].stage != name) continue;
        found.stage = &trace[i];
        found.before = i > 0 ? &trace[i - 1] : nullptr;
    }
    return found;
}

void styleLine(QCPItemStraightLine* line, const QColor& color) {
    QPen pen(color);
    pen.setStyle(Qt::DashLine);
    pen.setWidthF(1.5);
    line->setPen(pen);
}

}  // namespace

CandidatePlot::CandidatePlot(QWidget* parent) : QCustomPlot(parent) {
    // Room for the rotated tick labels, a few bars and the legend row, in lines of text.
    setMinimumHeight(fontMetrics().height() * 9);
    m_raw = new QCPBars(xAxis, yAxis);
    m_raw->setName(tr("before sampling (raw)"));
    m_raw->setPen(Qt::NoPen);
    m_final = new QCPBars(xAxis, yAxis);
    m_final->setName(tr("after sampling (drawn from)"));
    m_final->setPen(Qt::NoPen);
    auto* group = new QCPBarsGroup(this);
    m_raw->setWidth(0.38);
    m_final->setWidth(0.38);
    m_raw->setBarsGroup(group);
    m_final->setBarsGroup(group);

    m_ticker.reset(new QCPAxisTickerText);
    xAxis->setTicker(m_ticker);
    xAxis->setTickLabelRotation(60);
    xAxis->setSubTicks(false);
    xAxis->setTickLength(0, 3);
    yAxis->setLabel(tr("probability"));
    yAxis->setRange(0, 1);

    m_topPLine = new QCPItemStraightLine(this);
    m_topPText = new QCPItemText(this);
    m_topPText->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_minPLine = new QCPItemStraightLine(this);
    m_minPText = new QCPItemText(this);
    m_minPText->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
    m_minPSeen = new QCPGraph(xAxis, yAxis);
    m_minPSeen->setName(tr("as min-p saw it"));
    m_minPSeen->setLineStyle(QCPGraph::lsNone);
    m_note = new QCPItemText(this);
    m_note->position->setType(QCPItemPosition::ptAxisRectRatio);
    m_note->position->setCoords(0.99, 0.02);
    m_note->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
    m_note->setTextAlignment(Qt::AlignRight);

    // The legend goes in a row under the chart: inside it would cover the tallest bars.
    legend->setVisible(true);
    legend->setFont(QFont(font().family(), 8));
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    legend->setWrap(2);  // two per row: three entries in one row cut their names in a narrow dock
    axisRect()->insetLayout()->take(legend);
    axisRect()->insetLayout()->simplify();
    plotLayout()->addElement(1, 0, legend);
    plotLayout()->setRowStretchFactor(1, 0.001);
    legend->setMargins(QMargins(4, 0, 4, 0));
    applyTheme();
    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this, &CandidatePlot::applyTheme);
    updateMarks();
}

void CandidatePlot::applyTheme() {
    m_raw->setBrush(Theme::color(Theme::Role::RawSeries));
    m_final->setBrush(Theme::color(Theme::Role::FinalSeries));
    const QColor topP = Theme::color(Theme::Role::TopPMark);
    const QColor minP = Theme::color(Theme::Role::MinPMark);
    styleLine(m_topPLine, topP);
    m_topPText->setColor(topP);
    styleLine(m_minPLine, minP);
    m_minPText->setColor(minP);
    // A short level mark across each bar pair: the candidate's p where min-p compared it.
    QPainterPath dash;
    dash.moveTo(-3, 0);
    dash.lineTo(3, 0);
    QPen dashPen(minP);
    dashPen.setWidthF(2.5);
    dashPen.setCosmetic(true);
    m_minPSeen->setPen(dashPen);
    m_minPSeen->setScatterStyle(QCPScatterStyle(dash, dashPen, Qt::NoBrush, 18));
    m_note->setColor(QApplication::palette().color(QPalette::WindowText));
    Theme::stylePlot(this);
}

QString CandidatePlot::tickLabel(int index) const {
    return index >= 0 && index < m_labels.size() ? m_labels[index] : QString();
}

void CandidatePlot::setCandidates(const wb::TokenEvent& event) {
    m_event = event;
    const int n = std::min<int>(int(event.candidates.size()), kMaxShown);
    QVector<double> keys, raw, fin;
    m_ticker->clear();
    m_labels.clear();
    for (int i = 0; i < n; ++i) {
        const wb::TokenCandidate& c = event.candidates[size_t(i)];
        keys << i + 1;
        raw << c.p_raw;
        fin << c.p_final;
        QString label = visibleText(QString::fromStdString(c.piece));
        if (c.id == event.id) label = QStringLiteral("▶ ") + label;  // the token that was drawn
        m_labels << label;
        m_ticker->addTick(i + 1, label);
    }
    m_raw->setData(keys, raw, true);
    m_final->setData(keys, fin, true);
    xAxis->setRange(0.4, std::max(n, 1) + 0.6);
    updateMarks();
}

void CandidatePlot::updateMarks() {
    const auto& cands = m_event.candidates;
    const int shown = std::min<int>(int(cands.size()), kMaxShown);
    double top = 0.0;
    for (int i = 0; i < shown; ++i) top = std::max({top, double(cands[size_t(i)].p_raw), double(cands[size_t(i)].p_final)});
    const StageEntry minP = findStage(m_event.trace, "min_p");
    top = std::max(top, markMinP(minP.stage, minP.before, shown));
    yAxis->setRange(0, std::max(0.05, top * 1.1));
    markTopP(findStage(m_event.trace, "top_p").stage, shown);
    const QStringList lines = notes(shown);
    m_note->setVisible(!lines.isEmpty());
    m_note->setText(lines.join(QLatin1Char('\n')));
    replot(QCustomPlot::rpQueuedReplot);
}

// The line goes after the candidates top-p kept only where they are the first bars: the bars are in
// raw order, and a penalty or bias before top-p may have reordered them (the survivors are known by id
// from the trace, whose top_after holds all of them when they are fewer than its length).
void CandidatePlot::markTopP(const wb::SamplerStageTrace* stage, int shown) {
    m_topPCount = -1;
    if (stage && std::isfinite(stage->threshold) && int(stage->n_after) < shown && stage->n_after <= stage->top_after.size()) {
        QSet<int> kept, first;
        for (size_t i = 0; i < stage->n_after; ++i) {
            kept.insert(stage->top_after[i].id);
            first.insert(m_event.candidates[i].id);
        }
        if (kept == first) m_topPCount = int(stage->n_after);
    }
    const bool show = m_topPCount > 0;
    m_topPLine->setVisible(show);
    m_topPText->setVisible(show);
    if (!show) return;
    const double x = m_topPCount + 0.5;
    m_topPLine->point1->setCoords(x, 0);
    m_topPLine->point2->setCoords(x, 1);
    m_topPText->position->setCoords(x, yAxis->range().upper);
    // The label goes on the side of the line with room for it (a line near the right edge clips it).
    const bool rightHalf = x > (xAxis->range().lower + xAxis->range().upper) / 2;
    m_topPText->setPositionAlignment((rightHalf ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignTop);
    m_topPText->setText(tr(" top-p: mass %1 ").arg(stage->threshold, 0, 'g', 3));
}

// The min-p line is drawn in the distribution min-p saw, not over the raw bars: its recorded cut-off
// (p_cutoff) is a probability there, and once a penalty, bias or DRY changed the logits no recorded
// value converts it to the raw scale. The ticks give each shown candidate's p in that distribution,
// from the survivors of the stage before (the raw p when min-p came first); a candidate an earlier
// stage removed, or beyond what the trace kept, gets none. Returns the highest value drawn.
double CandidatePlot::markMinP(const wb::SamplerStageTrace* stage, const wb::SamplerStageTrace* before, int shown) {
    m_minPThreshold = stage && std::isfinite(stage->p_cutoff) ? stage->p_cutoff : -1.0;
    const bool show = m_minPThreshold >= 0.0;
    QVector<double> keys, values;
    for (int i = 0; show && i < shown; ++i) {
        const wb::TokenCandidate& c = m_event.candidates[size_t(i)];
        if (!before) {
            keys << i + 1;
            values << c.p_raw;
            continue;
        }
        for (const wb::Candidate& seen : before->top_after) {
            if (seen.id != c.id) continue;
            keys << i + 1;
            values << seen.p;
        }
    }
    m_minPSeen->setData(keys, values, true);
    m_minPSeen->setVisible(show);
    if (show) m_minPSeen->addToLegend();
    else m_minPSeen->removeFromLegend();
    m_minPLine->setVisible(show);
    m_minPText->setVisible(show);
    if (!show) return 0.0;
    m_minPLine->point1->setCoords(0, m_minPThreshold);
    m_minPLine->point2->setCoords(1, m_minPThreshold);
    m_minPText->position->setCoords(xAxis->range().upper, m_minPThreshold);
    m_minPText->setText(tr("min-p cut-off %1 ").arg(m_minPThreshold, 0, 'g', 3));
    double top = m_minPThreshold;
    for (double v : values) top = std::max(top, v);
    return top;
}

// What the marks cannot say: the drawn token when it is not among the bars, and why a cut-off is missing.
QStringList CandidatePlot::notes(int shown) const {
    QStringList lines;
    const auto& cands = m_event.candidates;
    int rank = -1;
    for (int i = 0; i < int(cands.size()); ++i)
        if (cands[size_t(i)].id == m_event.id) rank = i;
    if (shown > 0 && (rank < 0 || rank >= shown)) {
        const std::string& own = m_event.token_piece.empty() ? m_event.piece : m_event.token_piece;
        QString line = tr("▶ drawn: %1 (id %2) p = %3, raw %4")
                           .arg(visibleText(QString::fromStdString(own)))
                           .arg(m_event.id)
                           .arg(double(m_event.p), 0, 'g', 3)
                           .arg(double(m_event.p_raw), 0, 'g', 3);
        line += rank >= 0 ? tr(", raw rank %1").arg(rank + 1) : tr(", not among the top %1 raw").arg(cands.size());
        lines << line;
    }
    if (shown == 0) return lines;
    if (m_event.trace.empty()) {
        lines << tr("no sampler trace recorded: no cut-offs drawn");
    } else if (findStage(m_event.trace, "greedy").stage) {  // not always the last entry (a grammar follows it)
        lines << tr("greedy: the most likely token was taken, no cut-offs");
    }
    const wb::SamplerStageTrace* topP = findStage(m_event.trace, "top_p").stage;
    if (topP && std::isfinite(topP->threshold) && m_topPCount < 0 && int(topP->n_after) < shown)
        lines << tr("top-p kept %1 (mass %2), not the first bars: no line").arg(topP->n_after).arg(topP->threshold, 0, 'g', 3);
    return lines;
}
