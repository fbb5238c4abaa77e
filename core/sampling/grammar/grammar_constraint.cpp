#include "sampling/grammar/grammar_constraint.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "sampling/samplers.h"
#include "util/error.h"

namespace wb {

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
        std::vector<int32_t> eog;
        for (int32_t id = 0; id < vocab_->n_vocab; ++id) {
            if (is_eog(id)) eog.push_back(id);
            else pieces[size_t(id)] = piece(id);
        }
        cache.trie = std::make_shared<const VocabTrie>(pieces);
        cache.eog = std::move(eog);
    }
    trie_ = cache.trie;
    eog_ = cache.eog;
    allowed_.assign(size_t(vocab_->n_vocab), 0);
}

size_t GrammarConstraint::mark_allowed() {
    if (!trie_) build_trie();
    std::fill(allowed_.begin(), allowed_.end(), 0);
    const size_t visited = trie_->mark_allowed(matcher_, allowed_);
    // From the list rather than asking is_eog of every token: a call through std::function per token
    // of a 262k vocabulary cost more than the trie walk of a JSON structure's state.
    if (matcher_.complete())
        for (int32_t id : eog_) allowed_[size_t(id)] = 1;
    return visited;
}

static double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

const std::vector<int32_t>& GrammarConstraint::allowed_tokens(int32_t n_row) {
    const auto t0 = std::chrono::steady_clock::now();
    allowed_ids_.clear();
    std::string how;
    if (vocab_->n_vocab > 0) {
        const size_t visited = mark_allowed();
        const size_t n = std::min(allowed_.size(), size_t(std::max(n_row, 0)));
        // Eight marks at a time: inside a JSON structure nearly every word of 262k marks is zero.
        for (size_t id = 0; id < n;) {
            uint64_t word = 0;
            if (id + 8 <= n) std::memcpy(&word, allowed_.data() + id, 8);
            if (id + 8 <= n && word == 0) {
                id += 8;
                continue;
            }
            if (allowed_[id]) allowed_ids_.push_back(int32_t(id));
            ++id;
        }
        how = ", " + std::to_string(visited) + " trie nodes";
    } else {
        for (int32_t id = 0; id < n_row; ++id)
            if (allows(id)) allowed_ids_.push_back(id);
    }
    last_filter_ = "kept " + std::to_string(allowed_ids_.size()) + " of " + std::to_string(std::max(n_row, 0)) +
                   " tokens the grammar allows (" + format_number(ms_since(t0)) + " ms" + how + ")";
    if (allowed_ids_.empty()) {
        throw Error("the grammar allows no token after \"" + text_ +
                    "\": it cannot be satisfied from here (is an end-of-generation token needed but missing?)");
    }
    return allowed_ids_;
}

// One code point for a message, as GBNF would write it inside a class or a literal.
static std::string gbnf_char(uint32_t cp) {
    if (cp >= 0x20 && cp < 0x7F && std::string_view("\"\\[]^-").find(char(cp)) == std::string_view::npos)
        return std::string(1, char(cp));
    char buf[16];
    std::snprintf(buf, sizeof buf, cp < 0x100 ? "\\x%02X" : (cp < 0x10000 ? "\\u%04X" : "\\U%08X"), unsigned(cp));
    return buf;
}

// What a character element matches, as GBNF: "c" for one character, a class, or . for any.
static std::string describe_elem(const GrammarElem& e) {
    if (e.kind == GRAMMAR_ANY) return ".";
    if (!e.negated && e.ranges.size() == 1 && e.ranges[0].first == e.ranges[0].second)
        return "\"" + gbnf_char(e.ranges[0].first) + "\"";
    std::string out = e.negated ? "[^" : "[";
    for (const auto& [lo, hi] : e.ranges) out += lo == hi ? gbnf_char(lo) : gbnf_char(lo) + "-" + gbnf_char(hi);
    return out + "]";
}

void GrammarConstraint::check_can_start() const {
    // Token by token rather than by the trie: single characters and bytes come early in every
    // vocabulary, so a grammar that can start is found to within a few hundred checks, and only one
    // that cannot pays a pass over the whole vocabulary (and then no reply is generated).
    for (int32_t id = 0; id < vocab_->n_vocab; ++id)
        if (allows(id)) return;
    if (vocab_->n_vocab <= 0) return;
    std::vector<std::string> firsts;
    for (const GrammarMatcher::Stack& stack : matcher_.state().stacks) {
        const std::string what = stack.empty() ? "the end of generation" : describe_elem(matcher_.grammar().elems[size_t(stack.back())]);
        if (std::find(firsts.begin(), firsts.end(), what) == firsts.end()) firsts.push_back(what);
    }
    std::string expected;
    for (size_t i = 0; i < firsts.size() && i < 4; ++i) expected += (i ? " or " : "") + firsts[i];
    if (firsts.size() > 4) expected += " or ...";
    throw Error("the grammar cannot begin the reply: it must start with " + expected + ", and no token of the model's " +
                "vocabulary (" + std::to_string(vocab_->n_vocab) + " tokens) can begin that way");
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
