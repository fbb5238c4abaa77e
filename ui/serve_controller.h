#pragma once
// ServeController: the desktop app serving its loaded model (issue 19 item 2). An HttpServer (the CLI
// server's HTTP layer, core/server/http_server.h) runs on a thread of its own over an AppJobExecutor;
// each request waits there until the GUI thread finds the one worker idle, then runs through
// ChatController::startApiConversation as a conversation in the chat list, so the attention, KV cache
// and token inspector panels show it like any reply. Its tokens go back to the HTTP client as the
// worker sends them. Stop, New chat or loading a model end the client's reply; a client that hangs
// up stops it. The settings (host, port, key) are written only after a start succeeded.
#include <QObject>
#include <QString>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine_types.h"

class AppJobExecutor;
class ChatController;
namespace wb::server {
class HttpServer;
}

struct ServeSettings {
    QString host = QStringLiteral("127.0.0.1");
    int port = 8080;  // 0: any free port
    QString apiKey;   // kept in plain text in the app's settings file

    static ServeSettings load();
    void save() const;
};

class ServeController : public QObject {
    Q_OBJECT

public:
    explicit ServeController(ChatController* chat, QObject* parent = nullptr);
    ~ServeController() override;  // stop()

    // Serves the loaded model at the settings' address. False with *error, and nothing saved or
    // left listening, without a model, on a host other than loopback without a key, or when the
    // address cannot be bound.
    bool start(const ServeSettings& settings, QString* error);
    // Stops listening and frees the port; a request waiting gets an error and a reply being
    // generated for a client ends (what it has so far goes to its client, the conversation keeps it).
    void stop();
    bool isServing() const { return m_server != nullptr; }
    // "http://HOST:PORT" while serving.
    QString address() const { return m_address; }
    int port() const { return m_port; }
    const AppJobExecutor* executor() const { return m_executor.get(); }

Q_SIGNALS:
    void servingChanged(bool serving, const QString& address);
    // Serving stopped without the user asking (a model is being loaded), in words.
    void stoppedBecause(const QString& why);

private:
    // GUI thread: stops the reply of a client that left, or starts the next request when the worker is free.
    void dispatch();
    void postDispatch();
    void handleToken(const wb::TokenEvent& event);
    void handleFinished(const GenerationSummary& summary);

    ChatController* m_chat;
    std::unique_ptr<AppJobExecutor> m_executor;
    std::unique_ptr<wb::server::HttpServer> m_server;
    std::thread m_thread;  // runs m_server
    QString m_address;
    int m_port = 0;
    quint64 m_request = 0;  // the chat controller's request generating the running job
    int m_topLogprobs = 0;  // of the running job (0 without logprobs)
    bool m_logprobs = false;
};
