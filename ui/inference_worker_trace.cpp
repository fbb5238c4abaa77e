// The worker's Replay and Compare jobs (issue 16 item 7): both run on the worker thread like a reply,
// so the GUI thread never waits for the engine; a message sent meanwhile waits behind them.
#include <algorithm>
#include <chrono>

#include "engine/model_compare.h"
#include "inference_worker.h"
#include "util/error.h"

namespace {

// Records what a replay draws: every token and its sampler trace, nothing else.
class TraceRecorder : public wb::Observer {
public:
    TraceRecorder(const InferenceWorker& worker, quint64 job, int32_t topCandidates)
        : m_worker(worker), m_job(job), m_top(topCandidates) {}
    wb::CaptureSpec capture() const override {
        wb::CaptureSpec spec;
        spec.sampler_trace = true;
        spec.trace_candidates = m_top;
        return spec;
    }
    void on_token(const wb::TokenEvent& e) override { steps.push_back({e.id, e.trace}); }
    bool stop_requested() const override { return m_worker.jobCancelled(m_job); }

    std::vector<wb::TraceStep> steps;

private:
    const InferenceWorker& m_worker;
    quint64 m_job;
    int32_t m_top;
};

}  // namespace

void InferenceWorker::replayTrace(quint64 job, const GenerationTracePtr& recorded) {
    if (!m_session || !recorded) {
        Q_EMIT replayFinished(job, nullptr, tr("No model is loaded."));
        return;
    }
    const wb::GenerationTrace& rec = *recorded;
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
        TraceRecorder recorder(*this, job, wb::replay_trace_candidates(rec));
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
        auto now = std::make_shared<wb::GenerationTrace>();
        now->backend = m_backend.backend->name();
        now->params = rec.params;
        now->seed_in_use = r.seed;
        now->prompt = rec.prompt;
        now->steps = std::move(recorder.steps);
        Q_EMIT replayFinished(job, now, QString());
    } catch (const std::exception& e) {
        Q_EMIT replayFinished(job, nullptr, QString::fromUtf8(e.what()));
    }
}

void InferenceWorker::compareModel(quint64 job, const QString& otherPath, const QVector<int>& promptIds,
                                   const QVector<int>& replyIds) {
    const std::vector<int32_t> prompt(promptIds.begin(), promptIds.end());
    const std::vector<int32_t> reply(replyIds.begin(), replyIds.end());
    if (!m_session) {
        Q_EMIT compareFinished(job, nullptr, tr("No model is loaded."));
        return;
    }
    const auto cancelled = [&] {
        Q_EMIT compareFinished(job, nullptr, tr("The comparison was cancelled."));
    };
    try {
        const int total = int(2 * (prompt.size() + reply.size()));
        Q_EMIT compareProgress(job, -1, total);
        const std::unique_ptr<wb::Model> other = wb::Model::load(otherPath.toStdString());
        if (jobCancelled(job)) return cancelled();
        // Sized to hold prompt and reply as one context: a reply that went on after context shifts is
        // longer than the chat's session, which then gives way to one of the right size too.
        wb::SessionOptions options;
        options.n_ctx = std::max<int32_t>(m_session->n_ctx(), int32_t(prompt.size() + reply.size()));
        options.kv_type_k = m_kvTypeK;
        options.kv_type_v = m_kvTypeV;
        std::unique_ptr<wb::Session> second, first;
        try {
            second = std::make_unique<wb::Session>(*other, *m_backend.backend, options);
            if (options.n_ctx > m_session->n_ctx()) first = std::make_unique<wb::Session>(*m_model, *m_backend.backend, options);
        } catch (const wb::Error& e) {
            throw wb::Error(std::string("compare: ") + e.what());
        }
        // Progress at most every 100 ms: a batch of a small model takes a few milliseconds.
        auto last = std::chrono::steady_clock::now();
        const wb::CompareProgress progress = [&](size_t done, size_t all) {
            const auto t = std::chrono::steady_clock::now();
            if (t - last >= std::chrono::milliseconds(100) || done == all) {
                last = t;
                Q_EMIT compareProgress(job, int(done), int(all));
            }
            return !jobCancelled(job);
        };
        auto result = std::make_shared<ModelCompareResult>();
        result->otherPath = otherPath;
        result->comparison = wb::compare_models(first ? *first : *m_session, *second, prompt, reply, progress);
        emitMemory(m_session->kv_stats());
        const wb::Tokenizer& tok = m_model->tokenizer();
        for (const wb::TokenComparison& t : result->comparison.tokens)
            for (int32_t id : {t.token, t.top_a, t.top_b})
                if (!result->pieces.contains(id)) result->pieces.insert(id, tokenText(tok.token_to_piece(id, true)));
        Q_EMIT compareFinished(job, result, QString());
    } catch (const std::exception& e) {
        if (m_session) emitMemory(m_session->kv_stats());
        if (jobCancelled(job)) return cancelled();
        Q_EMIT compareFinished(job, nullptr, QString::fromUtf8(e.what()));
    }
}
