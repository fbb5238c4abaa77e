// DRY's sequence breakers from strings to tokens, with llama.cpp's rules: a token whose text
// contains the breaker is a breaker by itself; a token whose text ends with the start of the
// breaker is one when followed by the tokens of the rest of it.
#include <algorithm>

#include "sampling/sampler.h"

namespace wb {

namespace {

constexpr size_t kMaxBreakerChars = 40;  // llama.cpp's limits: longer breakers are cut
constexpr size_t kMaxTailTokens = 20;

void add_unique(DryBreakers& out, int32_t head, std::vector<int32_t> tail) {
    auto range = out.equal_range(head);
    for (auto it = range.first; it != range.second; ++it) {
        if (it->second == tail) return;
    }
    out.emplace(head, std::move(tail));
}

void add_breaker(const SamplerVocab& vocab, const std::string& breaker, DryBreakers& out) {
    for (int32_t id = 0; id < vocab.n_vocab; ++id) {
        const std::string word = vocab.piece(id);
        if (word.find(breaker) != std::string::npos) {
            add_unique(out, id, {});
            continue;
        }
        // Every place where the word's end matches a prefix of the breaker.
        for (size_t pos = word.find(breaker[0]); pos != std::string::npos; pos = word.find(breaker[0], pos + 1)) {
            const size_t overlap = word.size() - pos;  // < breaker.size(), or find() would have hit
            if (word.compare(pos, overlap, breaker, 0, overlap) != 0) continue;
            std::vector<int32_t> tail = vocab.tokenize(breaker.substr(overlap));
            if (tail.size() > kMaxTailTokens) tail.resize(kMaxTailTokens);
            add_unique(out, id, std::move(tail));
        }
    }
}

}  // namespace

DryBreakers process_dry_breakers(const SamplerVocab& vocab, const std::vector<std::string>& breakers) {
    DryBreakers out;
    for (std::string breaker : breakers) {
        if (breaker.empty()) continue;
        if (breaker.size() > kMaxBreakerChars) breaker.resize(kMaxBreakerChars);
        add_breaker(vocab, breaker, out);
    }
    return out;
}

}  // namespace wb
