#include "worker_observer.h"

#include "inference_worker.h"

WorkerObserver::WorkerObserver(InferenceWorker& worker, quint64 requestId, const wb::CaptureSpec& spec)
    : m_worker(worker), m_requestId(requestId), m_spec(spec) {
    m_attentionClock.start();
    m_kvClock.start();
    m_timingClock.start();
}

void WorkerObserver::on_token(const wb::TokenEvent& event) {
    // Attention rows of earlier steps go out before the token that follows them, so a view that
    // grows one row per token never sees a token without its row when both are due.
    flushAttention();
    Q_EMIT m_worker.tokenGenerated(m_requestId, event);
}

bool WorkerObserver::stop_requested() const {
    return m_worker.stopRequested(m_requestId);
}

void WorkerObserver::on_attention(const wb::AttentionEvent& event) {
    m_pendingAttention.push_back(event);
    if (m_attentionClock.elapsed() >= kMinIntervalMs) flushAttention();
}

void WorkerObserver::on_kv_cache(const wb::KvStats& stats) {
    m_pendingKv = stats;
    m_hasKv = true;
    if (m_kvClock.elapsed() >= kMinIntervalMs) {
        Q_EMIT m_worker.kvStatsChanged(m_pendingKv);
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
    if (m_timingClock.elapsed() >= kMinIntervalMs) {
        Q_EMIT m_worker.timingsChanged(m_requestId, m_pendingTimings);
        m_hasTimings = false;
        m_timingClock.restart();
    }
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
    if (m_hasKv) Q_EMIT m_worker.kvStatsChanged(m_pendingKv);
    if (m_hasTimings) Q_EMIT m_worker.timingsChanged(m_requestId, m_pendingTimings);
    m_hasKv = m_hasTimings = false;
}
