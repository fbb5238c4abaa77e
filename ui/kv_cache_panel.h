#pragma once
// KV-cache panel: per layer, bytes used beside bytes reserved (whole blocks); the total over time;
// a context fill gauge; the element type; and the formula estimate
// 2 x layers x kv_heads x head_dim x tokens x bytes per element beside the measured figure.
#include <QElapsedTimer>
#include <QWidget>

#include "engine/context_policy.h"
#include "kv/kv_cache.h"

class QCPBars;
class QCPGraph;
class QCustomPlot;
class QLabel;
class QProgressBar;
struct ModelSummary;

class KvCachePanel : public QWidget {
    Q_OBJECT

public:
    explicit KvCachePanel(QWidget* parent = nullptr);

    QCPBars* usedBars() const { return m_used; }
    QCPBars* reservedBars() const { return m_reserved; }
    QCPGraph* totalUsedGraph() const { return m_totalUsed; }
    QProgressBar* fillGauge() const { return m_gauge; }
    QString typeText() const;
    QString estimateText() const;
    QString measuredText() const;
    // The engine's last cut of the context, as reported (handleCut): "none" before one.
    QString cutText() const;
    const wb::ContextCut& lastCut() const { return m_cut; }
    // layers x kv_heads x (bytes of a head's K row + of its V row) x tokens.
    static quint64 formulaBytes(int layers, int kvHeads, quint64 kHeadBytes, quint64 vHeadBytes, int tokens);
    // "f16 (16 bits per value)", or "K q8_0 (8.5 bits per value), V f16 (16 bits per value)".
    static QString typeDescription(wb::KvType k, wb::KvType v);

public Q_SLOTS:
    void setModel(const ModelSummary& summary);
    void handleStats(const wb::KvStats& stats);
    // Where the engine cut the context and how many tokens it dropped (a shift or a trim).
    void handleCut(const wb::ContextCut& cut);
    // A new conversation: no cut to show.
    void clearCut();

private:
    void applyTheme();
    QCustomPlot* m_layerPlot;
    QCustomPlot* m_timePlot;
    QCPBars* m_used;
    QCPBars* m_reserved;
    QCPGraph* m_totalUsed;
    QCPGraph* m_totalReserved;
    QProgressBar* m_gauge;
    QLabel* m_type;
    QLabel* m_measured;
    QLabel* m_estimate;
    QLabel* m_cutLabel;
    wb::ContextCut m_cut;
    int m_shifts = 0, m_trims = 0;
    qint64 m_droppedTotal = 0;
    QElapsedTimer m_clock;
    int m_nLayer = 0;
    int m_nHeadKv = 0;
    int m_headDim = 0;
};
