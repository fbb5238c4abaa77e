#include "chat_controller.h"

#include <QCoreApplication>
#include <QRegularExpression>

#include "conversation_store.h"
#include "engine/context_policy.h"
#include "kv/kv_types.h"

namespace {
// Typing a system prompt or dragging a slider saves once it pauses this long.
constexpr int kSettingsSaveDelayMs = 1000;
}

ChatController::ChatController(QObject* parent) : QObject(parent) {
    registerEngineTypes();
    m_thread.setObjectName(QStringLiteral("inference"));
    m_worker = new InferenceWorker;
    m_worker->moveToThread(&m_thread);
    connectWorker();
    m_thread.start();
    m_worker->setSamplingParams(m_conversation.sampling);
    m_saveTimer.setSingleShot(true);
    m_saveTimer.setInterval(kSettingsSaveDelayMs);
    connect(&m_saveTimer, &QTimer::timeout, this, &ChatController::autosave);
}

ChatController::~ChatController() {
    saveNow();
    // Ask the engine to finish its current token, let the thread's queue drain, then delete the
    // worker (and with it the engine) once nothing runs on the thread any more.
    m_worker->cancelLoad();
    m_worker->requestStop(m_nextRequest);
    m_thread.quit();
    m_thread.wait();
    // The stopped reply's last events (tokens, its final text and stop reason) are queued to this
    // object: taken in here, they go into the file (handleGenerationFinished saves). Signals are
    // blocked: the window that listens is being destroyed.
    {
        const QSignalBlocker block(this);
        QCoreApplication::sendPostedEvents(this, QEvent::MetaCall);
    }
    delete m_worker;
}

// Every connection between the GUI thread and the inference thread is made here, each one explicitly
// queued: the worker's slots run on its thread in request order, and its signals arrive on the GUI
// thread as events, so neither side ever blocks on the other.
void ChatController::connectWorker() {
    const auto q = Qt::QueuedConnection;
    connect(this, &ChatController::loadRequested, m_worker, &InferenceWorker::loadModel, q);
    connect(this, &ChatController::remoteRequested, m_worker, &InferenceWorker::connectRemote, q);
    connect(this, &ChatController::generateRequested, m_worker, &InferenceWorker::continueChat, q);
    connect(this, &ChatController::resetRequested, m_worker, &InferenceWorker::resetSession, q);

    connect(m_worker, &InferenceWorker::loadStarted, this, &ChatController::handleLoadStarted, q);
    connect(m_worker, &InferenceWorker::modelLoaded, this, &ChatController::handleModelLoaded, q);
    connect(m_worker, &InferenceWorker::loadFailed, this, &ChatController::handleLoadFailed, q);
    connect(m_worker, &InferenceWorker::loadCanceled, this, &ChatController::handleLoadCanceled, q);
    connect(m_worker, &InferenceWorker::fileHashReady, this, &ChatController::fileHashReady, q);
    connect(m_worker, &InferenceWorker::promptReady, this, &ChatController::handlePromptReady, q);
    connect(m_worker, &InferenceWorker::tokenGenerated, this, &ChatController::handleToken, q);
    connect(m_worker, &InferenceWorker::attentionCaptured, this, &ChatController::handleAttention, q);
    connect(m_worker, &InferenceWorker::tokenInspected, this, &ChatController::handleInspection, q);
    connect(m_worker, &InferenceWorker::kvStatsChanged, this, &ChatController::kvStatsChanged, q);
    connect(m_worker, &InferenceWorker::deviceMemoryChanged, this, &ChatController::deviceMemoryChanged, q);
    connect(m_worker, &InferenceWorker::comparisonMemoryChanged, this, &ChatController::comparisonMemoryChanged, q);
    connect(m_worker, &InferenceWorker::contextCut, this, &ChatController::handleContextCut, q);
    connect(m_worker, &InferenceWorker::grammarRefused, this, &ChatController::handleGrammarRefused, q);
    connect(m_worker, &InferenceWorker::timingsChanged, this, &ChatController::handleTimings, q);
    connect(m_worker, &InferenceWorker::timingsRecorded, this, &ChatController::handleTimingRecord, q);
    connect(m_worker, &InferenceWorker::prefillProgress, this, &ChatController::handlePrefillProgress, q);
    connect(m_worker, &InferenceWorker::generationFinished, this, &ChatController::handleGenerationFinished, q);
    connect(this, &ChatController::countRequested, m_worker, &InferenceWorker::countPrompt, q);
    connect(m_worker, &InferenceWorker::promptCounted, this, &ChatController::promptCounted, q);
    connect(this, &ChatController::chatTemplateRequested, m_worker, &InferenceWorker::applyChatTemplate, q);
    connect(m_worker, &InferenceWorker::chatTemplateChanged, this, &ChatController::chatTemplateChanged, q);
    connect(m_worker, &InferenceWorker::fileHashReady, this, [this](const QString& path, const QString& sha) {
        // An unreadable file is reported in words instead of a hash: nothing is recorded for it.
        static const QRegularExpression hex(QStringLiteral("^[0-9a-f]{64}$"));
        if (hex.match(sha).hasMatch()) m_hashes.insert(path, sha);
    }, q);
    connect(this, &ChatController::replayRequested, m_worker, &InferenceWorker::replayTrace, q);
    connect(this, &ChatController::compareRequested, m_worker, &InferenceWorker::compareModel, q);
    connect(m_worker, &InferenceWorker::replayFinished, this, &ChatController::replayFinished, q);
    connect(m_worker, &InferenceWorker::compareProgress, this, &ChatController::compareProgress, q);
    connect(m_worker, &InferenceWorker::compareFinished, this, &ChatController::compareFinished, q);
}

quint64 ChatController::replayTrace(const wb::InspectedTrace& trace) {
    const quint64 job = m_nextJob++;
    Q_EMIT replayRequested(job, std::make_shared<const wb::InspectedTrace>(trace));
    return job;
}

quint64 ChatController::compareWithModel(const QString& otherPath, const QVector<int>& prompt, const QVector<int>& reply) {
    const quint64 job = m_nextJob++;
    Q_EMIT compareRequested(job, otherPath, prompt, reply);
    return job;
}

void ChatController::loadModel(const QString& path) {
    Q_EMIT aboutToLoad(path);
    if (m_generating) stop();
    setLoading(true);
    // By default the engine gets all cores: on a small machine one core fewer halves the speed. The
    // pool spins between the parallel loops of a step and can delay the GUI thread (measured on 2
    // cores: event-loop delays of ~90 ms with 2 engine threads, ~25 ms with 1); Model > Threads
    // trades speed for a smoother window.
    const int threads = m_threads > 0 ? m_threads : std::max(1, QThread::idealThreadCount());
    Q_EMIT loadRequested(path, m_backendName, m_contextSize, threads, m_cacheTypeK, m_cacheTypeV);
}

void ChatController::connectRemote(const QString& url, const QString& apiKey, const QString& model) {
    Q_EMIT aboutToLoad(url);
    if (m_generating) stop();
    setLoading(true);
    Q_EMIT remoteRequested(url, apiKey, model);
}

void ChatController::cancelLoad() {
    m_worker->cancelLoad();
}

bool ChatController::sendMessage(const QString& text) {
    if (m_generating || text.trimmed().isEmpty()) return false;
    m_conversation.append({QStringLiteral("user"), text, {}, {}});
    Q_EMIT messageAppended(int(m_conversation.messages.size()) - 1);
    m_conversation.append({QStringLiteral("assistant"), {}, {}, {}});
    Q_EMIT messageAppended(int(m_conversation.messages.size()) - 1);
    startGeneration();
    return true;
}

bool ChatController::regenerate() {
    if (m_generating || m_conversation.messages.isEmpty()) return false;
    const ChatEntry reply{QStringLiteral("assistant"), {}, {}, {}};
    const int last = int(m_conversation.messages.size()) - 1;
    if (m_conversation.messages.last().role == QLatin1String("assistant")) {
        m_conversation.addVersion(last, reply);
        Q_EMIT conversationReset();
    } else {
        m_conversation.append(reply);
        Q_EMIT messageAppended(last + 1);
    }
    startGeneration();
    return true;
}

bool ChatController::editAndResend(int index, const QString& text) {
    if (m_generating || index < 0 || index >= m_conversation.messages.size() || text.trimmed().isEmpty()) return false;
    if (m_conversation.messages[index].role != QLatin1String("user")) return false;
    m_conversation.addVersion(index, {QStringLiteral("user"), text, {}, {}});
    m_conversation.append({QStringLiteral("assistant"), {}, {}, {}});
    Q_EMIT conversationReset();
    startGeneration();
    return true;
}

bool ChatController::forkFromToken(int messageIndex, int tokenIndex, int candidateId) {
    const auto& messages = m_conversation.messages;
    // A server takes text, not token ids: a reply cannot be forced to a given token there.
    if (isRemote() || m_generating || messageIndex < 0 || messageIndex >= messages.size()) return false;
    const ChatEntry& from = messages[messageIndex];
    if (from.role != QLatin1String("assistant") || tokenIndex < 0 || tokenIndex >= from.tokens.size()) return false;
    const TokenRecord& at = from.tokens[tokenIndex];
    const auto chosen = std::find_if(at.candidates.begin(), at.candidates.end(),
                                     [candidateId](const wb::TokenCandidate& c) { return c.id == candidateId; });
    if (chosen == at.candidates.end()) return false;
    // The new version starts with the old one's tokens up to the fork and the chosen candidate, drawn
    // from the same distribution (its candidates and trace stay what the inspector shows).
    ChatEntry reply{QStringLiteral("assistant"), {}, from.tokens.mid(0, tokenIndex), {}};
    TokenRecord forced = at;
    forced.id = chosen->id;
    forced.piece = QString::fromStdString(chosen->piece);
    forced.tokenPiece = forced.piece;
    forced.p = chosen->p_final;
    reply.tokens.append(forced);
    QVector<int> ids;
    for (const TokenRecord& t : reply.tokens) {
        ids.append(t.id);
        reply.content += t.piece;
    }
    m_conversation.addVersion(messageIndex, reply);
    Q_EMIT conversationReset();
    startGeneration(ids);
    return true;
}

bool ChatController::selectVersion(int index, int version) {
    if (m_generating || !m_conversation.selectVersion(index, version)) return false;
    Q_EMIT conversationReset();
    autosave();
    return true;
}

namespace {

// "API: " and the first few words of the request's first user message (its first line).
QString apiTitle(const ChatMessages& messages) {
    constexpr int kTitleWords = 6;
    QString first;
    for (const wb::ChatMessage& m : messages)
        if (m.role == "user") {
            first = QString::fromStdString(m.content).section(QLatin1Char('\n'), 0, 0).simplified();
            break;
        }
    QStringList words = first.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    const bool more = words.size() > kTitleWords;
    words = words.mid(0, kTitleWords);
    return QStringLiteral("API: ") + (words.isEmpty() ? QStringLiteral("(no user message)") : words.join(QLatin1Char(' '))) +
           (more ? QStringLiteral("…") : QString());
}

}  // namespace

quint64 ChatController::startApiConversation(const ChatMessages& messages, const wb::SamplingParams& params,
                                             QString* error) {
    const auto refuse = [error](const QString& why) -> quint64 {
        if (error) *error = why;
        return 0;
    };
    if (m_generating) return refuse(tr("a reply is being generated"));
    if (m_loading || !hasModel()) return refuse(tr("no model is loaded"));
    if (messages.empty()) return refuse(tr("the request has no messages"));
    // The user's conversation is on disk before it leaves the screen.
    QString saveError;
    if (!saveNow(&saveError)) return refuse(tr("the conversation on screen could not be saved: %1").arg(saveError));
    Conversation c = Conversation::fromApiMessages(messages);
    c.sampling = params;
    c.title = apiTitle(messages);
    c.modelName = m_model.name;
    c.append({QStringLiteral("assistant"), {}, {}, {}});
    adopt(c, QString());
    startGeneration();
    m_apiRequest = m_activeRequest;
    return m_activeRequest;
}

void ChatController::startGeneration(const QVector<int>& forced, int policy, const QString& givenStopReason) {
    m_activeRequest = m_nextRequest++;
    m_promptTokens = 0;
    m_givenTokens = int(forced.size());
    m_givenStopReason = givenStopReason;
    if (!m_model.name.isEmpty()) m_conversation.modelName = m_model.name;
    setGenerating(true);
    // What the user wrote is on disk before the reply starts.
    autosave();
    // The reply placeholder is not part of the prompt.
    Q_EMIT generateRequested(m_activeRequest, m_conversation.toEngineMessages(int(m_conversation.messages.size()) - 1), forced,
                             policy);
}

void ChatController::setContextPolicy(wb::ContextPolicy policy) {
    m_contextPolicy = policy;
    m_worker->setContextPolicy(policy);
}

bool ChatController::continueAfterFullContext(wb::ContextPolicy how) {
    // A remote engine's context is the server's: the local one that filled is gone (the worker refuses too).
    // While a load or connection is pending, the engine the request would reach is not known yet.
    if (m_generating || m_loading || m_conversation.messages.isEmpty() || how == wb::ContextPolicy::STOP || isRemote())
        return false;
    const ChatEntry& reply = m_conversation.messages.last();
    if (reply.role != QLatin1String("assistant") || reply.stopReason != QLatin1String("context_full")) return false;
    // The same message goes on: its tokens so far are the given start of the continued reply, so
    // nothing of it is generated again (the session still holds them) and nothing the user wrote changes.
    QVector<int> ids;
    for (const TokenRecord& t : reply.tokens) ids.append(t.id);
    const QString stopReason = reply.stopReason;
    m_conversation.messages.last().stopReason.clear();
    startGeneration(ids, int(how), stopReason);
    return true;
}

void ChatController::stop() {
    if (m_activeRequest) m_worker->requestStop(m_activeRequest);
}

void ChatController::newChat() {
    const bool abandoning = m_generating && m_activeRequest != m_abandonedRequest;
    if (abandoning) {
        stop();
        // Its events still in the queue (attention batches, tokens) belong to the cleared chat.
        m_abandonedRequest = m_activeRequest;
        m_abandonedTokens.clear();
    }
    saveNow();
    if (abandoning) m_abandonedId = m_currentId;
    // The settings on screen carry over to the new chat; the messages and the id do not.
    m_conversation.clearMessages();
    m_conversation.title.clear();
    m_conversation.created = QDateTime();
    m_currentId.clear();
    m_attention.clear();
    Q_EMIT resetRequested();
    Q_EMIT conversationReset();
    Q_EMIT currentConversationChanged(m_currentId);
}

void ChatController::setStore(ConversationStore* store) {
    m_store = store;
}

void ChatController::autosave() {
    m_saveTimer.stop();
    QString error;
    if (!saveNow(&error)) Q_EMIT errorOccurred(tr("The conversation could not be saved: %1").arg(error));
}

bool ChatController::saveNow(QString* error) {
    m_saveTimer.stop();
    // An empty chat is not worth a file (New chat twice makes no empty entries in the list).
    if (!m_store || m_conversation.isEmpty()) return true;
    const bool isNew = m_currentId.isEmpty();
    if (isNew) m_currentId = m_store->newId();
    const QDateTime now = QDateTime::currentDateTimeUtc();
    if (!m_conversation.created.isValid()) m_conversation.created = now;
    m_conversation.updated = now;
    const bool ok = m_store->save(m_currentId, m_conversation, error);
    if (isNew && ok) Q_EMIT currentConversationChanged(m_currentId);
    return ok;
}

void ChatController::adopt(const Conversation& c, const QString& id) {
    m_conversation = c;
    m_currentId = id;
    m_attention.clear();
    // The cached context belongs to the old conversation; the next reply re-reads this one.
    Q_EMIT resetRequested();
    m_worker->setSamplingParams(m_conversation.sampling);
    Q_EMIT samplingParamsRestored(m_conversation.sampling);
    Q_EMIT systemPromptRestored(m_conversation.systemPrompt);
    // The panels' restore signals above may have scheduled a save of what was just read.
    m_saveTimer.stop();
    Q_EMIT conversationReset();
    Q_EMIT currentConversationChanged(m_currentId);
    if (!m_conversation.modelName.isEmpty() && hasModel() && m_conversation.modelName != m_model.name)
        Q_EMIT notice(tr("This conversation was held with %1; the loaded model is %2.").arg(m_conversation.modelName, m_model.name));
}

bool ChatController::openConversation(const QString& id, QString* error) {
    if (m_generating) {
        if (error) *error = tr("Stop the reply before opening a conversation.");
        return false;
    }
    if (!m_store) {
        if (error) *error = tr("No conversation folder is set.");
        return false;
    }
    if (id == m_currentId) return true;
    std::optional<Conversation> c = m_store->load(id, error);
    if (!c) return false;
    if (!saveNow(error)) return false;
    adopt(*c, id);
    return true;
}

bool ChatController::renameConversation(const QString& id, const QString& title, QString* error) {
    if (!m_store) return false;
    if (id != m_currentId) return m_store->rename(id, title, error);
    m_conversation.title = title.trimmed();
    return m_store->save(id, m_conversation, error);
}

bool ChatController::deleteConversation(const QString& id, QString* error) {
    if (!m_store) return false;
    if (id == m_currentId) {
        if (m_generating) {
            if (error) *error = tr("Stop the reply before deleting this conversation.");
            return false;
        }
        if (!m_store->remove(id, error)) return false;
        // Not saved again (newChat saves what is on screen): the deleted messages go first.
        m_currentId.clear();
        m_conversation.clearMessages();
        newChat();
        return true;
    }
    return m_store->remove(id, error);
}

void ChatController::setSystemPrompt(const QString& prompt) {
    if (m_conversation.systemPrompt == prompt) return;
    m_conversation.systemPrompt = prompt;
    scheduleSave();
}

void ChatController::setSamplingParams(const wb::SamplingParams& params) {
    m_conversation.sampling = params;
    m_worker->setSamplingParams(params);
    scheduleSave();
}

void ChatController::setCaptureSpec(const wb::CaptureSpec& spec) {
    m_worker->setCaptureSpec(spec);
}

void ChatController::setHeadStatsWanted(bool on) {
    m_worker->setHeadStatsWanted(on);
}

void ChatController::setTimingsWanted(bool on) {
    m_worker->setTimingsWanted(on);
}

quint64 ChatController::countPrompt(const QString& draft, int editIndex) {
    ChatMessages messages = m_conversation.toEngineMessages();
    // Editing message editIndex: the prompt keeps what came before it (and the system prompt).
    const int leading = int(messages.size()) - int(m_conversation.messages.size());
    if (editIndex >= 0 && editIndex < m_conversation.messages.size()) messages.resize(size_t(leading + editIndex));
    messages.push_back({"user", draft.toStdString()});
    const quint64 id = m_nextCount++;
    Q_EMIT countRequested(id, messages);
    return id;
}

bool ChatController::saveConversation(const QString& path, QString* error) {
    if (!m_model.name.isEmpty() && m_conversation.modelName.isEmpty()) m_conversation.modelName = m_model.name;
    return m_conversation.save(path, error);
}

bool ChatController::loadConversation(const QString& path, QString* error) {
    if (m_generating) {
        if (error) *error = tr("Stop the reply before opening a conversation.");
        return false;
    }
    std::optional<Conversation> c = Conversation::load(path, error);
    if (!c) return false;
    if (!saveNow(error)) return false;
    // An imported file becomes a conversation of its own in the store; the file itself is not touched.
    adopt(*c, QString());
    autosave();
    return true;
}

void ChatController::handleLoadStarted(const QString& path) {
    Q_EMIT loadStarted(path);
}

void ChatController::handleModelLoaded(const ModelSummary& summary) {
    m_model = summary;
    m_attention.setModelShape(summary.nLayer, summary.nHead);
    setLoading(false);
    Q_EMIT modelLoaded(summary);
}

void ChatController::handleLoadFailed(const QString& path, const QString& error) {
    setLoading(false);
    Q_EMIT loadFailed(path, error);
}

void ChatController::handleLoadCanceled(const QString& path) {
    setLoading(false);
    Q_EMIT loadCanceled(path);
}

void ChatController::handlePromptReady(const PromptInfo& info) {
    if (!isShown(info.requestId)) return;
    m_promptTokens = int(info.ids.size());
    m_promptReused = info.reused;
    m_attention.handlePrompt(info);
    Q_EMIT promptReady(info);
}

void ChatController::handleToken(quint64 requestId, const wb::TokenEvent& event) {
    const bool abandoned = requestId == m_abandonedRequest && requestId == m_activeRequest;
    if (!abandoned && (!isShown(requestId) || m_conversation.messages.isEmpty())) return;
    TokenRecord t;
    t.id = event.id;
    t.piece = QString::fromStdString(event.piece);
    t.tokenPiece = tokenText(event.token_piece);
    t.p = event.p;
    t.entropy = event.entropy;
    t.position = m_promptTokens + event.index;
    t.candidates = event.candidates;
    t.trace = event.trace;
    if (abandoned) {
        m_abandonedTokens.append(t);
        return;
    }
    ChatEntry& reply = m_conversation.messages.last();
    reply.content += t.piece;
    reply.tokens.append(t);
    m_attention.handleToken(t.position, t.piece);
    Q_EMIT tokenEvent(event);
    Q_EMIT tokenAppended(int(m_conversation.messages.size()) - 1, int(reply.tokens.size()) - 1);
}

void ChatController::handleAttention(quint64 requestId, const AttentionBatch& batch) {
    if (!isShown(requestId) || !batch) return;
    m_attention.addEvents(*batch);
}

void ChatController::handleInspection(quint64 requestId, const TokenInspectionPtr& inspection) {
    if (!isShown(requestId) || !inspection || m_conversation.messages.isEmpty()) return;
    // It follows its token's event on the same queue: the reply's last token, unless that token was
    // not taken (then its position differs).
    ChatEntry& reply = m_conversation.messages.last();
    if (reply.tokens.isEmpty() || reply.tokens.last().position != m_promptTokens + inspection->index) return;
    reply.tokens.last().inspection = inspection;
    Q_EMIT tokenInspected(int(m_conversation.messages.size()) - 1, int(reply.tokens.size()) - 1);
}

void ChatController::handlePrefillProgress(quint64 requestId, int done, int total) {
    if (isShown(requestId)) Q_EMIT prefillProgress(done, total);
}

void ChatController::handleContextCut(quint64 requestId, const wb::ContextCut& cut) {
    if (!isShown(requestId)) return;
    m_attention.setCut(cut);
    Q_EMIT contextCut(cut);
}

void ChatController::handleGrammarRefused(quint64 /*requestId*/, const wb::GrammarRefusal& refusal) {
    const QString why = tr("The new grammar was not applied to this reply: %1. The grammar in force stays.")
                            .arg(QString::fromStdString(refusal.why));
    // Changed again meanwhile: the engine judges that text on its own; this one is no longer shown.
    if (m_conversation.sampling.grammar != refusal.refused) {
        Q_EMIT notice(why);
        return;
    }
    wb::SamplingParams p = m_conversation.sampling;
    p.grammar = refusal.kept_grammar;
    p.grammar_mode = refusal.kept_mode;
    p.grammar_source = refusal.kept_source;
    // The worker gets the grammar in force back too, so the next reply starts under what is shown.
    setSamplingParams(p);
    Q_EMIT grammarRefused(p, why);
    Q_EMIT notice(why);
}

void ChatController::handleTimings(quint64 requestId, const wb::Timings& timings) {
    if (isShown(requestId)) Q_EMIT timingsChanged(timings);
}

void ChatController::handleTimingRecord(quint64 requestId, const TimingRecordPtr& record) {
    if (isShown(requestId) && record) Q_EMIT timingsRecorded(record);
}

void ChatController::handleGenerationFinished(const GenerationSummary& summary) {
    if (summary.requestId != m_activeRequest) return;
    if (summary.requestId == m_abandonedRequest) {
        // Stopped by New chat: nothing of it goes into the new conversation; only the state ends.
        finishAbandoned(summary);
        setGenerating(false);
        Q_EMIT generationFinished(summary);
        return;
    }
    const int index = int(m_conversation.messages.size()) - 1;
    QString refused;
    if (index >= 0) {
        ChatEntry& reply = m_conversation.messages[index];
        if (summary.reason == wb::StopReason::ERROR && reply.tokens.isEmpty()) {
            // The failed version goes; an earlier one of the same reply (Regenerate) comes back.
            m_conversation.removeLast();
            // A prompt with no room for the reply: the user's message goes too (back to the message
            // box), or every later message would fail the same way.
            if (summary.promptTooLong && !m_conversation.messages.isEmpty() &&
                m_conversation.messages.last().role == QLatin1String("user")) {
                refused = m_conversation.messages.last().content;
                m_conversation.removeLast();
            }
            Q_EMIT conversationReset();
        } else if (summary.reason == wb::StopReason::ERROR && m_givenTokens > 0 && summary.text.isEmpty()) {
            // The given start was refused (nothing was generated): the reply stays as it was, its text
            // and stop reason, rather than be emptied (and autosaved so).
            reply.stopReason = m_givenStopReason;
            Q_EMIT messageFinished(index);
        } else {
            // The streamed pieces hold back text that might start a stop string; the final text is
            // authoritative.
            reply.content = summary.text;
            reply.stopReason = QString::fromLatin1(wb::stop_reason_name(summary.reason));
            reply.run = replyRun(summary);
            Q_EMIT messageFinished(index);
        }
    }
    setGenerating(false);
    autosave();
    Q_EMIT timingsChanged(summary.timings);
    Q_EMIT generationFinished(summary);
    if (summary.requestId == m_apiRequest) {
        // Its client gets the error; the user is told in passing, and nothing goes to the message box.
        if (summary.reason == wb::StopReason::ERROR)
            Q_EMIT notice(tr("A request from another program failed: %1").arg(summary.error));
    } else if (summary.promptTooLong) {
        Q_EMIT messageRefused(refused, summary.error);
    } else if (summary.reason == wb::StopReason::ERROR) {
        Q_EMIT errorOccurred(summary.error);
    }
    if (summary.reason == wb::StopReason::CONTEXT_FULL && index >= 0) Q_EMIT contextFull(index);
}

ReplyRunPtr ChatController::replyRun(const GenerationSummary& summary) const {
    if (summary.rounds == 0 || summary.reason == wb::StopReason::ERROR) return nullptr;
    auto run = std::make_shared<ReplyRun>();
    run->prompt = summary.promptIds;
    run->given = m_givenTokens;
    run->params = summary.params;
    run->seed = summary.seed;
    run->backend = m_model.backendName;
    run->modelPath = m_model.path;
    run->rounds = summary.rounds;
    run->cached = m_promptReused;
    // How the engine ran it, for a trace file's `engine` (a replay from the CLI takes these settings).
    run->engine.recorded = true;
    run->engine.n_ctx = m_model.contextSize;
    run->engine.cache_type_k = wb::kv_type_name(m_model.kvTypeK);
    run->engine.cache_type_v = wb::kv_type_name(m_model.kvTypeV);
    run->engine.context_policy = wb::context_policy_name(summary.policy);
    run->engine.keep = summary.keep;
    if (summary.rounds > 1 || !summary.cuts.empty())
        run->unreplayable = tr("its context was cut (shifted or trimmed) while it was generated, so no prompt gives "
                               "the model what it saw");
    else if (summary.paramsChanged)
        run->unreplayable = tr("the sampling settings were changed while it was generated");
    return run;
}

void ChatController::finishAbandoned(const GenerationSummary& summary) {
    const QString id = m_abandonedId;
    const QVector<TokenRecord> late = m_abandonedTokens;
    m_abandonedId.clear();
    m_abandonedTokens.clear();
    // Deleted meanwhile: it stays deleted. Read again, not kept: a rename meanwhile stays too.
    if (!m_store || id.isEmpty() || m_store->indexOf(id) < 0) return;
    QString error;
    std::optional<Conversation> c = m_store->load(id, &error);
    if (c && !c->messages.isEmpty() && c->messages.last().role == QLatin1String("assistant")) {
        ChatEntry& reply = c->messages.last();
        reply.tokens += late;
        if (summary.reason == wb::StopReason::ERROR && reply.tokens.isEmpty()) {
            c->removeLast();
        } else {
            reply.content = summary.text;
            reply.stopReason = QString::fromLatin1(wb::stop_reason_name(summary.reason));
        }
        c->updated = QDateTime::currentDateTimeUtc();
        if (m_store->save(id, *c, &error)) return;
    }
    if (!error.isEmpty()) Q_EMIT errorOccurred(tr("The stopped reply could not be saved: %1").arg(error));
}

void ChatController::setGenerating(bool on) {
    if (m_generating == on) return;
    m_generating = on;
    Q_EMIT generatingChanged(on);
}

void ChatController::setLoading(bool on) {
    if (m_loading == on) return;
    m_loading = on;
    Q_EMIT loadingChanged(on);
}
