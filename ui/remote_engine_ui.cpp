#include "remote_engine_ui.h"

#include <QAction>
#include <QWidget>

#include "chat_controller.h"
#include "internals_notice.h"
#include "remote_connect_dialog.h"

RemoteEngineUi::RemoteEngineUi(ChatController* controller, QWidget* window)
    : QObject(window), m_controller(controller), m_window(window) {
    m_action = new QAction(tr("Connect to &server…"), this);
    m_action->setObjectName(QStringLiteral("connectRemoteAction"));
    m_action->setToolTip(tr("Chat with a model on an OpenAI-compatible server (WhiteBox, llama-server, vLLM, Ollama, LM Studio)"));
    connect(m_action, &QAction::triggered, this, &RemoteEngineUi::openDialog);
    // The worker loads one thing at a time, in order: the load that ends is the one that started last.
    connect(controller, &ChatController::loadStarted, this, [this](const QString& path) { m_loading = path; });
    connect(controller, &ChatController::modelLoaded, this, &RemoteEngineUi::handleModelLoaded);
    // A canceled connection is forgotten as a failed one is.
    connect(controller, &ChatController::loadCanceled, this, [this](const QString& path) { takeFailure(path); });
}

void RemoteEngineUi::addNotice(QWidget* panel, const QString& what) {
    m_notices << new InternalsNotice(panel, what);
}

void RemoteEngineUi::openDialog() {
    if (!m_dialog) {
        m_dialog = new RemoteConnectDialog(dialogDefaults(), m_window);
        m_dialog->setAttribute(Qt::WA_DeleteOnClose);
        connect(m_dialog, &RemoteConnectDialog::connectRequested, this,
                [this](const QString& url, const QString& key, const QString& model) {
                    m_lastAttempt = {url, key, model};
                    connectTo(m_lastAttempt);
                });
    }
    // open(), not exec(): the event loop (a streaming reply, the tests) keeps running.
    m_dialog->open();
}

AppSettings::RemoteEngine RemoteEngineUi::dialogDefaults() const {
    return m_lastAttempt.url.isEmpty() ? AppSettings::remoteEngine() : m_lastAttempt;
}

void RemoteEngineUi::connectFromCommandLine(const QString& url) {
    const AppSettings::RemoteEngine saved = AppSettings::remoteEngine();
    if (!saved.url.isEmpty() && saved.url.trimmed() == url.trimmed())
        connectTo(saved);
    else
        connectTo({url, QString(), QString()}, false);
}

void RemoteEngineUi::connectTo(const AppSettings::RemoteEngine& engine, bool keep) {
    m_pending = engine;
    m_pendingKeep = keep;
    m_controller->connectRemote(engine.url, engine.apiKey, engine.model);
}

bool RemoteEngineUi::takeFailure(const QString& path) {
    if (m_pending.url.isEmpty() || path != m_pending.url) return false;
    m_pending = {};
    m_pendingKeep = false;
    return true;
}

void RemoteEngineUi::handleModelLoaded(const ModelSummary& summary) {
    for (InternalsNotice* n : m_notices) n->setRemote(summary.isRemote(), summary.remoteUrl);
    // Only the pending connection's own answer settles it: a local load queued before it ends first
    // and says nothing about it (the connection may still fail, and must then be forgotten as failed).
    if (!summary.isRemote() || m_pending.url.isEmpty() || m_loading != m_pending.url) return;
    // Kept only now that the server answered: a setting that failed is never saved.
    if (m_pendingKeep) AppSettings::setRemoteEngine(m_pending);
    m_pending = {};
    m_pendingKeep = false;
}
