#include "sampling/grammar/grammar_matcher.h"

#include <algorithm>
#include <string>

#include "util/error.h"

namespace wb {

static void normalise(std::vector<GrammarMatcher::Stack>& stacks) {
    std::sort(stacks.begin(), stacks.end());
    stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
    if (!grammar_ || grammar_->root < 0) throw Error("grammar matcher: no grammar (or no root rule)");
    reset();
}

void GrammarMatcher::reset() {
    state_ = State{};
    for (int32_t alt : grammar_->rules[static_cast<size_t>(grammar_->root)].alts) expand(Stack{alt}, state_.stacks);
    normalise(state_.stacks);
}

// More ways to go on than this at one character is no grammar a person wrote ((("a"?){0,9999}){0,9999}
// would be 10^8): an error rather than a hang.
constexpr size_t kMaxStacks = size_t(1) << 16;

[[noreturn]] static void too_ambiguous() {
    throw Error("the grammar is too ambiguous: more than " + std::to_string(kMaxStacks) +
                " ways to continue at one character (nested optional repetitions multiply)");
}

// Pops finished alternatives and replaces a rule reference on top by each of the rule's
// alternatives, until every stack has a character element on top (or is empty: a finished parse).
// Terminates because the parser refuses left recursion; a work list, not recursion, so a long chain
// of optional rules cannot exhaust the call stack.
void GrammarMatcher::expand(Stack start, std::vector<Stack>& out) const {
    const std::vector<GrammarElem>& elems = grammar_->elems;
    std::vector<Stack> todo;
    todo.push_back(std::move(start));
    size_t made = 0;
    while (!todo.empty()) {
        Stack stack = std::move(todo.back());
        todo.pop_back();
        for (;;) {
            if (stack.empty()) {
                out.push_back(std::move(stack));
                break;
            }
            const int32_t top = stack.back();
            const GrammarElem& e = elems[static_cast<size_t>(top)];
            if (e.kind == GRAMMAR_END) {
                stack.pop_back();
                continue;
            }
            if (e.kind != GRAMMAR_RULE_REF) {
                out.push_back(std::move(stack));
                break;
            }
            stack.pop_back();
            // A reference that ends its alternative leaves nothing to come back to: not pushing it keeps
            // stacks of right-recursive rules (x ::= "a" x | ...) from growing with the text.
            if (elems[static_cast<size_t>(top) + 1].kind != GRAMMAR_END) stack.push_back(top + 1);
            const std::vector<int32_t>& alts = grammar_->rules[static_cast<size_t>(e.rule)].alts;
            for (size_t i = 0; i + 1 < alts.size(); ++i) {
                Stack branch = stack;
                branch.push_back(alts[i]);
                todo.push_back(std::move(branch));
                if (++made > kMaxStacks) too_ambiguous();
            }
            stack.push_back(alts.back());
        }
        if (out.size() > kMaxStacks) too_ambiguous();
    }
}

std::vector<GrammarMatcher::Stack> GrammarMatcher::advance(const std::vector<Stack>& stacks, uint32_t cp) const {
    std::vector<Stack> out;
    for (const Stack& s : stacks) {
        if (s.empty() || !grammar_->elems[static_cast<size_t>(s.back())].matches(cp)) continue;
        Stack next = s;
        next.back() += 1;  // the element after the character (maybe the end of the alternative)
        expand(std::move(next), out);
    }
    normalise(out);
    return out;
}

bool GrammarMatcher::alive(const std::vector<Stack>& stacks, const Utf8Partial& partial) const {
    if (stacks.empty() || partial.remain < 0) return false;
    if (partial.remain == 0) return true;
    // The code points the pending character can still become.
    const int shift = 6 * partial.remain;
    // An overlong form (0xC1 0xBB for '{') is not UTF-8: the smallest code point of each length is
    // the first one that needs it.
    static constexpr uint32_t kFirstOfLength[5] = {0, 0, 0x80, 0x800, 0x10000};
    const uint32_t lo = std::max(partial.value << shift, kFirstOfLength[std::clamp(partial.length, 0, 4)]);
    const uint32_t hi = std::min((partial.value << shift) | ((1u << shift) - 1u), 0x10FFFFu);
    if (lo > hi) return false;
    for (const Stack& s : stacks)
        if (!s.empty() && grammar_->elems[static_cast<size_t>(s.back())].matches_some(lo, hi)) return true;
    return false;
}

bool GrammarMatcher::step_byte(const std::vector<Stack>& stacks, const Utf8Partial& partial, unsigned char byte,
                               std::vector<Stack>& out_stacks, Utf8Partial& out_partial, bool& advanced) const {
    // One buffer per thread: this runs once per trie node, hundreds of thousands of times a filter.
    thread_local std::vector<uint32_t> cps;
    cps.clear();
    out_partial = decode_utf8(std::string(1, static_cast<char>(byte)), partial, cps);
    advanced = false;
    if (out_partial.remain < 0) return false;
    if (cps.empty()) return alive(stacks, out_partial);
    out_stacks = advance(stacks, cps.front());
    advanced = true;
    return alive(out_stacks, out_partial);
}

bool GrammarMatcher::feed_byte(const State& in, unsigned char byte, State& out) const {
    bool advanced = false;
    const bool ok = step_byte(in.stacks, in.partial, byte, out.stacks, out.partial, advanced);
    if (!advanced) out.stacks = in.stacks;
    return ok;
}

bool GrammarMatcher::feed(const State& in, const std::string& bytes, State& out) const {
    std::vector<uint32_t> cps;
    out.partial = decode_utf8(bytes, in.partial, cps);
    if (out.partial.remain < 0) return false;
    out.stacks = in.stacks;
    for (uint32_t cp : cps) {
        out.stacks = advance(out.stacks, cp);
        if (out.stacks.empty()) return false;
    }
    return alive(out);
}

bool GrammarMatcher::complete() const {
    if (state_.partial.remain != 0) return false;
    for (const Stack& s : state_.stacks)
        if (s.empty()) return true;
    return false;
}

bool GrammarMatcher::allows(const std::string& bytes) const {
    State out;
    return feed(state_, bytes, out);
}

void GrammarMatcher::accept(const std::string& bytes) {
    State out;
    if (!feed(state_, bytes, out)) throw Error("the grammar does not allow '" + bytes + "' here");
    state_ = std::move(out);
}

}  // namespace wb
