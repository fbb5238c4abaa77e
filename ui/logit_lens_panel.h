#pragma once
// Logit lens: for one generated token, the next-token distribution each layer's residual stream gives
// through the model's own final norm and output matrix, as the engine recorded it (TokenEvent::lens,
// TokenInspection): per layer the top tokens with their probabilities, the probability of the token
// finally drawn and the entropy, as a layer x rank table and a plot of p(drawn) and entropy over the
// layers. The widget draws the recorded numbers and computes none. The engine records the lens only
// while this panel is shown (MainWindow asks for it then), so a token generated with the panel hidden
// has none and the panel says so.
#include <QWidget>

#include "conversation.h"

class QCPGraph;
class QCustomPlot;
class QLabel;
class QTableWidget;

class LogitLensPanel : public QWidget {
    Q_OBJECT

public:
    // Top tokens per layer the engine is asked for (CaptureSpec::logit_lens).
    static constexpr int kTop = 5;
    // Columns of the table before the ranks.
    enum Column { LayerColumn = 0, DrawnColumn = 1, EntropyColumn = 2, FirstRankColumn = 3 };
    // Item data beside the text: the recorded value (a probability or the entropy) and a rank cell's token id.
    static constexpr int ValueRole = Qt::UserRole;
    static constexpr int TokenRole = Qt::UserRole + 1;

    explicit LogitLensPanel(QWidget* parent = nullptr);

    QTableWidget* table() const { return m_table; }
    QCPGraph* drawnGraph() const { return m_drawn; }
    QCPGraph* entropyGraph() const { return m_entropy; }
    QString headline() const;
    bool hasLens() const { return m_hasLens; }

public Q_SLOTS:
    void setToken(const TokenRecord& token);
    void clear();

Q_SIGNALS:
    // A layer's row was activated (double-click or Enter): MainWindow shows that layer's attention.
    void layerActivated(int layer);

private:
    void applyTheme();
    void fillTable(const TokenRecord& token, const TokenInspection& in);
    void fillPlot(const TokenInspection& in);

    QLabel* m_title;
    QTableWidget* m_table;
    QCustomPlot* m_plot;
    QCPGraph* m_drawn;
    QCPGraph* m_entropy;
    TokenRecord m_token;
    bool m_hasToken = false;
    bool m_hasLens = false;
};
