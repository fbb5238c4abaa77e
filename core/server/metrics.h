#pragma once
// The counters behind GET /metrics, written in Prometheus' text exposition format.
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "server/job_end.h"

namespace wb::server {

struct MetricsSnapshotGauges {
    int32_t waiting = 0;   // jobs in the queue
    int32_t busy = 0;      // sessions generating
    int32_t sessions = 0;  // sessions in all
    int32_t capacity = 0;  // queue capacity
};

class Metrics {
public:
    void count_request(int status);
    // A job that ended, and how; for one that was generated, its prompt and generated tokens and its
    // times (those of a job never generated are not counted as tokens or time).
    void count_job(JobEnd end, int32_t prompt_tokens, int32_t completion_tokens, double prefill_ms, double decode_ms,
                   int32_t decoded);
    // The counters are read first and the gauges (gauges()) after them: a job leaves the busy sessions
    // before its generation is counted (GenerationQueue), so a scrape that shows a generation counted
    // never shows it still busy.
    std::string prometheus_text(const std::function<MetricsSnapshotGauges()>& gauges) const;

private:
    struct Counters {
        std::map<int, uint64_t> requests;  // by HTTP status
        uint64_t prompt_tokens = 0, completion_tokens = 0, generations = 0;
        uint64_t cancelled = 0, interrupted = 0, abandoned = 0, dropped = 0;  // by JobEnd
        double prefill_seconds = 0, decode_seconds = 0;
        uint64_t decoded = 0;
        double last_decode_tps = 0;
    };
    mutable std::mutex mutex_;
    Counters c_;
};

}  // namespace wb::server
