#include "remote_reply.h"

#include <cmath>
#include <limits>

namespace remote_reply {

namespace {

// exp(logprob): -inf (a probability the server rounded to 0) is 0, NaN (none given) stays NaN.
float probability(float logprob) {
    return std::isnan(logprob) ? std::numeric_limits<float>::quiet_NaN() : std::exp(logprob);
}

wb::TokenEvent eventOf(const wb::remote::RemoteTokenLogprob& t, int32_t index) {
    wb::TokenEvent ev;
    ev.index = index;
    ev.id = kDrawnId;
    ev.token_piece = t.token;
    ev.p_raw = probability(t.logprob);
    // The server reports the distribution before its sampling only: that is the p it gives.
    ev.p = ev.p_raw;
    // As many as were asked for: a server may send more, and each becomes a row in every view.
    for (size_t i = 0; i < t.top.size() && i < size_t(kTopLogprobs); ++i) {
        wb::TokenCandidate c;
        c.id = t.top[i].token == t.token ? kDrawnId : kDrawnId - 1 - int32_t(i);
        c.piece = t.top[i].token;
        c.p_raw = probability(t.top[i].logprob);
        c.p_final = std::numeric_limits<float>::quiet_NaN();
        ev.candidates.push_back(std::move(c));
    }
    return ev;
}

}  // namespace

std::vector<wb::TokenEvent> tokenEvents(const wb::remote::StreamDelta& delta, int32_t* nextIndex) {
    std::vector<wb::TokenEvent> out;
    for (const wb::remote::RemoteTokenLogprob& t : delta.tokens) out.push_back(eventOf(t, (*nextIndex)++));
    if (out.empty()) {
        if (delta.text.empty()) return out;
        wb::TokenEvent ev;
        ev.index = (*nextIndex)++;
        ev.id = kDrawnId;
        ev.token_piece = delta.text;
        ev.p = ev.p_raw = std::numeric_limits<float>::quiet_NaN();
        out.push_back(std::move(ev));
    }
    out.back().piece = delta.text;
    return out;
}

wb::remote::RemoteSampling sampling(const wb::SamplingParams& p) {
    wb::remote::RemoteSampling r;
    r.temperature = p.temperature;
    r.top_k = p.top_k;
    r.top_p = p.top_p;
    r.min_p = p.min_p;
    r.typical_p = p.typical_p;
    r.repeat_penalty = p.repeat_penalty;
    r.repeat_last_n = p.repeat_last_n;
    r.frequency_penalty = p.frequency_penalty;
    r.presence_penalty = p.presence_penalty;
    if (p.seed != wb::SamplingParams::kRandomSeed) r.seed = p.seed;
    r.stop = p.stop;
    // The extensions only when on: a server that does not know them never sees them otherwise.
    r.grammar = p.grammar;
    for (const wb::LogitBias& b : p.logit_bias) r.logit_bias.emplace_back(b.token, b.bias);
    if (p.dry_multiplier > 0.0f) {
        r.dry_multiplier = p.dry_multiplier;
        r.dry_base = p.dry_base;
        r.dry_allowed_length = p.dry_allowed_length;
        r.dry_penalty_last_n = p.dry_penalty_last_n;
        // A server refuses an empty list: "no breakers" is not sent (the panel's note says so).
        if (!p.dry_sequence_breakers.empty()) r.dry_sequence_breakers = p.dry_sequence_breakers;
    }
    if (p.xtc_probability > 0.0f) {
        r.xtc_probability = p.xtc_probability;
        r.xtc_threshold = p.xtc_threshold;
    }
    if (p.top_n_sigma > 0.0f) r.top_n_sigma = p.top_n_sigma;
    if (p.mirostat != 0) {
        r.mirostat = p.mirostat;
        r.mirostat_tau = p.mirostat_tau;
        r.mirostat_eta = p.mirostat_eta;
    }
    // llama.cpp's names, which its server and WhiteBox's take as `samplers`.
    if (p.samplers != wb::default_sampler_sequence()) r.samplers = p.samplers;
    return r;
}

wb::StopReason stopReason(const wb::remote::RemoteResult& result) {
    if (result.cancelled) return wb::StopReason::STOPPED;
    if (result.finish_reason == "stop") return wb::StopReason::EOS;
    if (result.finish_reason == "length") return wb::StopReason::MAX_TOKENS;
    return wb::StopReason::NONE;
}

}  // namespace remote_reply
