#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCheckBox>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QLabel>
#include <QLayout>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QScreen>
#include <QMessageBox>
#include <QProgressBar>
#include <QProgressDialog>
#include <QSettings>
#include <QTableWidget>
#include <QStatusBar>
#include <QStyle>
#include <QTextDocument>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <unistd.h>

#include "app_settings.h"
#include "attention_panel.h"
#include "attention_store.h"
#include "chat_controller.h"
#include "chat_panel.h"
#include "conversation_list.h"
#include "conversation_store.h"
#include "head_grid_panel.h"
#include "help_dialogs.h"
#include "kv_cache_panel.h"
#include "remote_engine_ui.h"
#include "load_options_menu.h"
#include "context_policy_menu.h"
#include "logit_lens_panel.h"
#include "prompt_view.h"
#include "message_edit.h"
#include "model/model_paths.h"
#include "model_info_panel.h"
#include "models_dialog.h"
#include "sampler_chain_controls.h"
#include "sampling_panel.h"
#include "timings_panel.h"
#include "token_inspector.h"
#ifdef WB_HAVE_TRACE_FILE
#include "trace_actions.h"
#endif
#ifdef WB_HAVE_SERVER
#include "serve_controller.h"
#include "serve_menu.h"
#endif

namespace {

constexpr int kMaxRecent = 8;
// Candidates per token event: the chart shows 12, the inspector lists them all.
constexpr int kTopCandidates = 20;
// The largest size the window opens at; room left around it for the window manager's frame.
constexpr int kMaxDefaultWidth = 1600;
constexpr int kMaxDefaultHeight = 1000;
constexpr int kFrameAllowance = 48;
// The message being typed is written once typing pauses (every key would rewrite the settings file).
constexpr int kDraftSaveDelayMs = 500;

}  // namespace

// Outside any namespace, as Q_INIT_RESOURCE requires: the resources live in the static wb_ui library,
// whose resource object the linker would otherwise drop.
static void initResources() {
    Q_INIT_RESOURCE(whitebox);
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
    initResources();
    setWindowIcon(QIcon(QStringLiteral(":/whitebox.png")));
    setWindowTitle(QStringLiteral("WhiteBox"));
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks | QMainWindow::AllowNestedDocks);

    m_controller = new ChatController(this);
    // After the controller, so it is destroyed after it: the controller saves when it goes.
    m_store = new ConversationStore(ConversationStore::defaultDirectory(), this);
    m_controller->setStore(m_store);
    m_conversations = new ConversationList(m_controller, m_store, this);
    m_chat = new ChatPanel(m_controller, this);
#ifdef WB_HAVE_TRACE_FILE
    m_traceActions = new TraceActions(m_controller, this);
    m_chat->setTraceActionsOffered(true);
#endif
    setCentralWidget(m_chat);
    m_sampling = new SamplingPanel(this);
    m_attention = new AttentionPanel(m_controller->attentionStore(), this);
    m_kv = new KvCachePanel(this);
    m_inspector = new TokenInspector(m_controller->attentionStore(), this);
    m_info = new ModelInfoPanel(this);
    m_prompt = new PromptView(m_controller, this);
    m_lens = new LogitLensPanel(this);
    m_heads = new HeadGridPanel(this);
    m_timings = new TimingsPanel(this);
    // The panels of the model's internals, which a remote engine does not expose.
    m_remoteUi = new RemoteEngineUi(m_controller, this);
    m_remoteUi->addNotice(m_attention, tr("the attention of its layers and heads"));
    m_remoteUi->addNotice(m_kv, tr("its KV cache"));
    m_remoteUi->addNotice(m_lens, tr("the logit lens (its layers' predictions)"));
    m_remoteUi->addNotice(m_heads, tr("head statistics"));
    m_remoteUi->addNotice(m_info->ledgerTable(), tr("its memory (weights, KV cache, activations)"));
    // These two would go on showing the last local model's prompt and timings.
    m_remoteUi->addNotice(m_prompt, tr("the prompt as its template and tokenizer made it"));
    m_remoteUi->addNotice(m_timings, tr("the timings of its tokens and layers"));
    connect(m_controller, &ChatController::modelLoaded, this,
            [this](const ModelSummary& m) { m_sampling->chainControls()->setRemote(m.isRemote()); });

    m_loadOptions = new LoadOptionsMenu(m_controller, this);
    m_contextPolicy = new ContextPolicyMenu(m_controller, this);

    createActions();
    createDocks();
    createStatusBar();

    // GUI-thread wiring (same thread, direct); the worker's connections live in ChatController.
    connect(m_controller, &ChatController::loadStarted, this, &MainWindow::handleLoadStarted);
    connect(m_controller, &ChatController::modelLoaded, m_loadOptions, &LoadOptionsMenu::handleModelLoaded);
    connect(m_controller, &ChatController::modelLoaded, m_contextPolicy, &ContextPolicyMenu::handleModelLoaded);
    connect(m_contextPolicy, &ContextPolicyMenu::message, this, [this](const QString& m) { statusBar()->showMessage(m, 10000); });
    // The engine's cut of a full context: drawn by the KV panel, said once in the status bar.
    connect(m_controller, &ChatController::contextCut, m_kv, &KvCachePanel::handleCut);
    connect(m_controller, &ChatController::currentConversationChanged, m_kv, &KvCachePanel::clearCut);
    connect(m_controller, &ChatController::contextCut, this, [this](const wb::ContextCut& cut) {
        statusBar()->showMessage(cut.how == wb::ContextPolicy::SHIFT ? tr("context shifted: dropped %1 tokens").arg(cut.dropped)
                                                                     : tr("old turns trimmed: dropped %1 tokens").arg(cut.dropped),
                                 8000);
    });
    connect(m_controller, &ChatController::modelLoaded, this, &MainWindow::handleModelLoaded);
    connect(m_controller, &ChatController::loadFailed, this, &MainWindow::handleLoadFailed);
    connect(m_controller, &ChatController::loadCanceled, this, &MainWindow::handleLoadFinished);
    connect(m_controller, &ChatController::fileHashReady, m_info, &ModelInfoPanel::setFileHash);
    // A template that cannot render makes every message fail: the Prompt view says why and offers the
    // built-in formats.
    connect(m_controller, &ChatController::chatTemplateChanged, this, [this](const ChatTemplateInfo& t) {
        if (t.error.isEmpty()) return;
        statusBar()->showMessage(tr("The chat template cannot be used; choose a built-in format in the Prompt view"), 15000);
        if (QDockWidget* d = dock(QStringLiteral("promptDock"))) {
            d->show();
            d->raise();
        }
    });
    connect(m_controller, &ChatController::timingsChanged, this, &MainWindow::handleTimings);
    connect(m_controller, &ChatController::prefillProgress, this, &MainWindow::handlePrefillProgress);
    connect(m_controller, &ChatController::kvStatsChanged, this, &MainWindow::handleKvStats);
    connect(m_controller, &ChatController::kvStatsChanged, m_kv, &KvCachePanel::handleStats);
    connect(m_controller, &ChatController::kvStatsChanged, m_info, &ModelInfoPanel::setKvStats);
    connect(m_controller, &ChatController::deviceMemoryChanged, m_info, &ModelInfoPanel::setDeviceMemory);
    connect(m_controller, &ChatController::comparisonMemoryChanged, m_info, &ModelInfoPanel::setComparisonMemory);
    connect(m_controller, &ChatController::timingsChanged, m_kv, &KvCachePanel::handleTimings);
    connect(m_controller->attentionStore(), &AttentionStore::memoryChanged, m_info, [this] {
        m_info->setAttentionMemory(m_controller->attentionStore()->bytesUsed(), m_controller->attentionStore()->budgetBytes());
    });
    connect(m_controller, &ChatController::generatingChanged, this, &MainWindow::handleGeneratingChanged);
    connect(m_controller, &ChatController::tokenEvent, m_sampling, &SamplingPanel::handleTokenEvent);
    connect(m_controller, &ChatController::samplingParamsRestored, m_sampling, &SamplingPanel::setParams);
    connect(m_controller, &ChatController::grammarRefused, m_sampling, &SamplingPanel::showGrammarRefused);
    connect(m_controller, &ChatController::errorOccurred, this, [this](const QString& e) { showError(tr("Generation failed"), e); });
    connect(m_controller, &ChatController::notice, this, [this](const QString& n) { statusBar()->showMessage(n, 8000); });
    connect(m_controller, &ChatController::conversationReset, m_inspector, &TokenInspector::clear);
    connect(m_controller, &ChatController::conversationReset, m_lens, &LogitLensPanel::clear);
    connect(m_controller, &ChatController::conversationReset, m_heads, &HeadGridPanel::clear);
    connect(m_controller, &ChatController::conversationReset, m_timings, &TimingsPanel::clear);
    connect(m_controller, &ChatController::timingsRecorded, m_timings, &TimingsPanel::setRecord);
    // A reply made while the panel was hidden is not recorded: the panel must not go on showing the one before.
    connect(m_controller, &ChatController::generatingChanged, m_timings, [this](bool on) {
        if (on) m_timings->clear();
    });
    connect(m_timings, &TimingsPanel::layerTimingToggled, this, &MainWindow::applyCaptureSpec);
    connect(m_controller, &ChatController::tokenInspected, this, &MainWindow::showInspection);
    connect(m_lens, &LogitLensPanel::layerActivated, this, [this](int layer) {
        m_attention->setLayer(layer);
        focusPanel(QStringLiteral("attentionDock"));
    });
    connect(m_heads, &HeadGridPanel::headActivated, this, [this](int layer, int head) {
        m_attention->setLayer(layer);
        m_attention->setHead(head);
        focusPanel(QStringLiteral("attentionDock"));
    });
    connect(m_sampling, &SamplingPanel::paramsChanged, m_controller, &ChatController::setSamplingParams);
    connect(m_attention, &AttentionPanel::captureLayersChanged, this, &MainWindow::updateCaptureSpec);
    connect(m_attention, &AttentionPanel::selectionChanged, m_inspector, &TokenInspector::setAttentionSelection);
    connect(m_chat, &ChatPanel::tokenClicked, this, &MainWindow::inspectToken);
#ifdef WB_HAVE_TRACE_FILE
    connect(m_chat, &ChatPanel::exportTraceRequested, m_traceActions, [this](int index) { m_traceActions->exportReplyDialog(index); });
    connect(m_chat, &ChatPanel::compareRequested, m_traceActions, &TraceActions::compareDialog);
#endif
    connect(m_conversations, &ConversationList::errorOccurred, this, &MainWindow::showError);
    connect(m_inspector, &TokenInspector::forkRequested, this, [this](int message, int token, int candidate) {
        if (!m_controller->forkFromToken(message, token, candidate))
            statusBar()->showMessage(tr("Cannot continue from that token now (a reply is being generated?)"), 8000);
    });
    if (!m_store->unreadable().isEmpty())
        statusBar()->showMessage(tr("Some saved conversations could not be read: %1").arg(m_store->unreadable().join(QStringLiteral("; "))), 15000);

    connect(ThemeNotifier::instance(), &ThemeNotifier::themeChanged, this, &MainWindow::updateBackendLabel);
    restoreSettings();
    m_controller->setSamplingParams(m_sampling->params());
    updateCaptureSpec(m_attention->captureAllLayers() ? QVector<int>{} : QVector<int>{m_attention->layer()});
    persistSettings();
    restoreLayout();
    m_chat->input()->setFocus();

    auto* memoryTimer = new QTimer(this);
    connect(memoryTimer, &QTimer::timeout, this, &MainWindow::updateMemory);
    memoryTimer->start(1000);
    updateMemory();
}

MainWindow::~MainWindow() {
#ifdef WB_HAVE_SERVER
    // Its threads and its running request use the controller, which is destroyed before it.
    m_serve->stop();
#endif
    // QWidget's destructor hides the docks after this class's members are gone: their visibility
    // must no longer reach applyCaptureSpec.
    for (QDockWidget* d : m_docks) disconnect(d, nullptr, this, nullptr);
}

void MainWindow::createActions() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open model…"), this, &MainWindow::openModelDialog);
    open->setShortcut(QKeySequence::Open);
    open->setIcon(style()->standardIcon(QStyle::SP_DialogOpenButton));
    QAction* models = file->addAction(tr("&Models…"), this, &MainWindow::openModelsDialog);
    models->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_M));
    models->setIcon(style()->standardIcon(QStyle::SP_DirHomeIcon));
    models->setToolTip(tr("The models in the cache; download or fetch one"));
    m_recentMenu = file->addMenu(tr("Recent models"));
#ifdef WB_HAVE_REMOTE
    file->addAction(m_remoteUi->connectAction());
#endif
    file->addSeparator();
    // Conversations are saved on their own; these exchange one as a file.
    QAction* openConv = file->addAction(tr("&Import conversation…"), this, &MainWindow::openConversationDialog);
    openConv->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    QAction* saveConv = file->addAction(tr("&Export conversation…"), this, &MainWindow::saveConversationDialog);
    saveConv->setShortcut(QKeySequence::Save);
#ifdef WB_HAVE_TRACE_FILE
    // A reply's sampler trace as a file, and a rerun of one (issue 16 item 7); the chat's reply menu
    // exports any reply and compares it with another model.
    file->addSeparator();
    file->addAction(tr("Export &sampler trace of the last reply…"), this, [this] { m_traceActions->exportReplyDialog(m_traceActions->lastReply()); });
    // Opt-in: the captured attention rows make the file megabytes per token.
    file->addAction(tr("Export sampler trace of the last reply with &attention rows…"), this,
                    [this] { m_traceActions->exportReplyDialog(m_traceActions->lastReply(), true); });
    file->addAction(tr("&Replay sampler trace…"), m_traceActions, &TraceActions::replayDialog);
#endif
    file->addSeparator();
    file->addAction(tr("&Quit"), this, &QWidget::close)->setShortcut(QKeySequence::Quit);

    QMenu* model = menuBar()->addMenu(tr("&Model"));
    QMenu* backend = m_loadOptions->backendMenu();
    QMenu* context = m_loadOptions->contextMenu();
    model->addMenu(backend);
    model->addMenu(context);
    model->addMenu(m_loadOptions->threadsMenu());
    model->addMenu(m_loadOptions->kvCacheMenu());
    model->addMenu(m_contextPolicy->menu());

    QMenu* chat = menuBar()->addMenu(tr("&Chat"));
    QAction* newChat = chat->addAction(tr("&New chat"), m_controller, &ChatController::newChat);
    newChat->setShortcut(QKeySequence::New);
    newChat->setIcon(style()->standardIcon(QStyle::SP_FileIcon));
    m_stopAction = chat->addAction(tr("&Stop"), this, &MainWindow::handleEscape);
    m_stopAction->setShortcut(Qt::Key_Escape);
    m_stopAction->setIcon(style()->standardIcon(QStyle::SP_MediaStop));
    m_regenerateAction = chat->addAction(tr("&Regenerate"), m_controller, &ChatController::regenerate);
    m_regenerateAction->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    m_regenerateAction->setIcon(style()->standardIcon(QStyle::SP_BrowserReload));
    m_viewMenu = menuBar()->addMenu(tr("&View"));
#ifdef WB_HAVE_SERVER
    m_serve = new ServeController(m_controller, this);
    m_serveMenu = new ServeMenu(m_serve, this);
    connect(m_serveMenu, &ServeMenu::problem, this, [this](const QString& m) { showError(tr("Server"), m); });
#endif
    createHelpMenu();

    QToolBar* bar = addToolBar(tr("Main"));
    m_toolBar = bar;
    bar->setObjectName(QStringLiteral("mainToolBar"));
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->addAction(open);
    bar->addAction(models);
#ifdef WB_HAVE_REMOTE
    bar->addAction(m_remoteUi->connectAction());
#endif
    bar->addSeparator();
    bar->addAction(newChat);
    bar->addAction(m_stopAction);
    bar->addAction(m_regenerateAction);
    bar->addSeparator();
    for (QMenu* m : {backend, context}) {
        auto* button = new QToolButton(bar);
        button->setText(m->title());
        button->setMenu(m);
        button->setPopupMode(QToolButton::InstantPopup);
        button->setAccessibleName(m->title());
        bar->addWidget(button);
    }
    rebuildRecentMenu();
    handleGeneratingChanged(false);
}

void MainWindow::createViewMenu() {
    // Under the panels' own show/hide entries (added with the docks).
    m_viewMenu->addSeparator();
    QMenu* theme = m_viewMenu->addMenu(tr("&Theme"));
    m_themeGroup = new QActionGroup(this);
    for (ThemeMode mode : {ThemeMode::System, ThemeMode::Light, ThemeMode::Dark}) {
        const QString text = mode == ThemeMode::System ? tr("&System") : mode == ThemeMode::Light ? tr("&Light") : tr("&Dark");
        QAction* a = theme->addAction(text);
        a->setCheckable(true);
        a->setData(Theme::modeName(mode));
        m_themeGroup->addAction(a);
    }
    connect(m_themeGroup, &QActionGroup::triggered, this, [this](QAction* a) { setTheme(Theme::modeFromName(a->data().toString())); });
    m_resetLayoutAction = m_viewMenu->addAction(tr("&Reset layout"), this, &MainWindow::resetLayout);

    // Keyboard navigation between the panels.
    m_viewMenu->addSeparator();
    QMenu* go = m_viewMenu->addMenu(tr("&Go to"));
    go->addAction(tr("Message box"), this, [this] { m_chat->input()->setFocus(Qt::ShortcutFocusReason); })
        ->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_1));
    const QList<QPair<QString, QString>> panels = {
        {tr("Sampling"), QStringLiteral("samplingDock")},       {tr("Attention"), QStringLiteral("attentionDock")},
        {tr("Token inspector"), QStringLiteral("tokenInspectorDock")}, {tr("KV cache"), QStringLiteral("kvCacheDock")},
        {tr("Model info"), QStringLiteral("modelInfoDock")},    {tr("Conversations"), QStringLiteral("conversationsDock")},
        {tr("Prompt"), QStringLiteral("promptDock")},           {tr("Logit lens"), QStringLiteral("logitLensDock")},
        {tr("Head statistics"), QStringLiteral("headStatsDock")},
    };
    for (int i = 0; i < panels.size(); ++i) {
        const QString dockName = panels[i].second;
        go->addAction(panels[i].first, this, [this, dockName] { focusPanel(dockName); })
            ->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(i < 8 ? Qt::Key_2 + i : Qt::Key_0)));  // Ctrl+2 .. Ctrl+9, Ctrl+0
    }
    go->addAction(tr("Timings"), this, [this] { focusPanel(QStringLiteral("timingsDock")); })
        ->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_T));
}

void MainWindow::createHelpMenu() {
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&Keyboard shortcuts"), this, &MainWindow::showShortcuts)->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Slash));
    help->addAction(tr("&About WhiteBox"), this, &MainWindow::showAbout);
}

void MainWindow::showShortcuts() {
    HelpDialogs::showShortcuts(this, menuBar());
}

void MainWindow::showAbout() {
    const ModelSummary& m = m_controller->model();
    QString backend;
    if (m_controller->hasModel()) {
        backend = m.backendDescription.isEmpty() ? m.backendName.toUpper() : m.backendDescription;
        if (!m.backendNote.isEmpty()) backend += tr(" (GPU not used: %1)").arg(m.backendNote);
    }
    HelpDialogs::showAbout(this, backend);
}

void MainWindow::focusPanel(const QString& dockName) {
    QDockWidget* d = dock(dockName);
    if (!d) return;
    d->show();
    d->raise();
    // The first control that takes the keyboard (findChildren lists them in creation order).
    for (QWidget* w : d->widget()->findChildren<QWidget*>())
        if (w->isVisibleTo(d) && w->isEnabled() && (w->focusPolicy() & Qt::TabFocus)) {
            w->setFocus(Qt::ShortcutFocusReason);
            return;
        }
}

void MainWindow::setTheme(ThemeMode mode, bool persist) {
    Theme::apply(mode);
    for (QAction* a : m_themeGroup->actions()) a->setChecked(a->data().toString() == Theme::modeName(mode));
    if (persist) AppSettings::setTheme(Theme::modeName(mode));
}

QDockWidget* MainWindow::addPanel(QWidget* panel, const QString& title, const QString& objectName, Qt::DockWidgetArea area) {
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(objectName);
    dock->setWidget(panel);
    dock->setAccessibleName(title);
    addDockWidget(area, dock);
    m_viewMenu->addAction(dock->toggleViewAction());
    m_docks << dock;
    return dock;
}

void MainWindow::createDocks() {
    addPanel(m_conversations, tr("Conversations"), QStringLiteral("conversationsDock"), Qt::LeftDockWidgetArea);
    addPanel(m_sampling, tr("Sampling"), QStringLiteral("samplingDock"), Qt::RightDockWidgetArea);
    addPanel(m_attention, tr("Attention"), QStringLiteral("attentionDock"), Qt::LeftDockWidgetArea);
    addPanel(m_inspector, tr("Token inspector"), QStringLiteral("tokenInspectorDock"), Qt::LeftDockWidgetArea);
    addPanel(m_kv, tr("KV cache"), QStringLiteral("kvCacheDock"), Qt::LeftDockWidgetArea);
    addPanel(m_info, tr("Model info"), QStringLiteral("modelInfoDock"), Qt::LeftDockWidgetArea);
    addPanel(m_prompt, tr("Prompt"), QStringLiteral("promptDock"), Qt::LeftDockWidgetArea);
    // Shown or not decides whether the engine records the lens and the head statistics. A tab behind
    // another of its group stays isVisible() (it is only covered): the signal's value is what counts.
    for (QWidget* panel : {static_cast<QWidget*>(m_lens), static_cast<QWidget*>(m_heads)}) {
        const bool lens = panel == m_lens;
        QDockWidget* d = addPanel(panel, lens ? tr("Logit lens") : tr("Head statistics"),
                                  lens ? QStringLiteral("logitLensDock") : QStringLiteral("headStatsDock"), Qt::LeftDockWidgetArea);
        connect(d, &QDockWidget::visibilityChanged, this, [this, lens](bool visible) {
            (lens ? m_lensShown : m_headsShown) = visible;
            applyCaptureSpec();
        });
    }
    QDockWidget* timings = addPanel(m_timings, tr("Timings"), QStringLiteral("timingsDock"), Qt::LeftDockWidgetArea);
    connect(timings, &QDockWidget::visibilityChanged, this, [this](bool visible) {
        m_timingsShown = visible;
        applyCaptureSpec();
    });
    createViewMenu();
    placeDocks();
}

void MainWindow::placeDocks() {
    QDockWidget* sampling = dock(QStringLiteral("samplingDock"));
    QDockWidget* attention = dock(QStringLiteral("attentionDock"));
    QDockWidget* inspector = dock(QStringLiteral("tokenInspectorDock"));
    QDockWidget* kv = dock(QStringLiteral("kvCacheDock"));
    QDockWidget* info = dock(QStringLiteral("modelInfoDock"));
    QDockWidget* conversations = dock(QStringLiteral("conversationsDock"));
    const QSize before = size();
    // The compact layout: the inspector panels are one tab group on the left (one column instead of
    // a stack, so a 720-pixel screen holds the tallest of them), the sampling panel on the right,
    // the chat between them, the conversations above the inspector tabs (a column of their own would
    // not leave a 1280-pixel window room for the chat).
    addDockWidget(Qt::RightDockWidgetArea, sampling);
    addDockWidget(Qt::LeftDockWidgetArea, conversations);
    splitDockWidget(conversations, attention, Qt::Vertical);
    tabifyDockWidget(attention, inspector);
    tabifyDockWidget(inspector, kv);
    tabifyDockWidget(kv, info);
    tabifyDockWidget(info, dock(QStringLiteral("promptDock")));
    tabifyDockWidget(dock(QStringLiteral("promptDock")), dock(QStringLiteral("logitLensDock")));
    tabifyDockWidget(dock(QStringLiteral("logitLensDock")), dock(QStringLiteral("headStatsDock")));
    tabifyDockWidget(dock(QStringLiteral("headStatsDock")), dock(QStringLiteral("timingsDock")));
    for (QDockWidget* d : m_docks) d->show();
    attention->raise();
    // While the docks move, the layout passes through arrangements taller than the final one, and a
    // window grows to its minimum size but never shrinks back: the size from before is put back.
    layout()->activate();
    resize(before);
    const int w = width();
    resizeDocks({attention, sampling}, {w * 34 / 100, w * 25 / 100}, Qt::Horizontal);
    // Parts of the window's height that leave the menu, tool and status bars their room.
    resizeDocks({conversations, attention}, {height() * 22 / 100, height() * 56 / 100}, Qt::Vertical);
}

void MainWindow::resetLayout() {
    for (QDockWidget* d : m_docks) {
        // A floating dock is docked first: removed while floating it would stay a separate window.
        d->setFloating(false);
        removeDockWidget(d);
    }
    addToolBar(Qt::TopToolBarArea, m_toolBar);
    m_toolBar->show();
    placeDocks();
}

QSize MainWindow::defaultSize(const QRect& available) {
    return {std::min(kMaxDefaultWidth, available.width() - kFrameAllowance / 2),
            std::min(kMaxDefaultHeight, available.height() - kFrameAllowance)};
}

QString MainWindow::layoutKey() const {
    const QScreen* s = screen() ? screen() : QGuiApplication::primaryScreen();
    return AppSettings::layoutKey(s ? s->availableGeometry() : QRect());
}

void MainWindow::restoreLayout() {
    const QString key = layoutKey();
    const QByteArray geometry = AppSettings::windowGeometry(key);
    if (!geometry.isEmpty() && restoreGeometry(geometry) && restoreState(AppSettings::windowState(key))) return;
    const QScreen* s = screen() ? screen() : QGuiApplication::primaryScreen();
    const QRect available = s ? s->availableGeometry() : QRect(0, 0, 1366, 768);
    resize(defaultSize(available).expandedTo(minimumSizeHint()).boundedTo(available.size()));
    move(available.center() - rect().center());
    placeDocks();
}

void MainWindow::restoreSettings() {
    // The theme first: the panels restyle on its change, the rest only sets values.
    setTheme(Theme::modeFromName(AppSettings::theme()), false);
    if (AppSettings::hasSampling()) m_sampling->restore(AppSettings::sampling(), AppSettings::samplingPreset());
    // Text keys of the logit bias come back as typed; they are encoded again once a model is loaded.
    if (!AppSettings::samplingLogitBias().isEmpty()) m_sampling->chainControls()->setLogitBiasText(AppSettings::samplingLogitBias());
    m_sampling->chainControls()->setTokenEncoder([this](const QString& text, std::vector<int32_t>* ids, QString* error) {
        return m_controller->worker()->encodeText(text, ids, error);
    });
    m_chat->systemPromptEdit()->setPlainText(AppSettings::systemPrompt());
    m_chat->input()->setPlainText(m_drafts->adopt());
    m_chat->colorByProbabilityBox()->setChecked(AppSettings::colourTokens());
    m_attention->setCaptureAllLayers(AppSettings::captureAllLayers());
    m_attention->setCaptureBudgetMiB(AppSettings::captureBudgetMiB());
}

void MainWindow::persistSettings() {
    // Written as they change, so a crash or a killed session keeps them too.
    connect(m_sampling, &SamplingPanel::paramsChanged, this, [](const wb::SamplingParams& p) { AppSettings::setSampling(p); });
    connect(m_controller, &ChatController::grammarRefused, this, [](const wb::SamplingParams& p) { AppSettings::setSampling(p); });
    connect(m_sampling, &SamplingPanel::presetChanged, this, [](const QString& name) { AppSettings::setSamplingPreset(name); });
    connect(m_sampling->chainControls(), &SamplerChainControls::logitBiasAccepted, this,
            [](const QString& text) { AppSettings::setSamplingLogitBias(text); });
    connect(m_chat->systemPromptEdit(), &QPlainTextEdit::textChanged, this,
            [this] { AppSettings::setSystemPrompt(m_chat->systemPromptEdit()->toPlainText()); });
    connect(m_chat->colorByProbabilityBox(), &QCheckBox::toggled, this, [](bool on) { AppSettings::setColourTokens(on); });
    // Nothing the user wrote is lost: a message typed and not sent is there after a restart.
    auto* draftTimer = new QTimer(this);
    draftTimer->setSingleShot(true);
    draftTimer->setInterval(kDraftSaveDelayMs);
    connect(draftTimer, &QTimer::timeout, this,
            [this] { m_drafts->save(m_chat->input()->toPlainText()); });
    connect(m_chat->input(), &QPlainTextEdit::textChanged, this, [this, draftTimer] {
        // Emptied (sent) at once: a crash right after a send must not bring the sent text back.
        if (!m_chat->input()->document()->isEmpty()) return draftTimer->start();
        draftTimer->stop();
        m_drafts->save(QString());
    });
    connect(m_attention->captureAllLayersBox(), &QCheckBox::toggled, this, [](bool on) { AppSettings::setCaptureAllLayers(on); });
    connect(m_attention, &AttentionPanel::captureBudgetChanged, this, [](int mib) { AppSettings::setCaptureBudgetMiB(mib); });
    connect(m_attention, &AttentionPanel::selectionChanged, this, [this](int layer, int) {
        // Before the first model the range is 0..0: that clamped value is not the user's choice.
        if (m_attentionLayerRestored) AppSettings::setAttentionLayer(layer);
    });
}

QDockWidget* MainWindow::dock(const QString& objectName) const {
    for (QDockWidget* d : m_docks)
        if (d->objectName() == objectName) return d;
    return nullptr;
}

void MainWindow::createStatusBar() {
    m_backendLabel = new QLabel(tr("no model"), this);
    m_backendLabel->setAccessibleName(tr("Backend"));
    m_speedLabel = new QLabel(this);
    m_ttftLabel = new QLabel(this);
    m_memoryLabel = new QLabel(this);
    statusBar()->addPermanentWidget(m_backendLabel);
    statusBar()->addPermanentWidget(m_speedLabel);
    statusBar()->addPermanentWidget(m_ttftLabel);
    statusBar()->addPermanentWidget(m_memoryLabel);
    // Shown only while a long prompt is being read; Stop (Esc) cancels it.
    m_prefillBar = new QProgressBar(this);
    m_prefillBar->setMaximumWidth(fontMetrics().averageCharWidth() * 30);
    m_prefillBar->setFormat(tr("prompt %v / %m"));
    m_prefillBar->hide();
    statusBar()->addWidget(m_prefillBar);
}

void MainWindow::handlePrefillProgress(int done, int total) {
    m_prefillBar->setRange(0, total);
    m_prefillBar->setValue(done);
    m_prefillBar->setVisible(done < total);
}

void MainWindow::start() {
    if (!m_loadOptions->savedProblem().isEmpty()) showError(tr("A saved setting was not used"), m_loadOptions->savedProblem());
    if (!m_contextPolicy->savedProblem().isEmpty()) showError(tr("A saved setting was not used"), m_contextPolicy->savedProblem());
    QSettings settings;
    const QString last = settings.value(QStringLiteral("lastModel")).toString();
    const QString fallback = QString::fromStdString(wb::default_model_path());
    if (!last.isEmpty() && QFileInfo::exists(last))
        m_controller->loadModel(last);
    else if (QFileInfo::exists(fallback))
        m_controller->loadModel(fallback);
    else
        // The first start (or the models were deleted): the Models dialog says what to do and offers
        // the ways to get one, instead of an empty window and an error.
        QTimer::singleShot(0, this, &MainWindow::openModelsDialog);
}

void MainWindow::openModelsDialog() {
    if (!m_modelsDialog) {
        m_modelsDialog = new ModelsDialog(this);
        connect(m_modelsDialog, &ModelsDialog::modelChosen, m_controller, &ChatController::loadModel);
    } else {
        m_modelsDialog->refresh();
    }
    // open(), not exec(): the event loop keeps running (a download, the hashing, the tests).
    m_modelsDialog->open();
    m_modelsDialog->raise();
    m_modelsDialog->activateWindow();
}

void MainWindow::openModelDialog() {
    const QString dir = QFileInfo(QSettings().value(QStringLiteral("lastModel"), QString::fromStdString(wb::default_model_path())).toString()).absolutePath();
    const QString path = QFileDialog::getOpenFileName(this, tr("Open model"), dir, tr("GGUF models (*.gguf);;All files (*)"));
    if (!path.isEmpty()) m_controller->loadModel(path);
}

void MainWindow::openConversationDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Import conversation"), QString(), tr("WhiteBox conversations (*.json)"));
    QString error;
    if (!path.isEmpty() && !m_controller->loadConversation(path, &error)) showError(tr("Cannot import the conversation"), error);
}

void MainWindow::saveConversationDialog() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Export conversation"), QStringLiteral("conversation.json"),
                                                      tr("WhiteBox conversations (*.json)"));
    QString error;
    if (!path.isEmpty() && !m_controller->saveConversation(path, &error)) showError(tr("Cannot export the conversation"), error);
}

void MainWindow::showError(const QString& title, const QString& text) {
    // Window-modal and opened, not exec()'d: the event loop (and the streaming views) keep running.
    auto* box = new QMessageBox(QMessageBox::Critical, title, text, QMessageBox::Ok, this);
    // Plain: the text may quote a server's or a file's words, never markup to render.
    box->setTextFormat(Qt::PlainText);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->setWindowModality(Qt::WindowModal);
    box->open();
}

void MainWindow::inspectToken(int messageIndex, int tokenIndex) {
    const auto& messages = m_controller->conversation().messages;
    if (messageIndex < 0 || messageIndex >= messages.size()) return;
    const auto& tokens = messages[messageIndex].tokens;
    if (tokenIndex < 0 || tokenIndex >= tokens.size()) return;
    m_inspector->setAttentionSelection(m_attention->layer(), m_attention->head());
    m_inspector->setToken(tokens[tokenIndex], messageIndex, tokenIndex);
    m_lens->setToken(tokens[tokenIndex]);
    m_heads->setToken(tokens[tokenIndex]);
    if (QDockWidget* d = dock(QStringLiteral("tokenInspectorDock"))) {
        d->show();
        d->raise();
    }
}

void MainWindow::closeEvent(QCloseEvent* event) {
#ifdef WB_HAVE_SERVER
    // First, or another program's next request could start as soon as the reply below has stopped.
    m_serve->stop();
#endif
    // Quitting loses nothing: a reply being written is stopped first and the window closes when its
    // end (final text, stop reason) is in; the event loop keeps running meanwhile.
    if (m_controller->isGenerating() && !m_forceClose) {
        event->ignore();
        if (m_closeAfterStop) return;
        m_closeAfterStop = true;
        m_controller->stop();
        statusBar()->showMessage(tr("Stopping the reply before quitting…"));
        // A worker that does not answer does not keep the window open: what was written so far is saved.
        constexpr int kCloseWaitMs = 10000;
        QTimer::singleShot(kCloseWaitMs, this, [this] {
            if (!m_closeAfterStop) return;
            m_forceClose = true;
            close();
        });
        return;
    }
    m_closeAfterStop = false;
    QString error;
    if (!m_controller->saveNow(&error)) statusBar()->showMessage(tr("The conversation could not be saved: %1").arg(error));
    AppSettings::setWindowLayout(layoutKey(), saveGeometry(), saveState());
    m_drafts->save(m_chat->input()->toPlainText());
    QMainWindow::closeEvent(event);
}

void MainWindow::handleLoadStarted(const QString& path) {
    m_loadingPath = path;
    if (!m_progress) {
        m_progress = new QProgressDialog(this);
        m_progress->setWindowTitle(tr("Loading model"));
        m_progress->setRange(0, 0);  // the engine reports no progress: a busy indicator
        m_progress->setWindowModality(Qt::WindowModal);
        m_progress->setMinimumDuration(300);
        connect(m_progress, &QProgressDialog::canceled, m_controller, &ChatController::cancelLoad);
    }
    const bool remote = path.contains(QStringLiteral("://"));
    m_progress->setWindowTitle(remote ? tr("Connecting") : tr("Loading model"));
    m_progress->setLabelText(remote ? tr("Connecting to %1…").arg(path) : tr("Loading %1…").arg(QFileInfo(path).fileName()));
    m_progress->reset();
    m_progress->setRange(0, 0);
    m_progress->setValue(0);
    statusBar()->showMessage(remote ? tr("Connecting to %1…").arg(path) : tr("Loading %1…").arg(path));
}

void MainWindow::handleLoadFinished() {
    if (m_progress) m_progress->reset();
    statusBar()->clearMessage();
}

void MainWindow::handleModelLoaded(const ModelSummary& s) {
    handleLoadFinished();
    setWindowTitle(QStringLiteral("WhiteBox — %1").arg(s.name));
    m_info->setModel(s);
    m_info->setAttentionMemory(m_controller->attentionStore()->bytesUsed(), m_controller->attentionStore()->budgetBytes());
    m_kv->setModel(s);
    m_attention->handleModelShape();
    // Another vocabulary: the logit bias's text keys name other ids.
    m_sampling->chainControls()->reencode();
    if (!m_attentionLayerRestored) {
        m_attentionLayerRestored = true;
        m_attention->setLayer(AppSettings::attentionLayer());
    }
    updateBackendLabel();
    if (!s.backendNote.isEmpty()) statusBar()->showMessage(tr("Running on the CPU: %1").arg(s.backendNote), 15000);
    // A server is not a file to open at the next start (its own setting is RemoteEngineUi's).
    if (s.isRemote()) return;
    QSettings().setValue(QStringLiteral("lastModel"), s.path);
    addRecent(s.path);
}

void MainWindow::updateBackendLabel() {
    const ModelSummary& s = m_controller->model();
    QFont f = m_backendLabel->font();
    f.setBold(!s.backendNote.isEmpty());
    m_backendLabel->setFont(f);
    if (!s.backendNote.isEmpty()) {
        // Said once, visibly: the user asked for (or defaulted to) the GPU and is not getting it. The
        // label stays short (a long one would set the window's minimum width); the reason is in its
        // tooltip, the status message and the Model info panel.
        Theme::setTextColor(m_backendLabel, Theme::Role::Warning);
        m_backendLabel->setText(tr("CPU — GPU not used"));
        m_backendLabel->setToolTip(s.backendNote);
    } else {
        m_backendLabel->setPalette(QPalette());
        m_backendLabel->setText(s.backendName.isEmpty() ? tr("no model") : s.backendName.toUpper());
        m_backendLabel->setToolTip(s.backendDescription);
    }
}

void MainWindow::handleLoadFailed(const QString& path, const QString& error) {
    handleLoadFinished();
    if (m_remoteUi->takeFailure(path)) {
        showError(tr("Cannot connect to the server"), tr("%1\n\n%2\n\nThe model in use stays; nothing was saved.").arg(path, error));
        return;
    }
    const QString kept = m_loadOptions->revertAfterFailure(path);
    if (kept.isEmpty())
        showError(tr("Cannot open the model"), tr("%1\n\n%2").arg(path, error));
    else
        showError(tr("The setting was not kept"), tr("%1\n\n%2").arg(error, kept));
}

void MainWindow::handleTimings(const wb::Timings& t) {
    if (t.n_decode > 0) m_speedLabel->setText(tr("%1 tok/s").arg(t.decode_tps(), 0, 'f', 1));
    if (t.ttft_ms > 0) m_ttftLabel->setText(tr("first token %1 ms").arg(t.ttft_ms, 0, 'f', 0));
}

void MainWindow::handleKvStats(const wb::KvStats& stats) {
    m_kvReserved = stats.bytes_reserved;
    updateMemory();
}

void MainWindow::handleGeneratingChanged(bool generating) {
    if (!generating && m_prefillBar) m_prefillBar->hide();
    m_stopAction->setEnabled(generating);
    m_regenerateAction->setEnabled(!generating);
    // After the controller has saved the finished reply (queued: not from inside its signal).
    if (!generating && m_closeAfterStop) QTimer::singleShot(0, this, &QWidget::close);
}

void MainWindow::handleEscape() {
    if (m_controller->isGenerating())
        m_controller->stop();
    else if (m_chat->editingIndex() >= 0)
        m_chat->cancelEdit();
}

quint64 MainWindow::residentBytes() {
    QFile f(QStringLiteral("/proc/self/statm"));
    if (!f.open(QIODevice::ReadOnly)) return 0;
    const QList<QByteArray> fields = f.readAll().split(' ');
    return fields.size() > 1 ? fields[1].toULongLong() * quint64(sysconf(_SC_PAGESIZE)) : 0;
}

void MainWindow::updateMemory() {
    m_memoryLabel->setText(tr("memory %1 (KV %2)").arg(formatBytes(double(residentBytes())), formatBytes(double(m_kvReserved))));
}

void MainWindow::updateCaptureSpec(const QVector<int>& layers) {
    m_captureLayers = layers;
    applyCaptureSpec();
}

void MainWindow::applyCaptureSpec() {
    m_controller->setHeadStatsWanted(m_recordInspection || m_headsShown);
    const bool timings = m_recordInspection || m_timingsShown;
    m_controller->setTimingsWanted(timings);
    wb::CaptureSpec spec;
    spec.layer_timing = timings && m_timings->layerTimingWanted();
    spec.logit_lens = m_recordInspection || m_lensShown ? LogitLensPanel::kTop : 0;
    spec.layers.assign(m_captureLayers.begin(), m_captureLayers.end());
    spec.prefill_attention = true;
    spec.decode_attention = true;
    spec.top_candidates = kTopCandidates;
    spec.sampler_trace = true;
    m_controller->setCaptureSpec(spec);
}

void MainWindow::setRecordInspection(bool on) {
    m_recordInspection = on;
    applyCaptureSpec();
}

void MainWindow::showInspection(int messageIndex, int tokenIndex) {
    const auto& messages = m_controller->conversation().messages;
    if (messageIndex < 0 || messageIndex >= messages.size() || tokenIndex < 0 || tokenIndex >= messages[messageIndex].tokens.size()) return;
    const TokenRecord& t = messages[messageIndex].tokens[tokenIndex];
    if (!t.inspection) return;
    if (!t.inspection->lens.empty()) m_lens->setToken(t);
    if (!t.inspection->heads.empty()) m_heads->setToken(t);
}

void MainWindow::addRecent(const QString& path) {
    QSettings settings;
    QStringList recent = settings.value(QStringLiteral("recentModels")).toStringList();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > kMaxRecent) recent.removeLast();
    settings.setValue(QStringLiteral("recentModels"), recent);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
    m_recentMenu->clear();
    const QStringList recent = QSettings().value(QStringLiteral("recentModels")).toStringList();
    for (const QString& path : recent)
        m_recentMenu->addAction(QFileInfo(path).fileName(), this, [this, path] { m_controller->loadModel(path); })->setToolTip(path);
    m_recentMenu->setEnabled(!recent.isEmpty());
}
