#include "worker_observer.h"

#include "inference_worker.h"
#include "tokenizer/tokenizer.h"

WorkerObserver::WorkerObserver(InferenceWorker& worker, quint64 requestId, const wb::CaptureSpec& spec,
                               const InspectionRequest& inspect)
    : m_worker(worker), m_requestId(requestId), m_spec(spec), m_inspect(inspect), m_passHeads(inspect.modelWindow) {
    m_attentionClock.start();
    m_kvClock.start();
    m_timingClock.start();
}

wb::CaptureSpec WorkerObserver::capture() const {
    if (!m_inspect.headStats) return m_spec;
    wb::CaptureSpec spec = m_spec;
    spec.layers.clear();
    spec.heads.clear();
    spec.prefill_attention = spec.decode_attention = true;
    return spec;
}

void WorkerObserver::on_token(const wb::TokenEvent& event) {
    // Attention rows of earlier steps go out before the token that follows them, so a view that
    // grows one row per token never sees a token without its row when both are due.
    flushAttention();
    if (m_inspect.timings) {
        // The interval ends here, before this token's own signals cost anything: a view of the
        // reply's pace, the sampling and the capture included.
        if (m_hasToken) m_record.tokenMs.push_back(double(m_tokenClock.nsecsElapsed()) / 1e6);
        m_tokenClock.start();
        m_hasToken = true;
    }
    Q_EMIT m_worker.tokenGenerated(m_requestId, event);
    if (event.lens.empty() && !m_inspect.headStats) return;
    auto inspection = std::make_shared<TokenInspection>();
    inspection->index = event.index;
    inspection->lens = event.lens;
    if (m_inspect.tokenizer) {
        auto name = [&](int32_t id) {
            if (!inspection->pieces.contains(id)) inspection->pieces.insert(id, tokenText(m_inspect.tokenizer->token_to_piece(id, true)));
        };
        name(event.id);
        for (const wb::LensLayer& l : event.lens)
            for (int32_t id : l.top_ids) name(id);
    }
    if (m_inspect.headStats) inspection->heads = m_passHeads.last_pass();
    Q_EMIT m_worker.tokenInspected(m_requestId, TokenInspectionPtr(std::move(inspection)));
}

bool WorkerObserver::stop_requested() const {
    return m_worker.stopRequested(m_requestId);
}

void WorkerObserver::on_attention(const wb::AttentionEvent& event) {
    if (m_inspect.headStats) m_passHeads.add(event);
    // Only what the panels asked for goes on (the head statistics made the engine capture every layer).
    const bool asked = (event.prefill ? m_spec.prefill_attention : m_spec.decode_attention) && m_spec.wants_layer(event.layer);
    if (!asked) return;
    m_pendingAttention.push_back(event);
    if (m_attentionClock.elapsed() >= kMinIntervalMs) flushAttention();
}

void WorkerObserver::on_context_cut(const wb::ContextCut& cut) {
    // The rows from before the cut go first: the store places later rows by the cut (AttentionStore::setCut).
    flushAttention();
    Q_EMIT m_worker.contextCut(m_requestId, cut);
}

void WorkerObserver::on_grammar_refused(const wb::GrammarRefusal& refusal) {
    Q_EMIT m_worker.grammarRefused(m_requestId, refusal);
}

void WorkerObserver::on_kv_cache(const wb::KvStats& stats) {
    m_pendingKv = stats;
    m_hasKv = true;
    if (m_kvClock.elapsed() >= kMinIntervalMs) {
        m_worker.emitMemory(m_pendingKv);
        m_hasKv = false;
        m_kvClock.restart();
    }
}

void WorkerObserver::on_prefill_progress(int32_t done, int32_t total) {
    Q_EMIT m_worker.prefillProgress(m_requestId, done, total);
}

void WorkerObserver::on_timing(const wb::Timings& timings) {
    m_pendingTimings = timings;
    m_hasTimings = true;
    // The engine reports once after each decode step (n_decode counts them), and again with the same
    // count after the prefill and at the end.
    if (m_inspect.timings && size_t(timings.n_decode) > m_record.stepMs.size()) m_record.stepMs.push_back(timings.last_token_ms);
    if (m_timingClock.elapsed() >= kMinIntervalMs) {
        emitTimings();
        m_timingClock.restart();
    }
}

void WorkerObserver::emitTimings() {
    Q_EMIT m_worker.timingsChanged(m_requestId, m_pendingTimings);
    m_hasTimings = false;
    if (!m_inspect.timings) return;
    m_record.totals = m_pendingTimings;
    Q_EMIT m_worker.timingsRecorded(m_requestId, std::make_shared<const TimingRecord>(m_record));
}

void WorkerObserver::flushAttention() {
    if (m_pendingAttention.empty()) return;
    auto batch = std::make_shared<const std::vector<wb::AttentionEvent>>(std::move(m_pendingAttention));
    m_pendingAttention = {};
    Q_EMIT m_worker.attentionCaptured(m_requestId, batch);
    m_attentionClock.restart();
}

void WorkerObserver::flush() {
    flushAttention();
    if (m_hasKv) m_worker.emitMemory(m_pendingKv);
    if (m_hasTimings) emitTimings();
    m_hasKv = false;
}
