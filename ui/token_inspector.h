#pragma once
// Token inspector: one generated token in detail: its top alternatives with raw and final
// probabilities, what each sampler stage did (the trace), and the attention row of the step that
// chose it (query = the position before the token) for the layer and head selected in the attention panel.
#include <QWidget>

#include "conversation.h"

class AttentionStore;
class QCPBars;
class QCustomPlot;
class QLabel;
class QTableWidget;
class QTreeWidget;

class TokenInspector : public QWidget {
    Q_OBJECT

public:
    explicit TokenInspector(AttentionStore* store, QWidget* parent = nullptr);

    QTableWidget* candidateTable() const { return m_candidates; }
    QTreeWidget* traceTree() const { return m_trace; }
    QCPBars* attentionBars() const { return m_attentionBars; }
    QString headline() const;
    bool hasToken() const { return m_hasToken; }

public Q_SLOTS:
    void setToken(const TokenRecord& token);
    void setAttentionSelection(int layer, int head);
    void refreshAttention();
    void clear();

private:
    void applyTheme();
    AttentionStore* m_store;
    QLabel* m_title;
    QTableWidget* m_candidates;
    QTreeWidget* m_trace;
    QLabel* m_attentionNote;
    QCustomPlot* m_attentionPlot;
    QCPBars* m_attentionBars;
    TokenRecord m_token;
    bool m_hasToken = false;
    int m_layer = 0;
    int m_head = 0;
};
