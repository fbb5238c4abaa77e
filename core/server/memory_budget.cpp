#include "server/memory_budget.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "util/error.h"

namespace wb::server {

uint64_t session_kv_bytes(const ModelConfig& c, int32_t n_ctx) {
    const int32_t head_dim_v = c.head_dim_v > 0 ? c.head_dim_v : c.head_dim;
    const uint64_t per_position = uint64_t(c.n_head_kv) * uint64_t(c.head_dim + head_dim_v) * 2;  // f16
    uint64_t total = 0;
    for (int32_t il = 0; il < c.n_layer; ++il) {
        const bool swa = size_t(il) < c.layer_is_swa.size() && c.layer_is_swa[size_t(il)] && c.sliding_window > 0;
        total += per_position * uint64_t(swa ? std::min(n_ctx, c.sliding_window) : n_ctx);
    }
    return total;
}

void check_kv_budget(uint64_t kv_bytes, int32_t sessions, int32_t n_ctx, uint64_t available) {
    const uint64_t need = kv_bytes * uint64_t(sessions);
    if (available == 0 || need <= available) return;
    char msg[320];
    std::snprintf(msg, sizeof msg,
                  "%d sessions of a %d-token context need up to %.0f MiB of KV cache, but %.0f MiB of memory is free: "
                  "lower --parallel or --ctx",
                  sessions, n_ctx, double(need) / 1048576.0, double(available) / 1048576.0);
    throw Error(msg);
}

uint64_t available_memory() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    uint64_t kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit)
        if (key == "MemAvailable:") return kib * 1024;
    return 0;
}

}  // namespace wb::server
