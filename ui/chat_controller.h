#pragma once
// ChatController: the GUI-thread side of a conversation. It owns the inference thread and its worker,
// makes every cross-thread connection (connectWorker, all explicitly queued), keeps the Conversation
// and turns user actions (send, stop, regenerate, edit and resend, fork from a token, switching
// versions, new chat, open/import/export) into worker requests. Regenerate, Edit and resend and a
// fork keep the earlier versions as siblings in the Conversation's tree. With a ConversationStore
// every change is saved at once (a system prompt or sampling change after a pause), so quitting or
// starting a new chat loses nothing. Panels listen to its signals; none of them talks to the worker.
#include <QObject>
#include <QPointer>
#include <QThread>
#include <QTimer>

#include "attention_store.h"
#include "conversation.h"
#include "engine_types.h"
#include "inference_worker.h"
#include "model_summary.h"

#include "conversation_store.h"

class ChatController : public QObject {
    Q_OBJECT

public:
    explicit ChatController(QObject* parent = nullptr);
    ~ChatController() override;

    const Conversation& conversation() const { return m_conversation; }
    AttentionStore* attentionStore() { return &m_attention; }
    InferenceWorker* worker() { return m_worker; }
    bool isGenerating() const { return m_generating; }
    bool isLoading() const { return m_loading; }
    bool hasModel() const { return !m_model.path.isEmpty(); }
    const ModelSummary& model() const { return m_model; }
    const wb::SamplingParams& samplingParams() const { return m_conversation.sampling; }

    // Model loading options used by the next loadModel.
    void setBackend(const QString& backend) { m_backendName = backend; }
    QString backend() const { return m_backendName; }
    void setContextSize(int tokens) { m_contextSize = tokens; }
    int contextSize() const { return m_contextSize; }
    // Engine threads; 0 = all cores.
    void setThreads(int threads) { m_threads = threads; }
    int threads() const { return m_threads; }
    // KV cache element types of keys and values ("f16", "q8_0", "q4_0").
    void setCacheTypes(const QString& k, const QString& v) {
        m_cacheTypeK = k;
        m_cacheTypeV = v;
    }
    QString cacheTypeK() const { return m_cacheTypeK; }
    QString cacheTypeV() const { return m_cacheTypeV; }
    // What a full context does from the next reply on (the caller checked it against the loaded cache).
    void setContextPolicy(wb::ContextPolicy policy);
    wb::ContextPolicy contextPolicy() const { return m_contextPolicy; }

    // Where conversations are saved (not owned); null: nothing is saved.
    void setStore(ConversationStore* store);
    ConversationStore* store() const { return m_store; }
    // The store's id of the conversation on screen (given at its first save).
    QString currentId() const { return m_currentId; }

public Q_SLOTS:
    void loadModel(const QString& path);
    void cancelLoad();
    // Appends a user message and starts the reply; false while a reply is being generated.
    bool sendMessage(const QString& text);
    // A new version of the last reply (the old one stays a sibling), or a reply to a last user message.
    bool regenerate();
    // A new version of user message `index` with `text`, and a reply to it; the old version keeps
    // what followed it. The session keeps the cached prefix up to the edit and truncates the rest.
    bool editAndResend(int index, const QString& text);
    // A new version of reply `messageIndex` that keeps its first `tokenIndex` tokens, takes
    // `candidateId` (one of the candidates of token `tokenIndex`) in place of that token and goes on
    // from there.
    bool forkFromToken(int messageIndex, int tokenIndex, int candidateId);
    // Shows version `version` (0-based) of message `index` and what was last active below it.
    bool selectVersion(int index, int version);
    void stop();
    // The last reply ended with context_full: it goes on, after a context shift or after old turns are
    // trimmed (`how`, for this reply only), from where it stopped. False while generating or when the
    // last message is not a reply that stopped so.
    bool continueAfterFullContext(wb::ContextPolicy how);
    // Saves the conversation on screen and starts an empty one. A reply still streaming is stopped;
    // its last tokens, final text and stop reason go into its saved file when the worker ends it.
    void newChat();
    // Opens a conversation of the store (the one on screen is saved first).
    bool openConversation(const QString& id, QString* error);
    // Renames a saved conversation (the one on screen too); an empty title goes back to the first message.
    bool renameConversation(const QString& id, const QString& title, QString* error);
    // Deletes a saved conversation (the store can undo it); deleting the one on screen starts a new chat.
    bool deleteConversation(const QString& id, QString* error);
    // Writes the conversation now (quit, tests); true when there was nothing to write.
    bool saveNow(QString* error = nullptr);
    void setSystemPrompt(const QString& prompt);
    // Live: applies to the next token of a running reply.
    void setSamplingParams(const wb::SamplingParams& params);
    void setCaptureSpec(const wb::CaptureSpec& spec);
    void setHeadStatsWanted(bool on);
    void setTimingsWanted(bool on);
    // Asks the worker for the length of the prompt the next send would build with `draft` (editing
    // message editIndex when >= 0); promptCounted answers with the returned id. Cheap, but it waits
    // behind a running reply on the worker thread.
    quint64 countPrompt(const QString& draft, int editIndex = -1);
    // Renders prompts of the loaded model with `setting` from the next request on (chatTemplateChanged
    // answers). The caller has checked and stored it (chat_template_setting.h).
    void applyChatTemplate(const ChatTemplateSetting& setting) { Q_EMIT chatTemplateRequested(m_model.path, setting); }
    // Export: a copy of the conversation on screen in `path`.
    bool saveConversation(const QString& path, QString* error);
    // Import: opens the file as a new conversation (saved in the store as its own).
    bool loadConversation(const QString& path, QString* error);

    // The SHA-256 (hex) of the loaded model's file; "" until the worker has read all of it (or when it
    // could not).
    QString modelSha256() const { return m_hashes.value(m_model.path); }
    QString fileSha256(const QString& path) const { return m_hashes.value(path); }
    // Replay and Compare (issue 16 item 7), run by the worker after any reply before them; the answers
    // are replayFinished, compareProgress and compareFinished with the returned job id.
    quint64 replayTrace(const wb::GenerationTrace& trace);
    quint64 compareWithModel(const QString& otherPath, const QVector<int>& prompt, const QVector<int>& reply);
    // Ends that job (and any earlier one) at its next token or prompt batch.
    void cancelJob(quint64 job) { m_worker->cancelJob(job); }

Q_SIGNALS:
    void loadStarted(const QString& path);
    void modelLoaded(const ModelSummary& summary);
    void loadFailed(const QString& path, const QString& error);
    void loadCanceled(const QString& path);
    void fileHashReady(const QString& path, const QString& sha256);
    void loadingChanged(bool loading);
    void generatingChanged(bool generating);
    // The whole conversation changed (new chat, load, edit): views re-render everything.
    void conversationReset();
    void messageAppended(int index);
    void tokenAppended(int messageIndex, int tokenIndex);
    // The token's logit lens / head statistics arrived (TokenRecord::inspection is set).
    void tokenInspected(int messageIndex, int tokenIndex);
    void messageFinished(int index);
    // The latest token event (its candidates drive the sampling panel's chart).
    void tokenEvent(const wb::TokenEvent& event);
    void promptReady(const PromptInfo& info);
    void kvStatsChanged(const wb::KvStats& stats);
    // The engine cut the context of the reply on screen (a shift, or a trim of old turns).
    void contextCut(const wb::ContextCut& cut);
    // A reply ended because the context is full (under Stop): the chat offers shift or trim.
    void contextFull(int messageIndex);
    void timingsChanged(const wb::Timings& timings);
    // Everything the worker recorded of the reply on screen's timing (while the Timings panel is shown).
    void timingsRecorded(const TimingRecordPtr& record);
    // Prompt tokens evaluated so far of total, after each prefill batch (Stop cancels the prefill).
    void prefillProgress(int done, int total);
    void generationFinished(const GenerationSummary& summary);
    void samplingParamsRestored(const wb::SamplingParams& params);
    void systemPromptRestored(const QString& prompt);
    void errorOccurred(const QString& message);
    void promptCounted(quint64 countId, int tokens, int contextSize, const QString& error);
    // The template the worker renders prompts with (after a load or applyChatTemplate).
    void chatTemplateChanged(const ChatTemplateInfo& info);
    // The worker refused a prompt that leaves no room for the reply: the message (text, when it was
    // the user's last one) is out of the history again, for the message box; reason has the numbers.
    void messageRefused(const QString& text, const QString& reason);
    void notice(const QString& message);
    // A grammar chosen during a reply was refused by the engine (the reply so far does not parse
    // under it): params are the settings with the grammar in force again, for the Sampling panel.
    void grammarRefused(const wb::SamplingParams& params, const QString& why);
    // The conversation on screen became another one of the store (open, new chat, import, delete).
    void currentConversationChanged(const QString& id);
    void replayFinished(quint64 job, const GenerationTracePtr& now, const QString& error);
    void compareProgress(quint64 job, int done, int total);
    void compareFinished(quint64 job, const ModelCompareResultPtr& result, const QString& error);

    // To the worker (queued); private use, connected in connectWorker.
    void loadRequested(const QString& path, const QString& backend, int contextSize, int threads,
                       const QString& cacheTypeK, const QString& cacheTypeV);
    void generateRequested(quint64 requestId, const ChatMessages& messages, const QVector<int>& forced, int policy);
    void resetRequested();
    void countRequested(quint64 countId, const ChatMessages& messages);
    void chatTemplateRequested(const QString& modelPath, const ChatTemplateSetting& setting);
    void replayRequested(quint64 job, const GenerationTracePtr& trace);
    void compareRequested(quint64 job, const QString& otherPath, const QVector<int>& prompt, const QVector<int>& reply);

private Q_SLOTS:
    void handleLoadStarted(const QString& path);
    void handleModelLoaded(const ModelSummary& summary);
    void handleLoadFailed(const QString& path, const QString& error);
    void handleLoadCanceled(const QString& path);
    void handlePromptReady(const PromptInfo& info);
    void handleToken(quint64 requestId, const wb::TokenEvent& event);
    void handleAttention(quint64 requestId, const AttentionBatch& batch);
    void handleInspection(quint64 requestId, const TokenInspectionPtr& inspection);
    void handleTimings(quint64 requestId, const wb::Timings& timings);
    void handleTimingRecord(quint64 requestId, const TimingRecordPtr& record);
    void handlePrefillProgress(quint64 requestId, int done, int total);
    void handleContextCut(quint64 requestId, const wb::ContextCut& cut);
    void handleGrammarRefused(quint64 requestId, const wb::GrammarRefusal& refusal);
    void handleGenerationFinished(const GenerationSummary& summary);

private:
    void connectWorker();
    // Generates the last message of the active path (an assistant placeholder, which may hold forced
    // first tokens).
    // policy >= 0: a wb::ContextPolicy for this request only (InferenceWorker::continueChat).
    void startGeneration(const QVector<int>& forced = {}, int policy = -1);
    // Shows `c` as the conversation on screen, with its settings.
    void adopt(const Conversation& c, const QString& id);
    void autosave();
    // The end of a request New chat stopped: its saved file gets the final text and stop reason.
    void finishAbandoned(const GenerationSummary& summary);
    // What Export sampler trace and Compare need of the reply that summary ends (null for a failed one).
    ReplyRunPtr replyRun(const GenerationSummary& summary) const;
    void scheduleSave() { if (m_store) m_saveTimer.start(); }
    void setGenerating(bool on);
    void setLoading(bool on);

    QThread m_thread;
    InferenceWorker* m_worker = nullptr;  // lives on m_thread; deleted after the thread ends
    Conversation m_conversation;
    QPointer<ConversationStore> m_store;  // a store destroyed first (tests) is not written
    QString m_currentId;
    QTimer m_saveTimer;  // settings changes are saved after a pause, not on every keystroke
    AttentionStore m_attention;
    ModelSummary m_model;
    QString m_backendName = QStringLiteral("auto");
    int m_contextSize = 0;
    QString m_cacheTypeK = QStringLiteral("f16");
    QString m_cacheTypeV = QStringLiteral("f16");
    int m_threads = 0;
    wb::ContextPolicy m_contextPolicy = wb::ContextPolicy::STOP;
    quint64 m_nextRequest = 1;
    quint64 m_nextCount = 1;
    quint64 m_activeRequest = 0;
    // A request New chat stopped: it still ends the generating state, but its events are dropped.
    quint64 m_abandonedRequest = 0;
    QString m_abandonedId;                  // the store id its reply was saved under
    QVector<TokenRecord> m_abandonedTokens; // its tokens that arrived after New chat
    bool isShown(quint64 requestId) const { return requestId == m_activeRequest && requestId != m_abandonedRequest; }
    int m_promptTokens = 0;  // of the active request: generated token i sits at position m_promptTokens + i
    int m_givenTokens = 0;
    int m_promptReused = 0;  // of the active request's last prompt: positions the session had cached   // of the active request: its reply's first tokens that were given, not drawn
    QHash<QString, QString> m_hashes;  // model file -> SHA-256 (hex), as the worker reported them
    quint64 m_nextJob = 1;
    bool m_generating = false;
    bool m_loading = false;
};
