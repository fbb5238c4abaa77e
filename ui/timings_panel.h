#pragma once
// Timings panel: how long the reply on screen took, as the worker recorded it (TimingRecord): time to
// first token, the prefill's tokens per second, the decode's, a plot of every token's latency over the
// reply beside each decode step's forward pass, and, when asked for, each layer's forward time as bars.
// The widget draws the recorded numbers and computes none but their display. The worker records the
// per-token values only while this panel is shown, and the per-layer times only while "Time each
// layer" is ticked too (MainWindow asks for them), so nothing shown costs nothing.
#include <QWidget>

#include "engine_types.h"

class QCheckBox;
class QCPBars;
class QCPGraph;
class QCustomPlot;
class QLabel;

class TimingsPanel : public QWidget {
    Q_OBJECT

public:
    explicit TimingsPanel(QWidget* parent = nullptr);

    QCPGraph* tokenGraph() const { return m_tokenGraph; }
    QCPGraph* stepGraph() const { return m_stepGraph; }
    QCPBars* layerBars() const { return m_layerBars; }
    QCheckBox* layerTimingBox() const { return m_layerBox; }
    QCustomPlot* latencyPlot() const { return m_latencyPlot; }
    QCustomPlot* layerPlot() const { return m_layerPlot; }
    bool layerTimingWanted() const;
    // The figures' text: "TTFT …", "prefill …", "decode …".
    QString summaryText() const;
    bool hasRecord() const { return m_record != nullptr; }
    const TimingRecordPtr& record() const { return m_record; }

public Q_SLOTS:
    void setRecord(const TimingRecordPtr& record);
    void clear();

Q_SIGNALS:
    // "Time each layer" was ticked or cleared: the next generation records the layers' time or not.
    void layerTimingToggled(bool on);

private:
    void applyTheme();
    void fillLatency(const TimingRecord& r);
    void fillLayers(const TimingRecord& r);

    QLabel* m_summary;
    QCheckBox* m_layerBox;
    QLabel* m_layerNote;
    QCustomPlot* m_latencyPlot;
    QCPGraph* m_tokenGraph;
    QCPGraph* m_stepGraph;
    QCustomPlot* m_layerPlot;
    QCPBars* m_layerBars;
    TimingRecordPtr m_record;
};
