// Jinja2's tests (`x is defined`, `x is string`, ...) with Python's type rules: a bool is a number
// but not an integer; str, list, dict and undefined are iterable and sequences.
#include "chat/jinja/builtins.h"
#include "chat/jinja/errors.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/renderer.h"
#include "chat/jinja/text.h"

namespace wb::jinja {

namespace {

const char* const kTests[] = {"boolean", "callable", "defined", "divisibleby", "eq", "equalto", "escaped", "even",
                              "false", "filter", "float", "ge", "gt", "greaterthan", "in", "integer", "iterable",
                              "le", "lessthan", "lower", "lt", "mapping", "ne", "none", "number", "odd", "sameas",
                              "sequence", "string", "test", "true", "undefined", "upper", "==", "!=", ">", ">=",
                              "<", "<="};

bool text_case(const Value& v, bool want_lower) {
    const std::vector<char32_t> cps = text::decode(to_str(v));
    bool cased = false;
    for (char32_t c : cps) {
        if (want_lower ? text::is_cased_upper(c) : text::is_cased_lower(c)) return false;
        cased |= text::is_cased_upper(c) || text::is_cased_lower(c);
    }
    return cased;
}

}  // namespace

bool is_test_name(const std::string& name) {
    for (const char* t : kTests) {
        if (name == t) return true;
    }
    return false;
}

bool apply_test(Renderer& r, const std::string& name, const Value& v, CallArgs& c) {
    const auto other = [&]() -> Value {
        Args a(c, name, {"other"});
        return a[0];
    };
    static const char* const kNoArgument[] = {"defined", "undefined", "none", "boolean", "true", "false", "integer",
                                               "float", "number", "string", "mapping", "iterable", "sequence",
                                               "callable", "escaped", "lower", "upper", "odd", "even", "filter", "test"};
    for (const char* t : kNoArgument) {
        if (name == t && (!c.positional.empty() || !c.keywords.empty())) {
            throw EvalError("test_" + name + "() takes 1 positional argument but " +
                            std::to_string(1 + c.positional.size() + c.keywords.size()) + " were given");
        }
    }
    if (name == "defined") return !v.is_undefined();
    if (name == "undefined") return v.is_undefined();
    if (name == "none") return v.is_none();
    if (name == "boolean") return v.is_bool();
    if (name == "true") return v.is_bool() && v.as_bool();
    if (name == "false") return v.is_bool() && !v.as_bool();
    if (name == "integer") return v.is_int();
    if (name == "float") return v.is_float();
    if (name == "number") return v.is_number();
    if (name == "string") return v.is_string();
    if (name == "mapping") return v.is_dict();
    if (name == "iterable" || name == "sequence") {
        return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined() || (name == "iterable" && v.is_iterator());
    }
    if (name == "callable") return v.is_callable();
    if (name == "escaped") return v.is_markup();
    if (name == "lower") return text_case(v, true);
    if (name == "upper") return text_case(v, false);
    if (name == "odd" || name == "even") {
        const Value m = binary_op("%", v, Value(2), r);
        return name == "odd" ? m == Value(1) : m == Value(0);
    }
    if (name == "divisibleby") return binary_op("%", v, other(), r) == Value(0);
    if (name == "eq" || name == "equalto" || name == "==") return v == other();
    if (name == "ne" || name == "!=") return v != other();
    if (name == "lt" || name == "lessthan" || name == "<") return compare_op("<", v, other());
    if (name == "le" || name == "<=") return compare_op("<=", v, other());
    if (name == "gt" || name == "greaterthan" || name == ">") return compare_op(">", v, other());
    if (name == "ge" || name == ">=") return compare_op(">=", v, other());
    if (name == "in") return contains(other(), v);
    if (name == "sameas") {
        // Python's `is`: identity; for the immutable scalars templates compare, equality of type and value.
        const Value o = other();
        if (v.type() != o.type()) return false;
        if (v.is_list() || v.is_dict() || v.is_string()) return false;
        return v == o;
    }
    if (name == "filter") return v.is_string() && is_filter_name(v.str());
    if (name == "test") return v.is_string() && is_test_name(v.str());
    throw EvalError("no test named '" + name + "'");
}

}  // namespace wb::jinja
