#include "server/loopback.h"

#include <arpa/inet.h>

namespace wb::server {

bool is_loopback_host(const std::string& host) {
    if (host == "localhost" || host == "::1" || host == "[::1]") return true;
    // An address, not a name that starts like one ("127.example.com" may resolve anywhere).
    in_addr a{};
    return inet_pton(AF_INET, host.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

std::string authority_host(const std::string& authority) {
    if (!authority.empty() && authority[0] == '[') {  // an IPv6 literal: "[::1]:8080"
        const size_t close = authority.find(']');
        return close == std::string::npos ? std::string() : authority.substr(1, close - 1);
    }
    const size_t colon = authority.find(':');
    return colon == std::string::npos ? authority : authority.substr(0, colon);
}

bool is_loopback_authority(const std::string& authority) {
    const std::string host = authority_host(authority);
    return !host.empty() && is_loopback_host(host);
}

bool is_loopback_origin(const std::string& origin) {
    for (const char* scheme : {"http://", "https://"}) {
        const std::string prefix = scheme;
        if (origin.compare(0, prefix.size(), prefix) != 0) continue;
        const std::string authority = origin.substr(prefix.size());
        return authority.find('/') == std::string::npos && is_loopback_authority(authority);
    }
    return false;  // "null" (a sandboxed page, a file), another scheme
}

}  // namespace wb::server
