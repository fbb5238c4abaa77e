#include "kv_cache_panel.h"

#include <QFormLayout>
#include <QLabel>
#include <QProgressBar>
#include <QVBoxLayout>

#include <qcustomplot.h>

#include "engine_types.h"
#include "model_summary.h"
#include "theme.h"

namespace {
constexpr double kMiB = 1024.0 * 1024.0;
}

KvCachePanel::KvCachePanel(QWidget* parent) : QWidget(parent) {
    // Plot heights in lines of text: the two charts and the form fit a laptop screen's dock.
    const int line = fontMetrics().height();
    QFont legendFont = font();
    legendFont.setPointSizeF(std::max(6.0, legendFont.pointSizeF() * 0.85));
    m_layerPlot = new QCustomPlot(this);
    m_layerPlot->setMinimumHeight(line * 7);
    m_layerPlot->setAccessibleName(tr("KV cache bytes per layer"));
    m_reserved = new QCPBars(m_layerPlot->xAxis, m_layerPlot->yAxis);
    m_reserved->setName(tr("reserved"));
    m_reserved->setPen(Qt::NoPen);
    m_used = new QCPBars(m_layerPlot->xAxis, m_layerPlot->yAxis);
    m_used->setName(tr("used"));
    m_used->setPen(Qt::NoPen);
    m_usedLocal = new QCPBars(m_layerPlot->xAxis, m_layerPlot->yAxis);
    m_usedLocal->setName(tr("used, local layer"));
    m_usedLocal->setPen(Qt::NoPen);
    m_usedLocal->removeFromLegend();  // until a model has local layers
    // Used drawn over reserved at the same position: the pale part is reserved but empty.
    m_reserved->setWidth(0.8);
    m_used->setWidth(0.5);
    m_usedLocal->setWidth(0.5);
    m_layerPlot->xAxis->setLabel(tr("layer"));
    m_layerPlot->yAxis->setLabel(tr("MiB"));
    Theme::legendBelow(m_layerPlot, legendFont);

    m_timePlot = new QCustomPlot(this);
    m_timePlot->setMinimumHeight(line * 6);
    m_timePlot->setAccessibleName(tr("KV cache total over time"));
    m_totalReserved = m_timePlot->addGraph();
    m_totalReserved->setName(tr("reserved"));
    m_totalUsed = m_timePlot->addGraph();
    m_totalUsed->setName(tr("used"));
    m_timePlot->xAxis->setLabel(tr("seconds"));
    m_timePlot->yAxis->setLabel(tr("total MiB"));
    m_timePlot->legend->setVisible(true);
    m_timePlot->legend->setFont(legendFont);
    // One row: in a short dock a two-row legend covered most of the curves and the axis (seen in the
    // screenshots after a context shift); two value ticks, as six labels did not fit that height.
    m_timePlot->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    m_timePlot->legend->setWrap(2);
    m_timePlot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    m_timePlot->yAxis->ticker()->setTickCount(2);

    m_gauge = new QProgressBar(this);
    m_gauge->setFormat(tr("%v / %m tokens (%p%)"));
    m_gauge->setRange(0, 1);
    m_gauge->setValue(0);
    m_type = new QLabel(tr("—"), this);
    m_measured = new QLabel(tr("—"), this);
    m_estimate = new QLabel(tr("—"), this);
    m_estimate->setWordWrap(true);
    m_cutLabel = new QLabel(this);
    m_cutLabel->setWordWrap(true);
    m_layers = new QLabel(tr("—"), this);
    m_evicted = new QLabel(tr("—"), this);
    m_reuse = new QLabel(tr("—"), this);
    // Selectable from the keyboard too: the panel's figures can be reached with Tab and read out.
    for (QLabel* l : {m_type, m_measured, m_estimate, m_cutLabel, m_layers, m_evicted, m_reuse}) {
        l->setWordWrap(true);
        l->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
        l->setFocusPolicy(Qt::StrongFocus);
    }

    auto* form = m_form = new QFormLayout;
    form->addRow(tr("Context fill"), m_gauge);
    form->addRow(tr("Element type"), m_type);
    form->addRow(tr("Layers"), m_layers);
    form->addRow(tr("Measured"), m_measured);
    form->addRow(tr("Predicted"), m_estimate);
    form->addRow(tr("Window"), m_evicted);
    form->addRow(tr("Prefix reuse"), m_reuse);
    form->addRow(tr("Context cut"), m_cutLabel);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(form);
    layout->addWidget(m_layerPlot, 3);
    layout->addWidget(m_timePlot, 2);
    m_clock.start();
    clearCut();
    applyTheme();
    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this, &KvCachePanel::applyTheme);
}

void KvCachePanel::applyTheme() {
    m_reserved->setBrush(Theme::color(Theme::Role::ReservedSeries));
    m_used->setBrush(Theme::color(Theme::Role::UsedSeries));
    m_usedLocal->setBrush(Theme::color(Theme::Role::RawSeries));
    m_totalReserved->setPen(QPen(Theme::color(Theme::Role::ReservedLine), 1.5));
    m_totalUsed->setPen(QPen(Theme::color(Theme::Role::UsedSeries), 2));
    Theme::stylePlot(m_layerPlot);
    Theme::stylePlot(m_timePlot);
}

quint64 KvCachePanel::formulaBytes(int layers, int kvHeads, quint64 kHeadBytes, quint64 vHeadBytes, int tokens) {
    return quint64(layers) * quint64(kvHeads) * (kHeadBytes + vHeadBytes) * quint64(tokens);
}

QString KvCachePanel::typeDescription(wb::KvType k, wb::KvType v) {
    auto one = [](wb::KvType t) {
        return tr("%1 (%2 bits per value)").arg(QString::fromLatin1(wb::kv_type_name(t))).arg(wb::kv_type_bits(t));
    };
    if (k == v) return one(k);
    return tr("K %1, V %2").arg(one(k), one(v));
}

QString KvCachePanel::cutText() const { return m_cutLabel->text(); }

void KvCachePanel::clearCut() {
    m_cut = {};
    m_shifts = m_trims = 0;
    m_droppedTotal = 0;
    m_cutLabel->setText(tr("none (the context has not been full)"));
}

void KvCachePanel::handleCut(const wb::ContextCut& cut) {
    m_cut = cut;
    (cut.how == wb::ContextPolicy::SHIFT ? m_shifts : m_trims) += 1;
    m_droppedTotal += cut.dropped;
    // The figures are the engine's (ContextCut); the gauge's fill falls by them at the next statistics.
    const QString last = cut.how == wb::ContextPolicy::SHIFT
                             ? tr("shift at position %1: %2 tokens dropped, the later ones moved down").arg(cut.position).arg(cut.dropped)
                             : tr("trim at position %1: %2 tokens of old turns dropped, the rest recomputed").arg(cut.position).arg(cut.dropped);
    m_cutLabel->setText(tr("%1 (this chat: %2 shifts, %3 trims, %4 tokens dropped)").arg(last).arg(m_shifts).arg(m_trims).arg(m_droppedTotal));
}

QString KvCachePanel::typeText() const { return m_type->text(); }
QString KvCachePanel::estimateText() const { return m_estimate->text(); }
QString KvCachePanel::measuredText() const { return m_measured->text(); }
QString KvCachePanel::layersText() const { return m_layers->text(); }
QString KvCachePanel::evictionText() const { return m_evicted->text(); }
QString KvCachePanel::reuseText() const { return m_reuse->text(); }

void KvCachePanel::handleTimings(const wb::Timings& t) {
    const int prompt = t.n_reused + t.n_prefill;
    if (prompt <= 0) return;
    m_reuse->setText(tr("%1 of the last prompt's %2 tokens reused from the turn before (not recomputed), %3 evaluated")
                         .arg(t.n_reused)
                         .arg(prompt)
                         .arg(t.n_prefill));
}

void KvCachePanel::setModel(const ModelSummary& summary) {
    // Only the shape is used: the lists (tensors, metadata) are not kept.
    m_model = summary;
    m_model.tensors.clear();
    m_model.metadata.clear();
    m_totalUsed->data()->clear();
    m_totalReserved->data()->clear();
    m_clock.restart();
    m_gauge->setRange(0, std::max(1, summary.contextSize));
    m_gauge->setValue(0);
    m_reuse->setText(tr("—"));
    if (summary.localLayerCount() > 0) {
        m_usedLocal->setName(tr("used, local layer (window %1)").arg(summary.slidingWindow));
        m_usedLocal->addToLegend();
    } else {
        m_usedLocal->removeFromLegend();
    }
}

void KvCachePanel::handleStats(const wb::KvStats& stats) {
    QVector<double> keys, used, localKeys, localUsed, reserved;
    double top = 0.0;
    for (size_t i = 0; i < stats.layers.size(); ++i) {
        const wb::KvLayerStats& l = stats.layers[i];
        (l.sliding_window ? localKeys : keys) << double(i);
        (l.sliding_window ? localUsed : used) << double(l.bytes_used) / kMiB;
        reserved << double(l.bytes_reserved) / kMiB;
        top = std::max(top, reserved.last());
    }
    QVector<double> allKeys;
    for (size_t i = 0; i < stats.layers.size(); ++i) allKeys << double(i);
    m_used->setData(keys, used, true);
    m_usedLocal->setData(localKeys, localUsed, true);
    m_reserved->setData(allKeys, reserved, true);
    m_layerPlot->xAxis->setRange(-0.7, std::max<double>(1, double(stats.layers.size())) - 0.3);
    m_layerPlot->yAxis->setRange(0, std::max(top * 1.15, 0.01));
    m_layerPlot->replot(QCustomPlot::rpQueuedReplot);

    const double t = m_clock.elapsed() / 1000.0;
    m_totalUsed->addData(t, double(stats.bytes_used) / kMiB);
    m_totalReserved->addData(t, double(stats.bytes_reserved) / kMiB);
    m_timePlot->rescaleAxes();
    m_timePlot->yAxis->setRangeLower(0);
    m_timePlot->replot(QCustomPlot::rpQueuedReplot);

    m_gauge->setRange(0, std::max(1, stats.capacity));
    m_gauge->setValue(std::min(stats.n_tokens, std::max(1, stats.capacity)));
    m_type->setText(tr("%1, blocks of %2 tokens").arg(typeDescription(stats.type_k, stats.type_v)).arg(stats.block_tokens));
    m_measured->setText(tr("%1 used, %2 reserved, %3 tokens").arg(formatBytes(double(stats.bytes_used)), formatBytes(double(stats.bytes_reserved))).arg(stats.n_tokens));
    showLayers(stats);
    showPrediction(stats);
    showEvictions(stats);
}

void KvCachePanel::showLayers(const wb::KvStats& stats) {
    QStringList global, local;
    int window = 0;
    for (size_t i = 0; i < stats.layers.size(); ++i) {
        (stats.layers[i].sliding_window ? local : global) << QString::number(i);
        if (stats.layers[i].sliding_window) window = stats.layers[i].window;
    }
    // Without local layers the two rows say nothing a 768-pixel screen can spare the plots' room for.
    m_form->setRowVisible(m_layers, !local.isEmpty());
    m_form->setRowVisible(m_evicted, !local.isEmpty());
    if (local.isEmpty()) {
        m_layers->setText(tr("%1 global (every layer keeps every position)").arg(global.size()));
        return;
    }
    m_layers->setText(tr("%1 global (%2), %3 local (sliding window of %4 positions)")
                          .arg(global.size())
                          .arg(global.join(QStringLiteral(", ")))
                          .arg(local.size())
                          .arg(window));
}

void KvCachePanel::showPrediction(const wb::KvStats& stats) {
    // Without a loaded model's shape the layer count comes from the statistics, all of them global.
    ModelSummary shape = m_model;  // the shape only (setModel): a copy of a few fields
    if (shape.nLayer <= 0) shape.nLayer = int(stats.layers.size());
    // A head's K (V) row: head_dim values in the element type, whole blocks of 32 for q8_0 / q4_0.
    const quint64 kBytes = shape.headDim > 0 ? wb::kv_type_row_bytes(stats.type_k, shape.headDim) : 0;
    const quint64 vBytes = shape.headDim > 0 ? wb::kv_type_row_bytes(stats.type_v, shape.headDim) : 0;
    const quint64 est = shape.predictedKvBytes(stats.n_tokens, stats.type_k, stats.type_v);
    const int local = shape.localLayerCount();
    const QString row = tr("%1 kv heads × (%2 B of K + %3 B of V per head)").arg(shape.nHeadKv).arg(kBytes).arg(vBytes);
    if (local == 0) {
        m_estimate->setText(tr("%1 layers × %2 × %3 tokens = %4").arg(shape.nLayer).arg(row).arg(stats.n_tokens).arg(formatBytes(double(est))));
        return;
    }
    m_estimate->setText(tr("%1 global layers × %2 × %3 tokens + %4 local layers × the same × %5 tokens (at most the "
                           "window of %6) = %7")
                            .arg(shape.nLayer - local)
                            .arg(row)
                            .arg(stats.n_tokens)
                            .arg(local)
                            .arg(std::min(stats.n_tokens, shape.slidingWindow))
                            .arg(shape.slidingWindow)
                            .arg(formatBytes(double(est))));
}

void KvCachePanel::showEvictions(const wb::KvStats& stats) {
    int local = 0, left = 0;
    for (const wb::KvLayerStats& l : stats.layers)
        if (l.sliding_window) {
            ++local;
            left = std::max(left, l.first_pos);  // positions older than the window (KvLayerStats::first_pos)
        }
    if (local == 0) {
        m_evicted->setText(tr("no sliding-window layers: positions leave the cache only by a cut"));
        return;
    }
    m_evicted->setText(left > 0 ? tr("%1 oldest positions have left the window of each of the %2 local layers (their "
                                     "blocks are released once no later query needs them)")
                                      .arg(left)
                                      .arg(local)
                                : tr("every position is still inside the window of the %1 local layers").arg(local));
}
