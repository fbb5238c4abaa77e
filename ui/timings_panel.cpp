#include "timings_panel.h"

#include <algorithm>

#include <QCheckBox>
#include <QLabel>
#include <QSplitter>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "theme.h"

TimingsPanel::TimingsPanel(QWidget* parent) : QWidget(parent) {
    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    m_summary->setFocusPolicy(Qt::StrongFocus);

    QFont small = font();
    small.setPointSizeF(std::max(6.0, small.pointSizeF() * 0.85));
    const int line = fontMetrics().height();

    m_latencyPlot = new QCustomPlot(this);
    m_latencyPlot->setMinimumHeight(line * 7);
    m_latencyPlot->setAccessibleName(tr("Latency of each token of the reply"));
    m_tokenGraph = m_latencyPlot->addGraph();
    m_tokenGraph->setName(tr("token latency"));
    m_stepGraph = m_latencyPlot->addGraph();
    m_stepGraph->setName(tr("its forward pass"));
    m_latencyPlot->xAxis->setLabel(tr("token of the reply"));
    m_latencyPlot->yAxis->setLabel(tr("ms"));
    Theme::legendBelow(m_latencyPlot, small);

    m_layerBox = new QCheckBox(tr("Time each layer"), this);
    m_layerBox->setToolTip(tr("From the next reply on, the engine times every layer's forward pass (on a GPU "
                              "this waits for each layer, which slows the reply)"));
    m_layerNote = new QLabel(this);
    m_layerNote->setWordWrap(true);
    m_layerPlot = new QCustomPlot(this);
    m_layerPlot->setMinimumHeight(line * 6);
    m_layerPlot->setAccessibleName(tr("Forward time of each layer"));
    m_layerBars = new QCPBars(m_layerPlot->xAxis, m_layerPlot->yAxis);
    m_layerBars->setPen(Qt::NoPen);
    m_layerBars->setWidth(0.7);
    m_layerPlot->xAxis->setLabel(tr("layer"));
    m_layerPlot->yAxis->setLabel(tr("ms"));
    connect(m_layerBox, &QCheckBox::toggled, this, [this](bool on) {
        m_layerPlot->setVisible(on || (m_record && !m_record->totals.layer_ms.empty()));
        Q_EMIT layerTimingToggled(on);
    });

    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_latencyPlot);
    split->addWidget(m_layerPlot);
    split->setSizes({260, 180});
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addWidget(m_summary);
    layout->addWidget(m_layerBox);
    layout->addWidget(m_layerNote);
    layout->addWidget(split, 1);

    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this, &TimingsPanel::applyTheme);
    applyTheme();
    clear();
}

void TimingsPanel::applyTheme() {
    Theme::stylePlot(m_latencyPlot);
    Theme::stylePlot(m_layerPlot);
    m_tokenGraph->setPen(QPen(Theme::color(Theme::Role::FinalSeries), 1.5));
    m_stepGraph->setPen(QPen(Theme::color(Theme::Role::RawSeries), 1.5));
    m_layerBars->setBrush(Theme::color(Theme::Role::UsedSeries));
    m_latencyPlot->replot(QCustomPlot::rpQueuedReplot);
    m_layerPlot->replot(QCustomPlot::rpQueuedReplot);
}

bool TimingsPanel::layerTimingWanted() const {
    return m_layerBox->isChecked();
}

QString TimingsPanel::summaryText() const {
    return m_summary->text();
}

void TimingsPanel::clear() {
    m_record.reset();
    m_summary->setText(tr("The timings of the next reply appear here (recorded while this panel is shown)."));
    m_tokenGraph->data()->clear();
    m_stepGraph->data()->clear();
    m_layerBars->data()->clear();
    m_layerNote->clear();
    m_layerNote->hide();
    m_layerPlot->setVisible(m_layerBox->isChecked());
    m_latencyPlot->replot(QCustomPlot::rpQueuedReplot);
    m_layerPlot->replot(QCustomPlot::rpQueuedReplot);
}

void TimingsPanel::setRecord(const TimingRecordPtr& record) {
    if (!record) return clear();
    m_record = record;
    const wb::Timings& t = record->totals;
    QString prefill = tr("prefill %1 tokens in %2 ms = %3 tokens/s").arg(t.n_prefill).arg(t.prefill_ms, 0, 'f', 1).arg(t.prefill_tps(), 0, 'f', 1);
    if (t.n_reused > 0) prefill += tr(" (%1 reused from the last turn, not recomputed)").arg(t.n_reused);
    const QString ttft = t.ttft_ms > 0 ? tr("TTFT %1 ms").arg(t.ttft_ms, 0, 'f', 1) : tr("TTFT —");
    m_summary->setText(tr("%1 · %2 · decode %3 steps in %4 ms = %5 tokens/s")
                           .arg(ttft, prefill)
                           .arg(t.n_decode)
                           .arg(t.decode_ms, 0, 'f', 1)
                           .arg(t.decode_tps(), 0, 'f', 1));
    fillLatency(*record);
    fillLayers(*record);
}

void TimingsPanel::fillLatency(const TimingRecord& r) {
    // Token i's latency and the forward pass of step i - 1, the step whose logits drew token i: both
    // at x = i (the first token's is the TTFT above, prefill included).
    QVector<double> x, token, step;
    double top = 0.0;
    for (size_t i = 0; i < r.tokenMs.size(); ++i) {
        x << double(i + 1);
        token << r.tokenMs[i];
        top = std::max(top, r.tokenMs[i]);
    }
    m_tokenGraph->setData(x, token, true);
    x.clear();
    for (size_t k = 0; k < r.stepMs.size(); ++k) {
        x << double(k + 1);
        step << r.stepMs[k];
        top = std::max(top, r.stepMs[k]);
    }
    m_stepGraph->setData(x, step, true);
    const double n = double(std::max(r.tokenMs.size(), r.stepMs.size()));
    m_latencyPlot->xAxis->setRange(0.5, std::max(2.0, n + 0.5));
    m_latencyPlot->yAxis->setRange(0, std::max(0.1, top * 1.1));
    m_latencyPlot->replot(QCustomPlot::rpQueuedReplot);
}

void TimingsPanel::fillLayers(const TimingRecord& r) {
    const std::vector<double>& ms = r.totals.layer_ms;
    QVector<double> keys, values;
    double top = 0.0, sum = 0.0;
    for (size_t i = 0; i < ms.size(); ++i) {
        keys << double(i);
        values << ms[i];
        top = std::max(top, ms[i]);
        sum += ms[i];
    }
    m_layerBars->setData(keys, values, true);
    m_layerPlot->setVisible(m_layerBox->isChecked() || !ms.empty());
    if (ms.empty()) {
        m_layerNote->setText(m_layerBox->isChecked() ? tr("Layer times are recorded from the next reply on.") : QString());
    } else {
        m_layerNote->setText(tr("Each layer's forward time summed over the prompt and the reply: %1 ms in all (layer 0 "
                                "includes the token embedding; the output head is in no layer).")
                                 .arg(sum, 0, 'f', 1));
    }
    m_layerNote->setVisible(!m_layerNote->text().isEmpty());
    m_layerPlot->xAxis->setRange(-0.7, std::max<double>(1, double(ms.size())) - 0.3);
    m_layerPlot->yAxis->setRange(0, std::max(0.01, top * 1.15));
    m_layerPlot->replot(QCustomPlot::rpQueuedReplot);
}
