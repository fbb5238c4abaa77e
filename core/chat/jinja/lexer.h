#pragma once
// Jinja2's lexer with the settings Hugging Face renders chat templates with: trim_blocks (the first
// newline after a block or comment tag is dropped), lstrip_blocks (spaces and tabs before a block or
// comment tag at the start of a line are dropped, not before `{{`), `-` and `+` whitespace control,
// newlines normalized to \n and one trailing newline of the source dropped (keep_trailing_newline off).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja/errors.h"

namespace wb::jinja {

enum class TokenType { TEXT, VAR_BEGIN, VAR_END, BLOCK_BEGIN, BLOCK_END, NAME, STRING, INT, FLOAT, OP, END };

struct Token {
    TokenType type = TokenType::END;
    std::string value;  // TEXT: the text; NAME, OP: as written; STRING: decoded
    std::int64_t int_value = 0;
    double float_value = 0.0;
    SourcePos pos;
};

// Throws wb::Error "line L, column C: ..." on an unterminated tag, comment, string or raw block, and on
// a character no token starts with.
std::vector<Token> tokenize(std::string_view source);

}  // namespace wb::jinja
