#pragma once
// Text -> id lookup over a vocabulary's token texts. Open addressing in one flat array: loading a
// 262k-token vocabulary and looking up every merge part is dominated by cache misses, which a
// node-based std::unordered_map multiplies.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wb {

class TokenIndex {
public:
    // Indexes texts (kept by reference: it must outlive the index and not change). A text that
    // occurs twice maps to its last id, as in llama.cpp's token_to_id map.
    void build(const std::vector<std::string>& texts);
    std::optional<int32_t> find(std::string_view text) const;

private:
    // Each slot: upper 32 bits of the text's hash, then id + 1 (0 marks an empty slot). Comparing
    // the hash bits first avoids touching the token text of nearly every non-matching slot.
    std::vector<uint64_t> slots_;
    const std::vector<std::string>* texts_ = nullptr;
    size_t mask_ = 0;
};

}  // namespace wb
