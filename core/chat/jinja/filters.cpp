// Jinja2 3.1's built-in filters, with `tojson` replaced as transformers replaces it (json.dumps with
// ensure_ascii off, so no HTML escaping and non-ASCII kept). Generators (items, unique, reverse,
// map, select, ...) are lists here: templates only loop over them or pass them on.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/jinja/builtins.h"
#include "chat/jinja/errors.h"
#include "chat/jinja/json.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/renderer.h"
#include "chat/jinja/text.h"

namespace wb::jinja {

namespace {

const char* const kFilters[] = {
    "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
    "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "items", "join",
    "last", "length", "list", "lower", "map", "max", "min", "pprint", "random", "reject", "rejectattr", "replace",
    "reverse", "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags", "sum", "title",
    "tojson", "trim", "truncate", "unique", "upper", "urlencode", "urlize", "wordcount", "wordwrap", "xmlattr"};

std::string soft_str(const Value& v) { return to_str(v); }

// Jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0, each with getitem.
Value attribute_of(Renderer& r, const Value& item, const Value& attribute) {
    if (!attribute.is_string()) return r.getitem(item, attribute);
    Value v = item;
    for (const std::string& part : text::split(attribute.str(), ".", -1)) {
        const bool numeric = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
        v = r.getitem(v, numeric ? Value(static_cast<std::int64_t>(std::strtoll(part.c_str(), nullptr, 10))) : Value(part));
    }
    return v;
}

Value ignore_case(const Value& v) { return v.is_string() ? Value(text::lower(v.str())) : v; }

Value sort_key(Renderer& r, const Value& item, const Value& attribute, bool case_sensitive) {
    Value k = attribute.is_undefined() || attribute.is_none() ? item : attribute_of(r, item, attribute);
    return case_sensitive ? k : ignore_case(k);
}

std::int64_t length_of(const Value& v) {
    switch (v.type()) {
        case Value::Type::STRING: return static_cast<std::int64_t>(text::length(v.str()));
        case Value::Type::LIST: return static_cast<std::int64_t>(v.items().size());
        case Value::Type::DICT: return static_cast<std::int64_t>(v.dict().size());
        case Value::Type::UNDEFINED: return 0;
        default: throw EvalError(std::string("object of type '") + v.type_name() + "' has no len()");
    }
}

Value tojson(const Value& v, CallArgs& c) {
    Args a(c, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonOptions o;
    o.ensure_ascii = a.has(0) && a[0].truthy();
    if (a.has(1) && !a[1].is_none()) {
        if (a[1].is_string()) {
            o.indent = a[1].str();
        } else if (a[1].is_int()) {
            o.indent = std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(a[1].as_int(), 0, 1000)), ' ');
        } else {
            throw EvalError("tojson: indent must be an int or a str");
        }
    }
    if (a.has(2) && !a[2].is_none()) {
        if (!a[2].is_list() || a[2].items().size() != 2 || !a[2].items()[0].is_string() || !a[2].items()[1].is_string()) {
            throw EvalError("tojson: separators must be a pair of strings");
        }
        o.item_separator = a[2].items()[0].str();
        o.key_separator = a[2].items()[1].str();
    }
    o.sort_keys = a.has(3) && a[3].truthy();
    return Value(to_json(v, o));
}

// Python's int(str): surrounding whitespace, a sign, digits with single underscores between them.
bool parse_int(const std::string& s, std::int64_t base, std::int64_t& out) {
    std::string t = text::strip(s, nullptr, true, true);
    if (t.empty()) return false;
    std::string digits;
    std::size_t i = t[0] == '+' || t[0] == '-' ? 1 : 0;
    if (base == 16 && t.compare(i, 2, "0x") == 0) i += 2;
    for (; i < t.size(); ++i) {
        if (t[i] == '_' && !digits.empty() && i + 1 < t.size() && t[i + 1] != '_') continue;
        digits += t[i];
    }
    if (digits.empty() || digits[0] == '-' || digits[0] == '+') return false;
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(digits.c_str(), &end, static_cast<int>(base));
    if (*end != '\0' || errno == ERANGE) return false;
    out = t[0] == '-' ? -v : v;
    return true;
}

bool parse_float(const std::string& s, double& out) {
    std::string t = text::strip(s, nullptr, true, true);
    t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
    if (t.empty()) return false;
    char* end = nullptr;
    out = std::strtod(t.c_str(), &end);
    return *end == '\0' && t.find_first_of("xXpP") == std::string::npos;
}

Value to_int(const Value& v, CallArgs& c) {
    Args a(c, "int", {"default", "base"});
    const Value fallback = a.get(0, Value(0));
    const std::int64_t base = a.has(1) ? a[1].as_int() : 10;
    std::int64_t i = 0;
    double d = 0.0;
    if (v.is_int() || v.is_bool()) return Value(v.as_int());
    if (v.is_float()) {
        if (!std::isfinite(v.as_float())) throw EvalError("cannot convert float infinity or NaN to integer");
        return Value(static_cast<std::int64_t>(std::trunc(v.as_float())));
    }
    if (v.is_string()) {
        if (base >= 2 && base <= 36 && parse_int(v.str(), base, i)) return Value(i);
        if (parse_float(v.str(), d) && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value(static_cast<std::int64_t>(std::trunc(d)));
    }
    return fallback;
}

Value to_float(const Value& v, CallArgs& c) {
    Args a(c, "float", {"default"});
    double d = 0.0;
    if (v.is_number()) return Value(v.as_float());
    if (v.is_string() && parse_float(v.str(), d)) return Value(d);
    return a.get(0, Value(0.0));
}

Value round_filter(const Value& v, CallArgs& c) {
    Args a(c, "round", {"precision", "method"});
    const std::int64_t precision = a.has(0) ? a[0].as_int() : 0;
    const std::string method = a.has(1) ? to_str(a[1]) : "common";
    if (method != "common" && method != "ceil" && method != "floor") throw EvalError("method must be common, ceil or floor");
    if (!v.is_number()) throw EvalError(std::string("type ") + v.type_name() + " doesn't define __round__ method");
    if (method == "common") {
        if (!v.is_float()) return Value(v.as_int());
        // Python rounds the exact binary value half to even: what printf's correctly rounded %.*f does.
        char buf[512];
        std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::clamp<std::int64_t>(precision, 0, 300)), v.as_float());
        return Value(std::strtod(buf, nullptr));
    }
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double x = v.as_float() * scale;
    return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value indent(Renderer& r, const Value& v, CallArgs& c) {
    Args a(c, "indent", {"width", "first", "blank"});
    const Value width = a.get(0, Value(4));
    const std::string pad = width.is_string() ? width.str()
                                              : std::string(static_cast<std::size_t>(std::clamp<std::int64_t>(width.as_int(), 0, 10000)), ' ');
    const bool first = a.has(1) && a[1].truthy(), blank = a.has(2) && a[2].truthy();
    const std::vector<std::string> lines = text::splitlines(soft_str(v) + "\n");
    std::string out;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (i) out += "\n";
        if (i > 0 && (blank || !lines[i].empty())) out += pad;
        out += lines[i];
        r.check_string(out.size());
    }
    if (first) out.insert(0, pad);
    return Value(std::move(out));
}

Value truncate(const Value& v, CallArgs& c) {
    Args a(c, "truncate", {"length", "killwords", "end", "leeway"});
    const std::int64_t length = a.has(0) ? a[0].as_int() : 255;
    const bool killwords = a.has(1) && a[1].truthy();
    const std::string end = a.has(2) ? to_str(a[2]) : "...";
    const std::int64_t leeway = a.has(3) && !a[3].is_none() ? a[3].as_int() : 5;
    const std::vector<char32_t> cps = text::decode(soft_str(v));
    if (length < static_cast<std::int64_t>(text::length(end))) throw EvalError("expected length >= len(end)");
    if (leeway < 0) throw EvalError("expected leeway >= 0");
    if (static_cast<std::int64_t>(cps.size()) <= length + leeway) return Value(text::encode(cps));
    const std::size_t keep = static_cast<std::size_t>(length - static_cast<std::int64_t>(text::length(end)));
    std::string head = text::encode(cps, 0, keep);
    if (!killwords) {
        const std::size_t space = head.rfind(' ');
        if (space != std::string::npos) head.resize(space);
    }
    return Value(head + end);
}

Value center(const Value& v, CallArgs& c) {
    Args a(c, "center", {"width"});
    const std::string s = soft_str(v);
    const std::int64_t width = a.has(0) ? a[0].as_int() : 80;
    const auto len = static_cast<std::int64_t>(text::length(s));
    if (width <= len) return Value(s);
    const std::int64_t marg = std::min<std::int64_t>(width, 1 << 20) - len;
    const std::int64_t left = marg / 2 + (marg & width & 1);
    return Value(std::string(static_cast<std::size_t>(left), ' ') + s + std::string(static_cast<std::size_t>(marg - left), ' '));
}

Value join(Renderer& r, const Value& v, CallArgs& c) {
    Args a(c, "join", {"d", "attribute"});
    const std::string sep = a.has(0) ? to_str(a[0]) : "";
    std::string out;
    bool first = true;
    for (const Value& item : r.iterate(v)) {
        if (!first) out += sep;
        first = false;
        out += to_str(a.has(1) && !a[1].is_none() ? attribute_of(r, item, a[1]) : item);
        r.check_string(out.size());
    }
    return Value(std::move(out));
}

// select / reject / selectattr / rejectattr: keep the items whose (attribute's) test result is `keep`.
Value select(Renderer& r, const Value& v, CallArgs& c, bool by_attribute, bool keep) {
    std::vector<Value> rest = c.positional;
    Value attribute;
    if (by_attribute) {
        if (rest.empty()) throw EvalError("missing parameter for attribute name");
        attribute = rest.front();
        rest.erase(rest.begin());
    }
    std::string test;
    if (!rest.empty()) {
        test = to_str(rest.front());
        rest.erase(rest.begin());
        if (!is_test_name(test)) throw EvalError("no test named '" + test + "'");
    }
    std::vector<Value> out;
    if (!v.truthy()) return Value::iterator({});
    for (const Value& item : r.iterate(v)) {
        const Value subject = by_attribute ? attribute_of(r, item, attribute) : item;
        CallArgs targs{rest, c.keywords};
        const bool pass = test.empty() ? subject.truthy() : apply_test(r, test, subject, targs);
        if (pass == keep) out.push_back(item);
    }
    return Value::iterator(std::move(out));
}

Value map_filter(Renderer& r, const Value& v, CallArgs& c) {
    std::vector<Value> out;
    const Value* attribute = nullptr;
    Value fallback;
    for (const auto& [k, val] : c.keywords) {
        if (k == "attribute") attribute = &val;
        if (k == "default") fallback = val;
    }
    if (attribute || c.positional.empty()) {
        if (!attribute) throw EvalError("map requires a filter argument");
        if (!v.truthy()) return Value::iterator({});
        for (const Value& item : r.iterate(v)) {
            Value x = attribute_of(r, item, *attribute);
            out.push_back(x.is_undefined() && !fallback.is_undefined() ? fallback : x);
        }
        return Value::iterator(std::move(out));
    }
    const std::string name = to_str(c.positional[0]);
    if (!is_filter_name(name)) throw EvalError("no filter named '" + name + "'");
    CallArgs fargs{std::vector<Value>(c.positional.begin() + 1, c.positional.end()), c.keywords};
    if (!v.truthy()) return Value::iterator({});
    for (const Value& item : r.iterate(v)) {
        CallArgs copy = fargs;
        out.push_back(apply_filter(r, name, item, copy));
    }
    return Value::iterator(std::move(out));
}

Value sort_filter(Renderer& r, const Value& v, CallArgs& c) {
    Args a(c, "sort", {"reverse", "case_sensitive", "attribute"});
    const bool reverse = a.has(0) && a[0].truthy(), case_sensitive = a.has(1) && a[1].truthy();
    std::vector<std::pair<Value, Value>> keyed;
    for (const Value& item : r.iterate(v)) keyed.emplace_back(sort_key(r, item, a.get(2, Value()), case_sensitive), item);
    std::stable_sort(keyed.begin(), keyed.end(), [reverse](const auto& x, const auto& y) {
        return reverse ? less_than(y.first, x.first) : less_than(x.first, y.first);
    });
    std::vector<Value> out;
    for (auto& [k, item] : keyed) out.push_back(std::move(item));
    return Value(std::move(out));
}

Value dictsort(Renderer& r, const Value& v, CallArgs& c) {
    Args a(c, "dictsort", {"case_sensitive", "by", "reverse"});
    if (!v.is_dict()) throw EvalError("dictsort: a mapping is required");
    const bool case_sensitive = a.has(0) && a[0].truthy(), reverse = a.has(2) && a[2].truthy();
    const std::string by = a.has(1) ? to_str(a[1]) : "key";
    if (by != "key" && by != "value") throw EvalError("You can only sort by either \"key\" or \"value\"");
    std::vector<Value> items;
    for (const auto& [k, val] : v.dict().entries()) items.push_back(Value::tuple({k, val}));
    const std::size_t pos = by == "key" ? 0 : 1;
    std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
        const Value kx = case_sensitive ? x.items()[pos] : ignore_case(x.items()[pos]);
        const Value ky = case_sensitive ? y.items()[pos] : ignore_case(y.items()[pos]);
        return reverse ? less_than(ky, kx) : less_than(kx, ky);
    });
    r.charge(items.size());
    return Value(std::move(items));
}

Value unique(Renderer& r, const Value& v, CallArgs& c) {
    Args a(c, "unique", {"case_sensitive", "attribute"});
    const bool case_sensitive = a.has(0) && a[0].truthy();
    std::vector<Value> out, seen;
    for (const Value& item : r.iterate(v)) {
        const Value key = sort_key(r, item, a.get(1, Value()), case_sensitive);
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
        seen.push_back(key);
        out.push_back(item);
        r.charge(seen.size());
    }
    return Value::iterator(std::move(out));
}

Value min_max(Renderer& r, const Value& v, CallArgs& c, bool want_max) {
    Args a(c, want_max ? "max" : "min", {"case_sensitive", "attribute"});
    const bool case_sensitive = a.has(0) && a[0].truthy();
    const std::vector<Value> items = r.iterate(v);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    std::size_t best = 0;
    Value best_key = sort_key(r, items[0], a.get(1, Value()), case_sensitive);
    for (std::size_t i = 1; i < items.size(); ++i) {
        Value k = sort_key(r, items[i], a.get(1, Value()), case_sensitive);
        if (want_max ? less_than(best_key, k) : less_than(k, best_key)) {
            best = i;
            best_key = std::move(k);
        }
    }
    return items[best];
}

Value sum(Renderer& r, const Value& v, CallArgs& c) {
    Args a(c, "sum", {"attribute", "start"});
    Value total = a.get(1, Value(0));
    for (const Value& item : r.iterate(v)) {
        total = binary_op("+", total, a.has(0) && !a[0].is_none() ? attribute_of(r, item, a[0]) : item, r);
    }
    return total;
}

Value batch(Renderer& r, const Value& v, CallArgs& c) {
    Args a(c, "batch", {"linecount", "fill_with"});
    const std::int64_t n = a.has(0) ? a[0].as_int() : 0;
    if (n <= 0) throw EvalError("batch: linecount must be positive");
    std::vector<Value> out, row;
    for (const Value& item : r.iterate(v)) {
        if (static_cast<std::int64_t>(row.size()) == n) {
            out.emplace_back(std::move(row));
            row.clear();
        }
        row.push_back(item);
    }
    if (!row.empty()) {
        if (a.has(1) && !a[1].is_none()) {
            while (static_cast<std::int64_t>(row.size()) < n) row.push_back(a[1]);
        }
        out.emplace_back(std::move(row));
    }
    return Value::iterator(std::move(out));
}

// Jinja2's title filter (not str.title): each word's first character upper, the rest lower, words
// beginning after whitespace, '-', '(', '{', '[' or '<'.
std::string title_filter(const std::string& s) {
    std::string out;
    bool word_start = true;
    for (char32_t ch : text::decode(s)) {
        const bool separator = text::is_space(ch) || ch == '-' || ch == '(' || ch == '{' || ch == '[' || ch == '<';
        text::append_utf8(out, separator ? ch : word_start ? text::to_upper(ch) : text::to_lower(ch));
        word_start = separator;
    }
    return out;
}

std::int64_t wordcount(const std::string& s) {
    std::int64_t n = 0;
    bool in_word = false;
    for (char32_t ch : text::decode(s)) {
        const bool w = text::is_alnum(ch) || ch == '_';
        if (w && !in_word) ++n;
        in_word = w;
    }
    return n;
}

Value items_of(const Value& v) {
    if (v.is_undefined()) return Value::iterator({});
    if (!v.is_dict()) throw EvalError("Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, val] : v.dict().entries()) out.push_back(Value::tuple({k, val}));
    return Value::iterator(std::move(out));
}

Value simple_filter(Renderer& r, const std::string& name, const Value& v, CallArgs& c) {
    Args none(c, name, {});
    if (name == "upper") return Value(text::upper(soft_str(v)));
    if (name == "lower") return Value(text::lower(soft_str(v)));
    if (name == "capitalize") return Value(text::capitalize(soft_str(v)));
    if (name == "title") return Value(title_filter(soft_str(v)));
    if (name == "length" || name == "count") return Value(length_of(v));
    if (name == "string") return v.is_string() ? v : Value(soft_str(v));
    if (name == "safe") return v.is_markup() ? v : Value::markup(soft_str(v));
    if (name == "escape" || name == "e" || name == "forceescape") {
        return v.is_markup() && name != "forceescape" ? v : Value::markup(text::html_escape(soft_str(v)));
    }
    if (name == "items") return items_of(v);
    if (name == "list") return Value(r.iterate(v));
    if (name == "wordcount") return Value(wordcount(soft_str(v)));
    if (name == "abs") {
        if (!v.is_number()) throw EvalError(std::string("bad operand type for abs(): '") + v.type_name() + "'");
        if (v.is_float()) return Value(std::fabs(v.as_float()));
        if (v.as_int() == INT64_MIN) throw EvalError("integer overflow");
        return Value(static_cast<std::int64_t>(std::llabs(v.as_int())));
    }
    if (name == "last" && v.is_iterator()) throw EvalError("'generator' object is not reversible");
    if (name == "first" && v.is_iterator()) {
        Value item;
        return v.take_next(item) ? item : Value::undefined("No first item, sequence was empty.");
    }
    if (name == "first" || name == "last") {
        std::vector<Value> items = r.iterate(v);
        if (items.empty()) return Value::undefined(std::string("No ") + name + " item, sequence was empty.");
        return name == "first" ? items.front() : items.back();
    }
    if (name == "reverse") {
        if (v.is_string()) {
            std::vector<char32_t> cps = text::decode(v.str());
            std::reverse(cps.begin(), cps.end());
            return Value(text::encode(cps));
        }
        if (v.is_iterator()) throw EvalError("'generator' object is not reversible");
        std::vector<Value> items = r.iterate(v);
        std::reverse(items.begin(), items.end());
        return Value::iterator(std::move(items));
    }
    throw EvalError("the '" + name + "' filter is not supported");
}

}  // namespace

bool is_filter_name(const std::string& name) {
    for (const char* f : kFilters) {
        if (name == f) return true;
    }
    return false;
}

Value apply_filter(Renderer& r, const std::string& name, const Value& v, CallArgs& c) {
    r.charge(1);
    if (!is_filter_name(name)) throw EvalError("no filter named '" + name + "'");
    if (name == "default" || name == "d") {
        Args a(c, name, {"default_value", "boolean"});
        const bool boolean = a.has(1) && a[1].truthy();
        if (v.is_undefined() || (boolean && !v.truthy())) return a.get(0, Value(""));
        return v;
    }
    if (name == "trim") {
        Args a(c, name, {"chars"});
        if (a.has(0) && !a[0].is_none()) {
            const std::string chars = to_str(a[0]);
            return Value(text::strip(soft_str(v), &chars, true, true));
        }
        return Value(text::strip(soft_str(v), nullptr, true, true));
    }
    if (name == "replace") {
        Args a(c, name, {"old", "new", "count"});
        const std::int64_t count = a.has(2) && !a[2].is_none() ? a[2].as_int() : -1;
        return Value(text::replace(soft_str(v), to_str(a[0]), to_str(a[1]), count, r.limits().max_string_bytes));
    }
    if (name == "tojson") return tojson(v, c);
    if (name == "int") return to_int(v, c);
    if (name == "float") return to_float(v, c);
    if (name == "round") return round_filter(v, c);
    if (name == "indent") return indent(r, v, c);
    if (name == "truncate") return truncate(v, c);
    if (name == "center") return center(v, c);
    if (name == "join") return join(r, v, c);
    if (name == "select" || name == "reject") return select(r, v, c, false, name == "select");
    if (name == "selectattr" || name == "rejectattr") return select(r, v, c, true, name == "selectattr");
    if (name == "map") return map_filter(r, v, c);
    if (name == "sort") return sort_filter(r, v, c);
    if (name == "dictsort") return dictsort(r, v, c);
    if (name == "unique") return unique(r, v, c);
    if (name == "min" || name == "max") return min_max(r, v, c, name == "max");
    if (name == "sum") return sum(r, v, c);
    if (name == "batch") return batch(r, v, c);
    if (name == "attr") {
        Args a(c, name, {"name"});
        return r.getattr(v, to_str(a[0]));
    }
    if (name == "format") {
        if (!c.positional.empty() && !c.keywords.empty()) throw EvalError("can't handle positional and keyword arguments at the same time");
        if (!c.keywords.empty()) {
            Dict d;
            for (const auto& [k, val] : c.keywords) d.set(Value(k), val);
            return Value(percent_format(soft_str(v), Value(std::move(d)), r));
        }
        return Value(percent_format(soft_str(v), Value::tuple(c.positional), r));
    }
    return simple_filter(r, name, v, c);
}

}  // namespace wb::jinja
