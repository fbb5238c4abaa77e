// InferenceWorker with a remote engine: an OpenAI-compatible server in place of the local model.
// The same slots and signals as the local engine, so the controller and every panel work unchanged;
// the HTTP request runs on the worker's thread as a local generation does, and Stop closes its
// connection (OpenAiClient's cancel flag, read every 50 ms even while the server is silent).
#include "inference_worker.h"

#include <algorithm>

#include <QStringList>

#ifdef WB_HAVE_REMOTE
#include "remote/openai_client.h"
#include "remote_reply.h"
#endif

#ifdef WB_HAVE_REMOTE

namespace {

// The longest silence while connecting (GET /v1/models, GET /props).
constexpr int kProbeTimeoutMs = 15000;

// A message that quotes a server (its error body, its names) as far as a message box shows it.
QString bounded(const QString& message) {
    constexpr int kMaxChars = 2000;
    return message.size() <= kMaxChars ? message : message.left(kMaxChars) + QStringLiteral(" […]");
}

// The names a server lists, for a message: the first ten (a server may list thousands).
QString joined(const std::vector<std::string>& names) {
    constexpr size_t kShown = 10;
    QStringList out;
    for (size_t i = 0; i < names.size() && i < kShown; ++i) out << QString::fromStdString(names[i]).left(200);
    if (names.size() > kShown) out << QObject::tr("and %1 more").arg(names.size() - kShown);
    return out.join(QStringLiteral(", "));
}

// The server's template as this side renders it to continue a reply (null when it gives none, one
// that does not parse or render here, when /props cannot be read, or when *cancel was set). bos_token
// is empty: the server's tokenizer adds the BOS to a completion prompt as to any (llama-server and
// WhiteBox do), so the template's own would be a second one.
std::shared_ptr<const wb::ChatTemplate> serverTemplate(const wb::remote::OpenAiClient& client,
                                                       const std::atomic<bool>* cancel) {
    std::optional<wb::remote::ServerChatTemplate> t;
    try {
        t = client.chat_template(cancel);
    } catch (const std::exception&) {
        // /props is an extra (vLLM, Ollama and OpenAI have none): a server whose list answered but
        // whose /props times out or breaks still chats; a change waits for the next reply.
        return nullptr;
    }
    if (!t) return nullptr;
    try {
        std::shared_ptr<const wb::ChatTemplate> out;
        if (!t->source.empty()) out = std::make_shared<const wb::ChatTemplate>(wb::ChatTemplate::from_jinja(t->source, {}, t->eos_token));
        else if (const auto kind = wb::builtin_chat_format(t->format)) out = std::make_shared<const wb::ChatTemplate>(wb::ChatTemplate::of_kind(*kind));
        // A template that parses may still throw on a real chat (raise_exception, a role it refuses):
        // tried now on a sample, so a continuation never throws mid-reply.
        if (out) {
            const ChatMessages sample{{"system", "You are helpful."}, {"user", "Hello"}, {"assistant", "Hi."}, {"user", "Bye"}};
            (void)out->render(sample, true);
        }
        return out;
    } catch (const std::exception&) {
        // A template this renderer cannot parse or render: replies still work, a change waits for the next one.
    }
    return nullptr;
}

// What the Model info panel and the status bar show of a remote engine: nothing of the local
// engine's (ModelSummary::isRemote).
ModelSummary remoteSummary(const wb::remote::OpenAiClient& client, const std::string& model, bool continues) {
    ModelSummary s;
    s.remoteUrl = QString::fromStdString(client.endpoint());
    s.path = s.remoteUrl;
    s.name = QString::fromStdString(model);
    s.arch = QObject::tr("remote");
    s.backendName = QStringLiteral("remote");
    s.backendDescription = QObject::tr("OpenAI-compatible server at %1").arg(s.remoteUrl);
    s.chatTemplate = continues ? QObject::tr("the server's (from its /props: a sampling change continues a reply)")
                               : QObject::tr("the server's (not exposed: a sampling change applies from the next reply)");
    return s;
}

}  // namespace

void InferenceWorker::connectRemote(const QString& url, const QString& apiKey, const QString& model) {
    m_cancelLoad.store(false);
    Q_EMIT loadStarted(url);
    try {
        wb::remote::RemoteOptions o;
        o.base_url = url.trimmed().toStdString();
        o.api_key = apiKey.trimmed().toStdString();
        o.model = model.trimmed().toStdString();
        auto client = std::make_shared<const wb::remote::OpenAiClient>(o);
        // Asked now, not at the first message: a wrong address, key or model is said before anything
        // changes (the model in use stays) and before the app keeps the setting. A list and a template
        // come at once from a live server: a shorter silence than a reply's is allowed, so a server
        // that accepts and never answers does not hold the connection (and its Cancel) for a minute.
        wb::remote::RemoteOptions probeOptions = o;
        probeOptions.read_timeout_ms = kProbeTimeoutMs;
        const wb::remote::OpenAiClient probe(probeOptions);
        const std::vector<std::string> listed = probe.models(&m_cancelLoad);
        if (m_cancelLoad.load()) {
            Q_EMIT loadCanceled(url);
            return;
        }
        if (listed.empty() && o.model.empty())
            throw wb::Error(tr("%1 lists no models; name the model to use").arg(QString::fromStdString(client->endpoint())).toStdString());
        // An empty list with a model named: some servers list nothing and serve any name asked.
        if (!o.model.empty() && !listed.empty() && std::find(listed.begin(), listed.end(), o.model) == listed.end())
            throw wb::Error(tr("%1 does not list the model %2 (it lists: %3)")
                                .arg(QString::fromStdString(client->endpoint()), model.trimmed(), joined(listed))
                                .toStdString());
        const std::string name = o.model.empty() ? listed.front() : o.model;
        std::shared_ptr<const wb::ChatTemplate> chatTemplate = serverTemplate(probe, &m_cancelLoad);
        if (m_cancelLoad.load()) {
            Q_EMIT loadCanceled(url);
            return;
        }
        releaseEngine();
        m_remote = std::move(client);
        m_remoteTemplate = std::move(chatTemplate);
        m_remoteContinues.store(m_remoteTemplate != nullptr);
        m_modelPath = QString::fromStdString(m_remote->endpoint());
        m_trimFrom = 0;
        m_trimDropped = 0;
        Q_EMIT modelLoaded(remoteSummary(*m_remote, name, m_remoteTemplate != nullptr));
    } catch (const std::exception& e) {
        Q_EMIT loadFailed(url, bounded(QString::fromUtf8(e.what())));
    }
}

void InferenceWorker::generateRemote(quint64 requestId, const ChatMessages& messages, GenerationSummary& summary) {
    // Held for the request: a load queued behind it replaces m_remote only after it.
    const std::shared_ptr<const wb::remote::OpenAiClient> client = m_remote;
    if (stopRequested(requestId)) {
        summary.reason = wb::StopReason::STOPPED;
        return;
    }
    m_remoteCancel.store(false);
    m_remoteRestart.store(false);
    m_remoteRequest.store(requestId);
    // A stop that came between the check above and the store: requestStop did not see the request.
    if (stopRequested(requestId)) m_remoteCancel.store(true);
    int32_t made = 0;  // tokens of the reply so far (events sent)
    std::string text;  // the reply so far
    try {
        wb::remote::RemoteRequest r;
        r.messages = messages;
        r.top_logprobs = remote_reply::kTopLogprobs;
        const auto onDelta = [&](const wb::remote::StreamDelta& d) {
            for (const wb::TokenEvent& ev : remote_reply::tokenEvents(d, &made)) Q_EMIT tokenGenerated(requestId, ev);
            text += d.text;
        };
        // One round per settings in force: a live change ends the stream (restartRemoteFor) and the
        // next round continues the same reply with the new settings.
        for (;;) {
            const wb::SamplingParams p = samplingParams();
            summary.params = p;
            r.sampling = remote_reply::sampling(p);
            // A completions request does not add the template's end-of-turn texts as a chat does.
            if (r.prompt)
                for (const std::string& s : m_remoteTemplate->end_of_turn_texts()) r.sampling.stop.push_back(s);
            r.max_tokens = p.max_tokens - made;  // the limit is the reply's, not the round's
            if (r.max_tokens <= 0) {
                summary.reason = wb::StopReason::MAX_TOKENS;
                break;
            }
            m_remoteGrammar.store(!r.sampling.grammar.empty());
            const wb::remote::RemoteResult res = client->complete(r, onDelta, &m_remoteCancel);
            // m_remoteTemplate is checked here, on the worker's thread (a connect, which sets it, runs
            // on this thread too): a restart asked under a stale m_remoteContinues is a plain stop.
            if (res.cancelled && m_remoteRestart.exchange(false) && m_remoteTemplate && !stopRequested(requestId)) {
                m_remoteCancel.store(false);
                // A Stop that came before the flag was cleared: its cancel must hold.
                if (stopRequested(requestId)) m_remoteCancel.store(true);
                r.prompt = remoteContinuation(messages, text);
                r.messages.clear();
                summary.paramsChanged = true;
                continue;
            }
            summary.reason = remote_reply::stopReason(res);
            break;
        }
    } catch (const std::exception& e) {
        summary.reason = wb::StopReason::ERROR;
        // Every message names the server (some of the client's, a malformed event's, do not).
        const QString where = QString::fromStdString(client->endpoint());
        summary.error = QString::fromUtf8(e.what());
        if (!summary.error.contains(where)) summary.error = tr("%1: %2").arg(where, summary.error);
        summary.error = bounded(summary.error);
    }
    m_remoteRequest.store(0);
    summary.text = QString::fromStdString(text);
}

void InferenceWorker::restartRemoteFor(const wb::SamplingParams& before, const wb::SamplingParams& now) {
    // Only what a request carries counts: a change of what it leaves out (the order while it is the
    // default's, settings of a stage that is off) would restart a stream with the same settings.
    const bool same = remote_reply::sampling(before) == remote_reply::sampling(now) && before.max_tokens == now.max_tokens;
    if (same || !m_remoteContinues.load() || m_remoteRequest.load() == 0) return;
    // A server checks a grammar against the tokens it generates only: a continuation, whose reply
    // so far is prompt, would let the joined reply break it. With a grammar in the stream or in the
    // new settings, the change applies from the next reply.
    if (m_remoteGrammar.load() || !now.grammar.empty()) return;
    m_remoteRestart.store(true);
    m_remoteCancel.store(true);
}

std::string InferenceWorker::remoteContinuation(const ChatMessages& messages, const std::string& reply) const {
    // The server's own template gives the prompt it rendered for the chat; the reply so far follows
    // as text, which the server tokenizes again (its tokens at the seam may differ from the streamed
    // ones, the text does not).
    return m_remoteTemplate->render(messages, true) + reply;
}

#else  // no remote client in this build

void InferenceWorker::connectRemote(const QString& url, const QString&, const QString&) {
    Q_EMIT loadFailed(url, tr("This build of WhiteBox has no remote client (it was configured with WB_SERVER=OFF)."));
}

void InferenceWorker::generateRemote(quint64, const ChatMessages&, GenerationSummary& summary) {
    summary.reason = wb::StopReason::ERROR;
    summary.error = tr("This build of WhiteBox has no remote client.");
}

void InferenceWorker::restartRemoteFor(const wb::SamplingParams&, const wb::SamplingParams&) {}

std::string InferenceWorker::remoteContinuation(const ChatMessages&, const std::string&) const {
    return {};
}

#endif
