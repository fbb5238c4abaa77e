// The worker's Replay and Compare jobs (issue 16 item 7): both run on the worker thread like a reply,
// so the GUI thread never waits for the engine; a message sent meanwhile waits behind them.
#include <algorithm>
#include <chrono>

#include "engine/inspection_replay.h"
#include "engine/model_compare.h"
#include "inference_worker.h"
#include "util/error.h"

namespace {

// Records what a replay draws: every token and its sampler trace, and the logit lens and head
// statistics the file recorded (as the chat's WorkerObserver computes them), nothing else.
class TraceRecorder : public wb::Observer {
public:
    TraceRecorder(const InferenceWorker& worker, quint64 job, const wb::InspectedTrace& file, int32_t modelWindow)
        : m_worker(worker), m_job(job), m_file(file.inspection), m_top(wb::replay_trace_candidates(file.trace)),
          m_inspect(wb::inspection_replay_spec(file.inspection)), m_passHeads(modelWindow) {}
    wb::CaptureSpec capture() const override {
        wb::CaptureSpec spec;
        spec.sampler_trace = true;
        spec.trace_candidates = m_top;
        spec.logit_lens = m_inspect.logit_lens;
        if (m_inspect.head_stats) {
            spec.prefill_attention = spec.decode_attention = true;
            spec.layers = m_inspect.layers;
            spec.heads = m_inspect.heads;
        }
        return spec;
    }
    void on_token(const wb::TokenEvent& e) override {
        steps.push_back({e.id, e.trace});
        // Kept: only what the comparison reads, the file's steps and, of the lens, the layers the
        // file's step names (the engine computes every layer's; a long replay would hold them all).
        wb::TraceStepInspection s;
        if (steps.size() <= m_file.size()) {
            const wb::TraceStepInspection& want = m_file[steps.size() - 1];
            for (const wb::LensLayer& l : e.lens)
                if (std::any_of(want.lens.begin(), want.lens.end(), [&](const wb::LensLayer& w) { return w.layer == l.layer; }))
                    s.lens.push_back(l);
            if (m_inspect.head_stats && !want.heads.empty()) s.heads = m_passHeads.last_pass();
        }
        inspection.push_back(std::move(s));
    }
    void on_attention(const wb::AttentionEvent& e) override { m_passHeads.add(e); }
    bool stop_requested() const override { return m_worker.jobCancelled(m_job); }

    std::vector<wb::TraceStep> steps;
    std::vector<wb::TraceStepInspection> inspection;

private:
    const InferenceWorker& m_worker;
    quint64 m_job;
    const std::vector<wb::TraceStepInspection>& m_file;  // the file's records (outlives the replay)
    int32_t m_top;
    wb::InspectionReplaySpec m_inspect;
    wb::PassHeadStats m_passHeads;
};

// The backend's own copies of weights, every model's together: a GPU's uploads, else the CPU's
// repacked matrices.
qint64 weightCopyBytes(const wb::Backend& b) {
    const wb::DeviceMemory d = b.device_memory();
    if (d.counted) return qint64(d.weights);
    qint64 sum = 0;
    for (const auto& [type, bytes] : b.repacked_weights()) sum += qint64(bytes);
    return sum;
}

}  // namespace

void InferenceWorker::replayTrace(quint64 job, const InspectedTracePtr& recorded) {
    if (!m_session || !recorded) {
        Q_EMIT replayFinished(job, nullptr, tr("No model is loaded."));
        return;
    }
    const wb::GenerationTrace& rec = recorded->trace;
    const qint64 need = qint64(rec.prompt.size()) + qint64(rec.steps.size());
    if (need > m_session->n_ctx()) {
        Q_EMIT replayFinished(job, nullptr,
                              tr("The trace needs a context of %1 tokens (a prompt of %2 and %3 generated); the loaded "
                                 "model's holds %4. Load it with a larger context (Model > Context size).")
                                  .arg(need).arg(rec.prompt.size()).arg(rec.steps.size()).arg(m_session->n_ctx()));
        return;
    }
    if (jobCancelled(job)) {
        Q_EMIT replayFinished(job, nullptr, tr("The replay was cancelled."));
        return;
    }
    try {
        // The file's settings with the seed the sampler drew with; a full context stops (the recorded
        // reply fitted, so a replay that does not is a difference, not something to shift away).
        wb::SamplingParams params = rec.params;
        params.seed = rec.seed_in_use;
        m_session->set_context_policy({wb::ContextPolicy::STOP, -1});
        // From an empty cache, as the recording prefilled its prompt: a prompt the cache already holds
        // would have its last position run alone through the one-token decode path, whose kernels
        // round differently from a prefill batch's (measured: a logit 28.79 -> 28.66 on SmolLM2 Q4_1).
        m_session->reset();
        TraceRecorder recorder(*this, job, *recorded, wb::head_stats_model_window(m_model->config()));
        const wb::GenerateResult r = m_session->generate(rec.prompt, wb::LiveSamplingParams(params), &recorder);
        emitMemory(m_session->kv_stats());
        if (r.reason == wb::StopReason::ERROR) {
            Q_EMIT replayFinished(job, nullptr, QString::fromStdString(r.error));
            return;
        }
        if (jobCancelled(job)) {
            Q_EMIT replayFinished(job, nullptr, tr("The replay was cancelled."));
            return;
        }
        auto now = std::make_shared<wb::InspectedTrace>();
        now->trace.backend = m_backend.backend->name();
        now->trace.params = rec.params;
        now->trace.seed_in_use = r.seed;
        now->trace.prompt = rec.prompt;
        now->trace.steps = std::move(recorder.steps);
        now->inspection = std::move(recorder.inspection);
        Q_EMIT replayFinished(job, now, QString());
    } catch (const std::exception& e) {
        Q_EMIT replayFinished(job, nullptr, QString::fromUtf8(e.what()));
    }
}

void InferenceWorker::compareModel(quint64 job, const QString& otherPath, const QVector<int>& promptIds,
                                   const QVector<int>& replyIds) {
    if (!m_session) {
        Q_EMIT compareFinished(job, nullptr, tr("No model is loaded."));
        return;
    }
    ModelCompareResultPtr result;
    QString error;
    try {
        result = runComparison(job, otherPath, std::vector<int32_t>(promptIds.begin(), promptIds.end()),
                               std::vector<int32_t>(replyIds.begin(), replyIds.end()));
    } catch (const std::exception& e) {
        error = QString::fromUtf8(e.what());
    }
    // The second model and its sessions are gone: so are the ledger's rows of it, and the device
    // memory's measured figure drops by what they held.
    Q_EMIT comparisonMemoryChanged(ComparisonMemory{});
    emitMemory(m_session->kv_stats());
    if (!result && (error.isEmpty() || jobCancelled(job))) error = tr("The comparison was cancelled.");
    Q_EMIT compareFinished(job, result, result ? QString() : error);
}

ModelCompareResultPtr InferenceWorker::runComparison(quint64 job, const QString& otherPath,
                                                     const std::vector<int32_t>& prompt, const std::vector<int32_t>& reply) {
    const int total = int(2 * (prompt.size() + reply.size()));
    Q_EMIT compareProgress(job, -1, total);
    const std::unique_ptr<wb::Model> other = wb::Model::load(otherPath.toStdString());
    if (jobCancelled(job)) return nullptr;
    // Sized to hold prompt and reply as one context: a reply that went on after context shifts is
    // longer than the chat's session, which then gives way to one of the right size too.
    wb::SessionOptions options;
    options.n_ctx = std::max<int32_t>(m_session->n_ctx(), int32_t(prompt.size() + reply.size()));
    options.kv_type_k = m_kvTypeK;
    options.kv_type_v = m_kvTypeV;
    const wb::Backend& backend = *m_backend.backend;
    const qint64 copiesBefore = weightCopyBytes(backend);
    std::unique_ptr<wb::Session> second, first;
    ComparisonMemory memory;
    memory.loaded = true;
    try {
        second = std::make_unique<wb::Session>(*other, *m_backend.backend, options);
        // Measured before the chat's resized session: that one shares the chat model's copies.
        const qint64 added = weightCopyBytes(backend) - copiesBefore;
        memory.weightCopies = backend.device_memory().counted || added > 0 ? added : -1;
        if (options.n_ctx > m_session->n_ctx()) first = std::make_unique<wb::Session>(*m_model, *m_backend.backend, options);
    } catch (const wb::Error& e) {
        throw wb::Error(std::string("compare: ") + e.what());
    }
    memory.summary = ModelSummary::fromModel(*other, otherPath, int(options.n_ctx), m_kvTypeK, m_kvTypeV);
    memory.chatResized = first != nullptr;
    const auto report = [&] {
        memory.kv = second->kv_stats();
        if (first) memory.chatKv = first->kv_stats();
        Q_EMIT comparisonMemoryChanged(memory);
        if (backend.device_memory().counted) Q_EMIT deviceMemoryChanged(backend.device_memory());
    };
    report();
    // Progress (and the second model's memory) at most every 100 ms: a batch of a small model takes
    // a few milliseconds.
    auto last = std::chrono::steady_clock::now();
    const wb::CompareProgress progress = [&](size_t done, size_t all) {
        const auto t = std::chrono::steady_clock::now();
        if (t - last >= std::chrono::milliseconds(100) || done == all) {
            last = t;
            Q_EMIT compareProgress(job, int(done), int(all));
            report();
        }
        return !jobCancelled(job);
    };
    auto result = std::make_shared<ModelCompareResult>();
    result->otherPath = otherPath;
    try {
        result->comparison = wb::compare_models(first ? *first : *m_session, *second, prompt, reply, progress);
    } catch (const wb::Error&) {
        if (jobCancelled(job)) return nullptr;
        throw;
    }
    report();
    const wb::Tokenizer& tok = m_model->tokenizer();
    for (const wb::TokenComparison& t : result->comparison.tokens)
        for (int32_t id : {t.token, t.top_a, t.top_b})
            if (!result->pieces.contains(id)) result->pieces.insert(id, tokenText(tok.token_to_piece(id, true)));
    return result;
}
