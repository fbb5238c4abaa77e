#pragma once
// --parallel within memory: every session's KV cache can grow to its whole context, so the sessions
// the server creates must fit in the memory the machine has free.
#include <cstdint>

#include "model/model_config.h"

namespace wb::server {

// The KV cache one session of n_ctx tokens can grow to: K and V in f16 for every layer, a
// sliding-window layer holding no more than its window.
uint64_t session_kv_bytes(const ModelConfig& c, int32_t n_ctx);
// wb::Error naming --parallel and --ctx when `sessions` caches of `kv_bytes` each exceed `available`
// bytes; available 0 (unknown) checks nothing.
void check_kv_budget(uint64_t kv_bytes, int32_t sessions, int32_t n_ctx, uint64_t available);
// MemAvailable of /proc/meminfo in bytes; 0 when it cannot be read.
uint64_t available_memory();

}  // namespace wb::server
