#pragma once
// Python's operators on Values: arithmetic (int stays int, / gives float, // and % floor), string and
// list concatenation and repetition, % formatting, ordering, == and `in`.
#include <string>

#include "chat/jinja/value.h"

namespace wb::jinja {

class Renderer;

// Using an undefined value where Jinja2's Undefined fails (arithmetic, ordering, attributes, calls):
// throws EvalError with its hint ("'x' is undefined"), or the sandbox's refusal for an unsafe one.
[[noreturn]] void fail_undefined(const Value& u);

Value binary_op(const std::string& op, const Value& a, const Value& b, Renderer& r);
// op one of == != < <= > >= in notin.
bool compare_op(const std::string& op, const Value& a, const Value& b);
bool contains(const Value& container, const Value& item);
// Python's a < b, for sorting: throws EvalError when the types are not ordered.
bool less_than(const Value& a, const Value& b);
// Python's fmt % args.
std::string percent_format(const std::string& fmt, const Value& args, Renderer& r);

}  // namespace wb::jinja
