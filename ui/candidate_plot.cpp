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

// The marks' colours: top-p and min-p keep their theme roles; the newer stages' colours (light,
// dark) live here with the chart that alone draws them.
QColor markColor(const char* stage) {
    const bool dark = Theme::isDark();
    const QString s = QLatin1String(stage);
    if (s == QLatin1String("top_p")) return Theme::color(Theme::Role::TopPMark);
    if (s == QLatin1String("min_p")) return Theme::color(Theme::Role::MinPMark);
    if (s == QLatin1String("top_n_sigma")) return dark ? QColor(200, 140, 255) : QColor(120, 50, 180);
    if (s == QLatin1String("xtc")) return dark ? QColor(90, 200, 230) : QColor(0, 110, 150);
    return dark ? QColor(240, 200, 80) : QColor(150, 110, 0);  // mirostat, mirostat_v2
}

// The recorded value a level mark sits at (NaN: none): min-p and top-nσ cut on logits and record that
// cut-off as a probability in what they saw; XTC's threshold is such a probability already.
double levelValue(const wb::SamplerStageTrace& stage) {
    return stage.stage == "xtc" ? stage.threshold : stage.p_cutoff;
}

QString levelLabel(const wb::SamplerStageTrace& stage, double value) {
    if (stage.stage == "xtc")
        return CandidatePlot::tr("XTC threshold %1: removed %2 ").arg(value, 0, 'g', 3).arg(stage.n_before - stage.n_after);
    if (stage.stage == "top_n_sigma") return CandidatePlot::tr("top-nσ cut-off %1 ").arg(value, 0, 'g', 3);
    return CandidatePlot::tr("min-p cut-off %1 ").arg(value, 0, 'g', 3);
}

QString keptLabel(const wb::SamplerStageTrace& stage) {
    if (stage.stage == "mirostat") return CandidatePlot::tr(" mirostat: k = %1 ").arg(stage.n_after);
    if (stage.stage == "mirostat_v2")
        return CandidatePlot::tr(" mirostat 2: mu %1 bits, kept %2 ").arg(stage.threshold, 0, 'g', 3).arg(stage.n_after);
    return CandidatePlot::tr(" top-p: mass %1 ").arg(stage.threshold, 0, 'g', 3);
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

    for (const char* stage : {"top_p", "mirostat", "mirostat_v2"})
        m_kept.push_back({stage, new QCPItemStraightLine(this), new QCPItemText(this)});
    const std::pair<const char*, QString> levels[] = {
        {"min_p", tr("as min-p saw it")}, {"top_n_sigma", tr("as top-nσ saw it")}, {"xtc", tr("as XTC saw it")}};
    for (const auto& [stage, seenName] : levels) {
        LevelMark mark{stage, new QCPItemStraightLine(this), new QCPItemText(this), new QCPGraph(xAxis, yAxis)};
        mark.seen->setName(seenName);
        mark.seen->setLineStyle(QCPGraph::lsNone);
        m_levels.push_back(mark);
    }
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
    for (KeptMark& mark : m_kept) {
        styleLine(mark.line, markColor(mark.stage));
        mark.text->setColor(markColor(mark.stage));
    }
    // A short level mark across each bar pair: the candidate's p where the stage compared it.
    QPainterPath dash;
    dash.moveTo(-3, 0);
    dash.lineTo(3, 0);
    for (LevelMark& mark : m_levels) {
        const QColor color = markColor(mark.stage);
        styleLine(mark.line, color);
        mark.text->setColor(color);
        QPen dashPen(color);
        dashPen.setWidthF(2.5);
        dashPen.setCosmetic(true);
        mark.seen->setPen(dashPen);
        mark.seen->setScatterStyle(QCPScatterStyle(dash, dashPen, Qt::NoBrush, 18));
    }
    // The labels may lie over bars: a translucent patch of the background keeps them legible.
    QColor patch = QApplication::palette().color(QPalette::Base);
    patch.setAlpha(210);
    for (KeptMark& mark : m_kept) mark.text->setBrush(patch);
    for (LevelMark& mark : m_levels) mark.text->setBrush(patch);
    m_note->setColor(QApplication::palette().color(QPalette::WindowText));
    Theme::stylePlot(this);
}

QString CandidatePlot::tickLabel(int index) const {
    return index >= 0 && index < m_labels.size() ? m_labels[index] : QString();
}

void CandidatePlot::setCandidates(const wb::TokenEvent& event) {
    m_event = event;
    const int n = std::min<int>(int(event.candidates.size()), kMaxShown);
    QVector<double> keys, raw, finKeys, fin;
    m_ticker->clear();
    m_labels.clear();
    for (int i = 0; i < n; ++i) {
        const wb::TokenCandidate& c = event.candidates[size_t(i)];
        keys << i + 1;
        raw << c.p_raw;
        // A remote engine reports no final p (NaN): no bar rather than one at 0.
        if (std::isfinite(c.p_final)) {
            finKeys << i + 1;
            fin << c.p_final;
        }
        QString label = visibleText(QString::fromStdString(c.piece));
        if (c.id == event.id) label = QStringLiteral("▶ ") + label;  // the token that was drawn
        m_labels << label;
        m_ticker->addTick(i + 1, label);
    }
    m_raw->setData(keys, raw, true);
    m_final->setData(finKeys, fin, true);
    xAxis->setRange(0.4, std::max(n, 1) + 0.6);
    updateMarks();
}

void CandidatePlot::updateMarks() {
    const auto& cands = m_event.candidates;
    const int shown = std::min<int>(int(cands.size()), kMaxShown);
    double top = 0.0;
    for (int i = 0; i < shown; ++i) top = std::max({top, double(cands[size_t(i)].p_raw), double(cands[size_t(i)].p_final)});
    for (LevelMark& mark : m_levels) top = std::max(top, markLevel(mark, shown));
    yAxis->setRange(0, std::max(0.05, top * 1.1));
    placeLevelLabels();
    for (KeptMark& mark : m_kept) markKept(mark, shown);
    const QStringList lines = notes(shown);
    m_note->setVisible(!lines.isEmpty());
    m_note->setText(lines.join(QLatin1Char('\n')));
    replot(QCustomPlot::rpQueuedReplot);
}

// The line goes after the candidates the stage kept only where they are the first bars: the bars are
// in raw order, and a penalty or bias before the stage may have reordered them (the survivors are
// known by id from the trace, whose top_after holds all of them when they are fewer than its length).
void CandidatePlot::markKept(KeptMark& mark, int shown) {
    const wb::SamplerStageTrace* stage = findStage(m_event.trace, mark.stage).stage;
    mark.count = -1;
    if (stage && std::isfinite(stage->threshold) && int(stage->n_after) < shown && stage->n_after <= stage->top_after.size()) {
        QSet<int> kept, first;
        for (size_t i = 0; i < stage->n_after; ++i) {
            kept.insert(stage->top_after[i].id);
            first.insert(m_event.candidates[i].id);
        }
        if (kept == first) mark.count = int(stage->n_after);
    }
    const bool show = mark.count > 0;
    mark.line->setVisible(show);
    mark.text->setVisible(show);
    if (!show) return;
    const double x = mark.count + 0.5;
    mark.line->point1->setCoords(x, 0);
    mark.line->point2->setCoords(x, 1);
    mark.text->position->setCoords(x, yAxis->range().upper);
    // The label goes on the side of the line with room for it (a line near the right edge clips it).
    const bool rightHalf = x > (xAxis->range().lower + xAxis->range().upper) / 2;
    mark.text->setPositionAlignment((rightHalf ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignTop);
    mark.text->setText(keptLabel(*stage));
}

// The line is drawn in the distribution the stage saw, not over the raw bars: its recorded cut-off is
// a probability there, and once a penalty, bias or DRY changed the logits no recorded value converts
// it to the raw scale. The ticks give each shown candidate's p in that distribution, from the
// survivors of the stage before (the raw p when the stage came first); a candidate an earlier stage
// removed, or beyond what the trace kept, gets none. Returns the highest value drawn.
double CandidatePlot::markLevel(LevelMark& mark, int shown) {
    const StageEntry entry = findStage(m_event.trace, mark.stage);
    const double value = entry.stage ? levelValue(*entry.stage) : std::nan("");
    mark.value = std::isfinite(value) ? value : -1.0;
    const bool show = mark.value >= 0.0;
    QVector<double> keys, values;
    for (int i = 0; show && i < shown; ++i) {
        const wb::TokenCandidate& c = m_event.candidates[size_t(i)];
        if (!entry.before) {
            keys << i + 1;
            values << c.p_raw;
            continue;
        }
        for (const wb::Candidate& seen : entry.before->top_after) {
            if (seen.id != c.id) continue;
            keys << i + 1;
            values << seen.p;
        }
    }
    mark.seen->setData(keys, values, true);
    mark.seen->setVisible(show);
    if (show) mark.seen->addToLegend();
    else mark.seen->removeFromLegend();
    mark.line->setVisible(show);
    mark.text->setVisible(show);
    if (!show) return 0.0;
    mark.line->point1->setCoords(0, mark.value);
    mark.line->point2->setCoords(1, mark.value);
    mark.text->setText(levelLabel(*entry.stage, mark.value));
    double top = mark.value;
    for (double v : values) top = std::max(top, v);
    return top;
}

// The labels sit on their lines, on alternate sides in the order of height, so that two cut-offs close
// together (min-p and top-nσ often are) never put one label over the other.
void CandidatePlot::placeLevelLabels() {
    std::vector<LevelMark*> shownMarks;
    for (LevelMark& mark : m_levels)
        if (mark.value >= 0.0) shownMarks.push_back(&mark);
    std::sort(shownMarks.begin(), shownMarks.end(), [](const LevelMark* a, const LevelMark* b) { return a->value > b->value; });
    for (size_t i = 0; i < shownMarks.size(); ++i) {
        const bool left = i % 2 == 1;
        shownMarks[i]->text->position->setCoords(left ? xAxis->range().lower : xAxis->range().upper, shownMarks[i]->value);
        shownMarks[i]->text->setPositionAlignment((left ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignBottom);
    }
}

const CandidatePlot::KeptMark* CandidatePlot::kept(const char* stage) const {
    for (const KeptMark& mark : m_kept)
        if (qstrcmp(mark.stage, stage) == 0) return &mark;
    return nullptr;
}

const CandidatePlot::LevelMark* CandidatePlot::level(const char* stage) const {
    for (const LevelMark& mark : m_levels)
        if (qstrcmp(mark.stage, stage) == 0) return &mark;
    return nullptr;
}

int CandidatePlot::keptCount(const char* stage) const {
    const KeptMark* mark = kept(stage);
    return mark ? mark->count : -1;
}

double CandidatePlot::cutOff(const char* stage) const {
    const LevelMark* mark = level(stage);
    return mark ? mark->value : -1.0;
}

QCPGraph* CandidatePlot::seenTicks(const char* stage) const {
    const LevelMark* mark = level(stage);
    return mark ? mark->seen : nullptr;
}

QString CandidatePlot::markLabel(const char* stage) const {
    if (const KeptMark* mark = kept(stage)) return mark->line->visible() ? mark->text->text() : QString();
    if (const LevelMark* mark = level(stage)) return mark->line->visible() ? mark->text->text() : QString();
    return {};
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
                           .arg(m_event.id < 0 ? QStringLiteral("—") : QString::number(m_event.id))
                           .arg(double(m_event.p), 0, 'g', 3)
                           .arg(double(m_event.p_raw), 0, 'g', 3);
        line += rank >= 0 ? tr(", raw rank %1").arg(rank + 1) : tr(", not among the top %1 raw").arg(cands.size());
        lines << line;
    }
    if (shown == 0) return lines;
    if (m_event.id < 0) {
        // Only a remote engine's tokens have no id (remote_reply.h).
        // The server reports the distribution before its sampling only.
        lines << tr("server's raw p only: no final p, no cut-offs");
    } else if (m_event.trace.empty()) {
        lines << tr("no sampler trace recorded: no cut-offs drawn");
    } else if (findStage(m_event.trace, "greedy").stage) {  // not always the last entry (a grammar follows it)
        lines << tr("greedy: the most likely token was taken, no cut-offs");
    }
    const wb::SamplerStageTrace* topP = findStage(m_event.trace, "top_p").stage;
    if (topP && std::isfinite(topP->threshold) && keptCount("top_p") < 0 && int(topP->n_after) < shown)
        lines << tr("top-p kept %1 (mass %2), not the first bars: no line").arg(topP->n_after).arg(topP->threshold, 0, 'g', 3);
    for (const char* name : {"mirostat", "mirostat_v2"}) {
        const wb::SamplerStageTrace* m = findStage(m_event.trace, name).stage;
        if (m && keptCount(name) < 0 && int(m->n_after) < shown)
            lines << tr("mirostat kept %1, not the first bars: no line").arg(m->n_after);
    }
    // XTC records no threshold where its random draw let the token through.
    const wb::SamplerStageTrace* xtc = findStage(m_event.trace, "xtc").stage;
    if (xtc && std::isnan(xtc->threshold)) lines << tr("XTC did not trigger: nothing removed");
    return lines;
}
