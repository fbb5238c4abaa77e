#pragma once
// JSON in and out. Out: Python's json.dumps, the way Hugging Face's `tojson` calls it (ensure_ascii
// off, insertion order, ", " and ": " separators). In: JSON documents as Python's json.loads reads
// them (an integer stays an int, 1.0 stays a float, objects keep their key order), for the messages
// and tools a caller passes and for test data.
#include <optional>
#include <string>
#include <string_view>

#include "chat/jinja/value.h"

namespace wb::jinja {

struct JsonOptions {
    bool ensure_ascii = false;           // escape every non-ASCII code point as \uXXXX
    std::optional<std::string> indent;   // one level of indentation; unset: everything on one line
    std::optional<std::string> item_separator;  // unset: ", " (or "," with indent)
    std::optional<std::string> key_separator;   // unset: ": "
    bool sort_keys = false;
};

// Throws EvalError for what json.dumps refuses (undefined, namespaces, functions, non-scalar keys).
std::string to_json(const Value& v, const JsonOptions& options = {});

// Throws wb::Error with the byte offset for malformed input or nesting deeper than 512.
Value parse_json(std::string_view json);

}  // namespace wb::jinja
