#include "candidate_plot.h"

#include <algorithm>

#include "theme.h"

namespace {

QString visibleText(QString s) {
    s.replace(QLatin1Char('\n'), QChar(0x21B5));
    s.replace(QLatin1Char(' '), QChar(0x00B7));
    if (s.isEmpty()) s = QStringLiteral("∅");
    return s.size() > 12 ? s.left(11) + QChar(0x2026) : s;
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

    // The legend goes in a row under the chart: inside it would cover the tallest bars.
    legend->setVisible(true);
    legend->setFont(QFont(font().family(), 8));
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
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
    Theme::stylePlot(this);
}

QString CandidatePlot::tickLabel(int index) const {
    return index >= 0 && index < m_labels.size() ? m_labels[index] : QString();
}

void CandidatePlot::setCandidates(const wb::TokenEvent& event, const wb::SamplingParams& params) {
    m_event = event;
    m_params = params;
    const int n = std::min<int>(int(event.candidates.size()), kMaxShown);
    QVector<double> keys, raw, fin;
    m_ticker->clear();
    m_labels.clear();
    double top = 0.0;
    for (int i = 0; i < n; ++i) {
        const wb::TokenCandidate& c = event.candidates[size_t(i)];
        keys << i + 1;
        raw << c.p_raw;
        fin << c.p_final;
        top = std::max({top, double(c.p_raw), double(c.p_final)});
        QString label = visibleText(QString::fromStdString(c.piece));
        if (c.id == event.id) label = QStringLiteral("▶ ") + label;  // the token that was drawn
        m_labels << label;
        m_ticker->addTick(i + 1, label);
    }
    m_raw->setData(keys, raw, true);
    m_final->setData(keys, fin, true);
    xAxis->setRange(0.4, std::max(n, 1) + 0.6);
    yAxis->setRange(0, std::max(0.05, top * 1.1));
    updateMarks();
}

void CandidatePlot::setParams(const wb::SamplingParams& params) {
    m_params = params;
    updateMarks();
}

void CandidatePlot::updateMarks() {
    const auto& cands = m_event.candidates;
    const int n = std::min<int>(int(cands.size()), kMaxShown);
    // Top-p: the sampler trace says exactly how many candidates the stage kept; without a trace,
    // recompute it from the raw probabilities of the candidates top-k left.
    m_topPCount = -1;
    if (n > 0 && m_params.top_p < 1.0f && !m_params.is_greedy()) {
        for (const auto& stage : m_event.trace)
            if (stage.stage == "top_p") m_topPCount = int(stage.n_after);
        if (m_topPCount < 0) {
            const int pool = m_params.top_k > 0 ? std::min<int>(m_params.top_k, int(cands.size())) : int(cands.size());
            double mass = 0.0;
            for (int i = 0; i < pool; ++i) mass += cands[size_t(i)].p_raw;
            // When top-k is off or wider than the candidates sent, the raw values are the best estimate.
            if (m_params.top_k <= 0 || m_params.top_k > int(cands.size())) mass = 1.0;
            double cum = 0.0;
            for (int i = 0; i < pool; ++i) {
                cum += cands[size_t(i)].p_raw / mass;
                if (cum >= m_params.top_p) {
                    m_topPCount = i + 1;
                    break;
                }
            }
        }
    }
    const bool showTopP = m_topPCount > 0 && m_topPCount < n;
    m_topPLine->setVisible(showTopP);
    m_topPText->setVisible(showTopP);
    if (showTopP) {
        const double x = m_topPCount + 0.5;
        m_topPLine->point1->setCoords(x, 0);
        m_topPLine->point2->setCoords(x, 1);
        m_topPText->position->setCoords(x, yAxis->range().upper);
        m_topPText->setText(QStringLiteral(" top-p %1").arg(double(m_params.top_p), 0, 'g', 3));
    }
    // Min-p keeps tokens with p >= min_p x p_max; the ratio is the same in the raw distribution
    // because the stages before it only renormalise.
    m_minPThreshold = -1.0;
    if (n > 0 && m_params.min_p > 0.0f && !m_params.is_greedy()) m_minPThreshold = double(m_params.min_p) * cands[0].p_raw;
    const bool showMinP = m_minPThreshold > 0.0;
    m_minPLine->setVisible(showMinP);
    m_minPText->setVisible(showMinP);
    if (showMinP) {
        m_minPLine->point1->setCoords(0, m_minPThreshold);
        m_minPLine->point2->setCoords(1, m_minPThreshold);
        m_minPText->position->setCoords(xAxis->range().upper, m_minPThreshold);
        m_minPText->setText(QStringLiteral("min-p %1 ").arg(double(m_params.min_p), 0, 'g', 3));
    }
    replot(QCustomPlot::rpQueuedReplot);
}
