#pragma once
// Model info: what the file is (name, path, size, SHA-256 once the worker has hashed it), what it
// contains (metadata, architecture, tensors with their types) and what it costs (memory estimate).
#include <QWidget>

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

public Q_SLOTS:
    void setModel(const ModelSummary& summary);
    void setFileHash(const QString& path, const QString& sha256);

private:
    void applyTheme();
    QString m_path;
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
};
