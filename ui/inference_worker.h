#pragma once
// InferenceWorker: the object that owns the engine (Model, backend, Session) and runs it on its own
// QThread. The GUI talks to it only through queued signals and slots (connected in one place,
// ChatController::connectWorker) plus the few thread-safe calls below, so the GUI thread never waits
// for the engine.
#include <atomic>
#include <functional>
#include <memory>

#include <QCryptographicHash>
#include <QFile>
#include <QMutex>
#include <QObject>
#include <QString>

#include "engine/backend.h"
#include "engine/chat_prompt.h"
#include "engine/model.h"
#include "engine/session.h"
#include "chat_template_setting.h"
#include "engine_types.h"
#include "model_summary.h"

namespace wb::remote {
class OpenAiClient;
}

class InferenceWorker : public QObject {
    Q_OBJECT

public:
    explicit InferenceWorker(QObject* parent = nullptr);
    ~InferenceWorker() override;

    // --- Thread-safe: called directly from the GUI thread while the worker may be busy. ---
    // Ends every generation with a request id <= upToRequest after its current token or prompt batch
    // (WorkerObserver::stop_requested, polled by Session::generate); a request that has not started
    // yet ends before its prefill.
    void requestStop(quint64 upToRequest);
    // A model load cannot be interrupted inside the engine; a cancelled load is discarded when it
    // returns and the previous model stays.
    void cancelLoad();
    // Live sampling parameters: the session reads them before every token (LiveSamplingParams::set).
    void setSamplingParams(const wb::SamplingParams& params);
    wb::SamplingParams samplingParams() const;
    // What the observer asks the engine to capture; read at the start of each generation.
    void setCaptureSpec(const wb::CaptureSpec& spec);
    wb::CaptureSpec captureSpec() const;
    // The head statistics of every layer and head per token (the head grid); read at the start of
    // each generation like the capture spec. Off, no attention beyond the spec's is captured.
    void setHeadStatsWanted(bool on);
    // The loaded model's tokens for a text (no BOS, no special tokens): the Sampling panel's logit
    // bias by text. False with *error when no model is loaded.
    bool encodeText(const QString& text, std::vector<int32_t>* ids, QString* error) const;
    bool headStatsWanted() const;
    // Every token's and decode step's time (the Timings panel, timingsRecorded); read at the start of
    // each generation. Off, only the coalesced totals (timingsChanged) are sent.
    void setTimingsWanted(bool on);
    bool timingsWanted() const;
    // What a full context does in the next generations (stop, shift or trim; read at the start of
    // each one). The caller has checked it against the loaded cache (wb::check_context_policy).
    void setContextPolicy(wb::ContextPolicy policy);
    wb::ContextPolicy contextPolicy() const;

    // Ends every replay and comparison with a job id <= upToJob between two tokens or prompt batches
    // (a model file being loaded for a comparison is read to the end first).
    void cancelJob(quint64 upToJob) {
        // Never lowered: a late cancel of an old job must not take back a newer one's.
        quint64 now = m_cancelJobUpTo.load();
        while (now < upToJob && !m_cancelJobUpTo.compare_exchange_weak(now, upToJob)) {}
    }
    bool jobCancelled(quint64 job) const { return job <= m_cancelJobUpTo.load(); }

    // The loaded model, for the app's server (its HTTP threads render and tokenise prompts with it;
    // the Model is not changed after its load). Valid until the next loadModel replaces it: the
    // caller lets go of it before asking for a load (ChatController::aboutToLoad). Null before the
    // first load.
    const wb::Model* loadedModel() const;

    // A conversation's prompt as generateChat builds it, from any thread (the app's server checks a
    // request before it queues it, so that a prompt the worker would refuse is refused up front):
    // rendered with the template in force, and how many of its tokens must fit the context under the
    // context policy in force, with context_budget's room for the reply (countPrompt's count).
    // wb::Error when the template cannot render the messages; empty without a model.
    struct PromptMeasure {
        std::vector<int32_t> ids;
        int mustFit = 0;
    };
    PromptMeasure measurePrompt(const ChatMessages& messages) const;
    // The template prompts are rendered with now: the model's, or the replacement applied since
    // (applyChatTemplate). Any thread; null before a model is loaded.
    std::shared_ptr<const wb::ChatTemplate> chatTemplate() const;

    // Tests only (test_worker_threads): called once, on the worker thread, at the next teardown of the
    // engine (a model switch, the worker's end), after the old engine was taken out of the locked
    // members and before it is destroyed. A test parks the worker there to prove that the GUI
    // thread's calls do not wait for a teardown, which takes seconds on a GPU or a large model but is
    // too quick on the tests' model to be caught otherwise. Set it before the load is queued (the
    // queued call orders the write before the worker's read).
    void setReleaseProbeForTest(std::function<void()> probe) { m_releaseProbe = std::move(probe); }

    // --- Used by WorkerObserver on the worker thread. ---
    bool stopRequested(quint64 requestId) const { return requestId <= m_stopUpTo.load(); }
    // The statistics of the session's cache (kvStatsChanged) and the backend's device memory
    // (deviceMemoryChanged) as they are now, sent together so the ledger's rows agree.
    void emitMemory(const wb::KvStats& stats);

public Q_SLOTS:
    // backend: "auto", "cpu" or "cuda" (wb::parse_backend_kind: another name fails the load with its
    // error); contextSize 0 = the engine's default; threads 0 = all cores.
    // cacheTypeK / cacheTypeV: the KV cache element types by name (kv_type_from_name; a bad name fails the load).
    void loadModel(const QString& path, const QString& backend, int contextSize, int threads,
                   const QString& cacheTypeK = QStringLiteral("f16"), const QString& cacheTypeV = QStringLiteral("f16"));
    // A remote engine in place of a local model (inference_worker_remote.cpp): an OpenAI-compatible
    // server at url, asked for its models before anything changes, so a wrong address, key or model
    // name is a loadFailed(url, why) and the model in use stays. On success the local engine is
    // released and modelLoaded says so (ModelSummary::isRemote); replies then stream from the server
    // (generateChat, continueChat) until the next loadModel goes back to a local model. model: the
    // server's model to use, empty for the first it lists. Builds without the remote client
    // (WB_SERVER=OFF) answer loadFailed.
    void connectRemote(const QString& url, const QString& apiKey, const QString& model);
    // Renders the conversation with the model's chat template, tokenises it and generates the reply.
    // The session reuses the cached prefix, so an edited or regenerated turn truncates the cache.
    void generateChat(quint64 requestId, const ChatMessages& messages);
    // The same, with the reply's first tokens given (a fork from a token of an earlier reply): they
    // follow the rendered prompt as prompt tokens, the reply is generated after them, and the
    // summary's text begins with their text. Their events are not sent again (the caller has them).
    // policy >= 0: a wb::ContextPolicy for this request only, in place of the setting (the context-full
    // notice's "Shift and continue" / "Trim old turns and continue": a trim then drops old turns even
    // if the prompt would fit, since the reply so far is `forced`).
    void continueChat(quint64 requestId, const ChatMessages& messages, const QVector<int>& forced, int policy = -1);
    // Forgets the conversation (new chat).
    void resetSession();
    // The prompt's length in tokens as generateChat would build it (the message box's counter):
    // promptCounted(countId, tokens, the context size, error).
    void countPrompt(quint64 countId, const ChatMessages& messages);
    // Renders with `setting` from now on when modelPath is the loaded model (a load reads the setting
    // stored for its file itself): chatTemplateChanged answers.
    void applyChatTemplate(const QString& modelPath, const ChatTemplateSetting& setting);
    // Replay (inference_worker_trace.cpp): the trace's prompt ids generated again with its settings and
    // seed_in_use on the loaded model, its sampler trace recorded, and the logit lens and head statistics
    // where the file has them (inspection_replay.h): replayFinished(job, the new trace, "")
    // or (job, null, why). It runs in the chat's session, whose next reply recomputes its prompt from
    // where the two differ.
    void replayTrace(quint64 job, const InspectedTracePtr& recorded);
    // Compare: compare_models of prompt + reply between the loaded model and the GGUF file otherPath
    // (loaded for this job, on the same backend and cache types, in a session sized to hold them), with
    // compareProgress after each prompt batch: compareFinished(job, result, "") or (job, null, why).
    // While the second model is held, comparisonMemoryChanged reports it (at its load, with the
    // progress, at the end), and once more, released, with the device memory after it is gone.
    void compareModel(quint64 job, const QString& otherPath, const QVector<int>& prompt, const QVector<int>& reply);

Q_SIGNALS:
    void loadStarted(const QString& path);
    void modelLoaded(const ModelSummary& summary);
    void loadFailed(const QString& path, const QString& error);
    void loadCanceled(const QString& path);
    void fileHashReady(const QString& path, const QString& sha256);
    void promptReady(const PromptInfo& info);
    void tokenGenerated(quint64 requestId, const wb::TokenEvent& event);
    void attentionCaptured(quint64 requestId, const AttentionBatch& batch);
    // Right after tokenGenerated for the same token, when its logit lens or head statistics were asked for.
    void tokenInspected(quint64 requestId, const TokenInspectionPtr& inspection);
    void kvStatsChanged(const wb::KvStats& stats);
    // The backend's device memory by its own count (DeviceMemory::counted is false on the CPU), sent
    // with every kvStatsChanged: after a load, while a reply streams, after it, a reset, a replay.
    void deviceMemoryChanged(const wb::DeviceMemory& memory);
    // The engine cut the full context (a shift during the generation, a trim before its prefill).
    void contextCut(quint64 requestId, const wb::ContextCut& cut);
    // A grammar set during the reply was not applied: the reply so far does not parse under it.
    void grammarRefused(quint64 requestId, const wb::GrammarRefusal& refusal);
    void timingsChanged(quint64 requestId, const wb::Timings& timings);
    // With timingsChanged, when setTimingsWanted is on: everything recorded of the generation so far.
    void timingsRecorded(quint64 requestId, const TimingRecordPtr& record);
    void prefillProgress(quint64 requestId, int done, int total);
    void generationFinished(const GenerationSummary& summary);
    void promptCounted(quint64 countId, int tokens, int contextSize, const QString& error);
    // The template prompts are rendered with (after each load and applyChatTemplate).
    void chatTemplateChanged(const ChatTemplateInfo& info);
    void replayFinished(quint64 job, const InspectedTracePtr& now, const QString& error);
    // done of total positions evaluated (both models together); done = -1 while the file is loaded.
    void compareProgress(quint64 job, int done, int total);
    void compareFinished(quint64 job, const ModelCompareResultPtr& result, const QString& error);
    // The comparison's second model in memory (ComparisonMemory::loaded), or released.
    void comparisonMemoryChanged(const ComparisonMemory& memory);

private:
    void startHash(const QString& path);
    void hashNextChunk(quint64 job);
    void applyParams();  // m_userParams + the template's end-of-turn texts -> m_live
    void releaseEngine();
    // The prompt as it is fed: m_template renders, the model's tokenizer encodes (worker thread).
    wb::ChatPrompt buildPrompt(const ChatMessages& messages) const;
    void useTemplate(wb::ChatTemplate t, const ChatTemplateSetting& setting);
    // One generation of the reply after `forced` (inference_worker_context.cpp); false when the prompt
    // was refused (summary says why). *r is the engine's result.
    // made: reply tokens this request already produced in earlier rounds (they count against
    // max_tokens). False when the round did not run (refused, or nothing left to do).
    bool generateOnce(quint64 requestId, const ChatMessages& messages, const std::vector<int32_t>& forced, bool forceTrim,
                      GenerationSummary& summary, wb::GenerateResult* r, int32_t made = 0);
    // The messages a request sends under TRIM: the system messages and those from m_trimFrom on,
    // minus the fewest old turns more when they and a reply do not fit (or when `force`); a cut is
    // sent (contextCut) and added to the summary.
    ChatMessages trimmed(quint64 requestId, const ChatMessages& messages, int forced, bool force, GenerationSummary& summary);
    // The prompt that must fit the context for the request to go on: all of it under STOP, what the
    // trim keeps under TRIM, the system messages and the last turn under SHIFT (the rest can be shifted out).
    static ChatMessages mustFit(const ChatMessages& messages, wb::ContextPolicy policy);
    // A reply from the remote engine (inference_worker_remote.cpp), streamed as tokenGenerated events;
    // a live sampling change continues it with the new settings (see there). Fills summary.
    void generateRemote(quint64 requestId, const ChatMessages& messages, GenerationSummary& summary);
    // Called by setSamplingParams under m_paramsMutex: ends a remote stream that these new settings
    // change (and that can be continued), so that it goes on with them; never one with a grammar,
    // nor for a grammar that is set now (the change then applies from the next reply).
    void restartRemoteFor(const wb::SamplingParams& before, const wb::SamplingParams& now);
    // The prompt that continues `reply` of a remote chat: the server's template rendered here, the
    // reply so far after it (worker thread; m_remoteTemplate set).
    std::string remoteContinuation(const ChatMessages& messages, const std::string& reply) const;
    // compareModel's work while the second model is loaded (it is released on return): the result, or
    // null when the job was cancelled; wb::Error when it fails.
    ModelCompareResultPtr runComparison(quint64 job, const QString& otherPath, const std::vector<int32_t>& prompt,
                                        const std::vector<int32_t>& reply);

    // Declaration order matters for destruction: the session refers to the backend and the model.
    std::unique_ptr<wb::Model> m_model;
    wb::BackendChoice m_backend;
    std::unique_ptr<wb::Session> m_session;
    QString m_modelPath;
    // The loaded model's template, or the replacement applied since (applyChatTemplate). Replaced on
    // the worker thread under m_paramsMutex, so measurePrompt can take it from another thread.
    std::shared_ptr<const wb::ChatTemplate> m_template;
    ChatTemplateInfo m_templateInfo;

    mutable QMutex m_sessionMutex;  // guards the engine's swap (loadModel, releaseEngine)
    mutable QMutex m_paramsMutex;
    wb::SamplingParams m_userParams;
    std::vector<std::string> m_turnStops;  // end-of-turn texts of the loaded model's template
    wb::LiveSamplingParams m_live;
    wb::CaptureSpec m_capture;
    bool m_headStats = false;
    bool m_timings = false;
    wb::ContextPolicy m_policy = wb::ContextPolicy::STOP;
    // TRIM: messages after the system ones that no request of this conversation sends any more.
    size_t m_trimFrom = 0;
    // The tokens the trims that dropped those messages cut (ContextCut::dropped summed); reset with
    // m_trimFrom, sent with each prompt (PromptInfo::trimDropped).
    int m_trimDropped = 0;

    std::function<void()> m_releaseProbe;  // setReleaseProbeForTest

    // The remote engine in use (connectRemote), null with a local model. Shared, so its type stays
    // incomplete here (builds without the remote client have none).
    std::shared_ptr<const wb::remote::OpenAiClient> m_remote;
    // The remote request streaming now (0: none), and the flag its client reads to close the
    // connection: requestStop sets it for that request, setSamplingParams with m_remoteRestart (the
    // reply goes on with the new settings) for any.
    std::atomic<quint64> m_remoteRequest{0};
    std::atomic<bool> m_remoteCancel{false};
    std::atomic<bool> m_remoteRestart{false};
    // The streaming round has a grammar: it is not continued mid-reply (see restartRemoteFor).
    std::atomic<bool> m_remoteGrammar{false};
    // The server's chat template (GET /props), so a reply can go on through /v1/completions after a
    // sampling change; null when the server does not tell it (the change then applies from the next
    // reply, and m_remoteContinues is false).
    std::shared_ptr<const wb::ChatTemplate> m_remoteTemplate;
    std::atomic<bool> m_remoteContinues{false};

    std::atomic<quint64> m_stopUpTo{0};
    std::atomic<bool> m_cancelLoad{false};
    std::atomic<quint64> m_cancelJobUpTo{0};
    // The loaded session's cache types (a comparison's second session uses the same).
    wb::KvType m_kvTypeK = wb::KvType::F16, m_kvTypeV = wb::KvType::F16;

    // SHA-256 of the model file, computed in chunks queued on this thread so generation requests
    // interleave with it instead of waiting for a multi-GB file to be read.
    std::unique_ptr<QFile> m_hashFile;
    qint64 m_hashSize = 0;    // the file's size when the hash began
    qint64 m_hashedBytes = 0;
    QCryptographicHash m_hash{QCryptographicHash::Sha256};
    quint64 m_hashJob = 0;
};
