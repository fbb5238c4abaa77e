#pragma once
// The engine Observer of the desktop app: runs on the inference thread and turns engine events into
// InferenceWorker signals (queued to the GUI). Tokens go one by one (the chat streams them); attention,
// KV statistics and timings are coalesced to at most 30 signals a second, so a fast decode cannot
// flood the GUI's event queue.
#include <QElapsedTimer>

#include "engine/head_stats.h"
#include "engine/observer.h"
#include "engine_types.h"

class InferenceWorker;
namespace wb {
class Tokenizer;
}

// What one generation records for the inspection views beyond the attention panel's capture.
struct InspectionRequest {
    bool headStats = false;              // every layer's and head's attention statistics per token
    int32_t modelWindow = 0;             // head_stats' window for layers without their own (0: none)
    const wb::Tokenizer* tokenizer = nullptr;  // names the logit lens's tokens
    bool timings = false;                // every token's and decode step's time (the Timings panel)
};

class WorkerObserver : public wb::Observer {
public:
    // spec: what the panels asked for (the attention rows sent on are those of its layers); inspect:
    // the head statistics, which need every layer's attention from the engine but send none of it on.
    WorkerObserver(InferenceWorker& worker, quint64 requestId, const wb::CaptureSpec& spec,
                   const InspectionRequest& inspect = {});

    wb::CaptureSpec capture() const override;
    void on_token(const wb::TokenEvent& event) override;
    void on_attention(const wb::AttentionEvent& event) override;
    void on_kv_cache(const wb::KvStats& stats) override;
    // A context shift: sent at once (InferenceWorker::contextCut), with the cache's statistics after it.
    void on_context_cut(const wb::ContextCut& cut) override;
    void on_timing(const wb::Timings& timings) override;
    // Sent at once (InferenceWorker::grammarRefused): the GUI shows the grammar in force again.
    void on_grammar_refused(const wb::GrammarRefusal& refusal) override;
    // One signal per prefill batch (a long prompt has few): drives the progress bar.
    void on_prefill_progress(int32_t done, int32_t total) override;
    // A stop for this request, also one asked for before it started (Session::generate clears its
    // own flag when it starts): the prefill does not begin, or ends after the current batch.
    bool stop_requested() const override;

    // Emits whatever is still held back; called when the generation ends.
    void flush();

    // 30 Hz: the GUI redraws no faster than this anyway.
    static constexpr qint64 kMinIntervalMs = 33;

private:
    void flushAttention();
    void emitTimings();

    InferenceWorker& m_worker;
    quint64 m_requestId;
    wb::CaptureSpec m_spec;
    InspectionRequest m_inspect;
    // The head statistics of the pass under way: its last row's logits draw the next token.
    wb::PassHeadStats m_passHeads;
    std::vector<wb::AttentionEvent> m_pendingAttention;
    wb::KvStats m_pendingKv;
    bool m_hasKv = false;
    wb::Timings m_pendingTimings;
    bool m_hasTimings = false;
    QElapsedTimer m_attentionClock;
    QElapsedTimer m_kvClock;
    QElapsedTimer m_timingClock;
    // InspectionRequest::timings: what the Timings panel is sent (TimingRecord), and the time of the
    // last token's event.
    TimingRecord m_record;
    QElapsedTimer m_tokenClock;
    bool m_hasToken = false;
};
