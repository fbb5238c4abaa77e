#include <queue>

#include "tokenizer_impl.h"
#include "unicode.h"
#include "util/error.h"

namespace wb {
namespace {

// More distinct words than this and the cache starts over; real prompts stay far below.
constexpr size_t k_word_cache_limit = 16384;

// GPT-2's byte-level encoding of raw bytes (the form tokens and merges are stored in).
std::string byte_encode(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) out += unicode::byte_to_utf8(uint8_t(c));
    return out;
}

// One symbol of a word during merging: a run of the word's bytes, linked to its live neighbours.
struct Symbol {
    int32_t id;     // token of the run, -1 if the vocabulary lacks it
    int32_t prev;   // index of the previous live symbol, -1 at the start
    int32_t next;   // index of the next live symbol, -1 at the end
    uint32_t begin;
    uint32_t len;   // 0 once merged into its left neighbour
};

struct Candidate {
    int32_t rank;
    int32_t left;  // symbol index; the right one is symbols[left].next
    int32_t left_id;
    int32_t right_id;
    // Lowest rank first; equal ranks (the same pair twice) leftmost first.
    bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
};

}  // namespace

BpeTokenizer::BpeTokenizer(VocabSpec spec) {
    const auto kind = pre_tokenizer_from_name(spec.pre.empty() ? "default" : spec.pre);
    // Another splitter's words give other tokens, so an unknown name is refused, as llama.cpp refuses
    // it, rather than run with GPT-2's rules and differ silently.
    if (!kind) {
        throw Error("unsupported pre-tokenizer '" + spec.pre + "' (tokenizer.ggml.pre); supported: " +
                    pre_tokenizer_names());
    }
    pre_kind_ = *kind;
    // llama.cpp's per-pre-type flags: Llama 3 adds BOS and skips merges for whole-token words;
    // SmolLM/StarCoder-style and Qwen2 vocabularies keep spaces before punctuation on decode, except
    // Megrez, which llama.cpp maps to the Qwen2 splitter but leaves at the default clean-up.
    // Tekken as Llama 3 but keeps its spaces on decode.
    const bool llama3_like = pre_kind_ == PreTokenizerKind::LLAMA3 || pre_kind_ == PreTokenizerKind::TEKKEN;
    ignore_merges_ = llama3_like;
    clean_spaces_ = pre_kind_ == PreTokenizerKind::GPT2 || pre_kind_ == PreTokenizerKind::LLAMA3 || spec.pre == "megrez";
    std::vector<std::string> merges = std::move(spec.merges);
    init_common(spec, llama3_like);
    for (int b = 0; b < 256; ++b) byte_ids_[b] = find_token(unicode::byte_to_utf8(uint8_t(b))).value_or(-1);
    load_merges(merges);
}

void BpeTokenizer::MergeTable::init(size_t n_merges) {
    int bits = 4;
    while ((size_t(1) << bits) < n_merges * 2) ++bits;  // load factor <= 1/2
    slots_.assign(size_t(1) << bits, Slot{});
    shift_ = 64 - bits;
}

void BpeTokenizer::MergeTable::insert_first(int32_t left, int32_t right, Merge merge) {
    const uint64_t key = (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
    const size_t mask = slots_.size() - 1;
    for (size_t i = slot_of(key);; i = (i + 1) & mask) {
        if (slots_[i].key == key) return;
        if (slots_[i].key == EMPTY) {
            slots_[i] = {key, merge};
            return;
        }
    }
}

const BpeTokenizer::Merge* BpeTokenizer::MergeTable::find(int32_t left, int32_t right) const {
    const uint64_t key = (uint64_t(uint32_t(left)) << 32) | uint32_t(right);
    const size_t mask = slots_.size() - 1;
    for (size_t i = slot_of(key);; i = (i + 1) & mask) {
        if (slots_[i].key == key) return &slots_[i].merge;
        if (slots_[i].key == EMPTY) return nullptr;
    }
}

void BpeTokenizer::load_merges(const std::vector<std::string>& merges) {
    merges_.init(merges.size());
    size_t unusable = 0;
    std::string merged;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
        const std::string_view m = merges[rank];
        // The left part may itself start with a space character (as mapped text it cannot, but
        // llama.cpp searches from index 1, so we do too).
        const size_t space = m.find(' ', 1);
        if (space == std::string_view::npos) {
            throw Error("tokenizer.ggml.merges[" + std::to_string(rank) + "] = '" + std::string(m) + "' has no space");
        }
        const auto left = find_token(m.substr(0, space));
        const auto right = find_token(m.substr(space + 1));
        if (!left || !right) {
            ++unusable;  // a pair of non-tokens can never be adjacent symbols here
            continue;
        }
        merged.assign(m.substr(0, space));
        merged += m.substr(space + 1);
        // A duplicated merge keeps its first (lowest) rank, as llama.cpp does.
        merges_.insert_first(*left, *right, Merge{int32_t(rank), find_token(merged).value_or(-1)});
    }
    if (unusable > 0) append_warning(std::to_string(unusable) + " merges name texts that are not tokens and were ignored");
}

std::vector<int32_t> BpeTokenizer::encode_fragments(const std::vector<Fragment>& fragments, bool add_bos) const {
    std::vector<int32_t> out;
    if (add_bos && add_bos_ && bos_id_ >= 0) out.push_back(bos_id_);
    for (const Fragment& f : fragments) {
        if (f.id >= 0) {
            out.push_back(f.id);
        } else {
            encode_raw(f.text, out);
        }
    }
    return out;
}

void BpeTokenizer::encode_raw(std::string_view text, std::vector<int32_t>& out) const {
    const std::string clean = unicode::sanitize_utf8(text);
    for (const std::string_view word : pre_tokenize(pre_kind_, clean)) encode_word(word, out);
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<int32_t>& out) const {
    {
        std::lock_guard lock(cache_mutex_);
        if (const auto it = word_cache_.find(std::string(word)); it != word_cache_.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<int32_t> ids = bpe_word(word);
    out.insert(out.end(), ids.begin(), ids.end());
    std::lock_guard lock(cache_mutex_);
    if (word_cache_.size() >= k_word_cache_limit) word_cache_.clear();
    word_cache_.emplace(std::string(word), std::move(ids));
}

std::vector<int32_t> BpeTokenizer::bpe_word(std::string_view word) const {
    std::vector<int32_t> ids;
    if (ignore_merges_) {
        if (const auto id = find_token(byte_encode(word))) return {*id};
    }
    std::vector<Symbol> symbols(word.size());
    for (size_t i = 0; i < word.size(); ++i) {
        symbols[i] = {byte_ids_[uint8_t(word[i])], int32_t(i) - 1, i + 1 < word.size() ? int32_t(i + 1) : -1,
                      uint32_t(i), 1};
    }
    std::priority_queue<Candidate> queue;
    const auto consider = [&](int32_t left) {
        if (left < 0 || symbols[size_t(left)].next < 0) return;
        const Symbol& l = symbols[size_t(left)];
        const Symbol& r = symbols[size_t(l.next)];
        if (l.id < 0 || r.id < 0) return;
        if (const Merge* m = merges_.find(l.id, r.id)) queue.push({m->rank, left, l.id, r.id});
    };
    for (int32_t i = 0; i + 1 < int32_t(symbols.size()); ++i) consider(i);
    while (!queue.empty()) {
        const Candidate c = queue.top();
        queue.pop();
        Symbol& l = symbols[size_t(c.left)];
        // A candidate is stale once either side has merged with something else since it was queued.
        if (l.len == 0 || l.next < 0 || l.id != c.left_id || symbols[size_t(l.next)].id != c.right_id) continue;
        Symbol& r = symbols[size_t(l.next)];
        l.id = merges_.find(c.left_id, c.right_id)->result;
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) symbols[size_t(r.next)].prev = c.left;
        consider(l.prev);
        consider(c.left);
    }
    for (const Symbol& s : symbols) {
        if (s.len == 0) continue;
        if (s.id >= 0) {
            ids.push_back(s.id);
            continue;
        }
        // Not a token: llama.cpp looks up each byte of the mapped text on its own and drops misses.
        for (const char c : byte_encode(word.substr(s.begin, s.len))) {
            if (const auto id = find_token(std::string_view(&c, 1))) ids.push_back(*id);
        }
    }
    return ids;
}

std::string BpeTokenizer::token_to_piece(int32_t id, bool render_special) const {
    if (id < 0 || id >= n_vocab()) return {};
    const std::string& text = tokens_[size_t(id)];
    switch (types_[size_t(id)]) {
        case TokenType::NORMAL: {
            std::string out;
            out.reserve(text.size());
            for (size_t pos = 0; pos < text.size();) {
                const size_t start = pos;
                const int byte = unicode::utf8_cpt_to_byte(unicode::decode_lenient(text, pos));
                // A character outside the byte map is kept as it is rather than dropped.
                if (byte >= 0) out += char(byte);
                else out.append(text, start, pos - start);
            }
            return out;
        }
        case TokenType::USER_DEFINED: return text;
        case TokenType::CONTROL:
        case TokenType::UNKNOWN: return render_special ? text : std::string();
        default: return {};
    }
}

std::string BpeTokenizer::decode(const std::vector<int32_t>& ids, bool render_special) const {
    std::string text = Tokenizer::decode(ids, render_special);
    if (!clean_spaces_) return text;
    // HF's clean_up_tokenization: drop the space before . , ! ? and before the contractions 's 'm
    // 're 've, and the spaces around a lone apostrophe.
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == ' ' && i + 1 < text.size()) {
            const std::string_view rest = std::string_view(text).substr(i + 1);
            const bool punct = rest[0] == '.' || rest[0] == ',' || rest[0] == '!' || rest[0] == '?';
            const bool contraction = rest.starts_with("'s") || rest.starts_with("'m") || rest.starts_with("'re") ||
                                     rest.starts_with("'ve");
            if (rest.starts_with("' ")) {
                out += '\'';
                i += 2;
                continue;
            }
            if (punct || contraction) continue;
        }
        out += c;
    }
    return out;
}

}  // namespace wb
