#pragma once
// The grammar as the sampler chain uses it: which tokens of the model's vocabulary may come next, and
// the text so far. End-of-generation tokens are allowed exactly when the text is a complete match;
// tokens with an empty piece (or one starting with a NUL byte) never are, as in llama.cpp.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sampling/grammar/grammar_matcher.h"
#include "sampling/grammar/vocab_trie.h"
#include "sampling/sampler.h"

namespace wb {

class GrammarConstraint {
public:
    // Parses gbnf (wb::Error as parse_gbnf). vocab must give piece(); is_eog is optional.
    GrammarConstraint(const std::string& gbnf, std::shared_ptr<const SamplerVocab> vocab);

    const std::string& source() const { return source_; }
    // wb::Error when no token of the vocabulary can begin a text the grammar accepts (an end of
    // generation counts where the grammar accepts the empty text), naming what it must start with:
    // such a grammar would otherwise fail only at the reply's first draw, after the prompt's prefill.
    // Nothing is checked when the vocabulary's size is not known (n_vocab <= 0).
    void check_can_start() const;
    // Back to an empty text.
    void reset();
    bool allows(int32_t token) const;
    // The tokens below n_row that the grammar allows, ascending (the candidates of a row of n_row
    // logits it keeps, in the row's order), found without a pass over candidates: one walk of the
    // vocabulary's trie, the end-of-generation tokens from a list. A caller then reads only their
    // logits; inside a JSON structure that is a few dozen of 262k. wb::Error when none is allowed
    // (the grammar cannot continue from the text so far).
    const std::vector<int32_t>& allowed_tokens(int32_t n_row);
    // Appends the token's piece to the text (wb::Error if the grammar does not allow it).
    void accept(int32_t token);
    // accept() of each token in turn (a reply generated before this grammar was chosen); false at the
    // first one the grammar does not allow, with *why naming it and the text before it (the text is
    // then part-way: the caller drops this constraint).
    bool accept_all(const int32_t* tokens, size_t n, std::string* why);
    bool complete() const { return matcher_.complete(); }
    bool is_eog(int32_t token) const { return vocab_->is_eog && vocab_->is_eog(token); }
    // What the last allowed_tokens() found, for the sampler trace.
    const std::string& last_filter() const { return last_filter_; }
    // The trie allowed_tokens() walks (null before the first): the same object for every grammar over
    // one SamplerVocab.
    const VocabTrie* trie() const { return trie_.get(); }

private:
    std::string piece(int32_t token) const;
    void build_trie();
    // allowed_[id] = 1 for every token allowed now (builds the trie first); returns the nodes visited.
    size_t mark_allowed();

    std::string source_;
    std::shared_ptr<const SamplerVocab> vocab_;
    GrammarMatcher matcher_;
    std::string text_;  // accepted so far, for error messages
    std::shared_ptr<const VocabTrie> trie_;  // the vocabulary's (SamplerVocab::tries), from the first allowed_tokens()
    std::vector<int32_t> eog_;  // the vocabulary's end-of-generation tokens (not in the trie), with it
    std::vector<uint8_t> allowed_;
    std::vector<int32_t> allowed_ids_;  // allowed_tokens()' answer
    std::string last_filter_;
};

}  // namespace wb
