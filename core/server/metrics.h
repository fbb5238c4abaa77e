#pragma once
// The counters behind GET /metrics, written in Prometheus' text exposition format.
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

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
    // A generation that ended: its prompt and generated tokens, its decode time, whether it was cancelled.
    void count_generation(int32_t prompt_tokens, int32_t completion_tokens, double prefill_ms, double decode_ms,
                          int32_t decoded, bool cancelled);
    // The counters are read first and the gauges (gauges()) after them: a job leaves the busy sessions
    // before its generation is counted (GenerationQueue), so a scrape that shows a generation counted
    // never shows it still busy.
    std::string prometheus_text(const std::function<MetricsSnapshotGauges()>& gauges) const;

private:
    struct Counters {
        std::map<int, uint64_t> requests;  // by HTTP status
        uint64_t prompt_tokens = 0, completion_tokens = 0, generations = 0, cancelled = 0;
        double prefill_seconds = 0, decode_seconds = 0;
        uint64_t decoded = 0;
        double last_decode_tps = 0;
    };
    mutable std::mutex mutex_;
    Counters c_;
};

}  // namespace wb::server
