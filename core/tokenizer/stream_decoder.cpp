#include "tokenizer.h"
#include "unicode.h"

namespace wb {
namespace {

constexpr std::string_view k_replacement = "\xEF\xBF\xBD";  // U+FFFD

}  // namespace

std::string StreamDecoder::push(int32_t id) {
    pending_ += tok_.token_to_piece(id, render_special_);
    std::string out;
    size_t pos = 0;
    while (pos < pending_.size()) {
        const int len = unicode::utf8_sequence_len(pending_, pos);
        if (len < 0) break;  // a character whose remaining bytes may come with the next token
        if (len == 0) {
            out += k_replacement;
            pos += 1;
        } else {
            out.append(pending_, pos, size_t(len));
            pos += size_t(len);
        }
    }
    pending_.erase(0, pos);
    return out;
}

std::string StreamDecoder::flush() {
    std::string out;
    size_t pos = 0;
    while (pos < pending_.size()) {
        const int len = unicode::utf8_sequence_len(pending_, pos);
        if (len > 0) {
            out.append(pending_, pos, size_t(len));
            pos += size_t(len);
            continue;
        }
        // Invalid, or truncated for good: one replacement character for the whole maximal prefix.
        out += k_replacement;
        pos += 1;
        while (len < 0 && pos < pending_.size() && (uint8_t(pending_[pos]) & 0xC0) == 0x80) ++pos;
    }
    pending_.clear();
    return out;
}

}  // namespace wb
