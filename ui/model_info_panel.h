#pragma once
// Model info: what the file is (name, path, size, SHA-256 once the worker has hashed it), what it
// contains (metadata, architecture, tensors with their types) and what it costs: the memory ledger,
// predicted beside measured for each component (weights by type, the KV cache with its sliding window,
// the scratch activations, the captured attention). The ledger follows the engine while a reply
// streams (KV statistics at ~30 Hz, the attention store per token), so it is only brought up to date
// while it is on screen: a hidden ledger is rebuilt when it is shown, a visible one changes the cells
// whose values changed and rebuilds its rows only when the rows themselves change.
#include <QVector>
#include <QWidget>

#include "engine/backend.h"
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
    // "kv_full", "kv_now", "scratch", "attention", "compare_weights", "compare_kv", "compare_chat_kv", "device"), columns 1 and 2
    // the predicted and measured bytes
    // (BytesRole; no value where there is none).
    enum LedgerColumn { ComponentColumn = 0, PredictedColumn = 1, MeasuredColumn = 2, NoteColumn = 3 };
    static constexpr int KeyRole = Qt::UserRole;
    static constexpr int BytesRole = Qt::UserRole + 1;
    QTableWidget* ledgerTable() const { return m_ledger; }
    QTabWidget* tabs() const { return m_tabs; }
    // The bytes in a ledger row's column as the table shows them (up to date while it is visible);
    // -1 when the row or its value is missing.
    qint64 ledgerBytes(const QString& key, int column) const;
    // How often the ledger's rows were built from scratch (for tests: streamed updates must not).
    int ledgerRebuilds() const { return m_ledgerRebuilds; }

public Q_SLOTS:
    void setModel(const ModelSummary& summary);
    void setFileHash(const QString& path, const QString& sha256);
    // The cache's statistics as the engine reported them: the ledger's measured KV figure.
    void setKvStats(const wb::KvStats& stats);
    // The captured attention's store: bytes held and its budget.
    void setAttentionMemory(qint64 used, qint64 budget);
    // The backend's device memory by its own count: the "device" row, shown while a backend with
    // memory of its own (CUDA) reports one (counted); the CPU backend's report adds no row. A model
    // loaded clears it until its backend's first report.
    void setDeviceMemory(const wb::DeviceMemory& memory);
    // A comparison's second model while it is loaded: its weights' and its KV cache's rows (and the
    // chat model's own cache for Compare when the chat's context was too short for the reply), and
    // their share of the device row's prediction; released (loaded false), the rows go. A model loaded
    // clears it too.
    void setComparisonMemory(const ComparisonMemory& memory);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    // One ledger row as it is shown: bytes < 0 means no value.
    struct LedgerRow {
        QString key, component;
        qint64 predicted = -1, measured = -1;
        QString how;
    };
    void applyTheme();
    QVector<LedgerRow> ledgerRows() const;
    // The device memory row (m_device.counted): predicted from the summary, measured the backend's count.
    LedgerRow deviceRow() const;
    // The comparison's rows (m_comparison.loaded): two, three when the chat's session was resized.
    void appendComparisonRows(QVector<LedgerRow>& rows) const;
    // Brings the ledger up to date, or marks it stale while it is hidden.
    void updateLedger();
    void fillLedger(const QVector<LedgerRow>& rows);
    // Same keys in the same order: only the cells whose text or bytes changed are set.
    void refreshLedger(const QVector<LedgerRow>& rows);
    // The numbers' columns to their text; the names and the notes share the rest of the width and wrap.
    void fitLedgerColumns();
    // Sets the row's cells; a column whose text changed is marked in `changed` when given.
    void setLedgerRow(int row, const LedgerRow& values, QVector<bool>* changed = nullptr);
    QString m_path;
    ModelSummary m_summary;
    bool m_hasModel = false;
    wb::KvStats m_kv;
    bool m_hasKv = false;
    qint64 m_attentionUsed = 0, m_attentionBudget = 0;
    wb::DeviceMemory m_device;
    ComparisonMemory m_comparison;
    bool m_ledgerStale = false;
    int m_ledgerRebuilds = 0;
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
