#pragma once
// The main window: the chat in the centre, the Sampling panel beside it, on the left the conversations
// above the inspector panels (Attention, Token inspector, KV cache, Model info) tabbed in one dock
// group, a layout that fits a
// 1280x720 screen; menus and toolbar for the model, its load options, the conversation, the view
// (panels, theme, reset layout, keyboard focus) and help; a status bar with the backend, speed, time
// to first token and memory in use; the Server menu serves the loaded model to other programs. Geometry and dock layout are kept per available screen geometry;
// the settings the panels hold (sampling, system prompt, colouring, capture, theme) are restored at
// start and written as they change.
#include <QMainWindow>

#include <memory>

#include "engine_types.h"
#include "message_drafts.h"
#include "model_summary.h"
#include "theme.h"

class AttentionPanel;
class ChatController;
class ChatPanel;
class TraceActions;
class ConversationList;
class ConversationStore;
class HeadGridPanel;
class KvCachePanel;
class LoadOptionsMenu;
class ContextPolicyMenu;
class LogitLensPanel;
class ModelInfoPanel;
class PromptView;
class RemoteEngineUi;
class ModelsDialog;
class QActionGroup;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QProgressDialog;
class QToolBar;
class SamplingPanel;
class ServeController;
class ServeMenu;
class TimingsPanel;
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
    PromptView* promptView() const { return m_prompt; }
    LogitLensPanel* logitLensPanel() const { return m_lens; }
    HeadGridPanel* headGridPanel() const { return m_heads; }
    TimingsPanel* timingsPanel() const { return m_timings; }
    // Export, Replay and Compare of sampler traces; null in a build without trace files.
    TraceActions* traceActions() const { return m_traceActions; }
    ConversationList* conversationList() const { return m_conversations; }
    ConversationStore* conversationStore() const { return m_store; }
    // Serving the loaded model to other programs (Server menu); null in a build without the server.
    ServeController* serveController() const { return m_serve; }
    ServeMenu* serveMenu() const { return m_serveMenu; }
    // Created the first time it is opened.
    ModelsDialog* modelsDialog() const { return m_modelsDialog; }
    RemoteEngineUi* remoteEngineUi() const { return m_remoteUi; }
    QDockWidget* dock(const QString& objectName) const;
    QLabel* backendLabel() const { return m_backendLabel; }
    QLabel* speedLabel() const { return m_speedLabel; }
    QLabel* ttftLabel() const { return m_ttftLabel; }
    QLabel* memoryLabel() const { return m_memoryLabel; }
    QProgressBar* prefillBar() const { return m_prefillBar; }
    LoadOptionsMenu* loadOptions() const { return m_loadOptions; }
    ContextPolicyMenu* contextPolicyMenu() const { return m_contextPolicy; }
    QActionGroup* themeGroup() const { return m_themeGroup; }
    QAction* resetLayoutAction() const { return m_resetLayoutAction; }
    QList<QDockWidget*> docks() const { return m_docks; }

    // The size the window opens at on a screen with this available geometry when no layout was kept
    // for it: as large as the screen allows (room left for the window frame), at most 1600x1000.
    static QSize defaultSize(const QRect& available);
    // The settings key of the layout for the screen the window is on.
    QString layoutKey() const;

    // Resident memory of the process (Linux /proc; 0 elsewhere).
    static quint64 residentBytes();

public Q_SLOTS:
    void openModelDialog();
    void openModelsDialog();
    // Import / Export of one conversation file.
    void openConversationDialog();
    void saveConversationDialog();
    void showError(const QString& title, const QString& text);
    // Selects a generated token in the token inspector.
    void inspectToken(int messageIndex, int tokenIndex);
    // Every panel back in the default arrangement and shown.
    void resetLayout();
    // persist: also written to the settings (--theme previews a theme without keeping it).
    void setTheme(ThemeMode mode, bool persist = true);
    // Records the logit lens and head statistics whether or not their panels are shown (the
    // screenshot run, whose pictures of them are taken after the reply).
    void setRecordInspection(bool on);
    // Shows the panel's dock and puts the keyboard focus on its first control.
    void focusPanel(const QString& dockName);
    void showShortcuts();
    void showAbout();

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
    // The capture the panels shown now ask for: the attention panel's layers, and the logit lens, head
    // statistics and timings only while their panel is visible (nothing shown costs nothing).
    void applyCaptureSpec();
    // A token's lens / head statistics arrived: the two views follow the newest token of the reply.
    void showInspection(int messageIndex, int tokenIndex);

private:
    void createActions();
    void createViewMenu();
    void createHelpMenu();
    void createDocks();
    void placeDocks();
    void createStatusBar();
    void restoreSettings();
    void persistSettings();
    void restoreLayout();
    void updateBackendLabel();
    void rebuildRecentMenu();
    void addRecent(const QString& path);
    QDockWidget* addPanel(QWidget* panel, const QString& title, const QString& objectName, Qt::DockWidgetArea area);

    ChatController* m_controller;
    ConversationStore* m_store;
    std::unique_ptr<MessageDrafts> m_drafts = std::make_unique<MessageDrafts>();  // the unsent message
    ConversationList* m_conversations;
    ChatPanel* m_chat;
    TraceActions* m_traceActions = nullptr;
    SamplingPanel* m_sampling;
    AttentionPanel* m_attention;
    KvCachePanel* m_kv;
    TokenInspector* m_inspector;
    ModelInfoPanel* m_info;
    PromptView* m_prompt;
    LogitLensPanel* m_lens;
    HeadGridPanel* m_heads;
    TimingsPanel* m_timings;
    RemoteEngineUi* m_remoteUi;
    ServeController* m_serve = nullptr;
    ServeMenu* m_serveMenu = nullptr;
    QVector<int> m_captureLayers;  // the attention panel's choice (empty: all)
    bool m_recordInspection = false;
    bool m_lensShown = false;   // the docks' last visibilityChanged
    bool m_headsShown = false;
    bool m_timingsShown = false;
    ModelsDialog* m_modelsDialog = nullptr;
    QList<QDockWidget*> m_docks;
    QMenu* m_recentMenu = nullptr;
    QMenu* m_viewMenu = nullptr;
    LoadOptionsMenu* m_loadOptions = nullptr;
    ContextPolicyMenu* m_contextPolicy = nullptr;
    QActionGroup* m_themeGroup = nullptr;
    QAction* m_resetLayoutAction = nullptr;
    QToolBar* m_toolBar = nullptr;
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
    bool m_attentionLayerRestored = false;  // the saved layer is applied once the first model gives the range
    // Quit while a reply streams: the window stops it and closes when the worker has ended it (its
    // final text and stop reason saved), or after kCloseWaitMs whatever happens.
    bool m_closeAfterStop = false;
    bool m_forceClose = false;
};
