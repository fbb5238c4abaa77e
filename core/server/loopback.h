#pragma once
// Which hosts, Host headers and Origin headers name this machine: a server without an API key
// binds only a loopback address and answers only requests addressed to it (http_server.cpp says why).
#include <string>

namespace wb::server {

// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(const std::string& host);
// The host of an HTTP authority ("[::1]:8080" -> "::1", "localhost:80" -> "localhost").
std::string authority_host(const std::string& authority);
// A Host header naming this machine: a loopback host, with or without a port.
bool is_loopback_authority(const std::string& authority);
// An Origin header of a page served from this machine: http(s)://LOOPBACK[:PORT].
bool is_loopback_origin(const std::string& origin);

}  // namespace wb::server
