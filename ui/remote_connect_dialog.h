#pragma once
// File > Connect to server…: the address of an OpenAI-compatible server (WhiteBox's own serve,
// llama-server, vLLM, Ollama, LM Studio), an optional API key and an optional model name. It only
// asks: the connection is tried by the worker (ChatController::connectRemote), and the main window
// keeps the values (AppSettings::setRemoteEngine) once it worked, never before.
#include <QDialog>

#include "app_settings.h"

class QLineEdit;
class QPushButton;

class RemoteConnectDialog : public QDialog {
    Q_OBJECT

public:
    // Filled with `last` (the last connection that worked).
    explicit RemoteConnectDialog(const AppSettings::RemoteEngine& last, QWidget* parent = nullptr);

    AppSettings::RemoteEngine engine() const;
    QLineEdit* urlEdit() const { return m_url; }
    QLineEdit* keyEdit() const { return m_key; }
    QLineEdit* modelEdit() const { return m_model; }
    QPushButton* connectButton() const { return m_connect; }

Q_SIGNALS:
    void connectRequested(const QString& url, const QString& apiKey, const QString& model);

private:
    QLineEdit* m_url;
    QLineEdit* m_key;
    QLineEdit* m_model;
    QPushButton* m_connect;
};
