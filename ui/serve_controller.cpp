#include "serve_controller.h"

#include <QFileInfo>
#include <QMetaObject>
#include <QSettings>

#include <algorithm>
#include <cmath>

#include "chat_controller.h"
#include "context_budget.h"
#include "conversation.h"
#include "inference_worker.h"
#include "serve_executor.h"
#include "server/http_server.h"
#include "server/loopback.h"
#include "util/error.h"

namespace {
const char* kHostKey = "serve/host";
const char* kPortKey = "serve/port";
const char* kKeyKey = "serve/apiKey";
}  // namespace

ServeSettings ServeSettings::load() {
    QSettings s;
    ServeSettings out;
    out.host = s.value(kHostKey, out.host).toString();
    out.port = s.value(kPortKey, out.port).toInt();
    out.apiKey = s.value(kKeyKey, out.apiKey).toString();
    return out;
}

void ServeSettings::save() const {
    QSettings s;
    s.setValue(kHostKey, host);
    s.setValue(kPortKey, port);
    s.setValue(kKeyKey, apiKey);
}

ServeController::ServeController(ChatController* chat, QObject* parent) : QObject(parent), m_chat(chat) {
    // Before the worker is asked to load: the server's threads read the model that load replaces.
    connect(m_chat, &ChatController::aboutToLoad, this, [this] {
        if (!isServing()) return;
        stop();
        Q_EMIT stoppedBecause(tr("Serving stopped: another model is being loaded. Turn it on again under Server."));
    });
    connect(m_chat, &ChatController::tokenEvent, this, &ServeController::handleToken);
    connect(m_chat, &ChatController::generationFinished, this, &ServeController::handleFinished);
    // A reply of the user's own ended: a request may be waiting for the worker.
    connect(m_chat, &ChatController::generatingChanged, this, [this](bool on) {
        if (!on) postDispatch();
    });
    connect(m_chat, &ChatController::loadingChanged, this, [this](bool on) {
        if (!on) postDispatch();
    });
}

ServeController::~ServeController() { stop(); }

bool ServeController::start(const ServeSettings& settings, QString* error) {
    const auto fail = [error](const QString& why) {
        if (error) *error = why;
        return false;
    };
    if (isServing()) return fail(tr("The model is already being served at %1.").arg(m_address));
    const wb::Model* model = m_chat->worker()->loadedModel();
    if (!m_chat->hasModel() || m_chat->isLoading() || !model) return fail(tr("Load a model first: the server serves the loaded model."));
    const std::string host = settings.host.trimmed().toStdString();
    if (host.empty()) return fail(tr("Give a host to listen on (127.0.0.1 for this machine only)."));
    if (!wb::server::is_loopback_host(host) && settings.apiKey.isEmpty())
        return fail(tr("Serving on %1 needs an API key: anyone who can reach that address could use the model. "
                       "Set a key in Server > Server settings, or listen on 127.0.0.1.")
                        .arg(settings.host));
    if (settings.port < 0 || settings.port > 65535) return fail(tr("The port %1 is not between 0 and 65535.").arg(settings.port));

    wb::server::ServerOptions o;
    o.host = host;
    o.port = settings.port;
    o.api_key = settings.apiKey.toStdString();
    o.model_id = QFileInfo(m_chat->model().path).completeBaseName().toStdString();
    // A request that sets nothing samples as the Sampling panel does, but without the panel's grammar
    // or stop strings: those belong to the user's chat, and would silently bend another program's replies.
    o.defaults = m_chat->samplingParams();
    o.defaults.grammar.clear();
    o.defaults.grammar_mode = wb::GrammarMode::NONE;
    o.defaults.grammar_source.clear();
    o.defaults.stop.clear();
    o.defaults.max_tokens = 0;
    // A request is checked against the prompt the worker will build (the template the user chose, the
    // context policy, the room kept for the reply), so the worker never refuses one after its 200.
    const int n_ctx = m_chat->model().contextSize;
    InferenceWorker* worker = m_chat->worker();
    auto measure = [worker, n_ctx](const std::vector<wb::ChatMessage>& messages) {
        const InferenceWorker::PromptMeasure m =
            worker->measurePrompt(Conversation::fromApiMessages(messages).toEngineMessages());
        wb::server::ExecutorPrompt out;
        out.ids = m.ids;
        out.must_fit = m.mustFit;
        out.reply_room = context_budget::replyRoom(n_ctx);
        return out;
    };
    // /props and the end of a chat reply follow the template the worker renders with (the user's choice).
    auto chat_template = [worker] { return worker->chatTemplate(); };
    auto executor = std::make_unique<AppJobExecutor>([this] { postDispatch(); }, n_ctx, measure, chat_template);
    std::unique_ptr<wb::server::HttpServer> server;
    try {
        server = std::make_unique<wb::server::HttpServer>(*model, o, *executor);
        m_port = server->bind();
    } catch (const wb::Error& e) {
        return fail(tr("Cannot serve: %1").arg(QString::fromUtf8(e.what())));
    }
    m_executor = std::move(executor);
    m_server = std::move(server);
    m_thread = std::thread([s = m_server.get()] { s->run(); });
    m_address = QStringLiteral("http://%1:%2").arg(settings.host.trimmed()).arg(m_port);
    settings.save();
    Q_EMIT servingChanged(true, m_address);
    return true;
}

void ServeController::stop() {
    if (!m_server) return;
    // Ends every job (the HTTP threads waiting on them return), then stops listening and waits for
    // the server's threads: none is left blocked on the GUI thread, which this is, and their waits on
    // a slow client's socket end at once (GuardedServer::stop_now), so this takes milliseconds.
    m_server->stop();
    if (m_thread.joinable()) m_thread.join();
    m_server.reset();
    m_executor.reset();
    if (m_request) {
        // The client has its reply so far; the worker stops it and the conversation keeps it.
        if (m_chat->activeRequest() == m_request) m_chat->stop();
        m_request = 0;
    }
    m_address.clear();
    m_port = 0;
    Q_EMIT servingChanged(false, QString());
}

void ServeController::postDispatch() {
    QMetaObject::invokeMethod(this, &ServeController::dispatch, Qt::QueuedConnection);
}

void ServeController::dispatch() {
    if (!m_executor) return;
    if (m_request) {
        if (m_executor->running_cancelled() && m_chat->activeRequest() == m_request) m_chat->stop();
        return;
    }
    // Queued behind the user's own reply (or a load): generatingChanged brings it back here.
    if (m_chat->isGenerating() || m_chat->isLoading() || !m_chat->hasModel()) return;
    const std::shared_ptr<wb::server::Job> job = m_executor->take_next();
    if (!job) return;
    m_logprobs = job->logprobs;
    m_topLogprobs = job->top_logprobs;
    QString error;
    wb::SamplingParams params = job->params;
    // The HTTP layer added the template's end-of-turn texts to a chat request's stop strings; the worker
    // adds them itself, so the Sampling panel does not show them as the request's.
    const std::shared_ptr<const wb::ChatTemplate> used = m_chat->worker()->chatTemplate();
    const std::vector<std::string> turnStops = used ? used->end_of_turn_texts() : std::vector<std::string>{};
    std::vector<std::string>& stop = params.stop;
    stop.erase(std::remove_if(stop.begin(), stop.end(),
                              [&turnStops](const std::string& s) {
                                  return std::find(turnStops.begin(), turnStops.end(), s) != turnStops.end();
                              }),
               stop.end());
    m_request = job->cancelled() ? 0 : m_chat->startApiConversation(job->messages, params, &error);
    if (!m_request) {
        wb::GenerateResult r;
        r.reason = job->cancelled() ? wb::StopReason::STOPPED : wb::StopReason::ERROR;
        r.error = QStringLiteral("the WhiteBox app could not start the reply: %1").arg(error).toStdString();
        m_executor->finish_running(r);
        postDispatch();
    }
}

void ServeController::handleToken(const wb::TokenEvent& event) {
    if (!m_request || !m_executor || m_chat->activeRequest() != m_request) return;
    wb::server::StreamToken t;
    t.text = event.piece;
    if (m_logprobs) {
        // The distribution the sampler saw, as far as the app's capture goes (its top candidates).
        const auto logp = [](float p) { return float(std::log(double(p))); };
        t.logprob.token = event.token_piece;
        t.logprob.logprob = logp(event.p_raw);
        for (size_t i = 0; i < event.candidates.size() && int(i) < m_topLogprobs; ++i)
            t.logprob.top.emplace_back(event.candidates[i].piece, logp(event.candidates[i].p_raw));
    }
    m_executor->token(event.id, std::move(t));
}

void ServeController::handleFinished(const GenerationSummary& summary) {
    if (!m_request || summary.requestId != m_request) return;
    m_request = 0;
    wb::GenerateResult r;
    r.text = summary.text.toStdString();
    r.reason = summary.reason;
    r.error = summary.error.toStdString();
    r.timings = summary.timings;
    r.seed = summary.seed;
    if (m_executor) m_executor->finish_running(std::move(r));
    postDispatch();
}
