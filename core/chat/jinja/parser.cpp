#include "chat/jinja/parser.h"

#include <algorithm>
#include <initializer_list>

#include "chat/jinja/builtins.h"
#include "chat/jinja/lexer.h"

namespace wb::jinja {

namespace {

// Deeper nesting than this (brackets, unary operators, blocks) is refused: the parser and the
// renderer recurse once per level, and no real template comes near it.
constexpr int kMaxNesting = 128;
// An operator chain (a + b + c ..., x.a.b.c ..., x|f|g ...) nests without recursion in the parser, so
// the depth of every expression tree is bounded separately.
constexpr int kMaxExprDepth = 256;

class Parser {
public:
    explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

    std::vector<StmtPtr> templ() {
        std::vector<StmtPtr> body = subparse({});
        if (cur().type != TokenType::END) fail("unexpected tag");
        return body;
    }

private:
    const Token& cur() const { return t_[i_]; }
    const Token& peek(std::size_t n = 1) const { return t_[std::min(i_ + n, t_.size() - 1)]; }
    void advance() {
        if (i_ + 1 < t_.size()) ++i_;
    }
    bool is_op(const char* op) const { return cur().type == TokenType::OP && cur().value == op; }
    bool is_name(const char* name) const { return cur().type == TokenType::NAME && cur().value == name; }

    [[noreturn]] void fail(const std::string& what) const { throw wb::Error(at_position(cur().pos, what)); }

    std::string describe(const Token& t) const {
        switch (t.type) {
            case TokenType::END: return "end of template";
            case TokenType::VAR_END: return "end of print statement";
            case TokenType::BLOCK_END: return "end of statement block";
            case TokenType::TEXT: return "template text";
            default: return "'" + t.value + "'";
        }
    }

    void expect_op(const char* op) {
        if (!is_op(op)) fail(std::string("expected '") + op + "', got " + describe(cur()));
        advance();
    }
    std::string expect_name() {
        if (cur().type != TokenType::NAME) fail("expected a name, got " + describe(cur()));
        std::string n = cur().value;
        advance();
        return n;
    }
    void expect_block_end() {
        if (cur().type != TokenType::BLOCK_END) fail("expected the end of the statement block, got " + describe(cur()));
        advance();
    }

    struct Nest {
        explicit Nest(Parser& p) : p_(p) {
            if (++p_.depth_ > kMaxNesting) p_.fail("template nested deeper than " + std::to_string(kMaxNesting));
        }
        ~Nest() { --p_.depth_; }
        Parser& p_;
    };

    // Records the depth of a finished node and refuses trees deeper than kMaxExprDepth.
    ExprPtr seal(ExprPtr e) {
        int d = 0;
        for (const auto& a : e->args) d = std::max(d, a ? a->depth : 0);
        for (const auto& [k, v] : e->kwargs) d = std::max(d, v->depth);
        if (e->dyn_args) d = std::max(d, e->dyn_args->depth);
        if (e->dyn_kwargs) d = std::max(d, e->dyn_kwargs->depth);
        e->depth = d + 1;
        if (e->depth > kMaxExprDepth) {
            throw wb::Error(at_position(e->pos, "expression nested deeper than " + std::to_string(kMaxExprDepth)));
        }
        return e;
    }

    ExprPtr make(ExprKind kind, SourcePos pos) {
        auto e = std::make_unique<Expr>();
        e->kind = kind;
        e->pos = pos;
        return e;
    }
    ExprPtr make2(ExprKind kind, SourcePos pos, ExprPtr a, ExprPtr b, std::string name = {}) {
        auto e = make(kind, pos);
        e->args.push_back(std::move(a));
        e->args.push_back(std::move(b));
        e->name = std::move(name);
        return seal(std::move(e));
    }

    // ---- statements ----

    std::vector<StmtPtr> subparse(std::initializer_list<const char*> end_tags) {
        Nest nest(*this);
        std::vector<StmtPtr> body;
        while (cur().type != TokenType::END) {
            const Token& t = cur();
            if (t.type == TokenType::TEXT) {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::TEXT;
                s->text = t.value;
                s->pos = t.pos;
                body.push_back(std::move(s));
                advance();
            } else if (t.type == TokenType::VAR_BEGIN) {
                auto s = std::make_unique<Stmt>();
                s->kind = StmtKind::OUTPUT;
                s->pos = t.pos;
                advance();
                s->expr = tuple(false, true, {}, false);
                if (cur().type != TokenType::VAR_END) fail("expected the end of the print statement, got " + describe(cur()));
                advance();
                body.push_back(std::move(s));
            } else if (t.type == TokenType::BLOCK_BEGIN) {
                const Token& tag = peek();
                for (const char* end : end_tags) {
                    if (tag.type == TokenType::NAME && tag.value == end) {
                        advance();  // to the tag name; the caller reads it
                        return body;
                    }
                }
                advance();
                body.push_back(statement(end_tags));
            } else {
                fail("unexpected " + describe(t));
            }
        }
        if (end_tags.size() != 0) {
            std::string want;
            for (const char* e : end_tags) want += std::string(want.empty() ? "" : " or ") + "'" + e + "'";
            fail("unexpected end of template, expected " + want);
        }
        return body;
    }

    StmtPtr statement(std::initializer_list<const char*> open_tags) {
        if (cur().type != TokenType::NAME) fail("tag name expected");
        const std::string tag = cur().value;
        auto s = std::make_unique<Stmt>();
        s->pos = cur().pos;
        advance();
        if (tag == "if") return if_stmt(std::move(s));
        if (tag == "for") return for_stmt(std::move(s));
        if (tag == "set") return set_stmt(std::move(s));
        if (tag == "macro") return macro_stmt(std::move(s));
        if (tag == "call") return call_stmt(std::move(s));
        if (tag == "filter") return filter_stmt(std::move(s));
        if (tag == "generation") {
            s->kind = StmtKind::SCOPE;
            expect_block_end();
            s->body = subparse({"endgeneration"});
            advance();
            expect_block_end();
            return s;
        }
        if (tag == "break" || tag == "continue") {
            if (loop_depth_ == 0) throw wb::Error(at_position(s->pos, "'" + tag + "' outside loop"));
            s->kind = tag == "break" ? StmtKind::BREAK : StmtKind::CONTINUE;
            expect_block_end();
            return s;
        }
        std::string msg = "encountered unknown tag '" + tag + "'";
        if (open_tags.size() != 0) {
            msg += "; expected";
            for (const char* e : open_tags) msg += std::string(" '") + e + "'";
        }
        throw wb::Error(at_position(s->pos, msg));
    }

    StmtPtr if_stmt(StmtPtr s) {
        s->kind = StmtKind::IF;
        s->expr = tuple(false, false, {}, false);
        expect_block_end();
        s->body = subparse({"elif", "else", "endif"});
        const std::string tag = cur().value;
        const SourcePos pos = cur().pos;
        advance();
        if (tag == "elif") {
            auto elif = std::make_unique<Stmt>();
            elif->pos = pos;
            s->else_body.push_back(if_stmt(std::move(elif)));
            return s;  // the nested if consumed the endif
        }
        if (tag == "else") {
            expect_block_end();
            s->else_body = subparse({"endif"});
            advance();
        }
        expect_block_end();
        return s;
    }

    StmtPtr for_stmt(StmtPtr s) {
        s->kind = StmtKind::FOR;
        s->target = assign_target({"in"}, false);
        if (!is_name("in")) fail("expected 'in', got " + describe(cur()));
        advance();
        s->expr = tuple(false, false, {"recursive"}, false);
        if (is_name("if")) {
            advance();
            s->filter = expression(true);
        }
        if (is_name("recursive")) fail("recursive loops are not supported");
        expect_block_end();
        ++loop_depth_;
        s->body = subparse({"endfor", "else"});
        --loop_depth_;
        if (cur().value == "else") {
            advance();
            expect_block_end();
            s->else_body = subparse({"endfor"});
        }
        advance();
        expect_block_end();
        return s;
    }

    StmtPtr set_stmt(StmtPtr s) {
        s->target = assign_target({}, true);
        if (is_op("=")) {
            advance();
            s->kind = StmtKind::SET;
            s->expr = tuple(false, true, {}, false);
            expect_block_end();
            return s;
        }
        if (s->target->kind != ExprKind::NAME) fail("expected '='");
        s->kind = StmtKind::SET_BLOCK;
        s->name = s->target->name;
        if (is_op("|")) s->expr = filter_chain(nullptr, false);
        expect_block_end();
        s->body = subparse({"endset"});
        advance();
        expect_block_end();
        return s;
    }

    void signature(Stmt& s) {
        expect_op("(");
        while (!is_op(")")) {
            if (!s.params.empty()) expect_op(",");
            if (is_op(")")) break;
            s.params.push_back(expect_name());
            if (is_op("=")) {
                advance();
                s.defaults.push_back(expression(true));
            } else {
                if (!s.defaults.empty() && s.defaults.back()) fail("non-default argument follows default argument");
                s.defaults.push_back(nullptr);
            }
        }
        expect_op(")");
    }

    // Which of the special names a macro body reads (Jinja2 gives a macro varargs/kwargs/caller only then).
    static void scan_names(const Expr* e, Stmt& m) {
        if (!e) return;
        if (e->kind == ExprKind::NAME) {
            m.uses_varargs |= e->name == "varargs";
            m.uses_kwargs |= e->name == "kwargs";
            m.uses_caller |= e->name == "caller";
        }
        for (const auto& a : e->args) scan_names(a.get(), m);
        for (const auto& [k, v] : e->kwargs) scan_names(v.get(), m);
        scan_names(e->dyn_args.get(), m);
        scan_names(e->dyn_kwargs.get(), m);
    }
    static void scan_body(const std::vector<StmtPtr>& body, Stmt& m) {
        for (const auto& s : body) {
            scan_names(s->expr.get(), m);
            scan_names(s->target.get(), m);
            scan_names(s->filter.get(), m);
            for (const auto& d : s->defaults) scan_names(d.get(), m);
            scan_body(s->body, m);
            scan_body(s->else_body, m);
        }
    }

    StmtPtr macro_stmt(StmtPtr s) {
        s->kind = StmtKind::MACRO;
        s->name = expect_name();
        signature(*s);
        expect_block_end();
        const int saved = loop_depth_;
        loop_depth_ = 0;
        s->body = subparse({"endmacro"});
        loop_depth_ = saved;
        advance();
        expect_block_end();
        scan_body(s->body, *s);
        return s;
    }

    StmtPtr call_stmt(StmtPtr s) {
        s->kind = StmtKind::CALL_BLOCK;
        if (is_op("(")) signature(*s);
        s->expr = expression(true);
        if (s->expr->kind != ExprKind::CALL) fail("expected a call");
        expect_block_end();
        const int saved = loop_depth_;
        loop_depth_ = 0;
        s->body = subparse({"endcall"});
        loop_depth_ = saved;
        advance();
        expect_block_end();
        scan_body(s->body, *s);
        return s;
    }

    StmtPtr filter_stmt(StmtPtr s) {
        s->kind = StmtKind::FILTER_BLOCK;
        s->expr = filter_chain(nullptr, true);
        expect_block_end();
        s->body = subparse({"endfilter"});
        advance();
        expect_block_end();
        return s;
    }

    ExprPtr assign_target(std::initializer_list<const char*> extra_end, bool with_namespace) {
        if (with_namespace && cur().type == TokenType::NAME && peek().type == TokenType::OP && peek().value == ".") {
            auto obj = make(ExprKind::NAME, cur().pos);
            obj->name = cur().value;
            advance();
            advance();
            auto e = make(ExprKind::GETATTR, obj->pos);
            e->name = expect_name();
            e->args.push_back(std::move(obj));
            return e;
        }
        ExprPtr target = tuple(true, false, extra_end, false);
        auto assignable = [](const Expr& e) { return e.kind == ExprKind::NAME; };
        bool ok = assignable(*target);
        if (target->kind == ExprKind::TUPLE) {
            ok = true;
            for (const auto& a : target->args) ok = ok && assignable(*a);
        }
        if (ok && target->kind == ExprKind::NAME) {
            for (const char* reserved : {"true", "false", "none", "True", "False", "None"}) {
                if (target->name == reserved) ok = false;
            }
        }
        if (!ok) throw wb::Error(at_position(target->pos, "can't assign to this expression"));
        return target;
    }

    // ---- expressions ----

    bool tuple_end(std::initializer_list<const char*> extra_end) const {
        const TokenType t = cur().type;
        if (t == TokenType::VAR_END || t == TokenType::BLOCK_END || t == TokenType::END) return true;
        if (t == TokenType::OP && cur().value == ")") return true;
        for (const char* e : extra_end) {
            if (t == TokenType::NAME && cur().value == e) return true;
        }
        return false;
    }

    ExprPtr tuple(bool simplified, bool with_condexpr, std::initializer_list<const char*> extra_end,
                  bool explicit_parens) {
        const SourcePos pos = cur().pos;
        std::vector<ExprPtr> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) expect_op(",");
            if (tuple_end(extra_end)) break;
            items.push_back(simplified ? primary() : expression(with_condexpr));
            if (is_op(",")) {
                is_tuple = true;
            } else {
                break;
            }
        }
        if (!is_tuple) {
            if (!items.empty()) return std::move(items[0]);
            if (!explicit_parens) fail("expected an expression, got " + describe(cur()));
        }
        auto e = make(ExprKind::TUPLE, pos);
        e->args = std::move(items);
        return seal(std::move(e));
    }

    ExprPtr expression(bool with_condexpr) {
        Nest nest(*this);
        if (!with_condexpr) return or_expr();
        ExprPtr e = or_expr();
        while (is_name("if")) {
            const SourcePos pos = cur().pos;
            advance();
            ExprPtr cond = or_expr();
            ExprPtr other;
            if (is_name("else")) {
                advance();
                other = expression(true);
            }
            auto c = make(ExprKind::COND, pos);
            c->args.push_back(std::move(e));
            c->args.push_back(std::move(cond));
            c->args.push_back(std::move(other));
            e = seal(std::move(c));
        }
        return e;
    }

    ExprPtr or_expr() {
        ExprPtr left = and_expr();
        while (is_name("or")) {
            const SourcePos pos = cur().pos;
            advance();
            left = make2(ExprKind::OR, pos, std::move(left), and_expr());
        }
        return left;
    }

    ExprPtr and_expr() {
        ExprPtr left = not_expr();
        while (is_name("and")) {
            const SourcePos pos = cur().pos;
            advance();
            left = make2(ExprKind::AND, pos, std::move(left), not_expr());
        }
        return left;
    }

    ExprPtr not_expr() {
        if (is_name("not")) {
            Nest nest(*this);
            const SourcePos pos = cur().pos;
            advance();
            auto e = make(ExprKind::NOT, pos);
            e->args.push_back(not_expr());
            return seal(std::move(e));
        }
        return compare();
    }

    ExprPtr compare() {
        const SourcePos pos = cur().pos;
        ExprPtr first = math1();
        auto e = make(ExprKind::COMPARE, pos);
        e->args.push_back(std::move(first));
        while (true) {
            if (cur().type == TokenType::OP &&
                (is_op("==") || is_op("!=") || is_op("<") || is_op("<=") || is_op(">") || is_op(">="))) {
                e->ops.push_back(cur().value);
            } else if (is_name("in")) {
                e->ops.push_back("in");
            } else if (is_name("not") && peek().type == TokenType::NAME && peek().value == "in") {
                advance();
                e->ops.push_back("notin");
            } else {
                break;
            }
            advance();
            e->args.push_back(math1());
        }
        if (e->ops.empty()) return std::move(e->args[0]);
        return seal(std::move(e));
    }

    ExprPtr math1() {
        ExprPtr left = concat();
        while (is_op("+") || is_op("-")) {
            const SourcePos pos = cur().pos;
            std::string op = cur().value;
            advance();
            left = make2(ExprKind::BINARY, pos, std::move(left), concat(), std::move(op));
        }
        return left;
    }

    ExprPtr concat() {
        const SourcePos pos = cur().pos;
        ExprPtr first = math2();
        if (!is_op("~")) return first;
        auto e = make(ExprKind::CONCAT, pos);
        e->args.push_back(std::move(first));
        while (is_op("~")) {
            advance();
            e->args.push_back(math2());
        }
        return seal(std::move(e));
    }

    ExprPtr math2() {
        ExprPtr left = power();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const SourcePos pos = cur().pos;
            std::string op = cur().value;
            advance();
            left = make2(ExprKind::BINARY, pos, std::move(left), power(), std::move(op));
        }
        return left;
    }

    ExprPtr power() {
        ExprPtr left = unary(true);
        while (is_op("**")) {
            const SourcePos pos = cur().pos;
            advance();
            left = make2(ExprKind::BINARY, pos, std::move(left), unary(true), "**");
        }
        return left;
    }

    ExprPtr unary(bool with_filter) {
        Nest nest(*this);
        const SourcePos pos = cur().pos;
        ExprPtr node;
        if (is_op("-") || is_op("+")) {
            const bool neg = is_op("-");
            advance();
            node = make(neg ? ExprKind::NEG : ExprKind::POS, pos);
            node->args.push_back(unary(false));
            node = seal(std::move(node));
        } else {
            node = primary();
        }
        node = postfix(std::move(node));
        if (with_filter) node = filter_expr(std::move(node));
        return node;
    }

    ExprPtr primary() {
        Nest nest(*this);
        const Token& t = cur();
        const SourcePos pos = t.pos;
        if (t.type == TokenType::NAME) {
            auto e = make(ExprKind::CONST, pos);
            if (t.value == "true" || t.value == "True") {
                e->value = Value(true);
            } else if (t.value == "false" || t.value == "False") {
                e->value = Value(false);
            } else if (t.value == "none" || t.value == "None") {
                e->value = Value::none();
            } else {
                e->kind = ExprKind::NAME;
                e->name = t.value;
            }
            advance();
            return e;
        }
        if (t.type == TokenType::STRING) {
            std::string s;
            while (cur().type == TokenType::STRING) {
                s += cur().value;
                advance();
            }
            auto e = make(ExprKind::CONST, pos);
            e->value = Value(std::move(s));
            return e;
        }
        if (t.type == TokenType::INT || t.type == TokenType::FLOAT) {
            auto e = make(ExprKind::CONST, pos);
            e->value = t.type == TokenType::INT ? Value(t.int_value) : Value(t.float_value);
            advance();
            return e;
        }
        if (is_op("(")) {
            advance();
            ExprPtr e = tuple(false, true, {}, true);
            expect_op(")");
            return e;
        }
        if (is_op("[")) return list_literal();
        if (is_op("{")) return dict_literal();
        fail("unexpected " + describe(t));
    }

    ExprPtr list_literal() {
        auto e = make(ExprKind::LIST, cur().pos);
        advance();
        while (!is_op("]")) {
            if (!e->args.empty()) expect_op(",");
            if (is_op("]")) break;
            e->args.push_back(expression(true));
        }
        expect_op("]");
        return seal(std::move(e));
    }

    ExprPtr dict_literal() {
        auto e = make(ExprKind::DICT, cur().pos);
        advance();
        while (!is_op("}")) {
            if (!e->args.empty()) expect_op(",");
            if (is_op("}")) break;
            e->args.push_back(expression(true));
            expect_op(":");
            e->args.push_back(expression(true));
        }
        expect_op("}");
        return seal(std::move(e));
    }

    ExprPtr postfix(ExprPtr node) {
        while (true) {
            if (is_op(".") || is_op("[")) {
                node = subscript(std::move(node));
            } else if (is_op("(")) {
                node = call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr filter_expr(ExprPtr node) {
        while (true) {
            if (is_op("|")) {
                node = filter_chain(std::move(node), false, true);
            } else if (is_name("is")) {
                node = test(std::move(node));
            } else if (is_op("(")) {
                node = call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr subscript(ExprPtr node) {
        Nest nest(*this);
        const SourcePos pos = cur().pos;
        if (is_op(".")) {
            advance();
            if (cur().type == TokenType::NAME) {
                auto e = make(ExprKind::GETATTR, pos);
                e->name = cur().value;
                e->args.push_back(std::move(node));
                advance();
                return seal(std::move(e));
            }
            if (cur().type != TokenType::INT) fail("expected name or number after '.'");
            auto key = make(ExprKind::CONST, cur().pos);
            key->value = Value(cur().int_value);
            advance();
            return make2(ExprKind::GETITEM, pos, std::move(node), std::move(key));
        }
        advance();
        std::vector<ExprPtr> keys;
        while (!is_op("]")) {
            if (!keys.empty()) expect_op(",");
            keys.push_back(subscribed());
        }
        expect_op("]");
        if (keys.empty()) fail("expected a subscript");
        ExprPtr key;
        if (keys.size() == 1) {
            key = std::move(keys[0]);
        } else {
            key = make(ExprKind::TUPLE, pos);
            key->args = std::move(keys);
            key = seal(std::move(key));
        }
        return make2(ExprKind::GETITEM, pos, std::move(node), std::move(key));
    }

    ExprPtr subscribed() {
        const SourcePos pos = cur().pos;
        auto slice = make(ExprKind::SLICE, pos);
        if (is_op(":")) {
            advance();
            slice->args.push_back(nullptr);
        } else {
            ExprPtr e = expression(true);
            if (!is_op(":")) return e;
            advance();
            slice->args.push_back(std::move(e));
        }
        auto part = [&] {
            return (is_op("]") || is_op(",") || is_op(":")) ? nullptr : expression(true);
        };
        slice->args.push_back(part());
        if (is_op(":")) {
            advance();
            slice->args.push_back(part());
        } else {
            slice->args.push_back(nullptr);
        }
        return seal(std::move(slice));
    }

    void call_args(Expr& e) {
        expect_op("(");
        bool require_comma = false;
        while (!is_op(")")) {
            if (require_comma) {
                expect_op(",");
                if (is_op(")")) break;
            }
            if (is_op("*") || is_op("**")) {
                const bool star2 = is_op("**");
                if (e.dyn_kwargs || (!star2 && e.dyn_args)) fail("invalid syntax for function call expression");
                advance();
                (star2 ? e.dyn_kwargs : e.dyn_args) = expression(true);
            } else if (cur().type == TokenType::NAME && peek().type == TokenType::OP && peek().value == "=") {
                if (e.dyn_args || e.dyn_kwargs) fail("invalid syntax for function call expression");
                std::string key = cur().value;
                advance();
                advance();
                e.kwargs.emplace_back(std::move(key), expression(true));
            } else {
                if (e.dyn_args || e.dyn_kwargs || !e.kwargs.empty()) fail("invalid syntax for function call expression");
                e.args.push_back(expression(true));
            }
            require_comma = true;
        }
        expect_op(")");
    }

    ExprPtr call(ExprPtr node) {
        Nest nest(*this);
        auto e = make(ExprKind::CALL, cur().pos);
        e->args.push_back(std::move(node));
        call_args(*e);
        return seal(std::move(e));
    }

    std::string dotted_name() {
        std::string name = expect_name();
        while (is_op(".")) {
            advance();
            name += "." + expect_name();
        }
        return name;
    }

    ExprPtr filter_chain(ExprPtr node, bool start_inline, bool single = false) {
        while (is_op("|") || start_inline) {
            if (!start_inline) advance();
            start_inline = false;
            const SourcePos pos = cur().pos;
            auto f = make(ExprKind::FILTER, pos);
            f->name = dotted_name();
            f->args.push_back(std::move(node));
            if (is_op("(")) call_args(*f);
            node = seal(std::move(f));
            if (single) break;
        }
        return node;
    }

    ExprPtr test(ExprPtr node) {
        advance();  // 'is'
        const SourcePos pos = cur().pos;
        bool negated = false;
        if (is_name("not")) {
            negated = true;
            advance();
        }
        auto e = make(ExprKind::TEST, pos);
        e->name = dotted_name();
        e->args.push_back(std::move(node));
        const TokenType t = cur().type;
        if (is_op("(")) {
            call_args(*e);
        } else if ((t == TokenType::NAME || t == TokenType::STRING || t == TokenType::INT || t == TokenType::FLOAT ||
                    is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
            if (is_name("is")) fail("you cannot chain multiple tests with is");
            e->args.push_back(postfix(primary()));
        }
        e = seal(std::move(e));
        if (!negated) return e;
        auto n = make(ExprKind::NOT, pos);
        n->args.push_back(std::move(e));
        return seal(std::move(n));
    }

    std::vector<Token> t_;
    std::size_t i_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;
};

// Jinja2 refuses an unknown filter or test when it compiles a template, except inside an `if` (its
// test and body) or a conditional expression, where the error waits until the filter is called: a
// template may guard a filter that only some applications define. A loop, macro, call, filter block
// or block set body starts a fresh frame, where the check applies again.
void check_names(const Expr* e, bool soft) {
    if (!e) return;
    if (e->kind == ExprKind::COND) soft = true;
    if (!soft && e->kind == ExprKind::FILTER && !is_filter_name(e->name)) {
        throw wb::Error(at_position(e->pos, "no filter named '" + e->name + "'"));
    }
    if (!soft && e->kind == ExprKind::TEST && !is_test_name(e->name)) {
        throw wb::Error(at_position(e->pos, "no test named '" + e->name + "'"));
    }
    for (const auto& a : e->args) check_names(a.get(), soft);
    for (const auto& [k, v] : e->kwargs) check_names(v.get(), soft);
    check_names(e->dyn_args.get(), soft);
    check_names(e->dyn_kwargs.get(), soft);
}

void check_names(const std::vector<StmtPtr>& body, bool soft) {
    for (const auto& s : body) {
        switch (s->kind) {
            case StmtKind::IF:
                check_names(s->expr.get(), true);
                check_names(s->body, true);
                check_names(s->else_body, true);
                break;
            case StmtKind::FOR:
                check_names(s->expr.get(), soft);
                check_names(s->filter.get(), false);
                check_names(s->body, false);
                check_names(s->else_body, false);
                break;
            case StmtKind::CALL_BLOCK:
                check_names(s->expr.get(), soft);
                [[fallthrough]];
            case StmtKind::MACRO:
            case StmtKind::FILTER_BLOCK:
            case StmtKind::SET_BLOCK:
            case StmtKind::SCOPE:
                if (s->kind != StmtKind::CALL_BLOCK) check_names(s->expr.get(), false);
                for (const auto& d : s->defaults) check_names(d.get(), false);
                check_names(s->body, false);
                break;
            default: check_names(s->expr.get(), soft);
        }
    }
}

}  // namespace

std::vector<StmtPtr> parse(std::string_view source) {
    std::vector<StmtPtr> body = Parser(tokenize(source)).templ();
    check_names(body, false);
    return body;
}

}  // namespace wb::jinja
