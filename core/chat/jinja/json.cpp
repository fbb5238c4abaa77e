#include "chat/jinja/json.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>

#include "chat/jinja/errors.h"
#include "chat/jinja/text.h"

namespace wb::jinja {

namespace {

constexpr int kMaxDepth = 512;

void dump_string(std::string& out, std::string_view s, bool ensure_ascii) {
    out += '"';
    char buf[16];
    for (char32_t c : text::decode(s)) {
        switch (c) {
            case '"': out += "\\\""; continue;
            case '\\': out += "\\\\"; continue;
            case '\n': out += "\\n"; continue;
            case '\r': out += "\\r"; continue;
            case '\t': out += "\\t"; continue;
            case '\b': out += "\\b"; continue;
            case '\f': out += "\\f"; continue;
            default: break;
        }
        if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
            if (c >= 0x10000) {
                const char32_t v = c - 0x10000;
                std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)),
                              static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
            } else {
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            }
            out += buf;
        } else {
            text::append_utf8(out, c);
        }
    }
    out += '"';
}

std::string float_json(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
    return text::repr_float(d);
}

// json.dumps converts these keys to strings; anything else is a TypeError.
std::string key_string(const Value& k) {
    switch (k.type()) {
        case Value::Type::STRING: return k.str();
        case Value::Type::INT: return std::to_string(k.as_int());
        case Value::Type::FLOAT: return float_json(k.as_float());
        case Value::Type::BOOL: return k.as_bool() ? "true" : "false";
        case Value::Type::NONE: return "null";
        default: throw EvalError(std::string("keys must be str, int, float, bool or None, not ") + k.type_name());
    }
}

class Dumper {
public:
    explicit Dumper(const JsonOptions& o) : o_(o) {
        item_sep_ = o.item_separator ? *o.item_separator : (o.indent ? "," : ", ");
        key_sep_ = o.key_separator ? *o.key_separator : ": ";
    }

    void dump(const Value& v, int depth) {
        if (depth > kMaxValueDepth + 8) throw EvalError("maximum recursion depth exceeded in tojson");
        switch (v.type()) {
            case Value::Type::NONE: out += "null"; return;
            case Value::Type::BOOL: out += v.as_bool() ? "true" : "false"; return;
            case Value::Type::INT: out += std::to_string(v.as_int()); return;
            case Value::Type::FLOAT: out += float_json(v.as_float()); return;
            case Value::Type::STRING: dump_string(out, v.str(), o_.ensure_ascii); return;
            case Value::Type::LIST: dump_list(v.items(), depth); return;
            case Value::Type::DICT: dump_dict(v.dict(), depth); return;
            default:
                throw EvalError(std::string("Object of type ") + v.type_name() + " is not JSON serializable");
        }
    }

    std::string out;

private:
    void newline(int depth) {
        if (!o_.indent) return;
        out += '\n';
        for (int i = 0; i < depth; ++i) out += *o_.indent;
    }

    void dump_list(const std::vector<Value>& items, int depth) {
        if (items.empty()) {
            out += "[]";
            return;
        }
        out += '[';
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (i) out += item_sep_;
            newline(depth + 1);
            dump(items[i], depth + 1);
        }
        newline(depth);
        out += ']';
    }

    void dump_dict(const Dict& d, int depth) {
        if (d.size() == 0) {
            out += "{}";
            return;
        }
        std::vector<const std::pair<Value, Value>*> entries;
        for (const auto& e : d.entries()) entries.push_back(&e);
        if (o_.sort_keys) {
            std::stable_sort(entries.begin(), entries.end(),
                             [](auto* a, auto* b) { return key_string(a->first) < key_string(b->first); });
        }
        out += '{';
        for (std::size_t i = 0; i < entries.size(); ++i) {
            if (i) out += item_sep_;
            newline(depth + 1);
            dump_string(out, key_string(entries[i]->first), o_.ensure_ascii);
            out += key_sep_;
            dump(entries[i]->second, depth + 1);
        }
        newline(depth);
        out += '}';
    }

    const JsonOptions& o_;
    std::string item_sep_, key_sep_;
};

class Parser {
public:
    explicit Parser(std::string_view s) : s_(s) {}

    Value document() {
        Value v = value(0);
        skip_space();
        if (pos_ != s_.size()) fail("unexpected text after the JSON value");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw wb::Error("JSON at byte " + std::to_string(pos_) + ": " + what);
    }

    void skip_space() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' || s_[pos_] == '\t')) {
            ++pos_;
        }
    }

    bool literal(std::string_view word) {
        if (s_.substr(pos_, word.size()) != word) return false;
        pos_ += word.size();
        return true;
    }

    Value value(int depth) {
        if (depth > kMaxDepth) fail("nesting deeper than 512");
        skip_space();
        if (pos_ >= s_.size()) fail("unexpected end");
        const char c = s_[pos_];
        if (c == '{') return object(depth);
        if (c == '[') return array(depth);
        if (c == '"') return Value(string());
        if (literal("true")) return Value(true);
        if (literal("false")) return Value(false);
        if (literal("null")) return Value::none();
        return number();
    }

    Value object(int depth) {
        ++pos_;
        Dict d;
        skip_space();
        if (pos_ < s_.size() && s_[pos_] == '}') {
            ++pos_;
            return Value(std::move(d));
        }
        while (true) {
            skip_space();
            if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a string key");
            std::string key = string();
            skip_space();
            if (pos_ >= s_.size() || s_[pos_] != ':') fail("expected ':'");
            ++pos_;
            d.set(Value(std::move(key)), value(depth + 1));
            skip_space();
            if (pos_ < s_.size() && s_[pos_] == ',') {
                ++pos_;
                continue;
            }
            if (pos_ < s_.size() && s_[pos_] == '}') {
                ++pos_;
                return Value(std::move(d));
            }
            fail("expected ',' or '}'");
        }
    }

    Value array(int depth) {
        ++pos_;
        std::vector<Value> items;
        skip_space();
        if (pos_ < s_.size() && s_[pos_] == ']') {
            ++pos_;
            return Value(std::move(items));
        }
        while (true) {
            items.push_back(value(depth + 1));
            skip_space();
            if (pos_ < s_.size() && s_[pos_] == ',') {
                ++pos_;
                continue;
            }
            if (pos_ < s_.size() && s_[pos_] == ']') {
                ++pos_;
                return Value(std::move(items));
            }
            fail("expected ',' or ']'");
        }
    }

    unsigned hex4() {
        if (pos_ + 4 > s_.size()) fail("truncated \\u escape");
        unsigned v = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = s_[pos_++];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
            else fail("bad \\u escape");
        }
        return v;
    }

    std::string string() {
        ++pos_;
        std::string out;
        while (true) {
            if (pos_ >= s_.size()) fail("unterminated string");
            const char c = s_[pos_++];
            if (c == '"') return out;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (pos_ >= s_.size()) fail("unterminated string");
            const char e = s_[pos_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    char32_t cp = hex4();
                    if (cp >= 0xD800 && cp < 0xDC00 && s_.substr(pos_, 2) == "\\u") {
                        const std::size_t save = pos_;
                        pos_ += 2;
                        const unsigned lo = hex4();
                        if (lo >= 0xDC00 && lo < 0xE000) {
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        } else {
                            pos_ = save;
                        }
                    }
                    text::append_utf8(out, cp);
                    break;
                }
                default: fail("bad escape");
            }
        }
    }

    Value number() {
        const std::size_t start = pos_;
        if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
        bool is_float = false;
        while (pos_ < s_.size()) {
            const char c = s_[pos_];
            if (c == '.' || c == 'e' || c == 'E' || c == '+' || (c == '-' && pos_ > start)) {
                is_float = true;
            } else if (c < '0' || c > '9') {
                break;
            }
            ++pos_;
        }
        const std::string num(s_.substr(start, pos_ - start));
        if (num.empty() || num == "-") fail("unexpected character");
        if (!is_float) {
            errno = 0;
            char* end = nullptr;
            const long long i = std::strtoll(num.c_str(), &end, 10);
            if (*end == '\0' && errno == 0) return Value(static_cast<std::int64_t>(i));
        }
        char* end = nullptr;
        const double d = std::strtod(num.c_str(), &end);
        if (*end == '\0') return Value(d);
        fail("bad number '" + num + "'");
    }

    std::string_view s_;
    std::size_t pos_ = 0;
};

}  // namespace

std::string to_json(const Value& v, const JsonOptions& options) {
    Dumper d(options);
    d.dump(v, 0);
    return std::move(d.out);
}

Value parse_json(std::string_view json) { return Parser(json).document(); }

}  // namespace wb::jinja
