#pragma once
// A guard for JSON from outside (request bodies, a remote server's events). nlohmann-json parses any
// depth, but copying, comparing or destroying a value recurses: a text of a million nested arrays
// would overflow the stack, so such a text is refused before it is parsed.
#include <string_view>

namespace wb {

// True when the brackets outside strings nest deeper than limit (scanning stops there).
bool json_nested_deeper_than(std::string_view text, int limit);

}  // namespace wb
