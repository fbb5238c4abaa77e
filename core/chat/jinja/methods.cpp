// The Python methods of str, dict and list that templates call ('x'.strip(), d.get(k), ...). The
// immutable sandbox refuses the mutating ones (list.append, dict.pop, ...): they are unsafe undefined
// values, so calling them fails with a security error as in Jinja2.
#include <algorithm>

#include "chat/jinja/builtins.h"
#include "chat/jinja/errors.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/renderer.h"
#include "chat/jinja/text.h"

namespace wb::jinja {

namespace {

using Method = Value (*)(Renderer&, const Value& self, CallArgs&);

std::string need_str(const Value& v, const char* what) {
    if (!v.is_string()) throw EvalError(std::string(what) + " arg must be str, not " + v.type_name());
    return v.str();
}

std::int64_t opt_int(const Args& a, std::size_t i, std::int64_t fallback) {
    if (!a.has(i) || a[i].is_none()) return fallback;
    if (!a[i].is_int() && !a[i].is_bool()) throw EvalError(std::string("'") + a[i].type_name() + "' object cannot be interpreted as an integer");
    return a[i].as_int();
}

Value list_of(std::vector<std::string> parts) {
    std::vector<Value> out;
    for (auto& p : parts) out.emplace_back(std::move(p));
    return Value(std::move(out));
}

// The code-point range [start, end) of str.startswith / find etc., as a substring.
std::string window(const std::string& s, const Args& a, std::size_t first) {
    if (!a.has(first) && !a.has(first + 1)) return s;
    const std::vector<char32_t> cps = text::decode(s);
    const auto n = static_cast<std::int64_t>(cps.size());
    auto clamp = [n](std::int64_t x) { return x < 0 ? std::max<std::int64_t>(0, x + n) : std::min(x, n); };
    const std::int64_t b = clamp(opt_int(a, first, 0)), e = clamp(opt_int(a, first + 1, n));
    return b >= e ? std::string() : text::encode(cps, static_cast<std::size_t>(b), static_cast<std::size_t>(e));
}

Value affix(const Value& self, CallArgs& c, bool prefix) {
    Args a(c, prefix ? "startswith" : "endswith", {"affix", "start", "end"});
    const std::string s = window(self.str(), a, 1);
    std::vector<Value> options = a[0].is_tuple() ? a[0].items() : std::vector<Value>{a[0]};
    for (const Value& o : options) {
        const std::string x = need_str(o, prefix ? "startswith" : "endswith");
        if (x.size() <= s.size() && (prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0)) {
            return Value(true);
        }
    }
    return Value(false);
}

Value str_split(const Value& self, CallArgs& c, bool right) {
    Args a(c, right ? "rsplit" : "split", {"sep", "maxsplit"});
    const std::int64_t maxsplit = opt_int(a, 1, -1);
    if (!a.has(0) || a[0].is_none()) {
        if (right && maxsplit >= 0) {
            // rsplit(None, n): split from the right; reverse, split, reverse back.
            std::vector<char32_t> cps = text::decode(self.str());
            std::reverse(cps.begin(), cps.end());
            std::vector<std::string> parts = text::split_whitespace(text::encode(cps), maxsplit);
            std::reverse(parts.begin(), parts.end());
            for (auto& p : parts) {
                std::vector<char32_t> pc = text::decode(p);
                std::reverse(pc.begin(), pc.end());
                p = text::encode(pc);
            }
            return list_of(std::move(parts));
        }
        return list_of(text::split_whitespace(self.str(), maxsplit));
    }
    const std::string sep = need_str(a[0], "split");
    if (sep.empty()) throw EvalError("empty separator");
    return list_of(right ? text::rsplit(self.str(), sep, maxsplit) : text::split(self.str(), sep, maxsplit));
}

Value str_strip(const Value& self, CallArgs& c, bool left, bool right) {
    Args a(c, "strip", {"chars"});
    if (a.has(0) && !a[0].is_none()) {
        const std::string chars = need_str(a[0], "strip");
        return Value(text::strip(self.str(), &chars, left, right));
    }
    return Value(text::strip(self.str(), nullptr, left, right));
}

Value str_find(const Value& self, CallArgs& c, bool reverse, bool raise) {
    Args a(c, "find", {"sub", "start", "end"});
    const std::string sub = need_str(a[0], "find");
    const std::vector<char32_t> cps = text::decode(self.str());
    const auto n = static_cast<std::int64_t>(cps.size());
    auto clamp = [n](std::int64_t x) { return x < 0 ? std::max<std::int64_t>(0, x + n) : std::min(x, n); };
    const std::int64_t b = clamp(opt_int(a, 1, 0)), e = clamp(opt_int(a, 2, n));
    std::int64_t found = -1;
    if (b <= e) {
        const std::string hay = text::encode(cps, static_cast<std::size_t>(b), static_cast<std::size_t>(e));
        const std::size_t at = reverse ? hay.rfind(sub) : hay.find(sub);
        if (at != std::string::npos) found = b + static_cast<std::int64_t>(text::length(hay.substr(0, at)));
    }
    if (found < 0 && raise) throw EvalError("substring not found");
    return Value(found);
}

Value str_join(Renderer& r, const Value& self, CallArgs& c) {
    Args a(c, "join", {"iterable"});
    std::string out;
    std::size_t i = 0;
    for (const Value& item : r.iterate(a[0])) {
        if (!item.is_string()) {
            throw EvalError("sequence item " + std::to_string(i) + ": expected str instance, " + item.type_name() + " found");
        }
        if (i++) out += self.str();
        out += item.str();
        r.check_string(out.size());
    }
    return Value(std::move(out));
}

Value str_pad(const Value& self, CallArgs& c, char how) {
    Args a(c, "center", {"width", "fillchar"});
    const std::int64_t width = opt_int(a, 0, 0);
    const std::string fill = a.has(1) ? need_str(a[1], "fillchar") : " ";
    if (text::length(fill) != 1) throw EvalError("The fill character must be exactly one character long");
    const auto len = static_cast<std::int64_t>(text::length(self.str()));
    if (width <= len) return self;
    const std::int64_t marg = width - len;
    std::int64_t left = how == 'l' ? 0 : how == 'r' ? marg : marg / 2 + (marg & width & 1);
    std::string out;
    for (std::int64_t i = 0; i < left; ++i) out += fill;
    out += self.str();
    for (std::int64_t i = 0; i < marg - left; ++i) out += fill;
    return Value(std::move(out));
}

// str.format with auto-numbered, numbered and named fields ({}, {0}, {name}, {0[key]}, {x.attr}) and
// an optional !r/!s conversion; a format spec is applied as Python's format() does for the plain cases.
std::string format_field(Renderer& r, const std::string& field, const Args& a, const CallArgs& c, std::size_t& auto_index) {
    std::string spec, conv, name = field;
    if (const std::size_t colon = name.find(':'); colon != std::string::npos) {
        spec = name.substr(colon + 1);
        name = name.substr(0, colon);
    }
    if (const std::size_t bang = name.find('!'); bang != std::string::npos) {
        conv = name.substr(bang + 1);
        name = name.substr(0, bang);
    }
    std::size_t head_end = name.find_first_of(".[");
    const std::string head = name.substr(0, head_end);
    Value v;
    if (head.empty() || std::all_of(head.begin(), head.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
        if (head.size() > 9) throw EvalError("Too many decimal digits in format string");
        const std::size_t index = head.empty() ? auto_index++ : std::stoul(head);
        if (index >= a.extra().size()) throw EvalError("Replacement index " + std::to_string(index) + " out of range");
        v = a.extra()[index];
    } else {
        bool found = false;
        for (const auto& [k, val] : c.keywords) {
            if (k == head) {
                v = val;
                found = true;
            }
        }
        if (!found) throw EvalError("KeyError: '" + head + "'");
    }
    while (head_end != std::string::npos && head_end < name.size()) {
        if (name[head_end] == '.') {
            const std::size_t next = name.find_first_of(".[", head_end + 1);
            v = r.getattr(v, name.substr(head_end + 1, next - head_end - 1));
            head_end = next;
        } else {
            const std::size_t close = name.find(']', head_end);
            if (close == std::string::npos) throw EvalError("Missing ']' in format string");
            const std::string key = name.substr(head_end + 1, close - head_end - 1);
            const bool numeric = !key.empty() && key.size() < 18 &&
                                 std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
            v = r.getitem(v, numeric ? Value(static_cast<std::int64_t>(std::stoll(key))) : Value(key));
            head_end = close + 1;
        }
    }
    std::string s = conv == "r" ? to_repr(v) : to_str(v);
    if (spec.empty()) return s;
    return percent_format("%" + (spec[0] == '<' ? "-" + spec.substr(1) : spec[0] == '>' ? spec.substr(1) : spec) +
                              (std::isalpha(static_cast<unsigned char>(spec.back())) ? "" : "s"),
                          conv.empty() ? v : Value(s), r);
}

Value str_format(Renderer& r, const Value& self, CallArgs& c) {
    CallArgs positional_only{c.positional, {}};
    Args a(positional_only, "format", {}, true);
    const std::string& f = self.str();
    std::string out;
    std::size_t auto_index = 0;
    for (std::size_t i = 0; i < f.size(); ++i) {
        if (f[i] == '{' && i + 1 < f.size() && f[i + 1] == '{') {
            out += '{';
            ++i;
        } else if (f[i] == '}' && i + 1 < f.size() && f[i + 1] == '}') {
            out += '}';
            ++i;
        } else if (f[i] == '{') {
            const std::size_t close = f.find('}', i);
            if (close == std::string::npos) throw EvalError("Single '{' encountered in format string");
            out += format_field(r, f.substr(i + 1, close - i - 1), a, c, auto_index);
            i = close;
        } else if (f[i] == '}') {
            throw EvalError("Single '}' encountered in format string");
        } else {
            out += f[i];
        }
        r.check_string(out.size());
    }
    return Value(std::move(out));
}

bool all_chars(const std::string& s, bool (*pred)(char32_t)) {
    const std::vector<char32_t> cps = text::decode(s);
    return !cps.empty() && std::all_of(cps.begin(), cps.end(), pred);
}

Value str_method(Renderer& r, const Value& self, const std::string& name, CallArgs& c) {
    if (name == "startswith" || name == "endswith") return affix(self, c, name == "startswith");
    if (name == "split" || name == "rsplit") return str_split(self, c, name == "rsplit");
    if (name == "strip") return str_strip(self, c, true, true);
    if (name == "lstrip") return str_strip(self, c, true, false);
    if (name == "rstrip") return str_strip(self, c, false, true);
    if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
        return str_find(self, c, name[0] == 'r', name.find("index") != std::string::npos);
    }
    if (name == "join") return str_join(r, self, c);
    if (name == "format") return str_format(r, self, c);
    if (name == "center" || name == "ljust" || name == "rjust") return str_pad(self, c, name[0] == 'c' ? 'c' : name[0] == 'l' ? 'l' : 'r');
    if (name == "replace") {
        Args a(c, "replace", {"old", "new", "count"});
        return Value(text::replace(self.str(), need_str(a[0], "replace"), need_str(a[1], "replace"), opt_int(a, 2, -1),
                                   r.limits().max_string_bytes));
    }
    if (name == "count") {
        Args a(c, "count", {"sub", "start", "end"});
        return Value(text::count(window(self.str(), a, 1), need_str(a[0], "count")));
    }
    if (name == "removeprefix" || name == "removesuffix") {
        Args a(c, name, {"affix"});
        const std::string x = need_str(a[0], name.c_str());
        const std::string& s = self.str();
        if (name == "removeprefix" && s.compare(0, x.size(), x) == 0) return Value(s.substr(x.size()));
        if (name == "removesuffix" && !x.empty() && x.size() <= s.size() && s.compare(s.size() - x.size(), x.size(), x) == 0) {
            return Value(s.substr(0, s.size() - x.size()));
        }
        return Value(s);
    }
    if (name == "splitlines") return list_of(text::splitlines(self.str()));
    Args none(c, name, {});
    if (name == "upper") return Value(text::upper(self.str()));
    if (name == "lower" || name == "casefold") return Value(text::lower(self.str()));
    if (name == "title") return Value(text::title(self.str()));
    if (name == "capitalize") return Value(text::capitalize(self.str()));
    if (name == "isspace") return Value(all_chars(self.str(), text::is_space));
    if (name == "isalnum") return Value(all_chars(self.str(), text::is_alnum));
    if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") {
        return Value(all_chars(self.str(), [](char32_t ch) { return ch >= '0' && ch <= '9'; }));
    }
    if (name == "isalpha") {
        return Value(all_chars(self.str(), [](char32_t ch) { return text::is_alnum(ch) && !(ch >= '0' && ch <= '9'); }));
    }
    const std::vector<char32_t> cps = text::decode(self.str());
    const bool any_cased = std::any_of(cps.begin(), cps.end(), [](char32_t ch) { return text::is_cased_upper(ch) || text::is_cased_lower(ch); });
    if (name == "islower") return Value(any_cased && std::none_of(cps.begin(), cps.end(), text::is_cased_upper));
    if (name == "isupper") return Value(any_cased && std::none_of(cps.begin(), cps.end(), text::is_cased_lower));
    throw EvalError("str." + name + " is not supported");
}

Value dict_method(Renderer&, const Value& self, const std::string& name, CallArgs& c) {
    if (name == "get") {
        Args a(c, "get", {"key", "default"});
        const Value* v = self.dict().find(a[0]);
        return v ? *v : a.get(1, Value::none());
    }
    Args none(c, name, {});
    std::vector<Value> out;
    for (const auto& [k, v] : self.dict().entries()) {
        if (name == "keys") out.push_back(k);
        else if (name == "values") out.push_back(v);
        else if (name == "items") out.push_back(Value::tuple({k, v}));
    }
    if (name == "copy") return self;
    return Value(std::move(out));
}

Value list_method(Renderer&, const Value& self, const std::string& name, CallArgs& c) {
    if (name == "copy") {
        Args none(c, name, {});
        return self;
    }
    Args a(c, name, {"value", "start", "end"});
    const auto& items = self.items();
    if (name == "count") {
        return Value(static_cast<std::int64_t>(std::count(items.begin(), items.end(), a[0])));
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (items[i] == a[0]) return Value(static_cast<std::int64_t>(i));
    }
    throw EvalError(to_repr(a[0]) + " is not in list");
}

bool is_one_of(const std::string& name, std::initializer_list<const char*> names) {
    for (const char* n : names) {
        if (name == n) return true;
    }
    return false;
}

Value bind(const Value& self, const std::string& name, Value (*impl)(Renderer&, const Value&, const std::string&, CallArgs&)) {
    return Value::callable(name, [self, name, impl](Renderer& r, CallArgs& c) { return impl(r, self, name, c); });
}

Value refused(const Value& self, const std::string& name) {
    return Value::undefined("access to attribute '" + name + "' of '" + self.type_name() + "' object is unsafe.", true);
}

}  // namespace

Value bound_method(const Value& obj, const std::string& name) {
    if (obj.is_string()) {
        if (is_one_of(name, {"startswith", "endswith", "split", "rsplit", "strip", "lstrip", "rstrip", "find", "rfind",
                             "index", "rindex", "join", "format", "center", "ljust", "rjust", "replace", "count",
                             "removeprefix", "removesuffix", "splitlines", "upper", "lower", "casefold", "title",
                             "capitalize", "isspace", "isalnum", "isdigit", "isnumeric", "isdecimal", "isalpha",
                             "islower", "isupper"})) {
            return bind(obj, name, str_method);
        }
    } else if (obj.is_dict()) {
        if (is_one_of(name, {"get", "keys", "values", "items", "copy"})) return bind(obj, name, dict_method);
        if (is_one_of(name, {"pop", "popitem", "setdefault", "update", "clear"})) return refused(obj, name);
    } else if (obj.is_list()) {
        if (is_one_of(name, {"index", "count"}) || (!obj.is_tuple() && name == "copy")) return bind(obj, name, list_method);
        if (!obj.is_tuple() && is_one_of(name, {"append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear"})) {
            return refused(obj, name);
        }
    }
    return Value();
}

}  // namespace wb::jinja
