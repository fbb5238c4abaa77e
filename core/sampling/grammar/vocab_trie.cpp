#include "sampling/grammar/vocab_trie.h"

#include <algorithm>

namespace wb {

VocabTrie::VocabTrie(const std::vector<std::string>& pieces) {
    std::vector<int32_t> order;
    order.reserve(pieces.size());
    for (size_t id = 0; id < pieces.size(); ++id)
        if (!pieces[id].empty()) order.push_back(static_cast<int32_t>(id));
    // In byte order a piece comes before every piece it is a prefix of, so each node's pieces are one
    // run of `order` and the pieces ending at the node lead it.
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return pieces[size_t(a)] != pieces[size_t(b)] ? pieces[size_t(a)] < pieces[size_t(b)] : a < b;
    });
    build(pieces, order, 0, order.size(), 0);
}

uint32_t VocabTrie::build(const std::vector<std::string>& pieces, const std::vector<int32_t>& order, size_t lo,
                          size_t hi, size_t depth) {
    const uint32_t index = static_cast<uint32_t>(nodes_.size());
    nodes_.push_back(Node{});
    nodes_[index].first_token = static_cast<uint32_t>(tokens_.size());
    while (lo < hi && pieces[size_t(order[lo])].size() == depth) tokens_.push_back(order[lo++]);
    nodes_[index].n_tokens = static_cast<uint32_t>(tokens_.size()) - nodes_[index].first_token;

    std::vector<std::pair<size_t, size_t>> groups;  // runs sharing the byte at depth
    for (size_t i = lo; i < hi;) {
        const char b = pieces[size_t(order[i])][depth];
        size_t j = i + 1;
        while (j < hi && pieces[size_t(order[j])][depth] == b) ++j;
        groups.push_back({i, j});
        i = j;
    }
    const uint32_t first = static_cast<uint32_t>(child_byte_.size());
    nodes_[index].first_child = first;
    nodes_[index].n_children = static_cast<uint32_t>(groups.size());
    child_byte_.resize(first + groups.size());
    child_node_.resize(first + groups.size());
    for (size_t g = 0; g < groups.size(); ++g) {
        child_byte_[first + g] = static_cast<uint8_t>(pieces[size_t(order[groups[g].first])][depth]);
        const uint32_t child = build(pieces, order, groups[g].first, groups[g].second, depth + 1);
        child_node_[first + g] = child;
    }
    return index;
}

size_t VocabTrie::mark_allowed(const GrammarMatcher& matcher, std::vector<uint8_t>& allowed) const {
    size_t visited = 0;
    if (!nodes_.empty()) visit(matcher, 0, matcher.state().stacks, matcher.state().partial, allowed, visited);
    return visited;
}

// The stacks are shared with the parent while a UTF-8 character is incomplete (step_byte leaves
// them as they are), so Gemma's many multi-byte pieces cost no copy per node.
void VocabTrie::visit(const GrammarMatcher& m, uint32_t node, const std::vector<GrammarMatcher::Stack>& stacks,
                      const Utf8Partial& partial, std::vector<uint8_t>& allowed, size_t& visited) const {
    ++visited;
    const Node& n = nodes_[node];
    std::vector<GrammarMatcher::Stack> next;  // reused by the children that complete a code point
    Utf8Partial next_partial;
    for (uint32_t c = n.first_child; c < n.first_child + n.n_children; ++c) {
        bool advanced = false;
        if (!m.step_byte(stacks, partial, child_byte_[c], next, next_partial, advanced)) continue;  // nothing below can match either
        const Node& child = nodes_[child_node_[c]];
        for (uint32_t t = child.first_token; t < child.first_token + child.n_tokens; ++t)
            allowed[size_t(tokens_[t])] = 1;
        if (child.n_children > 0) visit(m, child_node_[c], advanced ? next : stacks, next_partial, allowed, visited);
    }
}

}  // namespace wb
