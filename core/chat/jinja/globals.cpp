#include <ctime>

#include "chat/jinja/builtins.h"
#include "chat/jinja/errors.h"
#include "chat/jinja/renderer.h"

namespace wb::jinja {

namespace {

// Jinja2's sandbox refuses range() of more items than this (MAX_RANGE).
constexpr std::int64_t kMaxRange = 100000;

Value range(Renderer& r, CallArgs& call) {
    if (!call.keywords.empty()) throw EvalError("range() takes no keyword arguments");
    std::vector<std::int64_t> n;
    for (const Value& v : call.positional) {
        if (!v.is_int() && !v.is_bool()) {
            throw EvalError(std::string("'") + v.type_name() + "' object cannot be interpreted as an integer");
        }
        n.push_back(v.as_int());
    }
    if (n.empty() || n.size() > 3) throw EvalError("range expected 1 to 3 arguments, got " + std::to_string(n.size()));
    const std::int64_t start = n.size() == 1 ? 0 : n[0];
    const std::int64_t stop = n.size() == 1 ? n[0] : n[1];
    const std::int64_t step = n.size() == 3 ? n[2] : 1;
    if (step == 0) throw EvalError("range() arg 3 must not be zero");
    // The item count without overflow: __int128 holds any difference of two int64 values.
    const __int128 span = step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
    const __int128 stride = step > 0 ? step : -static_cast<__int128>(step);
    const __int128 count128 = span <= 0 ? 0 : (span - 1) / stride + 1;
    const std::int64_t count = count128 > kMaxRange ? kMaxRange + 1 : static_cast<std::int64_t>(count128);
    if (count > kMaxRange) {
        throw EvalError("range too big; the sandbox blocks ranges larger than " + std::to_string(kMaxRange));
    }
    r.check_items(static_cast<std::size_t>(count));
    std::vector<Value> items;
    // Each item lies between start and stop, but i * step alone may not fit in int64 (range(-2**63 + 1,
    // 2**63 - 1, 2**62)): the product and sum in __int128.
    for (std::int64_t i = 0; i < count; ++i) {
        items.emplace_back(static_cast<std::int64_t>(start + static_cast<__int128>(i) * step));
    }
    r.charge(static_cast<std::uint64_t>(count));
    return Value(std::move(items));
}

// dict(...) and namespace(...): an optional mapping or list of pairs, then keyword arguments.
Dict mapping_from(Renderer& r, CallArgs& call, const char* name) {
    if (call.positional.size() > 1) throw EvalError(std::string(name) + " expected at most 1 argument");
    Dict d;
    if (!call.positional.empty()) {
        const Value& src = call.positional[0];
        if (src.is_dict() || src.is_namespace()) {
            for (const auto& [k, v] : src.dict().entries()) d.set(k, v);
        } else {
            for (const Value& pair : r.iterate(src)) {
                const std::vector<Value> kv = r.iterate(pair);
                if (kv.size() != 2) throw EvalError("dictionary update sequence element has the wrong length");
                d.set(kv[0], kv[1]);
            }
        }
    }
    for (auto& [k, v] : call.keywords) d.set(Value(k), v);
    return d;
}

Value strftime_now(Renderer& r, CallArgs& call) {
    Args a(call, "strftime_now", {"format"});
    if (!a.has(0) || !a[0].is_string()) throw EvalError("strftime_now() argument must be str");
    const std::tm tm = r.local_time();
    std::string buf(a[0].str().size() * 16 + 256, '\0');
    const std::size_t n = a[0].str().empty() ? 0 : std::strftime(buf.data(), buf.size(), a[0].str().c_str(), &tm);
    buf.resize(n);
    return Value(std::move(buf));
}

}  // namespace

Value builtin_global(const std::string& name) {
    if (name == "range") return Value::callable("range", range);
    if (name == "dict") {
        return Value::callable("dict", [](Renderer& r, CallArgs& c) { return Value(mapping_from(r, c, "dict")); });
    }
    if (name == "namespace") {
        return Value::callable("namespace",
                               [](Renderer& r, CallArgs& c) { return r.make_namespace(mapping_from(r, c, "namespace")); });
    }
    if (name == "raise_exception") {
        return Value::callable("raise_exception", [](Renderer&, CallArgs& c) -> Value {
            Args a(c, "raise_exception", {"message"});
            throw TemplateRaised(a.has(0) ? to_str(a[0]) : "", SourcePos{0, 0});
        });
    }
    if (name == "strftime_now") return Value::callable("strftime_now", strftime_now);
    return Value();
}

Args::Args(const CallArgs& call, const std::string& function, std::initializer_list<const char*> params,
           bool extra_positional)
    : values_(params.size()), given_(params.size(), false) {
    const std::vector<const char*> names(params);
    for (std::size_t i = 0; i < call.positional.size(); ++i) {
        if (i < names.size()) {
            values_[i] = call.positional[i];
            given_[i] = true;
        } else if (extra_positional) {
            extra_.push_back(call.positional[i]);
        } else {
            throw EvalError(function + "() takes at most " + std::to_string(names.size()) + " positional argument(s)");
        }
    }
    for (const auto& [key, value] : call.keywords) {
        std::size_t p = 0;
        while (p < names.size() && key != names[p]) ++p;
        if (p == names.size()) throw EvalError(function + "() got an unexpected keyword argument '" + key + "'");
        if (given_[p]) throw EvalError(function + "() got multiple values for argument '" + key + "'");
        values_[p] = value;
        given_[p] = true;
    }
}

}  // namespace wb::jinja
