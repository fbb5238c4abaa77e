#pragma once
// Jinja2's grammar: tokens to statements and expressions, with its operator precedence (or < and < not
// < comparisons < + - < ~ < * / // % < ** < unary - < filters, tests and calls < postfix . [] ()).
// Unknown filters and tests are errors here, as Jinja2 reports them when it compiles a template.
#include <string_view>
#include <vector>

#include "chat/jinja/ast.h"

namespace wb::jinja {

// Throws wb::Error "line L, column C: ..." on any syntax error.
std::vector<StmtPtr> parse(std::string_view source);

}  // namespace wb::jinja
