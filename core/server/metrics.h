#pragma once
// The counters behind GET /metrics, written in Prometheus' text exposition format.
#include <cstdint>
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
    std::string prometheus_text(const MetricsSnapshotGauges& g) const;

private:
    mutable std::mutex mutex_;
    std::map<int, uint64_t> requests_;  // by HTTP status
    uint64_t prompt_tokens_ = 0, completion_tokens_ = 0, generations_ = 0, cancelled_ = 0;
    double prefill_seconds_ = 0, decode_seconds_ = 0;
    uint64_t decoded_ = 0;
    double last_decode_tps_ = 0;
};

}  // namespace wb::server
