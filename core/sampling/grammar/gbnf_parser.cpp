// GBNF text -> Grammar. A recursive-descent parser over the bytes of the text; rules are collected as
// lists of alternatives first (a group met inside an alternative becomes a rule of its own before the
// alternative ends) and laid out flat at the end, when every reference can be checked.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

#include "sampling/grammar/gbnf.h"
#include "util/error.h"

namespace wb {

namespace {

using Sequence = std::vector<GrammarElem>;

struct DraftRule {
    std::string name;
    std::vector<Sequence> alts;
    bool defined = false;
    size_t first_use = 0;    // where the rule was first referred to (for "undefined rule")
    size_t defined_at = 0;   // where its definition starts (for "can never finish")
    bool generated = false;  // a group or repetition's rule, named by the parser, not the user
};

bool is_word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

GrammarElem char_elem(uint32_t lo, uint32_t hi) {
    GrammarElem e;
    e.kind = GRAMMAR_CHARS;
    e.ranges.push_back({lo, hi});
    return e;
}

GrammarElem ref_elem(int32_t rule) {
    GrammarElem e;
    e.kind = GRAMMAR_RULE_REF;
    e.rule = rule;
    return e;
}

// Repetition counts beyond this are almost certainly a typo and would make a huge grammar.
constexpr int kMaxRepeat = 10000;
// Limits that keep a hostile grammar from exhausting memory or the stack while it is parsed: a
// person's grammar stays far below each.
constexpr size_t kMaxText = 4u << 20;             // bytes of GBNF text
constexpr size_t kMaxElements = 1000000;          // elements after repetitions are expanded
constexpr size_t kMaxRules = 100000;              // rules, generated ones included
constexpr int kMaxNesting = 256;                  // parentheses inside parentheses

class GbnfParser {
public:
    explicit GbnfParser(const std::string& text) : s_(text) {}

    Grammar parse() {
        if (s_.size() > kMaxText)
            throw Error("grammar: the text is " + std::to_string(s_.size()) + " bytes, over the limit of " +
                        std::to_string(kMaxText));
        skip_space(true);
        while (pos_ < s_.size()) {
            parse_rule();
            skip_space(true);
        }
        return finish();
    }

private:
    [[noreturn]] void fail(size_t at, const std::string& what) const { throw Error(place(at) + what); }

    // "grammar line L, column C: " for byte `at` of the text.
    std::string place(size_t at) const {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < at && i < s_.size(); ++i) {
            if (s_[i] == '\n') {
                ++line;
                col = 1;
            } else if ((static_cast<unsigned char>(s_[i]) & 0xC0) != 0x80) {
                ++col;  // columns count characters, not the bytes of one
            }
        }
        return "grammar line " + std::to_string(line) + ", column " + std::to_string(col) + ": ";
    }

    char peek(size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
    bool at_end() const { return pos_ >= s_.size(); }

    // Spaces, tabs and # comments; newlines too when newline_ok (inside parentheses, after | or ::=),
    // since at the top level a newline ends the rule.
    void skip_space(bool newline_ok) {
        while (!at_end()) {
            const char c = peek();
            if (c == ' ' || c == '\t') {
                ++pos_;
            } else if (c == '#') {
                while (!at_end() && peek() != '\n') ++pos_;
            } else if (newline_ok && (c == '\n' || c == '\r')) {
                ++pos_;
            } else {
                return;
            }
        }
    }

    std::string parse_name() {
        const size_t start = pos_;
        while (!at_end() && is_word_char(peek())) ++pos_;
        return s_.substr(start, pos_ - start);
    }

    int32_t rule_index(const std::string& name, size_t used_at) {
        auto it = index_.find(name);
        if (it != index_.end()) return it->second;
        if (rules_.size() >= kMaxRules)
            fail(used_at, "the grammar has more than " + std::to_string(kMaxRules) + " rules (repetitions included)");
        const int32_t id = static_cast<int32_t>(rules_.size());
        rules_.push_back(DraftRule{name, {}, false, used_at});
        index_[name] = id;
        return id;
    }

    // A rule for a group or repetition inside `base`, named base_1, base_2, ...: '_' is no word
    // character, so no rule the text defines later can have the name ("root-1" would be taken by
    // root's first group before a line "root-1 ::= ..." is read: "defined twice", or a reference to
    // root-1 bound to the group).
    int32_t generated_rule(const std::string& base, std::vector<Sequence> alts) {
        std::string name;
        do {
            name = base + "_" + std::to_string(++generated_[base]);
        } while (index_.count(name) != 0);
        const int32_t id = rule_index(name, pos_);
        DraftRule& r = rules_[static_cast<size_t>(id)];
        r.alts = std::move(alts);
        r.defined = true;
        r.generated = true;
        r.defined_at = pos_;
        return id;
    }

    void parse_rule() {
        const size_t start = pos_;
        const std::string name = parse_name();
        if (name.empty()) {
            fail(pos_, std::string("expected a rule name, found '") + peek() + "'" +
                           (peek() == '|' ? " (a rule goes on over a new line only inside parentheses)" : ""));
        }
        skip_space(false);
        if (s_.compare(pos_, 3, "::=") != 0) fail(pos_, "expected '::=' after the rule name '" + name + "'");
        pos_ += 3;
        skip_space(true);
        const int32_t id = rule_index(name, start);
        DraftRule& rule = rules_[static_cast<size_t>(id)];
        if (rule.defined) fail(start, "rule '" + name + "' is defined twice");
        rule.defined = true;
        rule.defined_at = start;
        std::vector<Sequence> alts = parse_alternatives(name, false);
        rules_[static_cast<size_t>(id)].alts = std::move(alts);
        if (!at_end() && peek() != '\n' && peek() != '\r') {
            if (peek() == ')') fail(pos_, "unbalanced parentheses: ')' without a matching '('");
            fail(pos_, std::string("unexpected '") + peek() + "'");
        }
    }

    std::vector<Sequence> parse_alternatives(const std::string& rule, bool nested) {
        std::vector<Sequence> alts;
        alts.push_back(parse_sequence(rule, nested));
        while (peek() == '|') {
            ++pos_;
            skip_space(true);
            alts.push_back(parse_sequence(rule, nested));
        }
        return alts;
    }

    Sequence parse_sequence(const std::string& rule, bool nested) {
        Sequence seq;
        size_t last_item = std::string::npos;  // where the last item (what a repetition repeats) begins
        while (!at_end()) {
            const char c = peek();
            const size_t item_start = seq.size();
            if (c == '"') {
                parse_literal(seq);
            } else if (c == '[') {
                seq.push_back(parse_class());
            } else if (c == '.') {
                ++pos_;
                GrammarElem any;
                any.kind = GRAMMAR_ANY;
                seq.push_back(any);
            } else if (is_word_char(c)) {
                const size_t at = pos_;
                seq.push_back(ref_elem(rule_index(parse_name(), at)));
            } else if (c == '(') {
                const size_t open = pos_++;
                if (++nesting_ > kMaxNesting)
                    fail(open, "parentheses nested more than " + std::to_string(kMaxNesting) + " deep");
                skip_space(true);
                std::vector<Sequence> alts = parse_alternatives(rule, true);
                if (peek() != ')') fail(open, "unbalanced parentheses: this '(' has no matching ')'");
                ++pos_;
                --nesting_;
                seq.push_back(ref_elem(generated_rule(rule, std::move(alts))));
            } else if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (last_item == std::string::npos) fail(pos_, std::string("'") + c + "' has nothing to repeat");
                parse_repetition(rule, seq, last_item);
                skip_space(nested);
                continue;  // the repeated item stays the last item
            } else if (c == '|' || c == ')' || c == '\n' || c == '\r') {
                break;
            } else {
                fail(pos_, std::string("unexpected '") + c + "'");
            }
            last_item = item_start;
            skip_space(nested);
        }
        return seq;
    }

    // One character of a literal or class: an escape or a UTF-8 encoded code point.
    uint32_t parse_char() {
        const size_t at = pos_;
        if (peek() == '\\') {
            const char e = peek(1);
            pos_ += 2;
            switch (e) {
                case 'x': return parse_hex(at, 2);
                case 'u': return parse_hex(at, 4);
                case 'U': return parse_hex(at, 8);
                case 't': return '\t';
                case 'r': return '\r';
                case 'n': return '\n';
                case '\\': case '"': case '[': case ']': case '-': case '^': return static_cast<unsigned char>(e);
                default:
                    fail(at, e == '\0' ? std::string("the text ends inside an escape")
                                       : std::string("bad escape '\\") + e + "' (use \\x, \\u, \\U, \\t, \\r, \\n, \\\\, \\\", \\[ or \\])");
            }
        }
        std::vector<uint32_t> cps;
        Utf8Partial state;
        while (cps.empty() && !at_end()) {
            state = decode_utf8(std::string(1, s_[pos_++]), state, cps);
            if (state.remain < 0) fail(at, "the grammar text is not valid UTF-8");
        }
        if (cps.empty()) fail(at, "the grammar text ends inside a character");
        return cps.front();
    }

    uint32_t parse_hex(size_t at, int digits) {
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i) {
            const int h = hex_value(peek());
            if (h < 0) fail(at, "bad escape: expected " + std::to_string(digits) + " hex digits after '" + s_.substr(at, 2) + "'");
            v = v * 16 + static_cast<uint32_t>(h);
            ++pos_;
        }
        if (v > 0x10FFFF) fail(at, "bad escape: " + s_.substr(at, pos_ - at) + " is beyond the last code point U+10FFFF");
        return v;
    }

    void parse_literal(Sequence& seq) {
        const size_t open = pos_++;
        while (peek() != '"') {
            if (at_end()) fail(open, "unterminated string literal (no closing '\"')");
            const uint32_t cp = parse_char();
            seq.push_back(char_elem(cp, cp));
        }
        ++pos_;
    }

    GrammarElem parse_class() {
        const size_t open = pos_++;
        GrammarElem e;
        e.kind = GRAMMAR_CHARS;
        if (peek() == '^') {
            e.negated = true;
            ++pos_;
        }
        while (peek() != ']') {
            if (at_end()) fail(open, "unterminated character class (no closing ']')");
            const size_t at = pos_;
            const uint32_t lo = parse_char();
            uint32_t hi = lo;
            if (peek() == '-' && peek(1) != ']' && pos_ + 1 < s_.size()) {
                ++pos_;
                hi = parse_char();
                if (hi < lo) fail(at, "character range '" + s_.substr(at, pos_ - at) + "' goes backwards");
            }
            e.ranges.push_back({lo, hi});
        }
        if (e.ranges.empty()) fail(open, "empty character class '[]'");
        ++pos_;
        return e;
    }

    int parse_count(size_t open) {
        if (peek() < '0' || peek() > '9') fail(open, "bad repetition: expected a number after '{'");
        long v = 0;
        while (peek() >= '0' && peek() <= '9') {
            v = v * 10 + (peek() - '0');
            if (v > kMaxRepeat) fail(open, "bad repetition: counts above " + std::to_string(kMaxRepeat) + " are not supported");
            ++pos_;
        }
        return static_cast<int>(v);
    }

    // Replaces the last item of seq (from `from`) by its repetition.
    void parse_repetition(const std::string& rule, Sequence& seq, size_t& from) {
        const size_t at = pos_;
        const char op = s_[pos_++];
        int min = 0, max = -1;  // -1: unbounded
        if (op == '+') min = 1;
        if (op == '?') max = 1;
        if (op == '{') {
            skip_space(false);
            min = parse_count(at);
            max = min;
            skip_space(false);
            if (peek() == ',') {
                ++pos_;
                skip_space(false);
                max = peek() == '}' ? -1 : parse_count(at);
                skip_space(false);
            }
            if (peek() != '}') fail(at, "bad repetition: expected '}'");
            ++pos_;
            if (max >= 0 && max < min) fail(at, "bad repetition: the maximum is below the minimum");
        }
        const Sequence item(seq.begin() + static_cast<std::ptrdiff_t>(from), seq.end());
        // Repetitions of repetitions multiply ("a"{10000}{10000} is 10^8 elements).
        const size_t copies = size_t(max < 0 ? min + 1 : max);
        if (item.size() * copies > kMaxElements - std::min(elements_, kMaxElements))
            fail(at, "the grammar expands to more than " + std::to_string(kMaxElements) +
                         " elements (nested repetitions multiply)");
        elements_ += item.size() * copies;
        seq.resize(from);
        for (int i = 0; i < min; ++i) seq.insert(seq.end(), item.begin(), item.end());
        if (max < 0) {
            // star ::= item star | (empty)
            const int32_t star = generated_rule(rule, {});
            Sequence again = item;
            again.push_back(ref_elem(star));
            rules_[static_cast<size_t>(star)].alts = {again, Sequence{}};
            seq.push_back(ref_elem(star));
        } else if (max > min) {
            // opt_k ::= item opt_(k-1) | (empty): up to max - min more items.
            int32_t inner = -1;
            for (int k = 0; k < max - min; ++k) {
                Sequence alt = item;
                if (inner >= 0) alt.push_back(ref_elem(inner));
                inner = generated_rule(rule, {alt, Sequence{}});
            }
            seq.push_back(ref_elem(inner));
        }
        from = std::min(from, seq.size());
    }

    Grammar finish();

    const std::string& s_;
    size_t pos_ = 0;
    std::vector<DraftRule> rules_;
    std::map<std::string, int32_t> index_;
    std::map<std::string, int> generated_;
    int nesting_ = 0;
    size_t elements_ = 0;
};

// Rules that can match the empty string: a rule is nullable once one of its alternatives is, and an
// alternative once every element is a reference to a nullable rule. Worked off a queue (each
// alternative counts the references still open), as finishing_rules below, so a chain of 10^5 rules
// is one pass, not a pass per rule.
std::vector<bool> nullable_rules(const std::vector<DraftRule>& rules) {
    constexpr size_t kNever = SIZE_MAX;  // an alternative with a terminal: never empty
    std::vector<size_t> open;            // per alternative: references to rules not yet known nullable
    std::vector<size_t> owner;           // per alternative: its rule
    std::vector<std::vector<size_t>> waiting(rules.size());  // per rule: alternatives referring to it
    std::vector<bool> nullable(rules.size(), false);
    std::vector<size_t> queue;
    for (size_t r = 0; r < rules.size(); ++r) {
        for (const Sequence& alt : rules[r].alts) {
            bool terminal = false;
            for (const GrammarElem& e : alt) terminal = terminal || e.kind != GRAMMAR_RULE_REF;
            const size_t id = open.size();
            open.push_back(terminal ? kNever : alt.size());
            owner.push_back(r);
            if (terminal) continue;
            for (const GrammarElem& e : alt) waiting[static_cast<size_t>(e.rule)].push_back(id);
            if (alt.empty() && !nullable[r]) {
                nullable[r] = true;
                queue.push_back(r);
            }
        }
    }
    while (!queue.empty()) {
        const size_t r = queue.back();
        queue.pop_back();
        for (size_t id : waiting[r]) {
            if (open[id] == kNever || --open[id] != 0 || nullable[owner[id]]) continue;
            nullable[owner[id]] = true;
            queue.push_back(owner[id]);
        }
    }
    return nullable;
}

// A rule that can reach itself without consuming a character would make the matcher expand forever.
void refuse_left_recursion(const std::vector<DraftRule>& rules) {
    const std::vector<bool> nullable = nullable_rules(rules);
    std::vector<std::vector<int32_t>> first(rules.size());  // rules reachable at the start of a rule
    for (size_t r = 0; r < rules.size(); ++r)
        for (const Sequence& alt : rules[r].alts)
            for (const GrammarElem& e : alt) {
                if (e.kind != GRAMMAR_RULE_REF) break;
                first[r].push_back(e.rule);
                if (!nullable[static_cast<size_t>(e.rule)]) break;
            }
    // Depth-first over the "first" edges with an explicit stack (a chain of 10^5 rules must not
    // exhaust the call stack); a rule met again while it is on the path closes a cycle.
    std::vector<int> state(rules.size(), 0);  // 0 unvisited, 1 on the path, 2 done
    std::vector<std::pair<int32_t, size_t>> path;  // rule, next edge to follow
    for (size_t start = 0; start < rules.size(); ++start) {
        if (state[start] != 0) continue;
        state[start] = 1;
        path.push_back({static_cast<int32_t>(start), 0});
        while (!path.empty()) {
            auto& [r, edge] = path.back();
            const std::vector<int32_t>& edges = first[static_cast<size_t>(r)];
            if (edge == edges.size()) {
                state[static_cast<size_t>(r)] = 2;
                path.pop_back();
                continue;
            }
            const int32_t next = edges[edge++];
            if (state[static_cast<size_t>(next)] == 1) {
                std::string cycle;
                bool on = false;
                for (const auto& step : path) {
                    on = on || step.first == next;
                    if (on) cycle += rules[static_cast<size_t>(step.first)].name + " -> ";
                }
                throw GrammarLeftRecursionError("grammar: rule '" + rules[static_cast<size_t>(next)].name +
                            "' is left-recursive (" + cycle + rules[static_cast<size_t>(next)].name +
                            " without consuming a character); write it with repetition instead, e.g. "
                            "list ::= item (\",\" item)*",
                                                rules[static_cast<size_t>(next)].name);
            }
            if (state[static_cast<size_t>(next)] == 0) {
                state[static_cast<size_t>(next)] = 1;
                path.push_back({next, 0});
            }
        }
    }
}

// Whether an element can match some character: a negated class whose ranges together cover every
// code point matches none.
bool matches_a_character(const GrammarElem& e) {
    if (e.kind != GRAMMAR_CHARS || !e.negated) return true;
    std::vector<std::pair<uint32_t, uint32_t>> ranges = e.ranges;
    std::sort(ranges.begin(), ranges.end());
    uint64_t uncovered = 0;  // the first code point no range so far takes away
    for (const auto& [lo, hi] : ranges) {
        if (lo > uncovered) return true;
        uncovered = std::max<uint64_t>(uncovered, uint64_t(hi) + 1);
    }
    return uncovered <= 0x10FFFF;
}

// Rules that can match some finite text: a rule finishes once one of its alternatives does, and an
// alternative once every rule it refers to does. Worked off a queue (each alternative counts the
// references still open), so a chain of 10^5 rules is one pass, not a pass per rule.
std::vector<bool> finishing_rules(const std::vector<DraftRule>& rules) {
    constexpr size_t kDead = SIZE_MAX;  // an alternative with a character nothing matches
    std::vector<size_t> open;           // per alternative: references to rules not yet known to finish
    std::vector<size_t> owner;          // per alternative: its rule
    std::vector<std::vector<size_t>> waiting(rules.size());  // per rule: alternatives referring to it
    std::vector<bool> finishes(rules.size(), false);
    std::vector<size_t> queue;
    for (size_t r = 0; r < rules.size(); ++r) {
        for (const Sequence& alt : rules[r].alts) {
            const size_t id = open.size();
            size_t refs = 0;
            bool dead = false;
            for (const GrammarElem& e : alt) {
                if (e.kind == GRAMMAR_RULE_REF) {
                    waiting[static_cast<size_t>(e.rule)].push_back(id);
                    ++refs;
                } else if (!matches_a_character(e)) {
                    dead = true;
                }
            }
            open.push_back(dead ? kDead : refs);
            owner.push_back(r);
            if (!dead && refs == 0 && !finishes[r]) {
                finishes[r] = true;
                queue.push_back(r);
            }
        }
    }
    while (!queue.empty()) {
        const size_t r = queue.back();
        queue.pop_back();
        for (size_t id : waiting[r]) {
            if (open[id] == kDead || --open[id] != 0 || finishes[owner[id]]) continue;
            finishes[owner[id]] = true;
            queue.push_back(owner[id]);
        }
    }
    return finishes;
}

// A rule the matcher can reach that never finishes: the rule to blame and why.
struct NeverFinishes {
    size_t rule;
    std::string why;
};

// A rule reachable from root that can match no finite text would let the reply start down it and
// never end (llama.cpp finds this only while generating). From the first such rule, references to
// rules that never finish either are followed until one comes round again: that cycle is the cause,
// named by its first rule the user wrote (a group's or repetition's rule is part of one).
std::optional<NeverFinishes> find_never_finishing(const std::vector<DraftRule>& rules, size_t root) {
    const std::vector<bool> finishes = finishing_rules(rules);
    std::vector<bool> reached(rules.size(), false);
    std::vector<size_t> order{root};  // breadth-first from root
    reached[root] = true;
    size_t start = SIZE_MAX;
    for (size_t i = 0; i < order.size() && start == SIZE_MAX; ++i) {
        if (!finishes[order[i]]) start = order[i];
        for (const Sequence& alt : rules[order[i]].alts)
            for (const GrammarElem& e : alt)
                if (e.kind == GRAMMAR_RULE_REF && !reached[static_cast<size_t>(e.rule)]) {
                    reached[static_cast<size_t>(e.rule)] = true;
                    order.push_back(static_cast<size_t>(e.rule));
                }
    }
    if (start == SIZE_MAX) return std::nullopt;
    std::vector<size_t> path;
    std::vector<size_t> at(rules.size(), SIZE_MAX);  // position on the path
    for (size_t r = start;;) {
        at[r] = path.size();
        path.push_back(r);
        size_t next = SIZE_MAX;
        for (const Sequence& alt : rules[r].alts)
            for (const GrammarElem& e : alt)
                if (next == SIZE_MAX && e.kind == GRAMMAR_RULE_REF && !finishes[static_cast<size_t>(e.rule)])
                    next = static_cast<size_t>(e.rule);
        if (next == SIZE_MAX)  // every alternative holds a character class that matches nothing
            return NeverFinishes{r, "rule '" + rules[r].name + "' can never finish: each of its alternatives needs a "
                                    "character that its class excludes (a class such as [^\\x00-\\U0010FFFF] matches none)"};
        if (at[next] == SIZE_MAX) {
            r = next;
            continue;
        }
        std::vector<size_t> cycle(path.begin() + static_cast<std::ptrdiff_t>(at[next]), path.end());
        const auto named = std::find_if(cycle.begin(), cycle.end(), [&](size_t c) { return !rules[c].generated; });
        std::rotate(cycle.begin(), named == cycle.end() ? cycle.begin() : named, cycle.end());
        std::string chain;
        for (size_t c : cycle)
            if (!rules[c].generated || c == cycle.front()) chain += rules[c].name + " -> ";
        const std::string& name = rules[cycle.front()].name;
        return NeverFinishes{cycle.front(), "rule '" + name + "' can never finish: every alternative of it goes on to a "
                                            "rule that cannot finish either (" + chain + name + "), so no text "
                                            "matches it; give it a way out, e.g. " + name + " ::= \"x\" " + name +
                                            " | \"x\""};
    }
}

Grammar GbnfParser::finish() {
    for (const DraftRule& r : rules_)
        if (!r.defined) fail(r.first_use, "undefined rule '" + r.name + "'");
    auto root = index_.find("root");
    if (root == index_.end()) throw Error("grammar: there is no 'root' rule (matching starts at root ::= ...)");
    refuse_left_recursion(rules_);
    if (const auto never = find_never_finishing(rules_, static_cast<size_t>(root->second)))
        throw GrammarNeverFinishesError(place(rules_[never->rule].defined_at) + never->why, rules_[never->rule].name);
    Grammar g;
    g.root = root->second;
    for (DraftRule& r : rules_) {
        GrammarRule out;
        out.name = r.name;
        for (Sequence& alt : r.alts) {
            out.alts.push_back(static_cast<int32_t>(g.elems.size()));
            for (GrammarElem& e : alt) g.elems.push_back(std::move(e));
            g.elems.push_back(GrammarElem{});
        }
        g.rules.push_back(std::move(out));
    }
    return g;
}

}  // namespace

Grammar parse_gbnf(const std::string& text) { return GbnfParser(text).parse(); }

int32_t Grammar::find_rule(const std::string& name) const {
    for (size_t i = 0; i < rules.size(); ++i)
        if (rules[i].name == name) return static_cast<int32_t>(i);
    return -1;
}

bool GrammarElem::matches(uint32_t cp) const {
    if (kind == GRAMMAR_ANY) return true;
    if (kind != GRAMMAR_CHARS) return false;
    bool in = false;
    for (const auto& [lo, hi] : ranges) in = in || (cp >= lo && cp <= hi);
    return in != negated;
}

bool GrammarElem::matches_some(uint32_t lo, uint32_t hi) const {
    if (kind == GRAMMAR_ANY) return true;
    if (kind != GRAMMAR_CHARS) return false;
    for (const auto& [a, b] : ranges) {
        if (!negated && a <= hi && b >= lo) return true;
        if (negated && a <= lo && b >= hi) return false;  // one range covers them all
    }
    return negated;
}

Utf8Partial decode_utf8(const std::string& bytes, Utf8Partial st, std::vector<uint32_t>& out) {
    for (unsigned char b : bytes) {
        if (st.remain < 0) return st;
        if (st.remain > 0) {
            if ((b & 0xC0) != 0x80) return Utf8Partial{0, -1, 0};
            st.value = (st.value << 6) | (b & 0x3Fu);
            if (--st.remain == 0) {
                // Not UTF-8: an overlong form ("\xC1\xBB" for '{'), a surrogate, or beyond U+10FFFF.
                static constexpr uint32_t kFirstOfLength[5] = {0, 0, 0x80, 0x800, 0x10000};
                if (st.value < kFirstOfLength[st.length] || (st.value >= 0xD800 && st.value <= 0xDFFF) ||
                    st.value > 0x10FFFF)
                    return Utf8Partial{0, -1, 0};
                out.push_back(st.value);
                st.value = 0;
            }
        } else if (b < 0x80) {
            out.push_back(b);
        } else if ((b & 0xE0) == 0xC0) {
            st = {b & 0x1Fu, 1, 2};
        } else if ((b & 0xF0) == 0xE0) {
            st = {b & 0x0Fu, 2, 3};
        } else if ((b & 0xF8) == 0xF0) {
            st = {b & 0x07u, 3, 4};
        } else {
            return Utf8Partial{0, -1, 0};
        }
    }
    return st;
}

}  // namespace wb
