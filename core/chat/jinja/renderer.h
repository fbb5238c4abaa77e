#pragma once
// The tree-walking evaluator: statements write text, expressions compute Values, with Jinja2's
// scoping (a for loop's body and a macro call are scopes of their own, if/set are not) and the
// sandbox's limits. Builtins (filters, tests, methods) call back into it for attribute lookup,
// calls and the limits.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chat/jinja/ast.h"
#include "chat/jinja/taint.h"
#include "chat/jinja/template.h"

namespace wb::jinja {

struct Scope;

class Renderer {
public:
    explicit Renderer(const RenderOptions& options);
    ~Renderer();
    Renderer(const Renderer&) = delete;
    Renderer& operator=(const Renderer&) = delete;

    TaintedText render(const std::vector<StmtPtr>& body, const Value& context);

    // environment.getattr / getitem: obj.name tries the attribute first, obj[key] the item first.
    Value getattr(const Value& obj, const std::string& name);
    Value getitem(const Value& obj, const Value& key);
    Value call(const Value& fn, CallArgs& args);
    // Python's iter(x) as a list: a str gives its characters, a dict its keys, undefined nothing.
    std::vector<Value> iterate(const Value& v);

    // Limits: each throws EvalError when exceeded.
    void check_string(std::size_t bytes) const;
    void check_items(std::size_t count) const;
    void charge(std::uint64_t steps);
    const RenderLimits& limits() const { return options_.limits; }
    std::tm local_time() const;
    // namespace(...): the one mutable value; the renderer empties it when the render ends.
    Value make_namespace(Dict dict);

private:
    enum class Flow { NORMAL, BREAK, CONTINUE };
    using ScopePtr = std::shared_ptr<Scope>;

    Flow exec_block(const std::vector<StmtPtr>& body, const ScopePtr& scope);
    Flow exec(const Stmt& s, const ScopePtr& scope);
    Flow exec_for(const Stmt& s, const ScopePtr& scope);
    void exec_set(const Stmt& s, const ScopePtr& scope);
    TaintedText capture(const std::vector<StmtPtr>& body, const ScopePtr& scope);
    void write(const std::string& s);   // the template's own text
    void write_value(const Value& v);   // a value printed, with its input marks
    void check_output() const;

    Value eval(const Expr& e, const ScopePtr& scope);
    Value eval_inner(const Expr& e, const ScopePtr& scope);
    Value eval_compare(const Expr& e, const ScopePtr& scope);
    Value eval_call(const Expr& e, const ScopePtr& scope);
    Value eval_filter(const Expr& e, const ScopePtr& scope, const Value* block_input);
    Value eval_slice(const Value& obj, const Expr& slice, const ScopePtr& scope);
    CallArgs eval_args(const Expr& e, const ScopePtr& scope, std::size_t first);
    Value lookup(const std::string& name, const ScopePtr& scope) const;
    void assign(const Expr& target, const Value& value, const ScopePtr& scope);

    Value make_macro(const Stmt& s, const ScopePtr& closure, const std::string& name);
    Value call_macro(const Stmt& s, const ScopePtr& closure, const std::string& name, CallArgs& args);
    Value make_loop(std::size_t index, const std::vector<Value>& items);
    Value global(const std::string& name) const;

    RenderOptions options_;
    Value context_;
    TaintedText* out_ = nullptr;
    std::uint64_t steps_ = 0;
    std::uint64_t iterations_ = 0;
    int call_depth_ = 0;
    int eval_depth_ = 0;
    // Values that can form reference cycles (a macro stored in the scope it closes over, a namespace
    // holding itself); emptied when the render ends so that nothing leaks.
    std::vector<ScopePtr> captured_scopes_;
    std::vector<Value> namespaces_;
};

}  // namespace wb::jinja
