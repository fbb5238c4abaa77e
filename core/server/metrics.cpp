#include "server/metrics.h"

#include <cstdio>

namespace wb::server {

void Metrics::count_request(int status) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++c_.requests[status];
}

void Metrics::count_job(JobEnd end, int32_t prompt_tokens, int32_t completion_tokens, double prefill_ms,
                        double decode_ms, int32_t decoded) {
    std::lock_guard<std::mutex> lock(mutex_);
    switch (end) {
    case JobEnd::ABANDONED: ++c_.abandoned; return;
    case JobEnd::DROPPED: ++c_.dropped; return;
    case JobEnd::CANCELLED: ++c_.cancelled; break;
    case JobEnd::INTERRUPTED: ++c_.interrupted; break;
    case JobEnd::GENERATED: break;
    }
    ++c_.generations;
    c_.prompt_tokens += uint64_t(prompt_tokens);
    c_.completion_tokens += uint64_t(completion_tokens);
    c_.prefill_seconds += prefill_ms / 1000.0;
    c_.decode_seconds += decode_ms / 1000.0;
    c_.decoded += uint64_t(decoded);
    if (decode_ms > 0 && decoded > 0) c_.last_decode_tps = 1000.0 * decoded / decode_ms;
}

namespace {

void metric(std::string& out, const char* name, const char* type, const char* help, double value) {
    char line[64];
    std::snprintf(line, sizeof line, "%.17g", value);
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + name + " " + line + "\n";
}

}  // namespace

std::string Metrics::prometheus_text(const std::function<MetricsSnapshotGauges()>& gauges) const {
    Counters c;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        c = c_;
    }
    const MetricsSnapshotGauges g = gauges();
    std::string out = "# HELP whitebox_requests_total HTTP requests answered, by status code.\n"
                      "# TYPE whitebox_requests_total counter\n";
    for (const auto& [status, n] : c.requests)
        out += "whitebox_requests_total{code=\"" + std::to_string(status) + "\"} " + std::to_string(n) + "\n";
    metric(out, "whitebox_generations_total", "counter",
           "Generations the sessions ran, to their end or stopped early.", double(c.generations));
    metric(out, "whitebox_generations_cancelled_total", "counter",
           "Generations ended early because their client disconnected.", double(c.cancelled));
    metric(out, "whitebox_generations_interrupted_total", "counter",
           "Generations ended early because the server shut down.", double(c.interrupted));
    metric(out, "whitebox_queue_abandoned_total", "counter",
           "Requests whose client disconnected while they waited for a session (never generated).",
           double(c.abandoned));
    metric(out, "whitebox_queue_dropped_total", "counter",
           "Requests still waiting for a session when the server shut down (never generated).", double(c.dropped));
    metric(out, "whitebox_prompt_tokens_total", "counter", "Prompt tokens of the generations that ran (finished, cancelled or interrupted).",
           double(c.prompt_tokens));
    metric(out, "whitebox_completion_tokens_total", "counter", "Tokens generated.", double(c.completion_tokens));
    metric(out, "whitebox_prefill_seconds_total", "counter", "Time spent on prompts.", c.prefill_seconds);
    metric(out, "whitebox_decode_seconds_total", "counter", "Time spent generating tokens.", c.decode_seconds);
    metric(out, "whitebox_decode_tokens_per_second", "gauge", "Decode speed of the last finished generation.",
           c.last_decode_tps);
    metric(out, "whitebox_decode_tokens_per_second_average", "gauge", "Decode speed over all generations.",
           c.decode_seconds > 0 ? double(c.decoded) / c.decode_seconds : 0.0);
    metric(out, "whitebox_queue_waiting", "gauge", "Requests waiting for a session.", g.waiting);
    metric(out, "whitebox_queue_capacity", "gauge", "Requests that may wait before 429.", g.capacity);
    metric(out, "whitebox_sessions_busy", "gauge", "Sessions generating now.", g.busy);
    metric(out, "whitebox_sessions", "gauge", "Sessions (--parallel).", g.sessions);
    return out;
}

}  // namespace wb::server
