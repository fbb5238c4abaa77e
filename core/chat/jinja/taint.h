#pragma once
// Which bytes of a rendered text came from the caller's input: the marks strings carry from the
// context (mark_input) through what templates do with them, so that a tokenizer can treat text a
// user typed as plain text and only the template's own text as special tokens.
//
// The rules. Exact: `~` and `+` of strings, printing, captured blocks and macro output keep each
// byte's mark; indexing, slicing (step 1) and iterating a string keep the marks of the bytes taken.
// Conservative: any other filter or method given an input value marks its new strings as input in
// full (trim, split, replace, upper, tojson, join, format, ...). A string that is wholly input, as
// message contents are, stays exactly input through all of them; a mixed one may lose template
// marks, never gain them, so user text never turns into special tokens.
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja/template.h"
#include "chat/jinja/value.h"

namespace wb::jinja {

// Text with input marks, built by appending: the renderer's output and any string built in pieces.
class TaintedText {
public:
    void append_plain(std::string_view s) { text_.append(s); }
    void append_input(std::string_view s);
    // A string keeps its own marks; anything else is printed as str() and is input if it holds any.
    void append(const Value& v);
    std::size_t size() const { return text_.size(); }
    const std::string& text() const { return text_; }
    Value to_value() const;  // a string Value with these marks
    std::vector<Segment> segments() const;

private:
    void add_span(std::size_t begin, std::size_t end);
    std::string text_;
    InputSpans spans_;
};

// Bytes [begin, end) of a string, with their marks.
Value substring(const Value& s, std::size_t begin, std::size_t end);
// A builtin's result when one of its inputs held input: strings without marks, at the top or in a
// top-level list or iterator (split, list, map), become input in full.
Value taint_result(const Value& result);
bool any_input(const CallArgs& args);

}  // namespace wb::jinja
