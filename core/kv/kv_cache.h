#pragma once
// The KV cache: keys and values of every layer for the positions seen so far, in fixed-size blocks.
//
// Memory grows with the conversation one block at a time instead of being reserved for the maximum
// context up front, so a short chat with a 32k-context model costs little. Blocks are allocated by the
// backend (host memory for the CPU backend, device memory for CUDA); this class only keeps the block
// table and the statistics the inspector shows.
//
// Layout of one block of one layer: K rows then V rows, each [block_tokens][n_head_kv][head_dim] in the
// element type of K (resp. V), so one position's K (or V) for all kv heads is contiguous. The element
// types are f16 or llama.cpp's block formats q8_0 (an f16 scale + 32 int8 per 32 values) and q4_0 (an
// f16 scale + 16 bytes of nibbles); a head's row is a whole number of blocks (head_dim % 32 == 0), so
// no block straddles two heads. Backends never decode blocks themselves: they store and read rows
// through kv/kv_types.h.
//
// Sliding-window layers (Gemma 3's local layers) keep only the window: once every future query is past
// a block (its positions are older than the window of the next position), the block is released and
// its entry in the block table becomes null. Those positions are gone for good on that layer, so a
// truncation back into them cannot keep its prefix; truncate() says how much stays usable.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kv/kv_types.h"

namespace wb {

// Where block memory comes from (implemented by each backend).
class KvAllocator {
public:
    virtual ~KvAllocator() = default;
    virtual void* kv_alloc(size_t bytes) = 0;
    virtual void kv_free(void* p) = 0;
};

struct KvCacheConfig {
    int32_t n_layer = 0;
    int32_t n_head_kv = 0;
    int32_t head_dim = 0;
    int32_t n_ctx = 0;             // capacity in positions (the user's context size)
    int32_t block_tokens = 128;    // positions per block
    KvType type_k = KvType::F16;   // element type of the keys
    KvType type_v = KvType::F16;   // element type of the values
    std::vector<bool> layer_is_swa;  // per layer: sliding-window layer
    int32_t sliding_window = 0;    // positions a query of a sliding-window layer sees (itself included);
                                   // 0 = keep everything on every layer
};

struct KvLayerStats {
    int32_t tokens = 0;            // positions the next query can see: all, or at most `window` on a local layer
    int32_t first_pos = 0;         // oldest of those positions (n_tokens - tokens)
    uint64_t bytes_used = 0;       // tokens * bytes per position (K and V)
    uint64_t bytes_reserved = 0;   // blocks held * bytes per block (a local layer holds about window + one
                                   // batch, rounded out to whole blocks)
    bool sliding_window = false;   // local layer: attends over the last `window` positions only
    int32_t window = 0;            // positions a query sees on this layer; 0 = all (global layer)
};

struct KvStats {
    std::vector<KvLayerStats> layers;
    uint64_t bytes_used = 0;
    uint64_t bytes_reserved = 0;
    int32_t n_tokens = 0;          // positions in the sequence
    int32_t capacity = 0;          // n_ctx
    int32_t block_tokens = 0;
    // Context shifts so far (see KvCache::finish_shift): how many, and the last one's cut: positions
    // [shift_keep, shift_keep + shift_dropped) were dropped and the later ones moved down.
    int32_t n_shifts = 0;
    int32_t shift_keep = 0;
    int32_t shift_dropped = 0;
    int64_t dropped_total = 0;     // positions dropped by every shift since the cache was empty
    KvType type_k = KvType::F16;
    KvType type_v = KvType::F16;
    uint64_t bytes_per_token = 0;  // K and V of one position over all layers (as if no layer had a window)
};

class KvCache {
public:
    KvCache(const KvCacheConfig& config, KvAllocator& allocator);
    ~KvCache();
    KvCache(const KvCache&) = delete;
    KvCache& operator=(const KvCache&) = delete;

    const KvCacheConfig& config() const { return config_; }
    int32_t n_tokens() const { return n_tokens_; }
    int32_t capacity() const { return config_.n_ctx; }

    // Makes room for positions [0, n) in every layer, allocating blocks as needed. wb::Error when n
    // exceeds the capacity (the caller reports "context full").
    void reserve(int32_t n);
    // Marks positions [0, n) as written (after a forward pass stored them). On sliding-window layers,
    // releases the blocks that no query at position >= n can see.
    void set_n_tokens(int32_t n);
    // Forgets positions >= n and frees the blocks no longer needed (regenerate, edit, new chat).
    // Returns the positions kept: n, or 0 when a sliding-window layer has already released keys that
    // a query at position n would need (the caller recomputes the prefix from the start).
    int32_t truncate(int32_t n);

    // Bytes of one position's K (resp. V) for all kv heads of a layer, and of one kv head's part of it
    // (head h's row starts h * k_head_bytes() into the position's K row).
    size_t k_row_bytes() const { return size_t(config_.n_head_kv) * k_head_bytes(); }
    size_t v_row_bytes() const { return size_t(config_.n_head_kv) * v_head_bytes(); }
    size_t k_head_bytes() const { return kv_type_row_bytes(config_.type_k, config_.head_dim); }
    size_t v_head_bytes() const { return kv_type_row_bytes(config_.type_v, config_.head_dim); }
    size_t block_bytes() const { return size_t(config_.block_tokens) * (k_row_bytes() + v_row_bytes()); }
    // K and V of one position in one layer.
    size_t position_bytes() const { return k_row_bytes() + v_row_bytes(); }

    // Start of position pos's K / V row in layer il (the block must be reserved and, on a
    // sliding-window layer, not yet released: pos >= n_tokens() - window + 1 for the next query).
    void* k_row(int32_t il, int32_t pos) const;
    void* v_row(int32_t il, int32_t pos) const;
    // Block table of a layer (null entries are blocks not allocated), for backends that walk it.
    const std::vector<void*>& blocks(int32_t il) const { return blocks_[size_t(il)]; }

    KvStats stats() const;

    // ---- Context shift (kv_shift.cpp; the backend moves the rows, Backend::kv_shift) ----
    // Keeps the blocks holding positions [0, n) on sliding-window layers as well: a context shift keeps
    // those positions, and the window after the shift may reach back into them.
    void pin_prefix(int32_t n);
    int32_t pinned_prefix() const { return pinned_; }
    // Whether layer il still holds the rows of positions [p0, p1) (false: released by its window, or
    // left out by a shift, set_gap).
    bool has_rows(int32_t il, int32_t p0, int32_t p1) const;
    // Positions [p0, p1) of layer il hold no valid rows: a shift moved only what a sliding window sees.
    void set_gap(int32_t il, int32_t p0, int32_t p1);
    // Allocates the released blocks of layer il that hold positions [p0, p1) (a shift moves rows there).
    void ensure_rows(int32_t il, int32_t p0, int32_t p1);
    // After the backend moved the rows down: positions [n_keep, n_keep + n_discard) are gone, the
    // sequence is n_discard shorter, the blocks past it are freed, and the shift is recorded for stats().
    void finish_shift(int32_t n_keep, int32_t n_discard);

private:
    // Window of layer il in positions; 0 = the layer keeps everything.
    int32_t window_of(size_t il) const { return config_.layer_is_swa[il] ? config_.sliding_window : 0; }
    // Releases the leading blocks of sliding-window layers that no query at position >= n can see.
    void release_outside_window(int32_t n);

    KvCacheConfig config_;
    KvAllocator& allocator_;
    std::vector<std::vector<void*>> blocks_;  // [layer][block index]; null: released (or not yet allocated)
    std::vector<size_t> released_;            // [layer] leading blocks released (sliding-window layers)
    int32_t n_tokens_ = 0;
    int32_t pinned_ = 0;                      // positions kept on sliding-window layers (pin_prefix)
    KvStats shifts_;                          // only the shift fields are used
    std::vector<std::pair<int32_t, int32_t>> gaps_;  // [layer] positions without valid rows (set_gap)
};

}  // namespace wb
