#pragma once
// Jinja2's built-in filters, tests and globals, and the Python methods of str, dict and list that the
// sandbox allows, each with its Python signature.
#include <initializer_list>
#include <string>
#include <vector>

#include "chat/jinja/value.h"

namespace wb::jinja {

class Renderer;

// Every Jinja2 3.1 filter and test name is accepted when a template is parsed (Jinja2 refuses unknown
// ones at compile time); the few this engine does not implement fail when they run.
bool is_filter_name(const std::string& name);
bool is_test_name(const std::string& name);

Value apply_filter(Renderer& r, const std::string& name, const Value& subject, CallArgs& args);
bool apply_test(Renderer& r, const std::string& name, const Value& subject, CallArgs& args);
// obj.name for a str, dict or list method ('a'.upper, d.items, ...): the bound method, an unsafe
// undefined for a method the immutable sandbox refuses (list.append, dict.pop, ...), else undefined.
Value bound_method(const Value& obj, const std::string& name);
// raise_exception, strftime_now, range, dict, namespace; undefined for any other name.
Value builtin_global(const std::string& name);

// A call's arguments bound to a Python signature: positional ones in order, then keywords by name.
class Args {
public:
    Args(const CallArgs& call, const std::string& function, std::initializer_list<const char*> params,
         bool extra_positional = false);
    bool has(std::size_t i) const { return i < values_.size() && given_[i]; }
    const Value& operator[](std::size_t i) const { return values_[i]; }
    Value get(std::size_t i, Value fallback) const { return has(i) ? values_[i] : fallback; }
    const std::vector<Value>& extra() const { return extra_; }  // positional ones past the signature

private:
    std::vector<Value> values_;
    std::vector<bool> given_;
    std::vector<Value> extra_;
};

}  // namespace wb::jinja
