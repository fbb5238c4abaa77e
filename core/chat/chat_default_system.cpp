#include <string_view>

#include "chat/chat_formats.h"

namespace wb {

// The character a backslash escape stands for inside a Jinja (Python-style) string literal; unknown
// escapes stay as written, as Python keeps them.
static std::string unescape(char c) {
    switch (c) {
    case 'n': return "\n";
    case 't': return "\t";
    case 'r': return "\r";
    case '\\': case '\'': case '"': return std::string(1, c);
    default: return std::string{'\\', c};
    }
}

// Reads the literal whose opening quote is at s[i] into out (decoded); returns the index after it.
static size_t read_literal(const std::string& s, size_t i, std::string& out) {
    const char quote = s[i++];
    while (i < s.size() && s[i] != quote) {
        if (s[i] == '\\' && i + 1 < s.size()) {
            out += unescape(s[i + 1]);
            i += 2;
        } else {
            out += s[i++];
        }
    }
    return i < s.size() ? i + 1 : i;
}

// The decoded string literals inside {{ ... }} and {% ... %} tags. Text outside the tags is output
// verbatim by Jinja and may hold unpaired quotes (apostrophes), so it is not scanned; a closing
// delimiter inside a literal does not end the tag.
static std::vector<std::string> jinja_string_literals(const std::string& src) {
    std::vector<std::string> literals;
    size_t i = 0;
    while ((i = src.find('{', i)) != std::string::npos && i + 1 < src.size()) {
        const char kind = src[i + 1];
        if (kind == '#') {
            i = src.find("#}", i + 2);
            if (i == std::string::npos) {
                break;
            }
            i += 2;
            continue;
        }
        if (kind != '{' && kind != '%') {
            ++i;
            continue;
        }
        const char close = kind == '{' ? '}' : '%';
        for (i += 2; i < src.size();) {
            if (src[i] == '\'' || src[i] == '"') {
                std::string literal;
                i = read_literal(src, i, literal);
                literals.push_back(std::move(literal));
            } else if (src[i] == close && i + 1 < src.size() && src[i + 1] == '}') {
                i += 2;
                break;
            } else {
                ++i;
            }
        }
    }
    return literals;
}

std::string extract_default_system(const std::string& jinja_source) {
    constexpr std::string_view kOpen = "<|im_start|>system\n";
    constexpr std::string_view kClose = "<|im_end|>";
    // A literal that opens the system turn but does not close it is the branch that copies the
    // user's own system message ('<|im_start|>system\n' + messages[0]['content'] + ...): skip it.
    for (const std::string& literal : jinja_string_literals(jinja_source)) {
        const size_t open = literal.find(kOpen);
        if (open == std::string::npos) {
            continue;
        }
        const size_t begin = open + kOpen.size();
        const size_t end = literal.find(kClose, begin);
        if (end != std::string::npos) {
            return literal.substr(begin, end - begin);
        }
    }
    return {};
}

}  // namespace wb
