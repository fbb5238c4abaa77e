#pragma once
// The CLI's --json output through nlohmann-json (the library the server and the remote client use).
// ordered_json keeps keys in the order they are written, so the output reads as before: "text" first,
// "timings" last. Numbers and strings go through the two helpers below, which keep what the
// hand-written writer this replaced guaranteed.
#include <string>

#include <nlohmann/json.hpp>

namespace wb::cli {

using Json = nlohmann::ordered_json;

// d rounded to 9 significant digits (the precision of a float, which most of these values are), or
// null where d is NaN or infinite (JSON has neither). Without the rounding a float widened to double
// would print 0.1f as 0.10000000149011612 (17 digits) instead of 0.100000001.
Json json_number(double d);

// One line of JSON: invalid UTF-8 in a string becomes U+FFFD instead of an exception (token pieces
// can be partial UTF-8 sequences).
std::string json_dump(const Json& j);

// s as a JSON string literal, quotes included (the text listings show token pieces this way).
std::string json_quote(const std::string& s);

}  // namespace wb::cli
