#include "cli/cli_json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace wb::cli {

Json json_number(double d) {
    if (!std::isfinite(d)) return nullptr;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", d);
    return std::strtod(buf, nullptr);
}

std::string json_dump(const Json& j) {
    return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string json_quote(const std::string& s) {
    return json_dump(Json(s));
}

}  // namespace wb::cli
