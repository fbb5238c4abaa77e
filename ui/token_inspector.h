#pragma once
// Token inspector: one generated token in detail: its top alternatives with raw and final
// probabilities, what each sampler stage did (the trace), and the attention row of the step that
// chose it (query = the position before the token) for the layer and head selected in the attention panel.
// For a token of a reply, "Continue with this token" (or a double-click on a candidate) asks for a new
// version of the reply that takes the selected candidate there and goes on from it.
#include <QWidget>

#include "conversation.h"

class AttentionStore;
class QCPBars;
class QCustomPlot;
class QLabel;
class QPushButton;
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
    QPushButton* forkButton() const { return m_forkButton; }

public Q_SLOTS:
    void setToken(const TokenRecord& token);
    // A token of the chat: token `tokenIndex` of message `messageIndex` (a fork can start there).
    void setToken(const TokenRecord& token, int messageIndex, int tokenIndex);
    void setAttentionSelection(int layer, int head);
    void refreshAttention();
    void clear();
    // Forks at the token shown with the candidate of the table's current row.
    void forkWithSelected();

Q_SIGNALS:
    void forkRequested(int messageIndex, int tokenIndex, int candidateId);

private:
    void applyTheme();
    void updateForkButton();
    AttentionStore* m_store;
    QLabel* m_title;
    QTableWidget* m_candidates;
    QTreeWidget* m_trace;
    QPushButton* m_forkButton;
    QLabel* m_attentionNote;
    QCustomPlot* m_attentionPlot;
    QCPBars* m_attentionBars;
    TokenRecord m_token;
    bool m_hasToken = false;
    int m_messageIndex = -1;  // where the token is in the chat; -1: not a chat token
    int m_tokenIndex = -1;
    int m_layer = 0;
    int m_head = 0;
};
