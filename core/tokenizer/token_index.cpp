#include "token_index.h"

#include <functional>

namespace wb {

void TokenIndex::build(const std::vector<std::string>& texts) {
    texts_ = &texts;
    size_t capacity = 16;
    while (capacity < texts.size() * 2) capacity *= 2;  // load factor <= 1/2 keeps probes short
    slots_.assign(capacity, 0);
    mask_ = capacity - 1;
    for (size_t id = 0; id < texts.size(); ++id) {
        const std::string_view text = texts[id];
        const uint64_t hash = std::hash<std::string_view>{}(text);
        const uint64_t tag = hash >> 32 << 32;
        for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
            const uint64_t slot = slots_[i];
            if (slot == 0 || ((slot >> 32 << 32) == tag && texts[uint32_t(slot) - 1] == text)) {
                slots_[i] = tag | (id + 1);
                break;
            }
        }
    }
}

std::optional<int32_t> TokenIndex::find(std::string_view text) const {
    if (slots_.empty()) return std::nullopt;
    const uint64_t hash = std::hash<std::string_view>{}(text);
    const uint64_t tag = hash >> 32 << 32;
    for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
        const uint64_t slot = slots_[i];
        if (slot == 0) return std::nullopt;
        if ((slot >> 32 << 32) == tag && (*texts_)[uint32_t(slot) - 1] == text) return int32_t(uint32_t(slot) - 1);
    }
}

}  // namespace wb
