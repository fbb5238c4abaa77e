#include "sampling/grammar/grammar_constraint.h"

#include <chrono>

#include "sampling/samplers.h"
#include "util/error.h"

namespace wb {

// Below this many candidates checking each piece on its own beats a walk of the whole trie.
constexpr size_t kTrieFrom = 1024;

GrammarConstraint::GrammarConstraint(const std::string& gbnf, std::shared_ptr<const SamplerVocab> vocab)
    : source_(gbnf), vocab_(std::move(vocab)), matcher_(std::make_shared<const Grammar>(parse_gbnf(gbnf))) {
    if (!vocab_ || !vocab_->piece) throw Error("a grammar needs the model's vocabulary (none was given to the sampler)");
}

void GrammarConstraint::reset() {
    matcher_.reset();
    text_.clear();
}

std::string GrammarConstraint::piece(int32_t token) const {
    std::string p = vocab_->piece(token);
    if (!p.empty() && p[0] == '\0') p.clear();
    return p;
}

bool GrammarConstraint::allows(int32_t token) const {
    if (is_eog(token)) return matcher_.complete();
    const std::string p = piece(token);
    return !p.empty() && matcher_.allows(p);
}

void GrammarConstraint::build_trie() {
    VocabTrieCache& cache = *vocab_->tries;
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (!cache.trie) {
        std::vector<std::string> pieces(size_t(vocab_->n_vocab));
        for (int32_t id = 0; id < vocab_->n_vocab; ++id)
            if (!is_eog(id)) pieces[size_t(id)] = piece(id);
        cache.trie = std::make_shared<const VocabTrie>(pieces);
    }
    trie_ = cache.trie;
    allowed_.assign(size_t(vocab_->n_vocab), 0);
}

void GrammarConstraint::filter(CandidateSet& cands) {
    const size_t before = cands.data.size();
    const auto t0 = std::chrono::steady_clock::now();
    std::string how;
    if (before >= kTrieFrom && vocab_->n_vocab > 0) {
        if (!trie_) build_trie();
        std::fill(allowed_.begin(), allowed_.end(), 0);
        const size_t visited = trie_->mark_allowed(matcher_, allowed_);
        const bool eog_ok = matcher_.complete();
        auto keep = [&](const Candidate& c) {
            if (c.id < 0 || size_t(c.id) >= allowed_.size()) return false;
            return is_eog(c.id) ? eog_ok : allowed_[size_t(c.id)] != 0;
        };
        std::erase_if(cands.data, [&](const Candidate& c) { return !keep(c); });
        how = ", " + std::to_string(visited) + " trie nodes";
    } else {
        std::erase_if(cands.data, [&](const Candidate& c) { return !allows(c.id); });
    }
    cands.selected = -1;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    last_filter_ = "kept " + std::to_string(cands.data.size()) + " of " + std::to_string(before) +
                   " tokens the grammar allows (" + format_number(ms) + " ms" + how + ")";
    if (cands.data.empty()) {
        throw Error("the grammar allows no token after \"" + text_ +
                    "\": it cannot be satisfied from here (is an end-of-generation token needed but missing?)");
    }
}

// The end of a text for a message: at most max_bytes, starting on a whole UTF-8 character, new lines
// written as \n so the message stays one line.
static std::string quoted_tail(const std::string& text, size_t max_bytes) {
    size_t from = text.size() > max_bytes ? text.size() - max_bytes : 0;
    while (from < text.size() && (static_cast<unsigned char>(text[from]) & 0xC0) == 0x80) ++from;
    std::string out = from > 0 ? "..." : "";
    for (size_t i = from; i < text.size(); ++i) out += text[i] == '\n' ? std::string("\\n") : std::string(1, text[i]);
    return "\"" + out + "\"";
}

bool GrammarConstraint::accept_all(const int32_t* tokens, size_t n, std::string* why) {
    for (size_t i = 0; i < n; ++i) {
        const int32_t token = tokens[i];
        const std::string p = is_eog(token) ? std::string() : piece(token);
        if (!p.empty() && matcher_.allows(p)) {
            matcher_.accept(p);
            text_ += p;
            continue;
        }
        const std::string what = p.empty() ? "token " + std::to_string(token) + " (it has no text)" : quoted_tail(p, 40);
        *why = "the reply so far does not parse under it: " +
               (text_.empty() ? "it cannot start with " + what : "after " + quoted_tail(text_, 40) + " it does not allow " + what) +
               " (token " + std::to_string(i + 1) + " of the reply)";
        return false;
    }
    return true;
}

void GrammarConstraint::accept(int32_t token) {
    if (is_eog(token)) {
        if (!matcher_.complete()) throw Error("the grammar does not allow the end of generation here");
        return;
    }
    const std::string p = piece(token);
    if (p.empty()) throw Error("the grammar does not allow token " + std::to_string(token) + " (it has no text)");
    matcher_.accept(p);
    text_ += p;
}

}  // namespace wb
