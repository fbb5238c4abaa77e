// InferenceWorker's side of a full context: one generation of a reply with the policy in force, the
// trimming of old turns (TRIM) and the prompt that has to fit the context under each policy.
#include <QMutexLocker>

#include "context_budget.h"
#include "conversation.h"  // samplingToJson: a live settings change during a reply
#include "engine/context_policy.h"
#include "engine/stop_strings.h"
#include "inference_worker.h"
#include "prompt_record.h"
#include "worker_observer.h"

namespace {

size_t systemCount(const ChatMessages& messages) {
    size_t head = 0;
    while (head < messages.size() && messages[head].role == "system") ++head;
    return head;
}

}  // namespace

void InferenceWorker::setContextPolicy(wb::ContextPolicy policy) {
    QMutexLocker lock(&m_paramsMutex);
    m_policy = policy;
}

wb::ContextPolicy InferenceWorker::contextPolicy() const {
    QMutexLocker lock(&m_paramsMutex);
    return m_policy;
}

ChatMessages InferenceWorker::mustFit(const ChatMessages& messages, wb::ContextPolicy policy) {
    if (policy == wb::ContextPolicy::STOP) return messages;
    const size_t head = systemCount(messages);
    size_t last = messages.size();
    while (last > head && messages[last - 1].role != "user") --last;
    ChatMessages out(messages.begin(), messages.begin() + long(head));
    out.insert(out.end(), messages.begin() + long(last > head ? last - 1 : head), messages.end());
    return out;
}

ChatMessages InferenceWorker::trimmed(quint64 requestId, const ChatMessages& messages, int forced, bool force,
                                      GenerationSummary& summary) {
    const size_t head = systemCount(messages);
    // An edit before the first message still sent (or another conversation) starts the count over.
    if (head + m_trimFrom >= messages.size()) {
        m_trimFrom = 0;
        m_trimDropped = 0;
    }
    ChatMessages sent(messages.begin(), messages.begin() + long(head));
    sent.insert(sent.end(), messages.begin() + long(head + m_trimFrom), messages.end());
    const auto count = [&](const ChatMessages& x) { return int32_t(buildPrompt(x).ids.size()) + forced; };
    const int n_ctx = m_session->n_ctx();
    if (!force && context_budget::fits(count(sent), n_ctx)) return sent;
    // Down to half the context (the CLI's rule), so the next turns do not trim and recompute at once.
    int32_t dropped = 0;
    ChatMessages out = wb::trim_turns(sent, count, n_ctx / 2, &dropped);
    if (dropped == 0) return sent;
    m_trimFrom += size_t(dropped);
    const wb::ContextCut cut = wb::trim_cut(buildPrompt(sent).ids, buildPrompt(out).ids);
    m_trimDropped += cut.dropped;
    summary.cuts.push_back(cut);
    Q_EMIT contextCut(requestId, cut);
    return out;
}

bool InferenceWorker::generateOnce(quint64 requestId, const ChatMessages& all, const std::vector<int32_t>& forced,
                                   bool forceTrim, GenerationSummary& summary, wb::GenerateResult* r, int32_t made) {
    const wb::Model& m = *m_model;
    const wb::ContextPolicy policy = summary.policy;
    // Another policy sends the whole conversation: no trim is in force, and a later Trim counts anew.
    if (policy != wb::ContextPolicy::TRIM) {
        m_trimFrom = 0;
        m_trimDropped = 0;
    }
    const ChatMessages messages =
        policy == wb::ContextPolicy::TRIM ? trimmed(requestId, all, int(forced.size()), forceTrim, summary) : all;
    const wb::ChatPrompt prompt = buildPrompt(messages);
    std::vector<int32_t> ids = prompt.ids;
    ids.insert(ids.end(), forced.begin(), forced.end());
    // The forced start of the reply, decoded as the stream decodes it.
    std::string forcedText;
    wb::StreamDecoder decoder(m.tokenizer());
    for (int32_t id : forced) forcedText += decoder.push(id);
    forcedText += decoder.flush();
    // The chat panel's rule (context_budget.h): a prompt that leaves the reply no room is refused
    // before any of it is evaluated, and the controller takes the message back out of the history.
    // Under SHIFT only the system prompt and the last turn have to fit (the rest can be shifted out);
    // a continued reply (forced) is the engine's to cut.
    const int mustFitTokens = policy == wb::ContextPolicy::SHIFT ? int(buildPrompt(mustFit(messages, policy)).ids.size())
                                                                 : int(ids.size());
    // A continued reply that no longer fits (no old turn was left to drop) ends as full, as the
    // round before it did; the earlier rounds' tokens use up max_tokens.
    wb::SamplingParams round = m_live.get();
    round.max_tokens -= made;
    const bool full = policy != wb::ContextPolicy::SHIFT && int(ids.size()) >= m_session->n_ctx();
    if (!forced.empty() && (full || round.max_tokens <= 0)) {
        summary.text = QString::fromStdString(forcedText);
        summary.reason = full ? wb::StopReason::CONTEXT_FULL : wb::StopReason::MAX_TOKENS;
        summary.error.clear();
        return false;
    }
    if (forced.empty() && !context_budget::fits(mustFitTokens, m_session->n_ctx())) {
        summary.reason = wb::StopReason::ERROR;
        summary.promptTooLong = true;
        summary.promptTokens = mustFitTokens;
        summary.contextSize = m_session->n_ctx();
        summary.error = context_budget::refusal(summary.promptTokens, summary.contextSize);
        return false;
    }
    PromptInfo info = recordPrompt(prompt, ids, m.tokenizer());
    info.requestId = requestId;
    info.chatTemplate = m_templateInfo;
    // The engine's own first step of generate(): what it keeps of the cache, and how a shifted cache
    // maps the kept positions (the attention store places rows by it; it must not guess).
    info.reused = int(m_session->reuse_prefix(ids));
    if (m_session->dropped() > 0) {
        info.shiftKeep = int(m_session->shifted_keep());
        info.shiftDropped = int(m_session->dropped());
    }
    info.trimDropped = m_trimDropped;
    Q_EMIT promptReady(info);

    InspectionRequest inspect;
    inspect.headStats = headStatsWanted();
    inspect.timings = timingsWanted();
    inspect.tokenizer = &m.tokenizer();
    inspect.modelWindow = wb::head_stats_model_window(m.config());
    WorkerObserver observer(*this, requestId, captureSpec(), inspect);
    // Later rounds run on a copy that holds what is left of max_tokens (a change made meanwhile in the
    // Sampling panel reaches the next round, not this one); the first round is live as always.
    const wb::LiveSamplingParams remaining(round);
    *r = m_session->generate(ids, made > 0 ? remaining : m_live, &observer);
    observer.flush();
    // A later round ran on its own copy: only the first can have seen a live change.
    summary.promptIds = ids;
    summary.params = round;
    summary.paramsChanged = made == 0 && samplingToJson(m_live.get()) != samplingToJson(round);
    ++summary.rounds;
    summary.text = QString::fromStdString(forcedText + r->text);
    summary.reason = r->reason;
    summary.error = QString::fromStdString(r->error);
    summary.timings = r->timings;
    summary.seed = r->seed;
    summary.cuts.insert(summary.cuts.end(), r->cuts.begin(), r->cuts.end());
    return true;
}
