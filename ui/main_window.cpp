#include "main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QProgressDialog>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <unistd.h>

#include "attention_panel.h"
#include "chat_controller.h"
#include "chat_panel.h"
#include "kv_cache_panel.h"
#include "message_edit.h"
#include "model/model_paths.h"
#include "model_info_panel.h"
#include "models_dialog.h"
#include "sampling_panel.h"
#include "token_inspector.h"

namespace {

constexpr int kMaxRecent = 8;
// Candidates per token event: the chart shows 12, the inspector lists them all.
constexpr int kTopCandidates = 20;

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
    m_chat = new ChatPanel(m_controller, this);
    setCentralWidget(m_chat);
    m_sampling = new SamplingPanel(this);
    m_attention = new AttentionPanel(m_controller->attentionStore(), this);
    m_kv = new KvCachePanel(this);
    m_inspector = new TokenInspector(m_controller->attentionStore(), this);
    m_info = new ModelInfoPanel(this);

    QSettings settings;
    m_controller->setBackend(settings.value(QStringLiteral("backend"), QStringLiteral("auto")).toString());
    m_controller->setContextSize(settings.value(QStringLiteral("contextSize"), 0).toInt());

    createActions();
    createDocks();
    createStatusBar();

    // GUI-thread wiring (same thread, direct); the worker's connections live in ChatController.
    connect(m_controller, &ChatController::loadStarted, this, &MainWindow::handleLoadStarted);
    connect(m_controller, &ChatController::modelLoaded, this, &MainWindow::handleModelLoaded);
    connect(m_controller, &ChatController::loadFailed, this, &MainWindow::handleLoadFailed);
    connect(m_controller, &ChatController::loadCanceled, this, &MainWindow::handleLoadFinished);
    connect(m_controller, &ChatController::fileHashReady, m_info, &ModelInfoPanel::setFileHash);
    connect(m_controller, &ChatController::timingsChanged, this, &MainWindow::handleTimings);
    connect(m_controller, &ChatController::prefillProgress, this, &MainWindow::handlePrefillProgress);
    connect(m_controller, &ChatController::kvStatsChanged, this, &MainWindow::handleKvStats);
    connect(m_controller, &ChatController::kvStatsChanged, m_kv, &KvCachePanel::handleStats);
    connect(m_controller, &ChatController::generatingChanged, this, &MainWindow::handleGeneratingChanged);
    connect(m_controller, &ChatController::tokenEvent, m_sampling, &SamplingPanel::handleTokenEvent);
    connect(m_controller, &ChatController::samplingParamsRestored, m_sampling, &SamplingPanel::setParams);
    connect(m_controller, &ChatController::errorOccurred, this, [this](const QString& e) { showError(tr("Generation failed"), e); });
    connect(m_controller, &ChatController::notice, this, [this](const QString& n) { statusBar()->showMessage(n, 8000); });
    connect(m_controller, &ChatController::conversationReset, m_inspector, &TokenInspector::clear);
    connect(m_sampling, &SamplingPanel::paramsChanged, m_controller, &ChatController::setSamplingParams);
    connect(m_attention, &AttentionPanel::captureLayersChanged, this, &MainWindow::updateCaptureSpec);
    connect(m_attention, &AttentionPanel::selectionChanged, m_inspector, &TokenInspector::setAttentionSelection);
    connect(m_chat, &ChatPanel::tokenClicked, this, &MainWindow::inspectToken);

    m_controller->setSamplingParams(m_sampling->params());
    updateCaptureSpec({0});

    resize(1600, 1000);
    restoreGeometry(settings.value(QStringLiteral("geometry")).toByteArray());
    restoreState(settings.value(QStringLiteral("windowState")).toByteArray());
    m_chat->input()->setFocus();

    auto* memoryTimer = new QTimer(this);
    connect(memoryTimer, &QTimer::timeout, this, &MainWindow::updateMemory);
    memoryTimer->start(1000);
    updateMemory();
}

MainWindow::~MainWindow() = default;

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
    file->addSeparator();
    QAction* openConv = file->addAction(tr("Open conversation…"), this, &MainWindow::openConversationDialog);
    openConv->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O));
    QAction* saveConv = file->addAction(tr("&Save conversation…"), this, &MainWindow::saveConversationDialog);
    saveConv->setShortcut(QKeySequence::Save);
    file->addSeparator();
    file->addAction(tr("&Quit"), this, &QWidget::close)->setShortcut(QKeySequence::Quit);

    QMenu* model = menuBar()->addMenu(tr("&Model"));
    QMenu* backend = model->addMenu(tr("Backend"));
    m_backendGroup = new QActionGroup(this);
    for (const QString& b : {QStringLiteral("auto"), QStringLiteral("cpu"), QStringLiteral("cuda")}) {
        QAction* a = backend->addAction(b == QLatin1String("auto") ? tr("auto (CUDA if usable, else CPU)") : b.toUpper());
        a->setData(b);
        a->setCheckable(true);
        a->setChecked(b == m_controller->backend());
        m_backendGroup->addAction(a);
    }
    QMenu* context = model->addMenu(tr("Context size"));
    m_contextGroup = new QActionGroup(this);
    for (int n : {0, 512, 1024, 2048, 4096, 8192, 16384, 32768}) {
        QAction* a = context->addAction(n == 0 ? tr("model default (≤ 4096)") : tr("%1 tokens").arg(n));
        a->setData(n);
        a->setCheckable(true);
        a->setChecked(n == m_controller->contextSize());
        m_contextGroup->addAction(a);
    }
    connect(m_backendGroup, &QActionGroup::triggered, this, [this](QAction* a) {
        m_controller->setBackend(a->data().toString());
        QSettings().setValue(QStringLiteral("backend"), a->data());
        reloadWithSettings();
    });
    connect(m_contextGroup, &QActionGroup::triggered, this, [this](QAction* a) {
        m_controller->setContextSize(a->data().toInt());
        QSettings().setValue(QStringLiteral("contextSize"), a->data());
        reloadWithSettings();
    });

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

    QToolBar* bar = addToolBar(tr("Main"));
    bar->setObjectName(QStringLiteral("mainToolBar"));
    bar->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    bar->addAction(open);
    bar->addAction(models);
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
        bar->addWidget(button);
    }
    rebuildRecentMenu();
    handleGeneratingChanged(false);
}

QDockWidget* MainWindow::addPanel(QWidget* panel, const QString& title, const QString& objectName, Qt::DockWidgetArea area) {
    auto* dock = new QDockWidget(title, this);
    dock->setObjectName(objectName);
    dock->setWidget(panel);
    addDockWidget(area, dock);
    m_viewMenu->addAction(dock->toggleViewAction());
    m_docks << dock;
    return dock;
}

void MainWindow::createDocks() {
    QDockWidget* sampling = addPanel(m_sampling, tr("Sampling"), QStringLiteral("samplingDock"), Qt::RightDockWidgetArea);
    QDockWidget* attention = addPanel(m_attention, tr("Attention"), QStringLiteral("attentionDock"), Qt::LeftDockWidgetArea);
    QDockWidget* kv = addPanel(m_kv, tr("KV cache"), QStringLiteral("kvCacheDock"), Qt::LeftDockWidgetArea);
    QDockWidget* inspector = addPanel(m_inspector, tr("Token inspector"), QStringLiteral("tokenInspectorDock"), Qt::LeftDockWidgetArea);
    QDockWidget* info = addPanel(m_info, tr("Model info"), QStringLiteral("modelInfoDock"), Qt::LeftDockWidgetArea);
    // Left column: the attention map above a tab group of the per-token and per-model views; the
    // sampling panel gets the whole right column so its chart has room.
    splitDockWidget(attention, kv, Qt::Vertical);
    tabifyDockWidget(kv, inspector);
    tabifyDockWidget(inspector, info);
    kv->raise();
    resizeDocks({attention, sampling}, {640, 430}, Qt::Horizontal);
    resizeDocks({attention, kv}, {520, 420}, Qt::Vertical);
}

QDockWidget* MainWindow::dock(const QString& objectName) const {
    for (QDockWidget* d : m_docks)
        if (d->objectName() == objectName) return d;
    return nullptr;
}

void MainWindow::createStatusBar() {
    m_backendLabel = new QLabel(tr("no model"), this);
    m_speedLabel = new QLabel(this);
    m_ttftLabel = new QLabel(this);
    m_memoryLabel = new QLabel(this);
    statusBar()->addPermanentWidget(m_backendLabel);
    statusBar()->addPermanentWidget(m_speedLabel);
    statusBar()->addPermanentWidget(m_ttftLabel);
    statusBar()->addPermanentWidget(m_memoryLabel);
    // Shown only while a long prompt is being read; Stop (Esc) cancels it.
    m_prefillBar = new QProgressBar(this);
    m_prefillBar->setMaximumWidth(220);
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

void MainWindow::reloadWithSettings() {
    if (m_controller->hasModel() && !m_controller->isLoading()) m_controller->loadModel(m_controller->model().path);
}

void MainWindow::openConversationDialog() {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open conversation"), QString(), tr("WhiteBox conversations (*.json)"));
    QString error;
    if (!path.isEmpty() && !m_controller->loadConversation(path, &error)) showError(tr("Cannot open the conversation"), error);
}

void MainWindow::saveConversationDialog() {
    const QString path = QFileDialog::getSaveFileName(this, tr("Save conversation"), QStringLiteral("conversation.json"),
                                                      tr("WhiteBox conversations (*.json)"));
    QString error;
    if (!path.isEmpty() && !m_controller->saveConversation(path, &error)) showError(tr("Cannot save the conversation"), error);
}

void MainWindow::showError(const QString& title, const QString& text) {
    // Window-modal and opened, not exec()'d: the event loop (and the streaming views) keep running.
    auto* box = new QMessageBox(QMessageBox::Critical, title, text, QMessageBox::Ok, this);
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
    m_inspector->setToken(tokens[tokenIndex]);
    if (QDockWidget* d = dock(QStringLiteral("tokenInspectorDock"))) {
        d->show();
        d->raise();
    }
}

void MainWindow::closeEvent(QCloseEvent* event) {
    QSettings settings;
    settings.setValue(QStringLiteral("geometry"), saveGeometry());
    settings.setValue(QStringLiteral("windowState"), saveState());
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
    m_progress->setLabelText(tr("Loading %1…").arg(QFileInfo(path).fileName()));
    m_progress->reset();
    m_progress->setRange(0, 0);
    m_progress->setValue(0);
    statusBar()->showMessage(tr("Loading %1…").arg(path));
}

void MainWindow::handleLoadFinished() {
    if (m_progress) m_progress->reset();
    statusBar()->clearMessage();
}

void MainWindow::handleModelLoaded(const ModelSummary& s) {
    handleLoadFinished();
    setWindowTitle(QStringLiteral("WhiteBox — %1").arg(s.name));
    m_info->setModel(s);
    m_kv->setModel(s);
    m_attention->handleModelShape();
    QString backend = s.backendName.toUpper();
    if (!s.backendNote.isEmpty()) {
        // Said once, visibly: the user asked for (or defaulted to) the GPU and is not getting it.
        m_backendLabel->setStyleSheet(QStringLiteral("color: #b35900; font-weight: bold;"));
        m_backendLabel->setText(tr("CPU — GPU not used: %1").arg(s.backendNote.left(90)));
        m_backendLabel->setToolTip(s.backendNote);
        statusBar()->showMessage(tr("Running on the CPU: %1").arg(s.backendNote), 15000);
    } else {
        m_backendLabel->setStyleSheet(QString());
        m_backendLabel->setText(backend);
        m_backendLabel->setToolTip(s.backendDescription);
    }
    QSettings().setValue(QStringLiteral("lastModel"), s.path);
    addRecent(s.path);
}

void MainWindow::handleLoadFailed(const QString& path, const QString& error) {
    handleLoadFinished();
    showError(tr("Cannot open the model"), tr("%1\n\n%2").arg(path, error));
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
    wb::CaptureSpec spec;
    spec.layers.assign(layers.begin(), layers.end());
    spec.prefill_attention = true;
    spec.decode_attention = true;
    spec.top_candidates = kTopCandidates;
    spec.sampler_trace = true;
    m_controller->setCaptureSpec(spec);
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
