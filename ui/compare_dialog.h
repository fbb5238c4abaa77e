#pragma once
// CompareDialog (issue 16 item 7): one reply run through the loaded model and a second model file,
// token by token. It shows what compare_models returned — per reply token the KL divergence (a plot,
// flips marked, and a table) and the mean, maximum and flip count — and recomputes none of it. While
// the worker runs it shows progress and offers Cancel; the window is not modal, so the chat stays usable.
#include <QDialog>

#include "engine_types.h"

class QCustomPlot;
class QCPGraph;
class QLabel;
class QProgressBar;
class QPushButton;
class QTableWidget;

class CompareDialog : public QDialog {
    Q_OBJECT

public:
    CompareDialog(const QString& modelName, const QString& otherPath, QWidget* parent = nullptr);

    // done of total positions evaluated; done < 0: the second file is being loaded.
    void setProgress(int done, int total);
    void setResult(const ModelCompareResultPtr& result);
    void setError(const QString& message);
    bool isRunning() const { return m_running; }
    const ModelCompareResultPtr& result() const { return m_result; }

    // For tests and screenshots.
    QCustomPlot* plot() const { return m_plot; }
    QCPGraph* klGraph() const { return m_klGraph; }
    QCPGraph* flipGraph() const { return m_flipGraph; }
    QLabel* summaryLabel() const { return m_summary; }
    QTableWidget* table() const { return m_table; }
    QProgressBar* progressBar() const { return m_progress; }
    QPushButton* cancelButton() const { return m_cancel; }

Q_SIGNALS:
    void cancelRequested();

private:
    void applyTheme();
    void fillTable(const ModelCompareResult& r);
    QString piece(int id) const;

    QLabel* m_heading = nullptr;
    QLabel* m_summary = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_cancel = nullptr;
    QCustomPlot* m_plot = nullptr;
    QCPGraph* m_klGraph = nullptr;
    QCPGraph* m_flipGraph = nullptr;
    QTableWidget* m_table = nullptr;
    ModelCompareResultPtr m_result;
    bool m_running = true;
};
