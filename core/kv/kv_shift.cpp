// The KV cache's side of a context shift: the block bookkeeping around the rows the backend moves
// (Backend::kv_shift) and the record of the cut that the KV and attention panels show.
#include <algorithm>

#include "kv/kv_cache.h"
#include "util/error.h"

namespace wb {

void KvCache::pin_prefix(int32_t n) { pinned_ = std::clamp(n, 0, config_.n_ctx); }

void KvCache::set_gap(int32_t il, int32_t p0, int32_t p1) {
    gaps_.resize(blocks_.size(), {0, 0});
    gaps_[size_t(il)] = p1 > p0 ? std::make_pair(p0, p1) : std::make_pair(0, 0);
}

bool KvCache::has_rows(int32_t il, int32_t p0, int32_t p1) const {
    if (p1 <= p0) return true;
    if (size_t(il) < gaps_.size()) {
        const auto [g0, g1] = gaps_[size_t(il)];
        if (g0 < g1 && p0 < g1 && g0 < p1) return false;
    }
    const auto& layer = blocks_[size_t(il)];
    const int32_t bt = config_.block_tokens;
    for (int32_t b = p0 / bt; b <= (p1 - 1) / bt; ++b)
        if (size_t(b) >= layer.size() || !layer[size_t(b)]) return false;
    return true;
}

void KvCache::ensure_rows(int32_t il, int32_t p0, int32_t p1) {
    if (p1 <= p0) return;
    auto& layer = blocks_[size_t(il)];
    const int32_t bt = config_.block_tokens;
    for (int32_t b = p0 / bt; b <= (p1 - 1) / bt; ++b) {
        if (size_t(b) >= layer.size()) throw Error("KV cache: a shift moves rows past the reserved blocks");
        if (layer[size_t(b)]) continue;
        void* p = allocator_.kv_alloc(block_bytes());
        if (!p) throw Error("KV cache: out of memory allocating " + std::to_string(block_bytes()) + " bytes");
        layer[size_t(b)] = p;
        // release_outside_window walks from released_: let it see this block again.
        released_[size_t(il)] = std::min(released_[size_t(il)], size_t(b));
    }
}

void KvCache::finish_shift(int32_t n_keep, int32_t n_discard) {
    if (n_keep < 0 || n_discard <= 0 || n_keep + n_discard > n_tokens_)
        throw Error("KV cache: invalid shift of " + std::to_string(n_discard) + " positions after " +
                    std::to_string(n_keep) + " of " + std::to_string(n_tokens_));
    const int32_t n = n_tokens_ - n_discard;
    const size_t keep = size_t((n + config_.block_tokens - 1) / config_.block_tokens);
    for (size_t il = 0; il < blocks_.size(); ++il) {
        auto& layer = blocks_[il];
        while (layer.size() > keep) {
            if (layer.back()) allocator_.kv_free(layer.back());
            layer.pop_back();
        }
        released_[il] = std::min(released_[il], layer.size());
    }
    n_tokens_ = n;
    release_outside_window(n);
    ++shifts_.n_shifts;
    shifts_.shift_keep = n_keep;
    shifts_.shift_dropped = n_discard;
    shifts_.dropped_total += n_discard;
}

}  // namespace wb
