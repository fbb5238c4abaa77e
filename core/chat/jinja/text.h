#pragma once
// Python's str operations on UTF-8 text. Python strings are sequences of code points, so lengths,
// indices and slices count code points; bytes that are not valid UTF-8 are kept as they are (each
// one its own code point, as Python's surrogateescape would).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace wb::jinja::text {

std::vector<char32_t> decode(std::string_view s);
std::string encode(const std::vector<char32_t>& cps, std::size_t begin = 0, std::size_t end = SIZE_MAX);
void append_utf8(std::string& out, char32_t cp);
std::size_t length(std::string_view s);  // code points

bool is_space(char32_t c);  // str.isspace(); also what re's \s matches
bool is_alnum(char32_t c);  // approximates str.isalnum() / re's \w (less '_') beyond ASCII
char32_t to_upper(char32_t c);
char32_t to_lower(char32_t c);
bool is_cased_upper(char32_t c);
bool is_cased_lower(char32_t c);

std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);
std::string capitalize(std::string_view s);
// str.strip / lstrip / rstrip: whitespace when chars is null, else any code point of *chars.
std::string strip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split(None, maxsplit): runs of whitespace, no empty parts. maxsplit < 0: no limit.
std::vector<std::string> split_whitespace(std::string_view s, std::int64_t maxsplit);
std::vector<std::string> split(std::string_view s, std::string_view sep, std::int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, std::string_view sep, std::int64_t maxsplit);
std::vector<std::string> splitlines(std::string_view s);
std::string replace(std::string_view s, std::string_view old, std::string_view with, std::int64_t count,
                    std::size_t max_bytes);
std::int64_t count(std::string_view s, std::string_view sub);
bool is_printable(char32_t c);

// repr() of a str: quotes and escapes as Python chooses them.
std::string repr_string(std::string_view s);
// repr() of a float: the shortest digits that read back, in Python's layout (1.0, 1e+16, 1.5e-05).
std::string repr_float(double d);
// markupsafe.escape: & < > " ' as entities.
std::string html_escape(std::string_view s);

}  // namespace wb::jinja::text
