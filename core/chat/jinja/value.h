#pragma once
// The values a chat template computes with: Python's types as Jinja2 sees them (undefined, None, bool,
// int, float, str, list/tuple, dict with insertion order, namespace, callable). Lists and dicts are
// shared and never changed after they are built (the sandbox is immutable); only a namespace() object
// changes, through `{% set ns.attr = ... %}`.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace wb::jinja {

class Value;
class Dict;
class Renderer;

// Arguments of a call as written: f(a, b, key=c).
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keywords;
};

// A function a template can call: a global (range, namespace, ...), a bound method ('a'.upper), a macro.
struct Callable {
    std::string name;
    std::function<Value(Renderer&, CallArgs&)> call;
};

// Bytes [begin, end) of a string that came from the caller's input (a message's content, a tool
// definition) rather than from the template. Sorted, disjoint, never empty.
struct InputSpan {
    std::size_t begin;
    std::size_t end;
};
using InputSpans = std::vector<InputSpan>;

// The deepest nesting of lists and dicts a template may build (Python's recursion limit is of this order).
inline constexpr int kMaxValueDepth = 1000;

class Value {
public:
    enum class Type : std::uint8_t { UNDEFINED, NONE, BOOL, INT, FLOAT, STRING, LIST, DICT, NAMESPACE, CALLABLE, ITERATOR };

    Value() = default;  // undefined, as a name no one passed
    Value(bool b) : type_(Type::BOOL), b_(b) {}
    Value(int i) : type_(Type::INT), i_(i) {}
    Value(std::int64_t i) : type_(Type::INT), i_(i) {}
    Value(double d) : type_(Type::FLOAT), d_(d) {}
    Value(std::string s);
    Value(const char* s) : Value(std::string(s)) {}
    Value(std::vector<Value> items);  // a list
    Value(Dict dict);

    static Value none();
    static Value tuple(std::vector<Value> items);
    // Jinja2's Markup (the `safe` filter's result): `+` with a plain string HTML-escapes the other side.
    static Value markup(std::string s);
    // An undefined value that remembers why it is undefined; `unsafe` marks the sandbox's refusal
    // (using it raises a security error instead of an undefined error).
    static Value undefined(std::string hint, bool unsafe = false);
    static Value make_namespace(Dict dict);
    static Value callable(std::string name, std::function<Value(Renderer&, CallArgs&)> fn);
    // What Jinja2's map, select, items, unique, ... return: a Python generator, which can be iterated
    // once, has no length, cannot be indexed or serialized and is always true.
    static Value iterator(std::vector<Value> items);
    // The same string (markup stays markup) with these bytes marked as the caller's input.
    static Value with_input(const Value& str, InputSpans spans);

    Type type() const { return type_; }
    bool is_undefined() const { return type_ == Type::UNDEFINED; }
    bool is_none() const { return type_ == Type::NONE; }
    bool is_bool() const { return type_ == Type::BOOL; }
    bool is_int() const { return type_ == Type::INT; }
    bool is_float() const { return type_ == Type::FLOAT; }
    bool is_number() const { return type_ == Type::INT || type_ == Type::FLOAT || type_ == Type::BOOL; }
    bool is_string() const { return type_ == Type::STRING; }
    bool is_list() const { return type_ == Type::LIST; }
    bool is_tuple() const { return type_ == Type::LIST && flag_; }
    bool is_dict() const { return type_ == Type::DICT; }
    bool is_namespace() const { return type_ == Type::NAMESPACE; }
    bool is_callable() const { return type_ == Type::CALLABLE; }
    bool is_iterator() const { return type_ == Type::ITERATOR; }
    bool is_markup() const { return type_ == Type::STRING && flag_; }
    bool is_unsafe_undefined() const { return type_ == Type::UNDEFINED && flag_; }
    // Input marks ("taint"): a string holding input bytes, or a list, tuple, dict or iterator that held
    // one when it was built (a namespace is not tracked: its contents change).
    bool has_input() const { return input_; }
    const InputSpans& input_spans() const;  // STRING; empty when none of it is input

    bool as_bool() const { return b_; }
    std::int64_t as_int() const { return type_ == Type::BOOL ? (b_ ? 1 : 0) : i_; }
    double as_float() const;  // any number
    const std::string& str() const;  // STRING; the hint of an UNDEFINED (may be empty)
    const std::vector<Value>& items() const;  // LIST
    const Dict& dict() const;  // DICT or NAMESPACE
    Dict& namespace_dict() const;  // NAMESPACE: the one mutable object
    const Callable& callable() const;
    // ITERATOR: the items not yet taken; taking them consumes them, as iterating a generator does.
    std::vector<Value> take_all() const;
    bool take_next(Value& item) const;  // next(): false when none is left

    // Python's bool(x): undefined, None, 0, 0.0, "" and empty containers are false.
    bool truthy() const;
    // Python's == (1 == 1.0 == True; a tuple never equals a list; undefined equals only undefined).
    bool operator==(const Value& other) const;
    bool operator!=(const Value& other) const { return !(*this == other); }
    // Python's type name, for messages ('str', 'int', 'dict', ...).
    const char* type_name() const;

private:
    void set_depth(const std::vector<Value>& items);
    void set_depth(const Dict& dict);

    Type type_ = Type::UNDEFINED;
    bool flag_ = false;  // STRING: markup; LIST: tuple; UNDEFINED: refused by the sandbox
    // Containers nested in this one, at most kMaxValueDepth: printing, comparing and freeing a value
    // recurse through it.
    std::uint16_t depth_ = 0;
    bool input_ = false;
    union {
        bool b_;
        std::int64_t i_ = 0;
        double d_;
    };
    std::variant<std::monostate, std::shared_ptr<const std::string>, std::shared_ptr<const std::vector<Value>>,
                 std::shared_ptr<Dict>, std::shared_ptr<const Callable>, std::shared_ptr<std::vector<Value>>>
        ptr_;
    std::shared_ptr<const InputSpans> spans_;  // STRING with input bytes
};

// Insertion-ordered mapping with Python's key equality (1, 1.0 and True are one key).
class Dict {
public:
    Dict() = default;
    Dict(std::initializer_list<std::pair<Value, Value>> entries);
    const Value* find(const Value& key) const;
    const Value* find(std::string_view key) const;
    const Value* find(const char* key) const { return find(std::string_view(key)); }
    const Value* find(const std::string& key) const { return find(std::string_view(key)); }
    void set(Value key, Value value);  // replaces an equal key in place, else appends
    void append_new(Value key, Value value) { entries_.emplace_back(std::move(key), std::move(value)); }  // key not present
    const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
    std::size_t size() const { return entries_.size(); }
    void clear() { entries_.clear(); }

private:
    std::vector<std::pair<Value, Value>> entries_;
};

}  // namespace wb::jinja

namespace wb::jinja {

// Python's str(x) as Jinja2 prints a value: None -> "None", True -> "True", 1.0 -> "1.0",
// [1, 'a'] -> "[1, 'a']", undefined -> "".
std::string to_str(const Value& v);
// Python's repr(x).
std::string to_repr(const Value& v);

}  // namespace wb::jinja
