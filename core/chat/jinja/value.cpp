#include "chat/jinja/value.h"

#include <algorithm>

#include "chat/jinja/errors.h"
#include "chat/jinja/text.h"

namespace wb::jinja {

namespace {

// Deeper nesting than this in a printed value is a cycle (a namespace holding itself) or hostile data.
constexpr int kMaxPrintDepth = kMaxValueDepth + 8;

}  // namespace

Value::Value(std::string s) : type_(Type::STRING), ptr_(std::make_shared<const std::string>(std::move(s))) {}

Value::Value(std::vector<Value> items) : type_(Type::LIST) {
    set_depth(items);
    ptr_ = std::make_shared<const std::vector<Value>>(std::move(items));
}

Value::Value(Dict dict) : type_(Type::DICT) {
    set_depth(dict);
    ptr_ = std::make_shared<Dict>(std::move(dict));
}

void Value::set_depth(const std::vector<Value>& items) {
    int d = 0;
    for (const Value& v : items) {
        d = std::max(d, static_cast<int>(v.depth_));
        input_ = input_ || v.input_;
    }
    if (d + 1 > kMaxValueDepth) throw EvalError("value nested deeper than " + std::to_string(kMaxValueDepth));
    depth_ = static_cast<std::uint16_t>(d + 1);
}

void Value::set_depth(const Dict& dict) {
    int d = 0;
    for (const auto& [k, v] : dict.entries()) {
        d = std::max({d, static_cast<int>(k.depth_), static_cast<int>(v.depth_)});
        input_ = input_ || k.input_ || v.input_;
    }
    if (d + 1 > kMaxValueDepth) throw EvalError("value nested deeper than " + std::to_string(kMaxValueDepth));
    depth_ = static_cast<std::uint16_t>(d + 1);
}

Value Value::none() {
    Value v;
    v.type_ = Type::NONE;
    return v;
}

Value Value::tuple(std::vector<Value> items) {
    Value v(std::move(items));
    v.flag_ = true;
    return v;
}

Value Value::markup(std::string s) {
    Value v(std::move(s));
    v.flag_ = true;
    return v;
}

Value Value::undefined(std::string hint, bool unsafe) {
    Value v;
    v.flag_ = unsafe;
    v.ptr_ = std::make_shared<const std::string>(std::move(hint));
    return v;
}

Value Value::make_namespace(Dict dict) {
    Value v(std::move(dict));
    v.type_ = Type::NAMESPACE;
    return v;
}

Value Value::callable(std::string name, std::function<Value(Renderer&, CallArgs&)> fn) {
    Value v;
    v.type_ = Type::CALLABLE;
    v.ptr_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(fn)});
    return v;
}

Value Value::iterator(std::vector<Value> items) {
    Value v;
    v.type_ = Type::ITERATOR;
    v.set_depth(items);
    v.ptr_ = std::make_shared<std::vector<Value>>(std::move(items));
    return v;
}

Value Value::with_input(const Value& str, InputSpans spans) {
    Value v = str;
    v.input_ = !spans.empty();
    v.spans_ = spans.empty() ? nullptr : std::make_shared<const InputSpans>(std::move(spans));
    return v;
}

const InputSpans& Value::input_spans() const {
    static const InputSpans none;
    return spans_ ? *spans_ : none;
}

std::vector<Value> Value::take_all() const {
    std::vector<Value> out;
    out.swap(*std::get<std::shared_ptr<std::vector<Value>>>(ptr_));
    return out;
}

bool Value::take_next(Value& item) const {
    auto& items = *std::get<std::shared_ptr<std::vector<Value>>>(ptr_);
    if (items.empty()) return false;
    item = std::move(items.front());
    items.erase(items.begin());
    return true;
}

double Value::as_float() const {
    if (type_ == Type::FLOAT) return d_;
    return static_cast<double>(as_int());
}

const std::string& Value::str() const {
    static const std::string empty;
    if (auto* p = std::get_if<std::shared_ptr<const std::string>>(&ptr_)) return **p;
    return empty;
}

const std::vector<Value>& Value::items() const {
    static const std::vector<Value> empty;
    if (auto* p = std::get_if<std::shared_ptr<const std::vector<Value>>>(&ptr_)) return **p;
    return empty;
}

const Dict& Value::dict() const {
    static const Dict empty;
    if (auto* p = std::get_if<std::shared_ptr<Dict>>(&ptr_)) return **p;
    return empty;
}

Dict& Value::namespace_dict() const { return *std::get<std::shared_ptr<Dict>>(ptr_); }

const Callable& Value::callable() const { return *std::get<std::shared_ptr<const Callable>>(ptr_); }

bool Value::truthy() const {
    switch (type_) {
        case Type::UNDEFINED:
        case Type::NONE: return false;
        case Type::BOOL: return b_;
        case Type::INT: return i_ != 0;
        case Type::FLOAT: return d_ != 0.0;
        case Type::STRING: return !str().empty();
        case Type::LIST: return !items().empty();
        case Type::DICT: return dict().size() != 0;
        case Type::NAMESPACE:
        case Type::CALLABLE:
        case Type::ITERATOR: return true;
    }
    return false;
}

bool Value::operator==(const Value& o) const {
    if (is_number() && o.is_number()) {
        if (is_float() || o.is_float()) return as_float() == o.as_float();
        return as_int() == o.as_int();
    }
    if (type_ != o.type_) return false;
    switch (type_) {
        case Type::UNDEFINED:
        case Type::NONE: return true;
        case Type::STRING: return str() == o.str();
        case Type::LIST: {
            if (flag_ != o.flag_ || items().size() != o.items().size()) return false;
            for (std::size_t i = 0; i < items().size(); ++i) {
                if (items()[i] != o.items()[i]) return false;
            }
            return true;
        }
        case Type::DICT: {
            if (dict().size() != o.dict().size()) return false;
            for (const auto& [k, v] : dict().entries()) {
                const Value* other = o.dict().find(k);
                if (!other || *other != v) return false;
            }
            return true;
        }
        case Type::NAMESPACE:
        case Type::CALLABLE:
        case Type::ITERATOR: return ptr_ == o.ptr_;
        default: return false;
    }
}

const char* Value::type_name() const {
    switch (type_) {
        case Type::UNDEFINED: return "Undefined";
        case Type::NONE: return "NoneType";
        case Type::BOOL: return "bool";
        case Type::INT: return "int";
        case Type::FLOAT: return "float";
        case Type::STRING: return flag_ ? "Markup" : "str";
        case Type::LIST: return flag_ ? "tuple" : "list";
        case Type::DICT: return "dict";
        case Type::NAMESPACE: return "Namespace";
        case Type::CALLABLE: return "function";
        case Type::ITERATOR: return "generator";
    }
    return "object";
}

Dict::Dict(std::initializer_list<std::pair<Value, Value>> entries) {
    for (const auto& [k, v] : entries) set(k, v);
}

const Value* Dict::find(const Value& key) const {
    for (const auto& [k, v] : entries_) {
        if (k == key) return &v;
    }
    return nullptr;
}

const Value* Dict::find(std::string_view key) const {
    for (const auto& [k, v] : entries_) {
        if (k.is_string() && k.str() == key) return &v;
    }
    return nullptr;
}

void Dict::set(Value key, Value value) {
    for (auto& [k, v] : entries_) {
        if (k == key) {
            v = std::move(value);
            return;
        }
    }
    entries_.emplace_back(std::move(key), std::move(value));
}

namespace {

void print(std::string& out, const Value& v, bool repr, int depth);

void print_items(std::string& out, const std::vector<Value>& items, int depth) {
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        print(out, items[i], true, depth + 1);
    }
}

void print_dict(std::string& out, const Dict& d, int depth) {
    out += '{';
    bool first = true;
    for (const auto& [k, v] : d.entries()) {
        if (!first) out += ", ";
        first = false;
        print(out, k, true, depth + 1);
        out += ": ";
        print(out, v, true, depth + 1);
    }
    out += '}';
}

void print(std::string& out, const Value& v, bool repr, int depth) {
    if (depth > kMaxPrintDepth) throw EvalError("maximum recursion depth exceeded while printing a value");
    switch (v.type()) {
        case Value::Type::UNDEFINED: out += repr ? "Undefined" : ""; break;
        case Value::Type::NONE: out += "None"; break;
        case Value::Type::BOOL: out += v.as_bool() ? "True" : "False"; break;
        case Value::Type::INT: out += std::to_string(v.as_int()); break;
        case Value::Type::FLOAT: out += text::repr_float(v.as_float()); break;
        case Value::Type::STRING:
            if (repr && v.is_markup()) {
                out += "Markup(" + text::repr_string(v.str()) + ")";
            } else {
                out += repr ? text::repr_string(v.str()) : v.str();
            }
            break;
        case Value::Type::LIST:
            out += v.is_tuple() ? '(' : '[';
            print_items(out, v.items(), depth);
            if (v.is_tuple() && v.items().size() == 1) out += ',';
            out += v.is_tuple() ? ')' : ']';
            break;
        case Value::Type::DICT: print_dict(out, v.dict(), depth); break;
        case Value::Type::NAMESPACE:
            out += "<Namespace ";
            print_dict(out, v.dict(), depth);
            out += '>';
            break;
        case Value::Type::CALLABLE: out += "<function " + v.callable().name + ">"; break;
        case Value::Type::ITERATOR: out += "<generator object>"; break;
    }
}

}  // namespace

std::string to_str(const Value& v) {
    if (v.is_string()) return v.str();
    std::string out;
    print(out, v, false, 0);
    return out;
}

std::string to_repr(const Value& v) {
    std::string out;
    print(out, v, true, 0);
    return out;
}

std::string at_position(SourcePos pos, const std::string& message) {
    return "line " + std::to_string(pos.line) + ", column " + std::to_string(pos.column) + ": " + message;
}

}  // namespace wb::jinja
