#include "chat/jinja/text.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace wb::jinja::text {

namespace {

// A byte that does not start a valid sequence stands for itself, offset into the surrogate range
// (as Python's surrogateescape does) so that encode() gives the byte back.
constexpr char32_t kEscapedByte = 0xDC00;

std::size_t decode_one(std::string_view s, std::size_t i, char32_t& cp) {
    const auto b = static_cast<unsigned char>(s[i]);
    int n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 1) {
        cp = b;
        return 1;
    }
    if (n == 0 || i + n > s.size()) {
        cp = kEscapedByte + b;
        return 1;
    }
    char32_t v = b & (0x7F >> n);
    for (int k = 1; k < n; ++k) {
        const auto c = static_cast<unsigned char>(s[i + k]);
        if ((c & 0xC0) != 0x80) {
            cp = kEscapedByte + b;
            return 1;
        }
        v = (v << 6) | (c & 0x3F);
    }
    static constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < kMin[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        cp = kEscapedByte + b;
        return 1;
    }
    cp = v;
    return static_cast<std::size_t>(n);
}

bool in(char32_t c, char32_t lo, char32_t hi) { return c >= lo && c <= hi; }

}  // namespace

void append_utf8(std::string& out, char32_t cp) {
    if (cp >= kEscapedByte + 0x80 && cp <= kEscapedByte + 0xFF) {
        out += static_cast<char>(cp - kEscapedByte);
    } else if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::vector<char32_t> decode(std::string_view s) {
    std::vector<char32_t> out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        char32_t cp;
        i += decode_one(s, i, cp);
        out.push_back(cp);
    }
    return out;
}

std::string encode(const std::vector<char32_t>& cps, std::size_t begin, std::size_t end) {
    std::string out;
    end = std::min(end, cps.size());
    for (std::size_t i = begin; i < end; ++i) append_utf8(out, cps[i]);
    return out;
}

std::size_t length(std::string_view s) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < s.size(); ++n) {
        char32_t cp;
        i += decode_one(s, i, cp);
    }
    return n;
}

bool is_space(char32_t c) {
    return c == ' ' || in(c, 0x09, 0x0D) || in(c, 0x1C, 0x1F) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           in(c, 0x2000, 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_alnum(char32_t c) {
    if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (is_space(c) || in(c, 0x80, 0xBF) || c == 0xD7 || c == 0xF7) return c == 0xAA || c == 0xB5 || c == 0xBA;
    // Punctuation, symbols, combining marks, variation selectors and emoji are not word characters.
    return !(in(c, 0x300, 0x36F) || in(c, 0x2000, 0x2BFF) || in(c, 0x3000, 0x303F) || in(c, 0xFE00, 0xFE0F) ||
             in(c, 0xFE30, 0xFE4F) || in(c, 0xFF00, 0xFF0F) || in(c, 0x1F000, 0x1FAFF) || in(c, 0xE0000, 0xE007F) ||
             in(c, kEscapedByte, kEscapedByte + 0xFF));
}

bool is_cased_upper(char32_t c) {
    return in(c, 'A', 'Z') || (in(c, 0xC0, 0xDE) && c != 0xD7) || (in(c, 0x100, 0x17F) && c % 2 == 0) ||
           (in(c, 0x391, 0x3A9) && c != 0x3A2) || in(c, 0x400, 0x42F);
}

bool is_cased_lower(char32_t c) {
    return in(c, 'a', 'z') || (in(c, 0xDF, 0xFF) && c != 0xF7) || (in(c, 0x100, 0x17F) && c % 2 == 1) ||
           in(c, 0x3B1, 0x3C9) || in(c, 0x430, 0x45F);
}

// Case mapping for ASCII, Latin-1, Latin Extended-A (even/odd pairs), Greek and Cyrillic: what chat
// content plausibly holds; other scripts are uncased or left as they are.
char32_t to_upper(char32_t c) {
    if (in(c, 'a', 'z')) return c - 32;
    if (in(c, 0xE0, 0xFE) && c != 0xF7) return c - 32;
    if (in(c, 0x100, 0x17F) && c % 2 == 1 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x17F) return c - 1;
    if (in(c, 0x3B1, 0x3C9) && c != 0x3C2) return c - 32;
    if (in(c, 0x430, 0x44F)) return c - 32;
    if (in(c, 0x450, 0x45F)) return c - 80;
    return c;
}

char32_t to_lower(char32_t c) {
    if (in(c, 'A', 'Z')) return c + 32;
    if (in(c, 0xC0, 0xDE) && c != 0xD7) return c + 32;
    if (in(c, 0x100, 0x17F) && c % 2 == 0 && c != 0x130 && c != 0x138) return c + 1;
    if (in(c, 0x391, 0x3A9) && c != 0x3A2) return c + 32;
    if (in(c, 0x410, 0x42F)) return c + 32;
    if (in(c, 0x400, 0x40F)) return c + 80;
    return c;
}

static bool is_cased(char32_t c) { return is_cased_upper(c) || is_cased_lower(c); }

std::string upper(std::string_view s) {
    std::string out;
    for (char32_t c : decode(s)) append_utf8(out, to_upper(c));
    return out;
}

std::string lower(std::string_view s) {
    std::string out;
    for (char32_t c : decode(s)) append_utf8(out, to_lower(c));
    return out;
}

std::string title(std::string_view s) {
    std::string out;
    bool previous_cased = false;
    for (char32_t c : decode(s)) {
        append_utf8(out, previous_cased ? to_lower(c) : to_upper(c));
        previous_cased = is_cased(c);
    }
    return out;
}

std::string capitalize(std::string_view s) {
    std::string out;
    bool first = true;
    for (char32_t c : decode(s)) {
        append_utf8(out, first ? to_upper(c) : to_lower(c));
        first = false;
    }
    return out;
}

std::string strip(std::string_view s, const std::string* chars, bool left, bool right) {
    const std::vector<char32_t> cps = decode(s);
    const std::vector<char32_t> set = chars ? decode(*chars) : std::vector<char32_t>{};
    auto strippable = [&](char32_t c) {
        if (!chars) return is_space(c);
        for (char32_t x : set) {
            if (x == c) return true;
        }
        return false;
    };
    std::size_t b = 0, e = cps.size();
    if (left) {
        while (b < e && strippable(cps[b])) ++b;
    }
    if (right) {
        while (e > b && strippable(cps[e - 1])) --e;
    }
    return encode(cps, b, e);
}

std::vector<std::string> split_whitespace(std::string_view s, std::int64_t maxsplit) {
    const std::vector<char32_t> cps = decode(s);
    std::vector<std::string> parts;
    std::size_t i = 0;
    while (true) {
        while (i < cps.size() && is_space(cps[i])) ++i;
        if (i == cps.size()) break;
        if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) == maxsplit) {
            std::size_t e = cps.size();
            while (e > i && is_space(cps[e - 1])) --e;
            parts.push_back(encode(cps, i, e));
            break;
        }
        std::size_t j = i;
        while (j < cps.size() && !is_space(cps[j])) ++j;
        parts.push_back(encode(cps, i, j));
        i = j;
    }
    return parts;
}

std::vector<std::string> split(std::string_view s, std::string_view sep, std::int64_t maxsplit) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (maxsplit < 0 || static_cast<std::int64_t>(parts.size()) < maxsplit) {
        const std::size_t at = s.find(sep, start);
        if (at == std::string_view::npos) break;
        parts.emplace_back(s.substr(start, at - start));
        start = at + sep.size();
    }
    parts.emplace_back(s.substr(start));
    return parts;
}

std::vector<std::string> rsplit(std::string_view s, std::string_view sep, std::int64_t maxsplit) {
    std::vector<std::string> parts;
    std::size_t end = s.size();
    while (maxsplit < 0 || static_cast<std::int64_t>(parts.size()) < maxsplit) {
        if (end < sep.size()) break;
        const std::size_t at = s.rfind(sep, end - sep.size());
        if (at == std::string_view::npos) break;
        parts.emplace_back(s.substr(at + sep.size(), end - at - sep.size()));
        end = at;
    }
    parts.emplace_back(s.substr(0, end));
    return {parts.rbegin(), parts.rend()};
}

std::vector<std::string> splitlines(std::string_view s) {
    const std::vector<char32_t> cps = decode(s);
    std::vector<std::string> lines;
    std::size_t start = 0;
    for (std::size_t i = 0; i < cps.size(); ++i) {
        const char32_t c = cps[i];
        const bool is_break = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || in(c, 0x1C, 0x1E) || c == 0x85 ||
                              c == 0x2028 || c == 0x2029;
        if (!is_break) continue;
        lines.push_back(encode(cps, start, i));
        if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
        start = i + 1;
    }
    if (start < cps.size()) lines.push_back(encode(cps, start, cps.size()));
    return lines;
}

std::string replace(std::string_view s, std::string_view old, std::string_view with, std::int64_t count,
                    std::size_t max_bytes) {
    std::string out;
    auto check = [&] {
        if (out.size() > max_bytes) throw std::length_error("string too long");
    };
    if (old.empty()) {
        // Python inserts `with` before every code point and at the end.
        const std::vector<char32_t> cps = decode(s);
        std::int64_t done = 0;
        for (char32_t c : cps) {
            if (count < 0 || done < count) {
                out += with;
                ++done;
            }
            append_utf8(out, c);
            check();
        }
        if (count < 0 || done < count) out += with;
        check();
        return out;
    }
    std::size_t start = 0;
    std::int64_t done = 0;
    while (count < 0 || done < count) {
        const std::size_t at = s.find(old, start);
        if (at == std::string_view::npos) break;
        out.append(s.substr(start, at - start));
        out.append(with);
        check();
        start = at + old.size();
        ++done;
    }
    out.append(s.substr(start));
    check();
    return out;
}

std::int64_t count(std::string_view s, std::string_view sub) {
    if (sub.empty()) return static_cast<std::int64_t>(length(s)) + 1;
    std::int64_t n = 0;
    for (std::size_t at = s.find(sub); at != std::string_view::npos; at = s.find(sub, at + sub.size())) ++n;
    return n;
}

bool is_printable(char32_t c) {
    if (c < 0x20 || in(c, 0x7F, 0xA0) || c == 0xAD) return false;
    if (c < 0x7F) return true;
    // Separators (Zs, Zl, Zp), format characters (Cf), private use and escaped bytes print escaped.
    return !(c == 0x1680 || in(c, 0x2000, 0x200F) || in(c, 0x2028, 0x202F) || in(c, 0x205F, 0x2064) ||
             in(c, 0x2066, 0x206F) || c == 0x3000 || in(c, 0x600, 0x605) || c == 0x61C || c == 0x6DD ||
             c == 0x70F || c == 0x180E || c == 0xFEFF || in(c, 0xFFF9, 0xFFFB) || in(c, 0xD800, 0xF8FF) ||
             in(c, 0xE0000, 0xE007F) || c >= 0xF0000);
}

std::string repr_string(std::string_view s) {
    const bool has_single = s.find('\'') != std::string_view::npos;
    const bool has_double = s.find('"') != std::string_view::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    std::string out(1, quote);
    for (char32_t c : decode(s)) {
        if (c == static_cast<char32_t>(quote) || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (in(c, kEscapedByte + 0x80, kEscapedByte + 0xFF) || !is_printable(c)) {
            char buf[16];
            const char32_t v = in(c, kEscapedByte + 0x80, kEscapedByte + 0xFF) ? c - kEscapedByte : c;
            if (v < 0x100) {
                std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(v));
            } else if (v < 0x10000) {
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(v));
            } else {
                std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(v));
            }
            out += buf;
        } else {
            append_utf8(out, c);
        }
    }
    out += quote;
    return out;
}

std::string repr_float(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    const std::string sci(buf, res.ptr);
    const std::size_t e_at = sci.find('e');
    const bool negative = sci[0] == '-';
    std::string digits;
    for (std::size_t i = negative ? 1 : 0; i < e_at; ++i) {
        if (sci[i] != '.') digits += sci[i];
    }
    const int exp = std::stoi(sci.substr(e_at + 1));
    std::string out = negative ? "-" : "";
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            out += "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
        } else if (static_cast<std::size_t>(exp) + 1 >= digits.size()) {
            out += digits + std::string(static_cast<std::size_t>(exp) + 1 - digits.size(), '0') + ".0";
        } else {
            out += digits.substr(0, static_cast<std::size_t>(exp) + 1) + "." +
                   digits.substr(static_cast<std::size_t>(exp) + 1);
        }
        return out;
    }
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    std::snprintf(buf, sizeof buf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return out + buf;
}

std::string html_escape(std::string_view s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

}  // namespace wb::jinja::text
