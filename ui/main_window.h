#pragma once
// The main window: the chat in the centre, the inspector panels as docks (layout saved in QSettings),
// menus and toolbar for the model, backend, context size and the conversation, and a status bar with
// the backend (and why the GPU is not used), speed, time to first token and memory in use.
#include <QMainWindow>

#include "engine_types.h"
#include "model_summary.h"

class AttentionPanel;
class ChatController;
class ChatPanel;
class KvCachePanel;
class ModelInfoPanel;
class ModelsDialog;
class QActionGroup;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QProgressDialog;
class SamplingPanel;
class TokenInspector;

class MainWindow : public QMainWindow {
    Q_OBJECT

public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Opens the last model, else the default model when it is in the cache, else (the first start)
    // shows the Models dialog.
    void start();

    ChatController* controller() const { return m_controller; }
    ChatPanel* chatPanel() const { return m_chat; }
    SamplingPanel* samplingPanel() const { return m_sampling; }
    AttentionPanel* attentionPanel() const { return m_attention; }
    KvCachePanel* kvCachePanel() const { return m_kv; }
    TokenInspector* tokenInspector() const { return m_inspector; }
    ModelInfoPanel* modelInfoPanel() const { return m_info; }
    // Created the first time it is opened.
    ModelsDialog* modelsDialog() const { return m_modelsDialog; }
    QDockWidget* dock(const QString& objectName) const;
    QLabel* backendLabel() const { return m_backendLabel; }
    QLabel* speedLabel() const { return m_speedLabel; }
    QLabel* ttftLabel() const { return m_ttftLabel; }
    QLabel* memoryLabel() const { return m_memoryLabel; }
    QProgressBar* prefillBar() const { return m_prefillBar; }

    // Resident memory of the process (Linux /proc; 0 elsewhere).
    static quint64 residentBytes();

public Q_SLOTS:
    void openModelDialog();
    void openModelsDialog();
    void openConversationDialog();
    void saveConversationDialog();
    void showError(const QString& title, const QString& text);
    // Selects a generated token in the token inspector.
    void inspectToken(int messageIndex, int tokenIndex);

protected:
    void closeEvent(QCloseEvent* event) override;

private Q_SLOTS:
    void handleLoadStarted(const QString& path);
    void handleModelLoaded(const ModelSummary& summary);
    void handleLoadFailed(const QString& path, const QString& error);
    void handleLoadFinished();
    void handleTimings(const wb::Timings& timings);
    void handlePrefillProgress(int done, int total);
    void handleKvStats(const wb::KvStats& stats);
    void handleGeneratingChanged(bool generating);
    void handleEscape();
    void updateMemory();
    void updateCaptureSpec(const QVector<int>& layers);

private:
    void createActions();
    void createDocks();
    void createStatusBar();
    void rebuildRecentMenu();
    void addRecent(const QString& path);
    void reloadWithSettings();
    QDockWidget* addPanel(QWidget* panel, const QString& title, const QString& objectName, Qt::DockWidgetArea area);

    ChatController* m_controller;
    ChatPanel* m_chat;
    SamplingPanel* m_sampling;
    AttentionPanel* m_attention;
    KvCachePanel* m_kv;
    TokenInspector* m_inspector;
    ModelInfoPanel* m_info;
    ModelsDialog* m_modelsDialog = nullptr;
    QList<QDockWidget*> m_docks;
    QMenu* m_recentMenu = nullptr;
    QMenu* m_viewMenu = nullptr;
    QActionGroup* m_backendGroup = nullptr;
    QActionGroup* m_contextGroup = nullptr;
    QAction* m_stopAction = nullptr;
    QAction* m_regenerateAction = nullptr;
    QProgressDialog* m_progress = nullptr;
    QLabel* m_backendLabel;
    QLabel* m_speedLabel;
    QLabel* m_ttftLabel;
    QLabel* m_memoryLabel;
    QProgressBar* m_prefillBar = nullptr;
    quint64 m_kvReserved = 0;
    QString m_loadingPath;
};
