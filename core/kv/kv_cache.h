#pragma once
// The KV cache: keys and values of every layer for the positions seen so far, in fixed-size blocks.
//
// Memory grows with the conversation one block at a time instead of being reserved for the maximum
// context up front, so a short chat with a 32k-context model costs little. Blocks are allocated by the
// backend (host memory for the CPU backend, device memory for CUDA); this class only keeps the block
// table and the statistics the inspector shows.
//
// Layout of one block of one layer: K rows then V rows, each [block_tokens][n_head_kv][head_dim] in the
// element type (f16), so one position's K (or V) for all kv heads is contiguous.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace wb {

enum class KvType { F16 };

const char* kv_type_name(KvType t);
size_t kv_type_bytes(KvType t);

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
    KvType type = KvType::F16;
    std::vector<bool> layer_is_swa;  // per layer: sliding-window layer (statistics label)
};

struct KvLayerStats {
    int32_t tokens = 0;            // positions held
    uint64_t bytes_used = 0;       // tokens * bytes per position (K and V)
    uint64_t bytes_reserved = 0;   // allocated blocks * bytes per block
    bool sliding_window = false;
};

struct KvStats {
    std::vector<KvLayerStats> layers;
    uint64_t bytes_used = 0;
    uint64_t bytes_reserved = 0;
    int32_t n_tokens = 0;          // positions in the sequence
    int32_t capacity = 0;          // n_ctx
    int32_t block_tokens = 0;
    KvType type = KvType::F16;
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
    // Marks positions [0, n) as written (after a forward pass stored them).
    void set_n_tokens(int32_t n);
    // Forgets positions >= n and frees the blocks no longer needed (regenerate, edit, new chat).
    void truncate(int32_t n);

    // Bytes of one position's K (or V) for all kv heads of a layer.
    size_t row_bytes() const { return size_t(config_.n_head_kv) * size_t(config_.head_dim) * kv_type_bytes(config_.type); }
    size_t block_bytes() const { return 2 * size_t(config_.block_tokens) * row_bytes(); }

    // Start of position pos's K / V row in layer il (the block must be reserved).
    void* k_row(int32_t il, int32_t pos) const;
    void* v_row(int32_t il, int32_t pos) const;
    // Block table of a layer (null entries are blocks not allocated), for backends that walk it.
    const std::vector<void*>& blocks(int32_t il) const { return blocks_[size_t(il)]; }

    KvStats stats() const;

private:
    KvCacheConfig config_;
    KvAllocator& allocator_;
    std::vector<std::vector<void*>> blocks_;  // [layer][block index]
    int32_t n_tokens_ = 0;
};

}  // namespace wb
