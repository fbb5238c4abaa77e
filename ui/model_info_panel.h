#pragma once
// Model info: what the file is (name, path, size, SHA-256 once the worker has hashed it), what it
// contains (metadata, architecture, tensors with their types) and what it costs: the memory ledger,
// predicted beside measured for each component (weights by type, the KV cache with its sliding window,
// the scratch activations, the captured attention).
#include <QWidget>

#include "kv/kv_cache.h"
#include "model_summary.h"

class QLabel;
class QTableWidget;
class QTabWidget;

class ModelInfoPanel : public QWidget {
    Q_OBJECT

public:
    explicit ModelInfoPanel(QWidget* parent = nullptr);

    QString hashText() const;
    QString memoryText() const;
    QTableWidget* metadataTable() const { return m_metadata; }
    QTableWidget* tensorTable() const { return m_tensors; }
    QTableWidget* architectureTable() const { return m_architecture; }
    // The ledger: one row per component; column 0 holds its key (KeyRole: "weights:<type>", "weights",
    // "kv_full", "kv_now", "scratch", "attention"), columns 1 and 2 the predicted and measured bytes
    // (BytesRole; no value where there is none).
    enum LedgerColumn { ComponentColumn = 0, PredictedColumn = 1, MeasuredColumn = 2, NoteColumn = 3 };
    static constexpr int KeyRole = Qt::UserRole;
    static constexpr int BytesRole = Qt::UserRole + 1;
    QTableWidget* ledgerTable() const { return m_ledger; }
    QTabWidget* tabs() const { return m_tabs; }
    // The bytes in a ledger row's column; -1 when the row or its value is missing.
    qint64 ledgerBytes(const QString& key, int column) const;

public Q_SLOTS:
    void setModel(const ModelSummary& summary);
    void setFileHash(const QString& path, const QString& sha256);
    // The cache's statistics as the engine reported them: the ledger's measured KV figure.
    void setKvStats(const wb::KvStats& stats);
    // The captured attention's store: bytes held and its budget.
    void setAttentionMemory(qint64 used, qint64 budget);

private:
    void applyTheme();
    void fillLedger();
    QString m_path;
    ModelSummary m_summary;
    bool m_hasModel = false;
    wb::KvStats m_kv;
    bool m_hasKv = false;
    qint64 m_attentionUsed = 0, m_attentionBudget = 0;
    QTabWidget* m_tabs;
    QLabel* m_name;
    QLabel* m_file;
    QLabel* m_hash;
    QLabel* m_backend;
    QLabel* m_template;
    QLabel* m_types;
    QLabel* m_memory;
    QLabel* m_warnings;
    QTableWidget* m_architecture;
    QTableWidget* m_metadata;
    QTableWidget* m_tensors;
    QTableWidget* m_ledger;
};
