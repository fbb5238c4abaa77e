#pragma once
// The main window's side of a remote engine: File > Connect to server… (its dialog), the setting
// kept once a connection worked (and only then), and the notices over the panels a remote engine
// cannot feed. The connection itself is the worker's (ChatController::connectRemote).
#include <QList>
#include <QObject>
#include <QPointer>

#include "app_settings.h"
#include "model_summary.h"
#include "remote_connect_dialog.h"

class ChatController;
class InternalsNotice;
class QAction;
class QWidget;

class RemoteEngineUi : public QObject {
    Q_OBJECT

public:
    RemoteEngineUi(ChatController* controller, QWidget* window);

    QAction* connectAction() const { return m_action; }
    // Covers `panel` while replies come from a remote engine ("does not expose <what>").
    void addNotice(QWidget* panel, const QString& what);
    const QList<InternalsNotice*>& notices() const { return m_notices; }
    RemoteConnectDialog* dialog() const { return m_dialog; }

    // Connects as the dialog's Connect does; kept (saved) once it answers when `keep`.
    void connectTo(const AppSettings::RemoteEngine& engine, bool keep = true);
    // `whitebox --remote URL`: the saved key and model go with it when URL is the saved one (and the
    // connection is kept as the dialog's is); another URL connects without key or model and is not
    // kept, so the saved connection is never lost to a command line.
    void connectFromCommandLine(const QString& url);
    // What the dialog opens with: the last connection asked for in this run (never saved unless it
    // worked), else the saved one.
    AppSettings::RemoteEngine dialogDefaults() const;
    // The load of `path` that failed was this class's connection: true, and it is forgotten (the
    // caller shows the error; nothing is kept).
    bool takeFailure(const QString& path);

public Q_SLOTS:
    void openDialog();
    // Keeps the pending connection's settings when it is the one that loaded; shows or hides the notices.
    void handleModelLoaded(const ModelSummary& summary);

private:
    ChatController* m_controller;
    QWidget* m_window;
    QAction* m_action;
    QPointer<RemoteConnectDialog> m_dialog;
    QList<InternalsNotice*> m_notices;
    // The connection asked for and not answered yet (url empty: none), and whether it is saved once it works.
    AppSettings::RemoteEngine m_pending;
    bool m_pendingKeep = false;
    // What the worker is loading or last loaded (its loadStarted): which load a modelLoaded answers.
    QString m_loading;
    // The last connection the dialog asked for, in memory only: a failed one is offered again as typed.
    AppSettings::RemoteEngine m_lastAttempt;
};
