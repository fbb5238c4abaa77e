#pragma once
// A byte trie over the pieces of a vocabulary, so that the tokens a grammar allows are found by one
// walk that shares the work of common prefixes and drops a whole subtree at its first wrong byte:
// of Gemma 3's 262,144 pieces, a state that wants `"` or a digit visits a few hundred nodes.
#include <cstdint>
#include <string>
#include <vector>

#include "sampling/grammar/grammar_matcher.h"

namespace wb {

class VocabTrie {
public:
    // pieces[id] is token id's text; empty pieces are left out (never allowed).
    explicit VocabTrie(const std::vector<std::string>& pieces);

    // Sets allowed[id] = 1 for every token whose piece can follow the matcher's text (allowed has
    // one entry per token, cleared by the caller). Returns the number of nodes visited.
    size_t mark_allowed(const GrammarMatcher& matcher, std::vector<uint8_t>& allowed) const;

    size_t n_nodes() const { return nodes_.size(); }

private:
    struct Node {
        uint32_t first_child = 0, n_children = 0;  // into child_byte_ / child_node_
        uint32_t first_token = 0, n_tokens = 0;    // into tokens_: pieces that end here
    };
    uint32_t build(const std::vector<std::string>& pieces, const std::vector<int32_t>& order, size_t lo, size_t hi,
                   size_t depth);
    void visit(const GrammarMatcher& m, uint32_t node, const std::vector<GrammarMatcher::Stack>& stacks,
               const Utf8Partial& partial, std::vector<uint8_t>& allowed, size_t& visited) const;

    std::vector<Node> nodes_;
    std::vector<uint8_t> child_byte_;
    std::vector<uint32_t> child_node_;
    std::vector<int32_t> tokens_;
};

}  // namespace wb
