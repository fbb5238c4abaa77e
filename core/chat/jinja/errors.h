#pragma once
// The engine's errors. Values, filters and methods do not know where in the template they run, so they
// throw EvalError; the renderer turns it into wb::Error with the line and column of the expression.
#include <stdexcept>
#include <string>

#include "util/error.h"

namespace wb::jinja {

class EvalError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A position in the template source, 1-based.
struct SourcePos {
    int line = 1;
    int column = 1;
};

// raise_exception(message) in a template: what() is the template's own message, unchanged, so the
// application can show it as the template's author wrote it; pos says where it was raised.
class TemplateRaised : public wb::Error {
public:
    TemplateRaised(const std::string& message, SourcePos at) : wb::Error(message), pos(at) {}
    SourcePos pos;
};

// "line L, column C: message", the form of every parse and render error.
std::string at_position(SourcePos pos, const std::string& message);

}  // namespace wb::jinja
