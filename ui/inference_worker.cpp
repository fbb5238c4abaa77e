#include "inference_worker.h"

#include <algorithm>
#include <utility>

#include <QFileInfo>
#include <QMutexLocker>

#include "context_budget.h"
#include "engine/chat_prompt.h"
#include "prompt_record.h"
#include "util/error.h"
#include "worker_observer.h"

namespace {

// Bytes read per hashing step: small enough that a queued generation request waits at most a few
// milliseconds, large enough that hashing a 4 GB file is not dominated by event-loop overhead.
constexpr qint64 kHashChunk = 8 << 20;

}  // namespace

InferenceWorker::InferenceWorker(QObject* parent) : QObject(parent) {
    registerEngineTypes();
}

InferenceWorker::~InferenceWorker() {
    releaseEngine();
}

const wb::Model* InferenceWorker::loadedModel() const {
    QMutexLocker lock(&m_sessionMutex);
    return m_model.get();
}

void InferenceWorker::releaseEngine() {
    // Taken out under the lock, destroyed after it: the lock is never held for a teardown that can
    // take seconds (a GPU context, a multi-GB unmap).
    std::unique_ptr<wb::Session> session;
    wb::BackendChoice backend;
    std::unique_ptr<wb::Model> model;
    {
        QMutexLocker lock(&m_sessionMutex);
        session = std::move(m_session);
        backend = std::move(m_backend);
        model = std::move(m_model);
    }
    if (m_releaseProbe) std::exchange(m_releaseProbe, {})();
    session.reset();  // the session uses the backend and the model, the backend the model's weights
    backend = {};
    model.reset();
}

void InferenceWorker::requestStop(quint64 upToRequest) {
    // Only the mark: the running request's observer reads it (stop_requested). Stopping the session
    // itself would also end a newer request that is already running.
    quint64 cur = m_stopUpTo.load();
    while (cur < upToRequest && !m_stopUpTo.compare_exchange_weak(cur, upToRequest)) {
    }
    // A remote reply waits on the network, not between tokens: its client is told to hang up.
    const quint64 remote = m_remoteRequest.load();
    if (remote != 0 && remote <= upToRequest) m_remoteCancel.store(true);
}

void InferenceWorker::cancelLoad() {
    m_cancelLoad.store(true);
}

void InferenceWorker::setSamplingParams(const wb::SamplingParams& params) {
    QMutexLocker lock(&m_paramsMutex);
    const wb::SamplingParams before = m_userParams;
    m_userParams = params;
    applyParams();
    restartRemoteFor(before, params);
}

wb::SamplingParams InferenceWorker::samplingParams() const {
    QMutexLocker lock(&m_paramsMutex);
    return m_userParams;
}

void InferenceWorker::applyParams() {
    // The template's end-of-turn marker ends a reply even if a file forgot to type it as a control token.
    wb::SamplingParams p = m_userParams;
    for (const auto& s : m_turnStops) p.stop.push_back(s);
    m_live.set(p);
}

void InferenceWorker::setCaptureSpec(const wb::CaptureSpec& spec) {
    QMutexLocker lock(&m_paramsMutex);
    m_capture = spec;
}

wb::CaptureSpec InferenceWorker::captureSpec() const {
    QMutexLocker lock(&m_paramsMutex);
    return m_capture;
}

void InferenceWorker::setHeadStatsWanted(bool on) {
    QMutexLocker lock(&m_paramsMutex);
    m_headStats = on;
}

bool InferenceWorker::headStatsWanted() const {
    QMutexLocker lock(&m_paramsMutex);
    return m_headStats;
}

void InferenceWorker::setTimingsWanted(bool on) {
    QMutexLocker lock(&m_paramsMutex);
    m_timings = on;
}

bool InferenceWorker::timingsWanted() const {
    QMutexLocker lock(&m_paramsMutex);
    return m_timings;
}

bool InferenceWorker::encodeText(const QString& text, std::vector<int32_t>* ids, QString* error) const {
    // The lock keeps the model from being swapped meanwhile; the tokenizer is safe to share (its
    // cache has its own lock), so a generation on the worker thread goes on.
    QMutexLocker lock(&m_sessionMutex);
    if (!m_model) {
        *error = tr("a text needs a loaded model to find its tokens");
        return false;
    }
    *ids = m_model->tokenizer().encode(text.toStdString(), false, false);
    return true;
}

void InferenceWorker::loadModel(const QString& path, const QString& backend, int contextSize, int threads,
                                const QString& cacheTypeK, const QString& cacheTypeV) {
    m_cancelLoad.store(false);
    Q_EMIT loadStarted(path);
    try {
        // Build the new engine beside the old one, so a failed or cancelled load leaves the current
        // model working.
        const ChatTemplateSetting templateSetting = chat_template_setting::stored(path);
        std::unique_ptr<wb::Model> model = wb::Model::load(path.toStdString(), chat_template_setting::toChoice(templateSetting));
        if (m_cancelLoad.load()) {
            Q_EMIT loadCanceled(path);
            return;
        }
        wb::SessionOptions options;
        options.n_ctx = contextSize;
        options.kv_type_k = wb::kv_type_from_name(cacheTypeK.toStdString());
        options.kv_type_v = wb::kv_type_from_name(cacheTypeV.toStdString());
        wb::BackendChoice choice = wb::create_backend(wb::parse_backend_kind(backend.toStdString()), threads,
                                                      options.kv_type_k, options.kv_type_v);
        auto session = std::make_unique<wb::Session>(*model, *choice.backend, options);
        if (m_cancelLoad.load()) {
            Q_EMIT loadCanceled(path);
            return;
        }
        // The session clamps its batch to the context (Session::Session).
        const int batch = std::clamp(options.n_batch, 1, session->n_ctx());
        ModelSummary summary = ModelSummary::fromModel(*model, path, session->n_ctx(), options.kv_type_k, options.kv_type_v, batch);
        summary.measureBackend(*choice.backend);
        summary.backendNote = QString::fromStdString(choice.note);
        releaseEngine();
        m_remote.reset();  // back from a remote engine
        m_remoteTemplate.reset();
        m_remoteContinues.store(false);
        {
            QMutexLocker lock(&m_sessionMutex);
            m_model = std::move(model);
            m_backend = std::move(choice);
            m_session = std::move(session);
        }
        m_modelPath = path;
        m_kvTypeK = options.kv_type_k;
        m_kvTypeV = options.kv_type_v;
        m_trimFrom = 0;
        m_trimDropped = 0;
        useTemplate(m_model->chat_template(), templateSetting);
        Q_EMIT modelLoaded(summary);
        Q_EMIT chatTemplateChanged(m_templateInfo);
        emitMemory(m_session->kv_stats());
        startHash(path);
    } catch (const std::exception& e) {
        Q_EMIT loadFailed(path, QString::fromUtf8(e.what()));
    }
}

void InferenceWorker::generateChat(quint64 requestId, const ChatMessages& messages) {
    continueChat(requestId, messages, {});
}

void InferenceWorker::continueChat(quint64 requestId, const ChatMessages& messages, const QVector<int>& forced, int policy) {
    GenerationSummary summary;
    summary.requestId = requestId;
    if (m_remote) {
        // A given start (the reply a full local context cut, continueAfterFullContext) is the local
        // engine's: its tokens mean nothing to a server, which keeps a context of its own. Sent as a new
        // chat, the server's fresh answer would be appended to the old reply as if it went on.
        if (!forced.isEmpty()) {
            summary.reason = wb::StopReason::ERROR;
            summary.error = tr("The remote engine cannot continue a reply that the local model's full context cut: "
                               "the server keeps a context of its own. Send a new message instead.");
        } else {
            generateRemote(requestId, messages, summary);
        }
        Q_EMIT generationFinished(summary);
        return;
    }
    if (!m_session) {
        summary.reason = wb::StopReason::ERROR;
        summary.error = tr("No model is loaded.");
        Q_EMIT generationFinished(summary);
        return;
    }
    try {
        const wb::Model& m = *m_model;
        summary.policy = policy >= 0 ? wb::ContextPolicy(policy) : contextPolicy();
        // A shift keeps the template's prefix with the system prompt (the CLI's default, chat_keep_prefix).
        summary.keep = wb::chat_keep_prefix(m, messages);
        m_session->set_context_policy({summary.policy, summary.keep});
        std::vector<int32_t> reply;
        for (int id : forced) {
            if (id < 0 || id >= m.tokenizer().n_vocab()) throw wb::Error("token id " + std::to_string(id) + " is outside the vocabulary");
            reply.push_back(id);
        }
        // Under TRIM a reply that fills the context goes on after more old turns are dropped: its tokens
        // so far become the next round's given start. A round that adds nothing (no turn was left to
        // drop) ends it with context_full.
        bool forceTrim = policy >= 0 && summary.policy == wb::ContextPolicy::TRIM;
        const size_t given = reply.size();
        for (;;) {
            wb::GenerateResult r;
            if (!generateOnce(requestId, messages, reply, forceTrim, summary, &r, int32_t(reply.size() - given))) break;
            if (summary.policy != wb::ContextPolicy::TRIM || r.reason != wb::StopReason::CONTEXT_FULL || r.tokens.empty()) break;
            reply.insert(reply.end(), r.tokens.begin(), r.tokens.end());
            forceTrim = true;
        }
    } catch (const std::exception& e) {
        summary.reason = wb::StopReason::ERROR;
        summary.error = QString::fromUtf8(e.what());
    }
    summary.contextTokens = int(m_session->context_tokens().size());
    emitMemory(m_session->kv_stats());
    Q_EMIT generationFinished(summary);
}

void InferenceWorker::emitMemory(const wb::KvStats& stats) {
    Q_EMIT kvStatsChanged(stats);
    if (m_backend.backend) Q_EMIT deviceMemoryChanged(m_backend.backend->device_memory());
}

void InferenceWorker::resetSession() {
    m_trimFrom = 0;
    m_trimDropped = 0;
    if (!m_session) return;
    m_session->reset();
    emitMemory(m_session->kv_stats());
}

void InferenceWorker::countPrompt(quint64 countId, const ChatMessages& messages) {
    if (m_remote) {
        // The server's tokenizer and template make its prompt; the app has neither to count with.
        Q_EMIT promptCounted(countId, 0, 0, tr("A remote engine counts its prompt itself."));
        return;
    }
    if (!m_session) {
        Q_EMIT promptCounted(countId, 0, 0, tr("No model is loaded."));
        return;
    }
    try {
        Q_EMIT promptCounted(countId, measurePrompt(messages).mustFit, m_session->n_ctx(), QString());
    } catch (const std::exception& e) {
        Q_EMIT promptCounted(countId, 0, m_session->n_ctx(), QString::fromUtf8(e.what()));
    }
}

namespace {

wb::ChatPrompt renderPrompt(const wb::ChatTemplate& t, const wb::Tokenizer& tok, const ChatMessages& messages) {
    return wb::build_chat_prompt(t, tok, wb::chat_messages_value(messages), wb::jinja::Value::none(), true);
}

}  // namespace

wb::ChatPrompt InferenceWorker::buildPrompt(const ChatMessages& messages) const {
    return renderPrompt(*m_template, m_model->tokenizer(), messages);
}

std::shared_ptr<const wb::ChatTemplate> InferenceWorker::chatTemplate() const {
    QMutexLocker lock(&m_paramsMutex);
    return m_template;
}

InferenceWorker::PromptMeasure InferenceWorker::measurePrompt(const ChatMessages& messages) const {
    std::shared_ptr<const wb::ChatTemplate> t;
    wb::ContextPolicy policy;
    {
        QMutexLocker lock(&m_paramsMutex);
        t = m_template;
        policy = m_policy;
    }
    // As encodeText: the lock keeps the model from being swapped meanwhile (the tokenizer is safe to share).
    QMutexLocker lock(&m_sessionMutex);
    if (!m_model || !t) return {};
    PromptMeasure out;
    out.ids = renderPrompt(*t, m_model->tokenizer(), messages).ids;
    out.mustFit = policy == wb::ContextPolicy::STOP ? int(out.ids.size())
                                                    : int(renderPrompt(*t, m_model->tokenizer(), mustFit(messages, policy)).ids.size());
    return out;
}

void InferenceWorker::useTemplate(wb::ChatTemplate t, const ChatTemplateSetting& setting) {
    auto shared = std::make_shared<const wb::ChatTemplate>(std::move(t));
    m_templateInfo = chat_template_setting::describe(*shared, setting, m_modelPath);
    // The template's end-of-turn marker ends a reply even if a file forgot to type it as a control token.
    QMutexLocker lock(&m_paramsMutex);
    m_template = std::move(shared);
    m_turnStops = m_template->end_of_turn_texts();
    applyParams();
}

void InferenceWorker::applyChatTemplate(const QString& modelPath, const ChatTemplateSetting& setting) {
    if (!m_model || modelPath != m_modelPath) return;  // another file: its own load reads its setting
    useTemplate(wb::choose_chat_template(m_model->file(), m_model->tokenizer(), chat_template_setting::toChoice(setting)), setting);
    Q_EMIT chatTemplateChanged(m_templateInfo);
}

void InferenceWorker::startHash(const QString& path) {
    ++m_hashJob;
    m_hash.reset();
    m_hashFile = std::make_unique<QFile>(path);
    if (!m_hashFile->open(QIODevice::ReadOnly)) {
        m_hashFile.reset();
        Q_EMIT fileHashReady(path, tr("(cannot read the file)"));
        return;
    }
    m_hashSize = m_hashFile->size();
    m_hashedBytes = 0;
    const quint64 job = m_hashJob;
    QMetaObject::invokeMethod(this, [this, job] { hashNextChunk(job); }, Qt::QueuedConnection);
}

void InferenceWorker::hashNextChunk(quint64 job) {
    // A newer model load started another hash: this chain ends.
    if (job != m_hashJob || !m_hashFile) return;
    const QByteArray chunk = m_hashFile->read(kHashChunk);
    m_hash.addData(chunk);
    m_hashedBytes += chunk.size();
    if (chunk.size() == kHashChunk) {
        QMetaObject::invokeMethod(this, [this, job] { hashNextChunk(job); }, Qt::QueuedConnection);
        return;
    }
    // A short read ends the file only if every byte it had at the start was read: a read error (or a
    // file cut short meanwhile) must not pass a partial hash off as the file's.
    const QString path = m_hashFile->fileName();
    const bool complete = m_hashFile->error() == QFileDevice::NoError && m_hashedBytes == m_hashSize;
    const QString error = m_hashFile->error() == QFileDevice::NoError ? tr("the file is shorter than when the hash began")
                                                                      : m_hashFile->errorString();
    m_hashFile.reset();
    if (complete)
        Q_EMIT fileHashReady(path, QString::fromLatin1(m_hash.result().toHex()));
    else
        Q_EMIT fileHashReady(path, tr("(read error after %1 of %2 bytes: %3)").arg(m_hashedBytes).arg(m_hashSize).arg(error));
}
