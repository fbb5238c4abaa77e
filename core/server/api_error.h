#pragma once
// An OpenAI-style API error: the HTTP status and the fields of {"error": {"message", "type", "param",
// "code"}}. Thrown by request parsing and validation, turned into a response by the HTTP layer.
#include <stdexcept>
#include <string>

namespace wb::server {

struct ApiError : std::runtime_error {
    ApiError(int status_, std::string message_, std::string type_ = "invalid_request_error", std::string param_ = {},
             std::string code_ = {})
        : std::runtime_error(message_), status(status_), message(std::move(message_)), type(std::move(type_)),
          param(std::move(param_)), code(std::move(code_)) {}
    int status;
    std::string message;
    std::string type;   // invalid_request_error, authentication_error, not_found_error, rate_limit_error, server_error
    std::string param;  // the request field at fault; empty: null
    std::string code;   // a machine-readable reason; empty: null
};

// {"error": {...}} as compact JSON (param and code null when empty).
std::string error_json(const ApiError& e);

}  // namespace wb::server
