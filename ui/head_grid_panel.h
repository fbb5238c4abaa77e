#pragma once
// Head statistics: a layers x heads grid, one cell per query head coloured by a chosen statistic of
// its attention row at the step that drew the selected token (entropy, attention-sink share,
// previous-token share, mean attended distance, share inside the window), as the engine recorded it
// (wb::head_stats through the worker; the widget computes none of them). Query heads that read the
// same key/value head are grouped between lines. Hovering a cell shows all of its values; a click
// asks for that head's attention map. Recorded only while this panel is shown.
#include <QWidget>

#include "conversation.h"

class QCPColorMap;
class QCPColorScale;
class QComboBox;
class QCustomPlot;
class QLabel;

class HeadGridPanel : public QWidget {
    Q_OBJECT

public:
    enum class Statistic { Entropy, Sink, Prev, Distance, InWindow };

    explicit HeadGridPanel(QWidget* parent = nullptr);

    QComboBox* statisticBox() const { return m_statistic; }
    QCPColorMap* colorMap() const { return m_map; }
    QCustomPlot* plot() const { return m_plot; }
    QString headline() const;
    Statistic statistic() const;
    void setStatistic(Statistic s);
    int layerCount() const { return m_layers; }
    int headCount() const { return m_heads; }
    // The recorded statistics of a cell; nullptr where none was recorded.
    const wb::HeadStats* stats(int layer, int head) const;
    // The value the cell is coloured by (NaN where none was recorded).
    double cellValue(int layer, int head) const;
    // What hovering the cell shows.
    QString describeCell(int layer, int head) const;
    static double value(const wb::HeadStats& s, Statistic statistic);

public Q_SLOTS:
    void setToken(const TokenRecord& token);
    void clear();

Q_SIGNALS:
    // A cell was clicked: show that head's attention.
    void headActivated(int layer, int head);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void applyTheme();
    void refresh();
    void drawGroups();
    bool cellAt(const QPoint& pos, int* layer, int* head) const;

    QLabel* m_title;
    QComboBox* m_statistic;
    QCustomPlot* m_plot;
    QCPColorMap* m_map;
    QCPColorScale* m_scale;
    TokenRecord m_token;
    TokenInspectionPtr m_inspection;
    std::vector<int> m_index;  // layer * m_heads + head -> index into m_inspection->heads, -1: none
    int m_layers = 0;
    int m_heads = 0;
};
