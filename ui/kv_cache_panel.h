#pragma once
// KV-cache panel: per layer, bytes used (global and sliding-window layers apart) beside bytes reserved
// (whole blocks); the total over time; a context fill gauge; the element type; which layers are local;
// the predicted bytes (layers x kv heads x bytes of a head's K and V row x tokens, a local layer's
// tokens at most its window) beside the measured figure; what left the window, what the last prompt
// reused from the turn before, and the context's cuts, each as the engine reported it.
#include <QElapsedTimer>
#include <QWidget>

#include "engine/context_policy.h"
#include "kv/kv_cache.h"
#include "model_summary.h"

class QCPBars;
class QCPGraph;
class QCustomPlot;
class QFormLayout;
class QLabel;
class QProgressBar;
namespace wb {
struct Timings;
}

class KvCachePanel : public QWidget {
    Q_OBJECT

public:
    explicit KvCachePanel(QWidget* parent = nullptr);

    // Used bytes of the global layers (all layers of a model without a window) and of the local ones.
    QCPBars* usedBars() const { return m_used; }
    QCPBars* localUsedBars() const { return m_usedLocal; }
    QCPBars* reservedBars() const { return m_reserved; }
    QCPGraph* totalUsedGraph() const { return m_totalUsed; }
    QProgressBar* fillGauge() const { return m_gauge; }
    QString typeText() const;
    QString estimateText() const;
    QString measuredText() const;
    QString layersText() const;
    QString evictionText() const;
    QString reuseText() const;
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
    // The prompt's reuse of the cache (Timings::n_reused beside n_prefill).
    void handleTimings(const wb::Timings& timings);

private:
    void applyTheme();
    void showLayers(const wb::KvStats& stats);
    void showPrediction(const wb::KvStats& stats);
    void showEvictions(const wb::KvStats& stats);
    QCustomPlot* m_layerPlot;
    QCustomPlot* m_timePlot;
    QCPBars* m_used;
    QCPBars* m_usedLocal;
    QCPBars* m_reserved;
    QCPGraph* m_totalUsed;
    QCPGraph* m_totalReserved;
    QProgressBar* m_gauge;
    QLabel* m_type;
    QLabel* m_measured;
    QLabel* m_estimate;
    QLabel* m_cutLabel;
    QLabel* m_layers;
    QFormLayout* m_form;
    QLabel* m_evicted;
    QLabel* m_reuse;
    wb::ContextCut m_cut;
    int m_shifts = 0, m_trims = 0;
    qint64 m_droppedTotal = 0;
    QElapsedTimer m_clock;
    ModelSummary m_model;  // the shape of the loaded model (layers, heads, which layers are local)
};
