#pragma once
// The parsed template: expressions and statements as Jinja2's parser builds them.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja/errors.h"
#include "chat/jinja/value.h"

namespace wb::jinja {

enum class ExprKind {
    CONST,     // value
    NAME,      // name
    LIST,      // args: items
    TUPLE,     // args: items
    DICT,      // args: key0, value0, key1, value1, ...
    GETATTR,   // args[0].name
    GETITEM,   // args[0][args[1]]
    SLICE,     // args: start, stop, step (each may be null); only as GETITEM's key
    CALL,      // args[0](args[1..], kwargs, *dyn_args, **dyn_kwargs)
    FILTER,    // args[0] | name(args[1..], kwargs); args[0] null in a filter block's chain
    TEST,      // args[0] is name(args[1..], kwargs)
    NOT,       // not args[0]
    NEG,       // -args[0]
    POS,       // +args[0]
    BINARY,    // args[0] name args[1], name one of + - * / // % **
    COMPARE,   // args[0] ops[0] args[1] ops[1] args[2] ... (== != < <= > >= in notin)
    AND,       // args[0] and args[1]
    OR,        // args[0] or args[1]
    CONCAT,    // args[0] ~ args[1] ~ ...
    COND,      // args[0] if args[1] else args[2] (args[2] may be null)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    ExprKind kind = ExprKind::CONST;
    SourcePos pos;
    Value value;
    std::string name;
    std::vector<ExprPtr> args;
    std::vector<std::pair<std::string, ExprPtr>> kwargs;
    std::vector<std::string> ops;
    ExprPtr dyn_args, dyn_kwargs;
    int depth = 1;  // of the subtree; the parser bounds it (evaluating and freeing it recurse)
};

enum class StmtKind {
    TEXT,          // text
    OUTPUT,        // {{ expr }}
    IF,            // if expr: body else else_body (elif is an IF in else_body)
    FOR,           // for target in expr [if filter]: body else else_body
    SET,           // set target = expr (target NAME, TUPLE of NAMEs, or GETATTR of a NAME)
    SET_BLOCK,     // set name [| filter chain in expr]: body
    MACRO,         // macro name(params = defaults): body
    CALL_BLOCK,    // call(params) expr: body (caller)
    FILTER_BLOCK,  // filter expr (chain with null subject): body
    BREAK,
    CONTINUE,
    SCOPE,         // the body as it is ({% generation %}, which only marks assistant text for training)
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;

struct Stmt {
    StmtKind kind = StmtKind::TEXT;
    SourcePos pos;
    std::string text;
    ExprPtr expr, target, filter;
    std::vector<StmtPtr> body, else_body;
    std::string name;
    std::vector<std::string> params;
    std::vector<ExprPtr> defaults;  // one per param, null when there is none
    bool uses_varargs = false, uses_kwargs = false, uses_caller = false;
};

}  // namespace wb::jinja
