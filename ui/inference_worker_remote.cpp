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

QString joined(const std::vector<std::string>& names) {
    QStringList out;
    for (const std::string& n : names) out << QString::fromStdString(n);
    return out.join(QStringLiteral(", "));
}

// What the Model info panel and the status bar show of a remote engine: nothing of the local
// engine's (ModelSummary::isRemote).
ModelSummary remoteSummary(const wb::remote::OpenAiClient& client, const std::string& model) {
    ModelSummary s;
    s.remoteUrl = QString::fromStdString(client.endpoint());
    s.path = s.remoteUrl;
    s.name = QString::fromStdString(model);
    s.arch = QObject::tr("remote");
    s.backendName = QStringLiteral("remote");
    s.backendDescription = QObject::tr("OpenAI-compatible server at %1").arg(s.remoteUrl);
    s.chatTemplate = QObject::tr("the server's");
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
        // changes (the model in use stays) and before the app keeps the setting.
        const std::vector<std::string> listed = client->models();
        if (m_cancelLoad.load()) {
            Q_EMIT loadCanceled(url);
            return;
        }
        if (listed.empty() && o.model.empty())
            throw wb::Error(tr("%1 lists no models; name the model to use").arg(QString::fromStdString(client->endpoint())).toStdString());
        if (!o.model.empty() && std::find(listed.begin(), listed.end(), o.model) == listed.end())
            throw wb::Error(tr("%1 does not list the model %2 (it lists: %3)")
                                .arg(QString::fromStdString(client->endpoint()), model.trimmed(), joined(listed))
                                .toStdString());
        const std::string name = o.model.empty() ? listed.front() : o.model;
        releaseEngine();
        m_remote = std::move(client);
        m_modelPath = QString::fromStdString(m_remote->endpoint());
        m_trimFrom = 0;
        Q_EMIT modelLoaded(remoteSummary(*m_remote, name));
    } catch (const std::exception& e) {
        Q_EMIT loadFailed(url, QString::fromUtf8(e.what()));
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
        const wb::SamplingParams p = samplingParams();
        r.sampling = remote_reply::sampling(p);
        r.max_tokens = p.max_tokens;
        summary.params = p;
        const wb::remote::RemoteResult res = client->complete(r, [&](const wb::remote::StreamDelta& d) {
            for (const wb::TokenEvent& ev : remote_reply::tokenEvents(d, &made)) Q_EMIT tokenGenerated(requestId, ev);
            text += d.text;
        }, &m_remoteCancel);
        summary.reason = remote_reply::stopReason(res);
    } catch (const std::exception& e) {
        summary.reason = wb::StopReason::ERROR;
        // Every message names the server (some of the client's, a malformed event's, do not).
        const QString where = QString::fromStdString(client->endpoint());
        summary.error = QString::fromUtf8(e.what());
        if (!summary.error.contains(where)) summary.error = tr("%1: %2").arg(where, summary.error);
    }
    m_remoteRequest.store(0);
    summary.text = QString::fromStdString(text);
}

#else  // no remote client in this build

void InferenceWorker::connectRemote(const QString& url, const QString&, const QString&) {
    Q_EMIT loadFailed(url, tr("This build of WhiteBox has no remote client (it was configured with WB_SERVER=OFF)."));
}

void InferenceWorker::generateRemote(quint64, const ChatMessages&, GenerationSummary& summary) {
    summary.reason = wb::StopReason::ERROR;
    summary.error = tr("This build of WhiteBox has no remote client.");
}

#endif
