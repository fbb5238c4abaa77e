#include "chat/jinja/taint.h"

#include <algorithm>

namespace wb::jinja {

void TaintedText::add_span(std::size_t begin, std::size_t end) {
    if (begin >= end) return;
    if (!spans_.empty() && spans_.back().end == begin) {
        spans_.back().end = end;  // adjacent input stays one span
    } else {
        spans_.push_back({begin, end});
    }
}

void TaintedText::append_input(std::string_view s) {
    const std::size_t at = text_.size();
    text_.append(s);
    add_span(at, text_.size());
}

void TaintedText::append(const Value& v) {
    if (!v.is_string()) {
        if (v.has_input()) {
            append_input(to_str(v));
        } else {
            text_.append(to_str(v));
        }
        return;
    }
    const std::size_t at = text_.size();
    text_.append(v.str());
    for (const InputSpan& s : v.input_spans()) add_span(at + s.begin, at + s.end);
}

Value TaintedText::to_value() const { return Value::with_input(Value(text_), spans_); }

std::vector<Segment> TaintedText::segments() const {
    std::vector<Segment> out;
    std::size_t at = 0;
    for (const InputSpan& s : spans_) {
        if (s.begin > at) out.push_back({text_.substr(at, s.begin - at), false});
        out.push_back({text_.substr(s.begin, s.end - s.begin), true});
        at = s.end;
    }
    if (at < text_.size()) out.push_back({text_.substr(at), false});
    return out;
}

Value substring(const Value& s, std::size_t begin, std::size_t end) {
    Value piece(s.str().substr(begin, end - begin));
    if (!s.has_input()) return piece;
    InputSpans spans;
    for (const InputSpan& span : s.input_spans()) {
        const std::size_t b = std::max(span.begin, begin), e = std::min(span.end, end);
        if (b < e) spans.push_back({b - begin, e - begin});
    }
    return Value::with_input(piece, std::move(spans));
}

Value mark_input(const Value& v) {
    switch (v.type()) {
        case Value::Type::STRING:
            return v.str().empty() ? v : Value::with_input(v, {{0, v.str().size()}});
        case Value::Type::LIST: {
            std::vector<Value> items;
            for (const Value& item : v.items()) items.push_back(mark_input(item));
            return v.is_tuple() ? Value::tuple(std::move(items)) : Value(std::move(items));
        }
        case Value::Type::DICT: {
            Dict d;
            for (const auto& [k, val] : v.dict().entries()) d.append_new(mark_input(k), mark_input(val));
            return Value(std::move(d));
        }
        default: return v;
    }
}

namespace {

Value whole_input(const Value& v) {
    if (!v.is_string() || v.has_input() || v.str().empty()) return v;
    return Value::with_input(v, {{0, v.str().size()}});
}

}  // namespace

Value taint_result(const Value& result) {
    if (result.is_string()) return whole_input(result);
    if (!result.is_list() && !result.is_iterator()) return result;
    std::vector<Value> items = result.is_iterator() ? result.take_all() : result.items();
    for (Value& item : items) item = whole_input(item);
    if (result.is_iterator()) return Value::iterator(std::move(items));
    return result.is_tuple() ? Value::tuple(std::move(items)) : Value(std::move(items));
}

bool any_input(const CallArgs& args) {
    for (const Value& v : args.positional)
        if (v.has_input()) return true;
    for (const auto& [k, v] : args.keywords)
        if (v.has_input()) return true;
    return false;
}

}  // namespace wb::jinja
