#include "chat/jinja/ops.h"

#include <cmath>
#include <cstdio>

#include "chat/jinja/errors.h"
#include "chat/jinja/renderer.h"
#include "chat/jinja/text.h"

namespace wb::jinja {

void fail_undefined(const Value& u) {
    const std::string& hint = u.str();
    if (u.is_unsafe_undefined()) throw EvalError("security error: " + hint);
    throw EvalError(hint.empty() ? "value is undefined" : hint);
}

namespace {

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
    throw EvalError("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

// Python's ints do not overflow; ours are 64-bit, and a result that does not fit is an error.
template <class Op>
std::int64_t checked(Op op, std::int64_t x, std::int64_t y) {
    std::int64_t r = 0;
    if (op(x, y, &r)) throw EvalError("integer overflow");
    return r;
}

bool mul(std::int64_t x, std::int64_t y, std::int64_t* r) { return __builtin_mul_overflow(x, y, r); }
bool add(std::int64_t x, std::int64_t y, std::int64_t* r) { return __builtin_add_overflow(x, y, r); }
bool sub(std::int64_t x, std::int64_t y, std::int64_t* r) { return __builtin_sub_overflow(x, y, r); }

double float_mod(double a, double b) {
    double m = std::fmod(a, b);
    if (m != 0.0 && ((b < 0) != (m < 0))) m += b;
    return m;
}

double float_floordiv(double a, double b) {
    const double mod = std::fmod(a, b);
    double div = (a - mod) / b;
    if (mod != 0.0 && ((b < 0) != (mod < 0))) div -= 1.0;
    return div;
}

Value int_pow(std::int64_t base, std::int64_t exp) {
    if (exp < 0) return Value(std::pow(static_cast<double>(base), static_cast<double>(exp)));
    std::int64_t result = 1;
    while (exp > 0) {
        if (exp & 1) result = checked(mul, result, base);
        exp >>= 1;
        if (exp > 0) base = checked(mul, base, base);
    }
    return Value(result);
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
    if (!a.is_number() || !b.is_number()) unsupported(op, a, b);
    const bool ints = !a.is_float() && !b.is_float();
    if (ints) {
        const std::int64_t x = a.as_int(), y = b.as_int();
        if (op == "+") return Value(checked(add, x, y));
        if (op == "-") return Value(checked(sub, x, y));
        if (op == "*") return Value(checked(mul, x, y));
        if (op == "**") return int_pow(x, y);
        if (y == 0) throw EvalError(op == "/" ? "division by zero" : "integer division or modulo by zero");
        if (op == "/") return Value(static_cast<double>(x) / static_cast<double>(y));
        if (x == INT64_MIN && y == -1) throw EvalError("integer overflow");
        std::int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
            --q;
            m += y;
        }
        return Value(op == "//" ? q : m);
    }
    const double x = a.as_float(), y = b.as_float();
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "**") {
        if (x == 0.0 && y < 0) throw EvalError("0.0 cannot be raised to a negative power");
        return Value(std::pow(x, y));
    }
    if (y == 0.0) throw EvalError("float division by zero");
    if (op == "/") return Value(x / y);
    if (op == "//") return Value(float_floordiv(x, y));
    return Value(float_mod(x, y));
}

Value repeat(const Value& seq, std::int64_t n, Renderer& r) {
    if (n < 0) n = 0;
    if (seq.is_string()) {
        const std::size_t size = seq.str().size();
        // Empty either way, and at once: '' * 10**18 must not loop 10**18 times.
        if (size == 0 || n == 0) return Value(std::string());
        if (size != 0 && static_cast<std::uint64_t>(n) > r.limits().max_string_bytes / size) {
            throw EvalError("string too long (limit " + std::to_string(r.limits().max_string_bytes) + " bytes)");
        }
        std::string out;
        out.reserve(size * static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) out += seq.str();
        r.charge(out.size() / 64);
        return Value(std::move(out));
    }
    const std::size_t size = seq.items().size();
    if (size == 0 || n == 0) return seq.is_tuple() ? Value::tuple({}) : Value(std::vector<Value>{});
    if (size != 0 && static_cast<std::uint64_t>(n) > r.limits().max_list_items / size) {
        throw EvalError("list too long (limit " + std::to_string(r.limits().max_list_items) + " items)");
    }
    std::vector<Value> out;
    for (std::int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.items().begin(), seq.items().end());
    r.charge(out.size());
    return seq.is_tuple() ? Value::tuple(std::move(out)) : Value(std::move(out));
}

// Markup + str escapes the plain side, as markupsafe does.
Value add_strings(const Value& a, const Value& b, Renderer& r) {
    std::string out;
    if (a.is_markup() == b.is_markup()) {
        out = a.str() + b.str();
    } else {
        out = (a.is_markup() ? a.str() : text::html_escape(a.str())) + (b.is_markup() ? b.str() : text::html_escape(b.str()));
    }
    r.check_string(out.size());
    r.charge(out.size() / 64);
    return a.is_markup() || b.is_markup() ? Value::markup(std::move(out)) : Value(std::move(out));
}

}  // namespace

Value binary_op(const std::string& op, const Value& a, const Value& b, Renderer& r) {
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    if (op == "+") {
        if (a.is_string() && b.is_string()) return add_strings(a, b, r);
        if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
            r.check_items(a.items().size() + b.items().size());
            std::vector<Value> out = a.items();
            out.insert(out.end(), b.items().begin(), b.items().end());
            r.charge(out.size());
            return a.is_tuple() ? Value::tuple(std::move(out)) : Value(std::move(out));
        }
        if (a.is_string() && !b.is_string()) {
            throw EvalError(std::string("can only concatenate str (not \"") + b.type_name() + "\") to str");
        }
        if (a.is_list() && !b.is_list()) {
            throw EvalError(std::string("can only concatenate list (not \"") + b.type_name() + "\") to list");
        }
    }
    if (op == "*") {
        if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(a, b.as_int(), r);
        if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(b, a.as_int(), r);
    }
    if (op == "%" && a.is_string()) return Value(percent_format(a.str(), b, r));
    return arithmetic(op, a, b);
}

bool less_than(const Value& a, const Value& b) {
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.as_float() < b.as_float();
        return a.as_int() < b.as_int();
    }
    if (a.is_string() && b.is_string()) return a.str() < b.str();
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        const auto& x = a.items();
        const auto& y = b.items();
        for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (x[i] != y[i]) return less_than(x[i], y[i]);
        }
        return x.size() < y.size();
    }
    throw EvalError(std::string("'<' not supported between instances of '") + a.type_name() + "' and '" +
                    b.type_name() + "'");
}

bool contains(const Value& container, const Value& item) {
    switch (container.type()) {
        case Value::Type::STRING:
            if (!item.is_string()) {
                throw EvalError(std::string("'in <string>' requires string as left operand, not ") + item.type_name());
            }
            return container.str().find(item.str()) != std::string::npos;
        case Value::Type::LIST:
            for (const Value& v : container.items()) {
                if (v == item) return true;
            }
            return false;
        case Value::Type::DICT:
            if (item.is_list() && !item.is_tuple()) throw EvalError("unhashable type: 'list'");
            if (item.is_dict()) throw EvalError("unhashable type: 'dict'");
            return container.dict().find(item) != nullptr;
        case Value::Type::UNDEFINED: return false;
        case Value::Type::ITERATOR:
            for (const Value& v : container.take_all()) {
                if (v == item) return true;
            }
            return false;
        default:
            throw EvalError(std::string("argument of type '") + container.type_name() + "' is not iterable");
    }
}

bool compare_op(const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return a == b;
    if (op == "!=") return a != b;
    if (op == "in") return contains(b, a);
    if (op == "notin") return !contains(b, a);
    if (op == "<") return less_than(a, b);
    if (op == ">") return less_than(b, a);
    if (op == "<=") return less_than(a, b) || (a == b && !a.is_undefined());
    return less_than(b, a) || a == b;
}

namespace {

struct Spec {
    std::string flags;
    int width = -1;
    int precision = -1;
    char conv = 's';
};

std::string pad(std::string s, const Spec& spec) {
    const std::size_t len = text::length(s);
    if (spec.width < 0 || len >= static_cast<std::size_t>(spec.width)) return s;
    const std::size_t fill = static_cast<std::size_t>(spec.width) - len;
    if (spec.flags.find('-') != std::string::npos) return s + std::string(fill, ' ');
    return std::string(fill, ' ') + s;
}

std::string format_one(const Spec& spec, const Value& v) {
    char buf[512];
    std::string fmt = "%" + spec.flags;
    if (spec.width >= 0) fmt += std::to_string(std::min(spec.width, 400));
    if (spec.precision >= 0) fmt += "." + std::to_string(std::min(spec.precision, 400));
    switch (spec.conv) {
        case 's':
        case 'r':
        case 'a': {
            std::string s = spec.conv == 's' ? to_str(v) : to_repr(v);
            if (spec.precision >= 0) {
                const auto cps = text::decode(s);
                s = text::encode(cps, 0, static_cast<std::size_t>(spec.precision));
            }
            return pad(std::move(s), spec);
        }
        case 'd':
        case 'i':
        case 'u':
        case 'x':
        case 'X':
        case 'o':
        case 'c': {
            if (!v.is_number()) throw EvalError(std::string("%") + spec.conv + " format: a real number is required, not " + v.type_name());
            const long long i = v.is_float() ? static_cast<long long>(std::trunc(v.as_float())) : v.as_int();
            if (spec.conv == 'c') return pad(text::encode({static_cast<char32_t>(i)}), spec);
            const char conv = spec.conv == 'i' || spec.conv == 'u' ? 'd' : spec.conv;
            std::snprintf(buf, sizeof buf, (fmt + "ll" + conv).c_str(), i);
            return buf;
        }
        case 'f':
        case 'F':
        case 'e':
        case 'E':
        case 'g':
        case 'G':
            if (!v.is_number()) throw EvalError(std::string("must be real number, not ") + v.type_name());
            std::snprintf(buf, sizeof buf, (fmt + spec.conv).c_str(), v.as_float());
            return buf;
        default: throw EvalError(std::string("unsupported format character '") + spec.conv + "'");
    }
}

}  // namespace

std::string percent_format(const std::string& fmt, const Value& args, Renderer& r) {
    std::vector<Value> positional;
    if (args.is_tuple()) {
        positional = args.items();
    } else {
        positional.push_back(args);
    }
    std::size_t next = 0;
    std::string out;
    for (std::size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out += fmt[i];
            continue;
        }
        if (++i >= fmt.size()) throw EvalError("incomplete format");
        const Value* arg = nullptr;
        if (fmt[i] == '(') {
            const std::size_t close = fmt.find(')', i);
            if (close == std::string::npos) throw EvalError("incomplete format key");
            if (!args.is_dict()) throw EvalError("format requires a mapping");
            arg = args.dict().find(std::string_view(fmt).substr(i + 1, close - i - 1));
            if (!arg) throw EvalError("format key not found");
            i = close + 1;
        }
        Spec spec;
        while (i < fmt.size() && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos) spec.flags += fmt[i++];
        auto number = [&] {
            int n = 0;
            while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') n = std::min(n * 10 + (fmt[i++] - '0'), 100000);
            return n;
        };
        if (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') spec.width = number();
        if (i < fmt.size() && fmt[i] == '.') {
            ++i;
            spec.precision = number();
        }
        if (i >= fmt.size()) throw EvalError("incomplete format");
        spec.conv = fmt[i];
        if (spec.conv == '%') {
            out += '%';
            continue;
        }
        if (!arg) {
            if (args.is_dict() && !args.is_tuple()) {
                arg = &args;
            } else {
                if (next >= positional.size()) throw EvalError("not enough arguments for format string");
                arg = &positional[next++];
            }
        }
        out += format_one(spec, *arg);
        r.check_string(out.size());
    }
    if (!args.is_dict() && next < positional.size()) throw EvalError("not all arguments converted during string formatting");
    return out;
}

}  // namespace wb::jinja
