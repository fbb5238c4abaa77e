#include "chat/jinja/renderer.h"

#include <stdexcept>

#include "chat/jinja/builtins.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/text.h"

namespace wb::jinja {

namespace {

// Python's recursion limit stops a runaway template in Jinja2; this bounds the C++ stack the same way
// (statement and expression frames together).
constexpr int kMaxEvalDepth = 1000;

}  // namespace

struct Scope {
    explicit Scope(std::shared_ptr<Scope> p) : parent(std::move(p)) {}
    std::shared_ptr<Scope> parent;
    std::vector<std::pair<std::string, Value>> vars;

    const Value* find(const std::string& name) const {
        for (const auto& [k, v] : vars) {
            if (k == name) return &v;
        }
        return nullptr;
    }
    void set(const std::string& name, Value v) {
        for (auto& [k, old] : vars) {
            if (k == name) {
                old = std::move(v);
                return;
            }
        }
        vars.emplace_back(name, std::move(v));
    }
};

namespace {

struct DepthGuard {
    DepthGuard(int& depth, int limit, const char* what) : d(depth) {
        if (++d > limit) {
            --d;
            throw EvalError(std::string("maximum recursion depth exceeded (") + what + ")");
        }
    }
    ~DepthGuard() { --d; }
    int& d;
};

}  // namespace

Renderer::Renderer(const RenderOptions& options) : options_(options) {}

Renderer::~Renderer() {
    for (const ScopePtr& s : captured_scopes_) s->vars.clear();
    for (const Value& ns : namespaces_) ns.namespace_dict().clear();
}

TaintedText Renderer::render(const std::vector<StmtPtr>& body, const Value& context) {
    context_ = context;
    TaintedText out;
    out_ = &out;
    auto root = std::make_shared<Scope>(nullptr);
    exec_block(body, root);
    out_ = nullptr;
    return out;
}

void Renderer::check_string(std::size_t bytes) const {
    if (bytes > options_.limits.max_string_bytes) {
        throw EvalError("string too long (limit " + std::to_string(options_.limits.max_string_bytes) + " bytes)");
    }
}

void Renderer::check_items(std::size_t count) const {
    if (count > options_.limits.max_list_items) {
        throw EvalError("list too long (limit " + std::to_string(options_.limits.max_list_items) + " items)");
    }
}

void Renderer::charge(std::uint64_t steps) {
    steps_ += steps;
    if (steps_ > options_.limits.max_steps) {
        throw EvalError("template takes too long (more than " + std::to_string(options_.limits.max_steps) +
                        " evaluation steps)");
    }
}

std::tm Renderer::local_time() const {
    if (options_.local_time) return options_.local_time();
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    return tm;
}

Value Renderer::make_namespace(Dict dict) {
    Value ns = Value::make_namespace(std::move(dict));
    namespaces_.push_back(ns);
    return ns;
}

void Renderer::write(const std::string& s) {
    out_->append_plain(s);
    check_output();
}

void Renderer::write_value(const Value& v) {
    out_->append(v);
    check_output();
}

void Renderer::check_output() const {
    if (out_->size() > options_.limits.max_output_bytes) {
        throw EvalError("output too long (limit " + std::to_string(options_.limits.max_output_bytes) + " bytes)");
    }
}

TaintedText Renderer::capture(const std::vector<StmtPtr>& body, const ScopePtr& scope) {
    TaintedText buffer;
    TaintedText* saved = out_;
    out_ = &buffer;
    try {
        exec_block(body, scope);
    } catch (...) {
        out_ = saved;
        throw;
    }
    out_ = saved;
    return buffer;
}

// ---- statements ----

Renderer::Flow Renderer::exec_block(const std::vector<StmtPtr>& body, const ScopePtr& scope) {
    for (const StmtPtr& s : body) {
        const Flow f = exec(*s, scope);
        if (f != Flow::NORMAL) return f;
    }
    return Flow::NORMAL;
}

Renderer::Flow Renderer::exec(const Stmt& s, const ScopePtr& scope) {
    DepthGuard depth(eval_depth_, kMaxEvalDepth, "nesting");
    try {
        charge(1);
        switch (s.kind) {
            case StmtKind::TEXT: write(s.text); break;
            case StmtKind::OUTPUT: write_value(eval(*s.expr, scope)); break;
            case StmtKind::IF: return exec_block(eval(*s.expr, scope).truthy() ? s.body : s.else_body, scope);
            case StmtKind::FOR: return exec_for(s, scope);
            case StmtKind::SET: exec_set(s, scope); break;
            case StmtKind::SET_BLOCK: {
                Value v = capture(s.body, std::make_shared<Scope>(scope)).to_value();
                if (s.expr) v = eval_filter(*s.expr, scope, &v);
                scope->set(s.name, std::move(v));
                break;
            }
            case StmtKind::MACRO:
                captured_scopes_.push_back(scope);
                scope->set(s.name, make_macro(s, scope, s.name));
                break;
            case StmtKind::CALL_BLOCK: {
                captured_scopes_.push_back(scope);
                const Expr& call_expr = *s.expr;
                Value callee = eval(*call_expr.args[0], scope);
                CallArgs args = eval_args(call_expr, scope, 1);
                args.keywords.emplace_back("caller", make_macro(s, scope, "caller"));
                write_value(call(callee, args));
                break;
            }
            case StmtKind::FILTER_BLOCK: {
                const Value body = capture(s.body, std::make_shared<Scope>(scope)).to_value();
                write_value(eval_filter(*s.expr, scope, &body));
                break;
            }
            case StmtKind::BREAK: return Flow::BREAK;
            case StmtKind::CONTINUE: return Flow::CONTINUE;
            case StmtKind::SCOPE: write_value(capture(s.body, std::make_shared<Scope>(scope)).to_value()); break;
        }
    } catch (const EvalError& e) {
        throw wb::Error(at_position(s.pos, e.what()));
    }
    return Flow::NORMAL;
}

Renderer::Flow Renderer::exec_for(const Stmt& s, const ScopePtr& scope) {
    std::vector<Value> items = iterate(eval(*s.expr, scope));
    if (s.filter) {
        std::vector<Value> kept;
        for (Value& item : items) {
            auto probe = std::make_shared<Scope>(scope);
            assign(*s.target, item, probe);
            if (eval(*s.filter, probe).truthy()) kept.push_back(std::move(item));
        }
        items = std::move(kept);
    }
    if (items.empty()) return exec_block(s.else_body, scope);
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (++iterations_ > options_.limits.max_loop_iterations) {
            throw EvalError("too many loop iterations (limit " + std::to_string(options_.limits.max_loop_iterations) + ")");
        }
        auto iteration = std::make_shared<Scope>(scope);
        assign(*s.target, items[i], iteration);
        iteration->set("loop", make_loop(i, items));
        if (exec_block(s.body, iteration) == Flow::BREAK) break;
    }
    return Flow::NORMAL;
}

void Renderer::assign(const Expr& target, const Value& value, const ScopePtr& scope) {
    if (target.kind == ExprKind::NAME) {
        scope->set(target.name, value);
        return;
    }
    const std::vector<Value> parts = iterate(value);
    if (parts.size() < target.args.size()) {
        throw EvalError("not enough values to unpack (expected " + std::to_string(target.args.size()) + ", got " +
                        std::to_string(parts.size()) + ")");
    }
    if (parts.size() > target.args.size()) {
        throw EvalError("too many values to unpack (expected " + std::to_string(target.args.size()) + ")");
    }
    for (std::size_t i = 0; i < parts.size(); ++i) scope->set(target.args[i]->name, parts[i]);
}

void Renderer::exec_set(const Stmt& s, const ScopePtr& scope) {
    Value v = eval(*s.expr, scope);
    if (s.target->kind != ExprKind::GETATTR) {
        assign(*s.target, v, scope);
        return;
    }
    const Value ns = lookup(s.target->args[0]->name, scope);
    if (!ns.is_namespace()) throw EvalError("cannot assign attribute on non-namespace object");
    ns.namespace_dict().set(Value(s.target->name), std::move(v));
}

// ---- macros and loops ----

Value Renderer::make_macro(const Stmt& s, const ScopePtr& closure, const std::string& name) {
    const Stmt* stmt = &s;
    std::weak_ptr<Scope> weak = closure;
    return Value::callable(name, [stmt, weak, name](Renderer& r, CallArgs& args) {
        ScopePtr scope = weak.lock();
        if (!scope) throw EvalError("macro '" + name + "' called after its template finished");
        return r.call_macro(*stmt, scope, name, args);
    });
}

Value Renderer::call_macro(const Stmt& s, const ScopePtr& closure, const std::string& name, CallArgs& args) {
    auto scope = std::make_shared<Scope>(closure);
    std::vector<bool> given(s.params.size(), false);
    std::vector<Value> varargs;
    for (std::size_t i = 0; i < args.positional.size(); ++i) {
        if (i < s.params.size()) {
            scope->set(s.params[i], args.positional[i]);
            given[i] = true;
        } else if (s.uses_varargs) {
            varargs.push_back(args.positional[i]);
        } else {
            throw EvalError("macro '" + name + "' takes not more than " + std::to_string(s.params.size()) +
                            " argument(s)");
        }
    }
    Dict kwargs;
    Value caller;
    for (auto& [key, value] : args.keywords) {
        std::size_t p = 0;
        while (p < s.params.size() && s.params[p] != key) ++p;
        if (p < s.params.size()) {
            if (given[p]) throw EvalError("macro '" + name + "' got multiple values for argument '" + key + "'");
            scope->set(key, value);
            given[p] = true;
        } else if (key == "caller" && s.uses_caller) {
            caller = value;
        } else if (s.uses_kwargs) {
            kwargs.set(Value(key), value);
        } else {
            throw EvalError("macro '" + name + "' takes no keyword argument '" + key + "'");
        }
    }
    for (std::size_t p = 0; p < s.params.size(); ++p) {
        if (given[p]) continue;
        scope->set(s.params[p], s.defaults[p] ? eval(*s.defaults[p], scope)
                                              : Value::undefined("parameter '" + s.params[p] + "' was not provided"));
    }
    if (s.uses_varargs) scope->set("varargs", Value::tuple(std::move(varargs)));
    if (s.uses_kwargs) scope->set("kwargs", Value(std::move(kwargs)));
    if (s.uses_caller) scope->set("caller", caller.is_undefined() ? Value::undefined("'caller' is undefined") : caller);
    return capture(s.body, scope).to_value();
}

Value Renderer::make_loop(std::size_t index, const std::vector<Value>& items) {
    const auto n = static_cast<std::int64_t>(items.size());
    const auto i = static_cast<std::int64_t>(index);
    // Built once per iteration: the keys are distinct, so no lookups (loops are where templates spend
    // their time, and a hostile one may run the iteration limit).
    static const Value kIndex("index"), kIndex0("index0"), kRevindex("revindex"), kRevindex0("revindex0"),
        kFirst("first"), kLast("last"), kLength("length"), kDepth("depth"), kDepth0("depth0"),
        kPrevitem("previtem"), kNextitem("nextitem"), kCycle("cycle");
    Dict d;
    d.append_new(kIndex, Value(i + 1));
    d.append_new(kIndex0, Value(i));
    d.append_new(kRevindex, Value(n - i));
    d.append_new(kRevindex0, Value(n - i - 1));
    d.append_new(kFirst, Value(i == 0));
    d.append_new(kLast, Value(i == n - 1));
    d.append_new(kLength, Value(n));
    d.append_new(kDepth, Value(1));
    d.append_new(kDepth0, Value(0));
    if (i > 0) d.append_new(kPrevitem, items[index - 1]);
    if (i + 1 < n) d.append_new(kNextitem, items[index + 1]);
    d.append_new(kCycle, Value::callable("cycle", [i](Renderer&, CallArgs& a) {
                     if (a.positional.empty()) throw EvalError("no items for cycling given");
                     return a.positional[static_cast<std::size_t>(i) % a.positional.size()];
                 }));
    return Value(std::move(d));
}

// ---- names, attributes, items, calls ----

Value Renderer::lookup(const std::string& name, const ScopePtr& scope) const {
    for (const Scope* s = scope.get(); s; s = s->parent.get()) {
        if (const Value* v = s->find(name)) return *v;
    }
    if (const Value* v = context_.dict().find(std::string_view(name))) return *v;
    Value g = global(name);
    if (!g.is_undefined()) return g;
    return Value::undefined("'" + name + "' is undefined");
}

Value Renderer::global(const std::string& name) const { return builtin_global(name); }

Value Renderer::call(const Value& fn, CallArgs& args) {
    if (fn.is_callable()) {
        DepthGuard depth(call_depth_, options_.limits.max_call_depth, "calls");
        return fn.callable().call(*this, args);
    }
    if (fn.is_undefined()) fail_undefined(fn);
    throw EvalError(std::string("'") + fn.type_name() + "' object is not callable");
}

std::vector<Value> Renderer::iterate(const Value& v) {
    switch (v.type()) {
        case Value::Type::LIST: return v.items();
        case Value::Type::DICT: {
            std::vector<Value> keys;
            for (const auto& [k, val] : v.dict().entries()) keys.push_back(k);
            return keys;
        }
        case Value::Type::STRING: {
            std::vector<Value> chars;
            std::size_t at = 0;
            for (char32_t c : text::decode(v.str())) {
                const std::size_t n = text::encode({c}).size();
                chars.push_back(v.has_input() ? substring(v, at, at + n) : Value(text::encode({c})));
                at += n;
            }
            charge(chars.size());
            return chars;
        }
        case Value::Type::UNDEFINED: return {};
        case Value::Type::ITERATOR: return v.take_all();
        default: throw EvalError(std::string("'") + v.type_name() + "' object is not iterable");
    }
}

namespace {

std::string object_type(const Value& obj) {
    return obj.is_none() ? "None" : std::string(obj.type_name()) + " object";
}

Value missing_attribute(const Value& obj, const std::string& name) {
    return Value::undefined("'" + object_type(obj) + "' has no attribute '" + name + "'");
}

}  // namespace

Value Renderer::getattr(const Value& obj, const std::string& name) {
    if (obj.is_undefined()) fail_undefined(obj);
    // The sandbox refuses Python's own attributes (__class__, __dict__, ...).
    if (name.size() >= 2 && name[0] == '_' && name[1] == '_') {
        return Value::undefined("access to attribute '" + name + "' of '" + obj.type_name() + "' object is unsafe.", true);
    }
    if (obj.is_namespace()) {
        const Value* v = obj.dict().find(std::string_view(name));
        return v ? *v : missing_attribute(obj, name);
    }
    Value method = bound_method(obj, name);
    if (method.is_callable()) {
        // A str/dict/list method computes new strings from its object and arguments: input in, input out.
        const bool obj_input = obj.has_input();
        return Value::callable(name, [method, obj_input](Renderer& r, CallArgs& args) {
            const bool tainted = obj_input || any_input(args);
            Value result = method.callable().call(r, args);
            return tainted ? taint_result(result) : result;
        });
    }
    if (!method.is_undefined() || method.is_unsafe_undefined()) return method;
    if (obj.is_dict()) {
        if (const Value* v = obj.dict().find(std::string_view(name))) return *v;
    }
    return missing_attribute(obj, name);
}

Value Renderer::getitem(const Value& obj, const Value& key) {
    if (obj.is_undefined()) fail_undefined(obj);
    if (obj.is_dict()) {
        if (key.is_list() && !key.is_tuple()) throw EvalError("unhashable type: 'list'");
        if (const Value* v = obj.dict().find(key)) return *v;
    } else if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
        const bool is_str = obj.is_string();
        std::vector<char32_t> cps;
        if (is_str) cps = text::decode(obj.str());
        const auto n = static_cast<std::int64_t>(is_str ? cps.size() : obj.items().size());
        std::int64_t i = key.as_int();
        if (i < 0) i += n;
        if (i >= 0 && i < n) {
            if (!is_str) return obj.items()[static_cast<std::size_t>(i)];
            const auto k = static_cast<std::size_t>(i);
            if (!obj.has_input()) return Value(text::encode(cps, k, k + 1));
            const std::size_t begin = text::encode(cps, 0, k).size();
            return substring(obj, begin, begin + text::encode(cps, k, k + 1).size());
        }
        return Value::undefined(object_type(obj) + " has no element " + to_repr(key));
    }
    if (key.is_string()) return getattr(obj, key.str());
    if (obj.is_dict() || obj.is_list()) return Value::undefined(object_type(obj) + " has no element " + to_repr(key));
    return Value::undefined("'" + object_type(obj) + "' has no attribute " + to_repr(key));
}

Value Renderer::eval_slice(const Value& obj, const Expr& slice, const ScopePtr& scope) {
    Value parts[3];
    for (int i = 0; i < 3; ++i) {
        if (slice.args[static_cast<std::size_t>(i)]) parts[i] = eval(*slice.args[static_cast<std::size_t>(i)], scope);
    }
    if (obj.is_undefined()) fail_undefined(obj);
    if (!obj.is_list() && !obj.is_string()) return Value::undefined("'" + object_type(obj) + "' is not subscriptable");
    for (const Value& p : parts) {
        // Python's TypeError for a non-integer index; Jinja2's getitem turns it into undefined.
        if (!p.is_undefined() && !p.is_none() && !p.is_int() && !p.is_bool()) {
            return Value::undefined("slice indices must be integers or None");
        }
    }
    const std::int64_t step = parts[2].is_int() || parts[2].is_bool() ? parts[2].as_int() : 1;
    if (step == 0) throw EvalError("slice step cannot be zero");
    std::vector<char32_t> cps;
    if (obj.is_string()) cps = text::decode(obj.str());
    const auto len = static_cast<std::int64_t>(obj.is_string() ? cps.size() : obj.items().size());
    auto adjust = [&](const Value& v, bool is_start) -> std::int64_t {
        if (!v.is_int() && !v.is_bool()) return is_start ? (step < 0 ? len - 1 : 0) : (step < 0 ? -1 : len);
        std::int64_t x = v.as_int();
        if (x < 0) {
            x += len;
            if (x < 0) x = step < 0 ? -1 : 0;
        } else if (x >= len) {
            x = step < 0 ? len - 1 : len;
        }
        return x;
    };
    const std::int64_t start = adjust(parts[0], true), stop = adjust(parts[1], false);
    std::vector<Value> items;
    std::string s;
    for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        if (obj.is_string()) {
            text::append_utf8(s, cps[static_cast<std::size_t>(i)]);
        } else {
            items.push_back(obj.items()[static_cast<std::size_t>(i)]);
        }
    }
    charge(static_cast<std::uint64_t>(items.size() + s.size() / 64));
    if (obj.is_string()) {
        if (!obj.has_input()) return Value(std::move(s));
        // A contiguous slice keeps each byte's mark; any other step takes the conservative rule.
        if (step != 1 || start >= stop) return taint_result(Value(std::move(s)));
        const std::size_t begin = text::encode(cps, 0, static_cast<std::size_t>(start)).size();
        return substring(obj, begin, begin + s.size());
    }
    return obj.is_tuple() ? Value::tuple(std::move(items)) : Value(std::move(items));
}

// ---- expressions ----

Value Renderer::eval(const Expr& e, const ScopePtr& scope) {
    DepthGuard depth(eval_depth_, kMaxEvalDepth, "nesting");
    try {
        charge(1);
        return eval_inner(e, scope);
    } catch (const EvalError& x) {
        throw wb::Error(at_position(e.pos, x.what()));
    } catch (TemplateRaised& r) {
        if (r.pos.line == 0) r.pos = e.pos;
        throw;
    } catch (const std::length_error&) {
        throw wb::Error(at_position(e.pos, "string too long"));
    } catch (const wb::Error&) {
        throw;
    } catch (const std::exception& x) {
        // A library failure (bad_alloc, out_of_range) is the template's error too, never a crash.
        throw wb::Error(at_position(e.pos, x.what()));
    }
}

CallArgs Renderer::eval_args(const Expr& e, const ScopePtr& scope, std::size_t first) {
    CallArgs args;
    for (std::size_t i = first; i < e.args.size(); ++i) args.positional.push_back(eval(*e.args[i], scope));
    if (e.dyn_args) {
        for (Value& v : iterate(eval(*e.dyn_args, scope))) args.positional.push_back(std::move(v));
    }
    for (const auto& [k, v] : e.kwargs) args.keywords.emplace_back(k, eval(*v, scope));
    if (e.dyn_kwargs) {
        const Value d = eval(*e.dyn_kwargs, scope);
        if (!d.is_dict()) throw EvalError("argument after ** must be a mapping");
        for (const auto& [k, v] : d.dict().entries()) {
            if (!k.is_string()) throw EvalError("keywords must be strings");
            args.keywords.emplace_back(k.str(), v);
        }
    }
    return args;
}

Value Renderer::eval_call(const Expr& e, const ScopePtr& scope) {
    const Value callee = eval(*e.args[0], scope);
    CallArgs args = eval_args(e, scope, 1);
    return call(callee, args);
}

Value Renderer::eval_filter(const Expr& e, const ScopePtr& scope, const Value* block_input) {
    Value subject;
    if (!e.args[0]) {
        subject = *block_input;
    } else if (block_input && e.args[0]->kind == ExprKind::FILTER) {
        subject = eval_filter(*e.args[0], scope, block_input);
    } else {
        subject = eval(*e.args[0], scope);
    }
    CallArgs args = eval_args(e, scope, 1);
    const bool tainted = subject.has_input() || any_input(args);
    Value result = apply_filter(*this, e.name, subject, args);
    return tainted ? taint_result(result) : result;
}

Value Renderer::eval_compare(const Expr& e, const ScopePtr& scope) {
    Value left = eval(*e.args[0], scope);
    for (std::size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.args[i + 1], scope);
        if (!compare_op(e.ops[i], left, right)) return Value(false);
        left = std::move(right);
    }
    return Value(true);
}

Value Renderer::eval_inner(const Expr& e, const ScopePtr& scope) {
    switch (e.kind) {
        case ExprKind::CONST: return e.value;
        case ExprKind::NAME: return lookup(e.name, scope);
        case ExprKind::LIST:
        case ExprKind::TUPLE: {
            std::vector<Value> items;
            for (const auto& a : e.args) items.push_back(eval(*a, scope));
            return e.kind == ExprKind::TUPLE ? Value::tuple(std::move(items)) : Value(std::move(items));
        }
        case ExprKind::DICT: {
            Dict d;
            for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
                Value k = eval(*e.args[i], scope);
                if ((k.is_list() && !k.is_tuple()) || k.is_dict() || k.is_undefined()) {
                    throw EvalError(std::string("unhashable type: '") + k.type_name() + "'");
                }
                d.set(std::move(k), eval(*e.args[i + 1], scope));
            }
            return Value(std::move(d));
        }
        case ExprKind::GETATTR: return getattr(eval(*e.args[0], scope), e.name);
        case ExprKind::GETITEM: {
            const Value obj = eval(*e.args[0], scope);
            if (e.args[1]->kind == ExprKind::SLICE) return eval_slice(obj, *e.args[1], scope);
            return getitem(obj, eval(*e.args[1], scope));
        }
        case ExprKind::SLICE: throw EvalError("a slice is only valid inside []");
        case ExprKind::CALL: return eval_call(e, scope);
        case ExprKind::FILTER: return eval_filter(e, scope, nullptr);
        case ExprKind::TEST: {
            const Value subject = eval(*e.args[0], scope);
            CallArgs args = eval_args(e, scope, 1);
            return Value(apply_test(*this, e.name, subject, args));
        }
        case ExprKind::NOT: return Value(!eval(*e.args[0], scope).truthy());
        case ExprKind::NEG:
        case ExprKind::POS: {
            const Value v = eval(*e.args[0], scope);
            if (v.is_undefined()) fail_undefined(v);
            if (!v.is_number()) {
                throw EvalError(std::string("bad operand type for unary ") + (e.kind == ExprKind::NEG ? "-" : "+") +
                                ": '" + v.type_name() + "'");
            }
            if (e.kind == ExprKind::POS) return v.is_bool() ? Value(v.as_int()) : v;
            if (v.is_float()) return Value(-v.as_float());
            if (v.as_int() == INT64_MIN) throw EvalError("integer overflow");
            return Value(-v.as_int());
        }
        case ExprKind::BINARY: {
            const Value a = eval(*e.args[0], scope);
            const Value b = eval(*e.args[1], scope);
            if (e.name == "+" && a.is_string() && b.is_string() && !a.is_markup() && !b.is_markup()) {
                TaintedText t;  // str + str: each side keeps its marks
                t.append(a);
                t.append(b);
                check_string(t.size());
                return t.to_value();
            }
            Value result = binary_op(e.name, a, b, *this);
            return a.has_input() || b.has_input() ? taint_result(result) : result;
        }
        case ExprKind::COMPARE: return eval_compare(e, scope);
        case ExprKind::AND: {
            Value a = eval(*e.args[0], scope);
            return a.truthy() ? eval(*e.args[1], scope) : a;
        }
        case ExprKind::OR: {
            Value a = eval(*e.args[0], scope);
            return a.truthy() ? a : eval(*e.args[1], scope);
        }
        case ExprKind::CONCAT: {
            TaintedText t;
            for (const auto& a : e.args) {
                t.append(eval(*a, scope));
                check_string(t.size());
            }
            return t.to_value();
        }
        case ExprKind::COND: {
            if (eval(*e.args[1], scope).truthy()) return eval(*e.args[0], scope);
            if (e.args[2]) return eval(*e.args[2], scope);
            return Value::undefined("the inline if-expression evaluated to false and no else section was defined");
        }
    }
    return Value();
}

}  // namespace wb::jinja
