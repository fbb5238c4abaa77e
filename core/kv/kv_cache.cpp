#include "kv/kv_cache.h"

#include <algorithm>

#include "util/error.h"

namespace wb {

KvCache::KvCache(const KvCacheConfig& config, KvAllocator& allocator) : config_(config), allocator_(allocator) {
    if (config_.n_layer <= 0 || config_.n_head_kv <= 0 || config_.head_dim <= 0 || config_.n_ctx <= 0 ||
        config_.block_tokens <= 0)
        throw Error("KV cache: invalid configuration");
    for (KvType t : {config_.type_k, config_.type_v})
        if (config_.head_dim % kv_type_block_values(t) != 0)
            throw Error(std::string("KV cache: type ") + kv_type_name(t) + " needs a head size that is a multiple of " +
                        std::to_string(kv_type_block_values(t)) + " (this model's is " +
                        std::to_string(config_.head_dim) + ")");
    if (config_.sliding_window < 0) throw Error("KV cache: invalid sliding window");
    config_.layer_is_swa.resize(size_t(config_.n_layer), false);
    blocks_.resize(size_t(config_.n_layer));
    released_.assign(size_t(config_.n_layer), 0);
}

KvCache::~KvCache() { truncate(0); }

void KvCache::reserve(int32_t n) {
    if (n > config_.n_ctx)
        throw Error("context full: " + std::to_string(n) + " positions needed, the context holds " +
                    std::to_string(config_.n_ctx));
    const size_t n_blocks = size_t((n + config_.block_tokens - 1) / config_.block_tokens);
    for (auto& layer : blocks_) {
        while (layer.size() < n_blocks) {
            void* p = allocator_.kv_alloc(block_bytes());
            if (!p) throw Error("KV cache: out of memory allocating " + std::to_string(block_bytes()) + " bytes");
            layer.push_back(p);
        }
    }
}

void KvCache::set_n_tokens(int32_t n) {
    if (n < 0 || n > int32_t(blocks_.empty() ? 0 : blocks_[0].size()) * config_.block_tokens)
        throw Error("KV cache: set_n_tokens beyond the reserved blocks");
    n_tokens_ = n;
    release_outside_window(n);
}

void KvCache::release_outside_window(int32_t n) {
    for (size_t il = 0; il < blocks_.size(); ++il) {
        const int32_t w = window_of(il);
        if (w <= 0) continue;
        // Queries come at positions >= n and see keys >= n - w + 1: whole blocks below that are dead.
        const int32_t first_needed = std::max(0, n - w + 1);
        const size_t dead = std::min(size_t(first_needed / config_.block_tokens), blocks_[il].size());
        // The pinned prefix (pin_prefix) stays; a block may already be null (released before a shift).
        const size_t pinned = size_t((pinned_ + config_.block_tokens - 1) / config_.block_tokens);
        for (size_t b = std::max(released_[il], pinned); b < dead; ++b) {
            if (blocks_[il][b]) allocator_.kv_free(blocks_[il][b]);
            blocks_[il][b] = nullptr;
        }
        released_[il] = std::max(released_[il], dead);
    }
}

int32_t KvCache::truncate(int32_t n) {
    if (n < 0) n = 0;
    // A query at position n needs keys n - w + 1 .. n - 1 on a sliding-window layer; if some of them
    // were released, no prefix but the empty one can be continued (a shorter one needs even older keys).
    for (size_t il = 0; il < blocks_.size(); ++il) {
        const int32_t w = window_of(il);
        const int32_t end = std::min(n, n_tokens_);
        if (w > 0 && !has_rows(int32_t(il), std::max(0, end - w + 1), end)) n = 0;
    }
    if (n < n_tokens_) n_tokens_ = n;
    for (auto& gap : gaps_)
        if (n <= gap.first) gap = {0, 0};  // those positions will be written again
    // The moved rows of the last shift are gone: nothing shifted is left to show.
    if (n <= shifts_.shift_keep) shifts_ = KvStats{};
    const size_t keep = size_t((n + config_.block_tokens - 1) / config_.block_tokens);
    for (size_t il = 0; il < blocks_.size(); ++il) {
        auto& layer = blocks_[il];
        while (layer.size() > keep) {
            if (layer.back()) allocator_.kv_free(layer.back());
            layer.pop_back();
        }
        released_[il] = std::min(released_[il], layer.size());
    }
    return n_tokens_;
}

void* KvCache::k_row(int32_t il, int32_t pos) const {
    auto* block = static_cast<uint8_t*>(blocks_[size_t(il)][size_t(pos / config_.block_tokens)]);
    return block + size_t(pos % config_.block_tokens) * k_row_bytes();
}

void* KvCache::v_row(int32_t il, int32_t pos) const {
    auto* block = static_cast<uint8_t*>(blocks_[size_t(il)][size_t(pos / config_.block_tokens)]);
    return block + size_t(config_.block_tokens) * k_row_bytes() + size_t(pos % config_.block_tokens) * v_row_bytes();
}

KvStats KvCache::stats() const {
    KvStats s;
    s.n_tokens = n_tokens_;
    s.capacity = config_.n_ctx;
    s.block_tokens = config_.block_tokens;
    s.n_shifts = shifts_.n_shifts;
    s.shift_keep = shifts_.shift_keep;
    s.shift_dropped = shifts_.shift_dropped;
    s.dropped_total = shifts_.dropped_total;
    s.type_k = config_.type_k;
    s.type_v = config_.type_v;
    s.bytes_per_token = uint64_t(config_.n_layer) * position_bytes();
    for (int32_t il = 0; il < config_.n_layer; ++il) {
        KvLayerStats l;
        l.window = window_of(size_t(il));
        l.tokens = l.window > 0 ? std::min(n_tokens_, l.window) : n_tokens_;
        l.first_pos = n_tokens_ - l.tokens;
        l.bytes_used = uint64_t(l.tokens) * position_bytes();
        size_t held = 0;
        for (const void* b : blocks_[size_t(il)]) held += b != nullptr;
        l.bytes_reserved = uint64_t(held) * block_bytes();
        l.sliding_window = config_.layer_is_swa[size_t(il)];
        s.bytes_used += l.bytes_used;
        s.bytes_reserved += l.bytes_reserved;
        s.layers.push_back(l);
    }
    return s;
}

}  // namespace wb
