#include "chat/jinja/lexer.h"

#include <algorithm>
#include <cstring>

#include "chat/jinja/text.h"

namespace wb::jinja {

namespace {

// Jinja2 splits the source on \r\n, \r and \n, drops one empty last line and joins with \n.
std::string normalize_newlines(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\r') {
            out += '\n';
            if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
        } else {
            out += s[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

class Lexer {
public:
    explicit Lexer(std::string_view source) : s_(normalize_newlines(source)) {
        line_starts_.push_back(0);
        for (std::size_t i = 0; i < s_.size(); ++i) {
            if (s_[i] == '\n') line_starts_.push_back(i + 1);
        }
    }

    std::vector<Token> run() {
        while (pos_ < s_.size()) {
            if (!root_step()) break;
        }
        Token end;
        end.type = TokenType::END;
        end.pos = pos_of(s_.size());
        tokens_.push_back(end);
        return std::move(tokens_);
    }

private:
    SourcePos pos_of(std::size_t offset) const {
        const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
        const std::size_t line = static_cast<std::size_t>(it - line_starts_.begin());
        return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
    }

    [[noreturn]] void fail(std::size_t offset, const std::string& what) const {
        throw wb::Error(at_position(pos_of(offset), what));
    }

    bool at(std::size_t p, std::string_view word) const { return s_.compare(p, word.size(), word) == 0; }

    // re's \s* from p (Unicode whitespace, as Python's re matches it).
    std::size_t skip_space(std::size_t p) const {
        while (p < s_.size()) {
            std::size_t len = 1;
            const auto b = static_cast<unsigned char>(s_[p]);
            if (b >= 0x80) len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
            const std::vector<char32_t> cp = text::decode(std::string_view(s_).substr(p, len));
            if (cp.size() != 1 || !text::is_space(cp[0])) break;
            p += len;
        }
        return p;
    }

    void emit(TokenType type, std::string value, std::size_t offset) {
        Token t;
        t.type = type;
        t.value = std::move(value);
        t.pos = pos_of(offset);
        tokens_.push_back(std::move(t));
    }

    // The text before a tag, after its whitespace control: `-` strips all whitespace before the tag;
    // otherwise lstrip_blocks strips spaces/tabs back to the line start for block and comment tags.
    void emit_text(std::size_t begin, std::size_t end, char sign, bool lstrip) {
        std::string text = s_.substr(begin, end - begin);
        if (sign == '-') {
            text = text::strip(text, nullptr, false, true);
        } else if (sign != '+' && lstrip) {
            const std::size_t l_pos = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
            if ((l_pos > 0 || line_starting_) && text.find_first_not_of(" \t", l_pos) == std::string::npos) {
                text.resize(l_pos);
            }
        }
        if (!text.empty()) emit(TokenType::TEXT, std::move(text), begin);
    }

    void finish_match(std::size_t end) {
        line_starting_ = end > 0 && s_[end - 1] == '\n';
        pos_ = end;
    }

    // One piece of text and the tag after it; false at the end of the source.
    bool root_step() {
        std::size_t i = pos_;
        while (true) {
            i = s_.find('{', i);
            if (i == std::string::npos || i + 1 >= s_.size()) {
                emit(TokenType::TEXT, s_.substr(pos_), pos_);
                pos_ = s_.size();
                return false;
            }
            const char k = s_[i + 1];
            if (k == '{' || k == '%' || k == '#') break;
            ++i;
        }
        const char kind = s_[i + 1];
        std::size_t j = i + 2;
        const char sign = j < s_.size() && (s_[j] == '-' || s_[j] == '+') ? s_[j] : 0;
        if (sign) ++j;
        emit_text(pos_, i, sign, kind != '{');
        if (kind == '#') return comment(i, j);
        if (kind == '%' && raw_block(i, j)) return true;
        tag(i, j, kind == '%');
        return true;
    }

    bool comment(std::size_t open, std::size_t p) {
        for (; p + 1 < s_.size(); ++p) {
            if (at(p, "+#}")) {
                finish_match(p + 3);
                return true;
            }
            if (at(p, "-#}")) {
                finish_match(skip_space(p + 3));
                return true;
            }
            if (at(p, "#}")) {
                finish_match(p + 2 < s_.size() && s_[p + 2] == '\n' ? p + 3 : p + 2);
                return true;
            }
        }
        fail(open, "missing end of comment tag");
    }

    // {% raw %}...{% endraw %}: the body is text, tags in it are not interpreted.
    bool raw_block(std::size_t open, std::size_t p) {
        p = skip_space(p);
        if (!at(p, "raw")) return false;
        p = skip_space(p + 3);
        if (at(p, "-%}")) {
            p = skip_space(p + 3);
        } else if (at(p, "%}")) {
            p += 2;
        } else {
            return false;
        }
        finish_match(p);
        for (std::size_t q = p; (q = s_.find("{%", q)) != std::string::npos; ++q) {
            std::size_t r = q + 2;
            const char sign = r < s_.size() && (s_[r] == '-' || s_[r] == '+') ? s_[r] : 0;
            if (sign) ++r;
            r = skip_space(r);
            if (!at(r, "endraw")) continue;
            r = skip_space(r + 6);
            std::size_t end;
            if (at(r, "+%}")) {
                end = r + 3;
            } else if (at(r, "-%}")) {
                end = skip_space(r + 3);
            } else if (at(r, "%}")) {
                end = r + 2 < s_.size() && s_[r + 2] == '\n' ? r + 3 : r + 2;
            } else {
                continue;
            }
            emit_text(p, q, sign, true);
            finish_match(end);
            return true;
        }
        fail(open, "missing end of raw directive");
    }

    // The end of the tag at p, if it is there: its length including the whitespace control takes.
    std::size_t tag_end(std::size_t p, bool block) const {
        if (block) {
            if (at(p, "+%}")) return 3;
            if (at(p, "-%}")) return skip_space(p + 3) - p;
            if (at(p, "%}")) return p + 2 < s_.size() && s_[p + 2] == '\n' ? 3 : 2;
            return 0;
        }
        if (at(p, "-}}")) return skip_space(p + 3) - p;
        if (at(p, "}}")) return 2;
        return 0;
    }

    void tag(std::size_t open, std::size_t p, bool block) {
        emit(block ? TokenType::BLOCK_BEGIN : TokenType::VAR_BEGIN, "", open);
        std::vector<char> braces;
        while (true) {
            if (p >= s_.size()) fail(open, block ? "unexpected end of template, expected '%}'" : "unexpected end of template, expected '}}'");
            if (braces.empty()) {
                if (const std::size_t n = tag_end(p, block)) {
                    emit(block ? TokenType::BLOCK_END : TokenType::VAR_END, "", p);
                    finish_match(p + n);
                    return;
                }
            }
            const std::size_t after_space = skip_space(p);
            if (after_space != p) {
                p = after_space;
                continue;
            }
            p = token(p, braces);
        }
    }

    std::size_t number(std::size_t p) {
        std::size_t q = p;
        auto digits = [&](std::size_t& r) {
            const std::size_t s = r;
            while (r < s_.size() && (is_digit(s_[r]) || (s_[r] == '_' && r + 1 < s_.size() && is_digit(s_[r + 1]) && r > s))) ++r;
            return r > s;
        };
        if (s_[q] == '0' && q + 1 < s_.size() && std::strchr("xXoObB", s_[q + 1])) return prefixed_int(p);
        digits(q);
        bool is_float = false;
        if (q + 1 < s_.size() && s_[q] == '.' && is_digit(s_[q + 1])) {
            ++q;
            digits(q);
            is_float = true;
        }
        if (q < s_.size() && (s_[q] == 'e' || s_[q] == 'E')) {
            std::size_t r = q + 1;
            if (r < s_.size() && (s_[r] == '+' || s_[r] == '-')) ++r;
            if (digits(r)) {
                q = r;
                is_float = true;
            }
        }
        std::string lexeme = s_.substr(p, q - p);
        lexeme.erase(std::remove(lexeme.begin(), lexeme.end(), '_'), lexeme.end());
        Token t;
        t.pos = pos_of(p);
        t.value = lexeme;
        if (is_float) {
            t.type = TokenType::FLOAT;
            t.float_value = std::strtod(lexeme.c_str(), nullptr);
        } else {
            t.type = TokenType::INT;
            errno = 0;
            t.int_value = std::strtoll(lexeme.c_str(), nullptr, 10);
            if (errno == ERANGE) fail(p, "integer literal out of range");
        }
        tokens_.push_back(std::move(t));
        return q;
    }

    std::size_t prefixed_int(std::size_t p) {
        const char kind = static_cast<char>(s_[p + 1] | 0x20);
        const int base = kind == 'x' ? 16 : kind == 'o' ? 8 : 2;
        std::size_t q = p + 2;
        std::string digits;
        while (q < s_.size() && (std::isxdigit(static_cast<unsigned char>(s_[q])) || s_[q] == '_')) {
            if (s_[q] != '_') digits += s_[q];
            ++q;
        }
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(digits.c_str(), &end, base);
        if (digits.empty() || *end != '\0' || errno == ERANGE) fail(p, "invalid integer literal");
        Token t;
        t.type = TokenType::INT;
        t.int_value = v;
        t.value = s_.substr(p, q - p);
        t.pos = pos_of(p);
        tokens_.push_back(std::move(t));
        return q;
    }

    // The code point at p and its length in bytes.
    std::size_t code_point(std::size_t p, char32_t& cp) const {
        const auto b = static_cast<unsigned char>(s_[p]);
        const std::size_t len = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
        const std::vector<char32_t> cps = text::decode(std::string_view(s_).substr(p, len));
        cp = cps.empty() ? 0 : cps[0];
        return cps.size() == 1 ? len : 1;
    }

    // Python identifiers, as Jinja2 3 accepts them: ASCII letters, digits and '_', and letters of
    // other scripts.
    std::size_t name_char(std::size_t p, bool first) const {
        const char c = s_[p];
        if (is_name_start(c) || (!first && is_digit(c))) return 1;
        if (static_cast<unsigned char>(c) < 0x80) return 0;
        char32_t cp;
        const std::size_t len = code_point(p, cp);
        return text::is_alnum(cp) && !(cp >= 0xDC80 && cp <= 0xDCFF) ? len : 0;
    }

    std::size_t token(std::size_t p, std::vector<char>& braces) {
        const char c = s_[p];
        if (is_digit(c)) return number(p);
        if (name_char(p, true)) {
            std::size_t q = p;
            while (q < s_.size()) {
                const std::size_t n = name_char(q, q == p);
                if (n == 0) break;
                q += n;
            }
            emit(TokenType::NAME, s_.substr(p, q - p), p);
            return q;
        }
        if (c == '\'' || c == '"') return string_literal(p);
        static const char* const kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[", "]",
                                           "(", ")", "{", "}", ">", "<", "=", ".", ":", "|", ",", ";"};
        for (const char* op : kOps) {
            if (!at(p, op)) continue;
            const std::size_t n = std::strlen(op);
            if (n == 1 && std::strchr("([{", c)) braces.push_back(c);
            if (n == 1 && std::strchr(")]}", c)) {
                const char want = c == ')' ? '(' : c == ']' ? '[' : '{';
                if (braces.empty() || braces.back() != want) fail(p, std::string("unexpected '") + c + "'");
                braces.pop_back();
            }
            emit(TokenType::OP, op, p);
            return p + n;
        }
        char32_t cp;
        fail(p, "unexpected char '" + s_.substr(p, code_point(p, cp)) + "'");
    }

    std::size_t string_literal(std::size_t p) {
        const char quote = s_[p];
        std::size_t q = p + 1;
        while (q < s_.size() && s_[q] != quote) q += s_[q] == '\\' ? 2 : 1;
        if (q >= s_.size()) fail(p, "unexpected char '" + std::string(1, quote) + "' (unterminated string)");
        emit(TokenType::STRING, unescape(s_.substr(p + 1, q - p - 1), p), p);
        return q + 1;
    }

    // Python's unicode-escape decoding of a string literal's body, as Jinja2 applies it.
    std::string unescape(const std::string& body, std::size_t at_offset) const {
        std::string out;
        for (std::size_t i = 0; i < body.size(); ++i) {
            if (body[i] != '\\' || i + 1 >= body.size()) {
                out += body[i];
                continue;
            }
            const char e = body[++i];
            switch (e) {
                case '\n': break;
                case '\\': out += '\\'; break;
                case '\'': out += '\''; break;
                case '"': out += '"'; break;
                case 'a': out += '\a'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'v': out += '\v'; break;
                case 'x': case 'u': case 'U': {
                    const std::size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                    const std::string hex = body.substr(i + 1, n);
                    if (hex.size() != n || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
                        fail(at_offset, "truncated \\" + std::string(1, e) + " escape in a string literal");
                    }
                    const unsigned long cp = std::stoul(hex, nullptr, 16);
                    if (cp > 0x10FFFF) fail(at_offset, "illegal Unicode character in a string literal");
                    text::append_utf8(out, static_cast<char32_t>(cp));
                    i += n;
                    break;
                }
                default:
                    if (e >= '0' && e <= '7') {
                        unsigned v = 0;
                        std::size_t n = 0;
                        for (; n < 3 && i + n < body.size() && body[i + n] >= '0' && body[i + n] <= '7'; ++n) {
                            v = v * 8 + static_cast<unsigned>(body[i + n] - '0');
                        }
                        text::append_utf8(out, v);
                        i += n - 1;
                    } else {
                        out += '\\';
                        out += e;
                    }
            }
        }
        return out;
    }

    std::string s_;
    std::vector<std::size_t> line_starts_;
    std::vector<Token> tokens_;
    std::size_t pos_ = 0;
    bool line_starting_ = true;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace wb::jinja
