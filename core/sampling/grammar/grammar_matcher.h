#pragma once
// Matching text against a Grammar, one code point at a time, as a pushdown automaton that follows
// every parse at once: the state is a set of stacks of positions in the grammar's elements. The top of
// a stack is always a character element (what the next code point must match); the positions below it
// are where to continue once the rule above is done. An empty stack is a finished parse.
#include <memory>
#include <string>
#include <vector>

#include "sampling/grammar/gbnf.h"

namespace wb {

class GrammarMatcher {
public:
    using Stack = std::vector<int32_t>;  // indices into Grammar::elems, top last

    struct State {
        std::vector<Stack> stacks;  // sorted, without duplicates
        Utf8Partial partial;        // an incomplete UTF-8 character read after the stacks' text
    };

    explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

    // Back to the start of the root rule.
    void reset();
    const State& state() const { return state_; }
    const Grammar& grammar() const { return *grammar_; }

    // The text so far is a complete match of root (end of generation may come now).
    bool complete() const;
    // Whether these bytes can follow the text so far (they may end inside a UTF-8 character).
    bool allows(const std::string& bytes) const;
    // Appends bytes; wb::Error when the grammar does not allow them (the state is then unchanged).
    void accept(const std::string& bytes);

    // The state after one more byte; false (out untouched or partial) when no parse survives it.
    bool feed_byte(const State& in, unsigned char byte, State& out) const;
    // The same for a walk over many byte strings that shares its states (VocabTrie): when the byte
    // completes no code point the stacks stay those given (advanced false, out_stacks untouched), so
    // the first bytes of a UTF-8 character cost no copy of the stacks.
    bool step_byte(const std::vector<Stack>& stacks, const Utf8Partial& partial, unsigned char byte,
                   std::vector<Stack>& out_stacks, Utf8Partial& out_partial, bool& advanced) const;
    // Whether a state can still continue (some stack can take the pending partial character).
    bool alive(const State& st) const { return alive(st.stacks, st.partial); }
    bool alive(const std::vector<Stack>& stacks, const Utf8Partial& partial) const;

private:
    void expand(Stack stack, std::vector<Stack>& out) const;
    std::vector<Stack> advance(const std::vector<Stack>& stacks, uint32_t cp) const;
    bool feed(const State& in, const std::string& bytes, State& out) const;

    std::shared_ptr<const Grammar> grammar_;
    State state_;
};

}  // namespace wb
