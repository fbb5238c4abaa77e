#include "pre_tokenizer.h"

#include <array>

#include "unicode.h"

namespace wb {
namespace {

using unicode::CPT_LETTER;
using unicode::CPT_NUMBER;
using unicode::CPT_WHITESPACE;

// Set for every code point inside the range being split, so "not whitespace, letter or number"
// can be told apart from "past the end" (llama.cpp's flags.as_uint() test).
constexpr uint8_t CPT_IN_RANGE = 0x80;
constexpr uint32_t OUT_OF_RANGE = 0xFFFFFFFF;

// The code points of the text and the byte offset where each one starts (plus the end offset).
struct CptText {
    std::vector<uint32_t> cpts;
    std::vector<uint8_t> flags;
    std::vector<size_t> byte_offsets;
};

CptText decode(std::string_view text) {
    CptText t;
    t.cpts.reserve(text.size());
    t.flags.reserve(text.size());
    t.byte_offsets.reserve(text.size() + 1);
    for (size_t pos = 0; pos < text.size();) {
        t.byte_offsets.push_back(pos);
        const uint32_t cpt = unicode::decode_lenient(text, pos);
        t.cpts.push_back(cpt);
        t.flags.push_back(unicode::cpt_flags(cpt) | CPT_IN_RANGE);
    }
    t.byte_offsets.push_back(text.size());
    return t;
}

// A view of the code points [begin, end) of one fragment; lookups past either edge see nothing,
// because a regex applied to a fragment cannot look into its neighbours.
struct Range {
    const CptText& t;
    size_t begin;
    size_t end;
    uint32_t cpt(size_t i) const { return i < end ? t.cpts[i] : OUT_OF_RANGE; }
    uint8_t flags(size_t i) const { return i < end ? t.flags[i] : 0; }
};

constexpr uint8_t LNW = CPT_LETTER | CPT_NUMBER | CPT_WHITESPACE;
bool is_other(uint8_t f) { return (f & CPT_IN_RANGE) && !(f & LNW); }  // [^\s\p{L}\p{N}]

uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

// Length of a contraction ('s 't 'm 'd 're 've 'll) at i, or 0.
size_t contraction_len(const Range& r, size_t i, bool ignore_case) {
    if (r.cpt(i) != '\'') return 0;
    const auto at = [&](size_t j) { return ignore_case ? ascii_lower(r.cpt(j)) : r.cpt(j); };
    const uint32_t c1 = at(i + 1);
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
    const uint32_t c2 = at(i + 2);
    if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
    return 0;
}

// Ends of the words of the GPT-2 regex over one range, appended to ends.
void split_gpt2(const Range& r, std::vector<size_t>& ends) {
    size_t pos = r.begin;
    while (pos < r.end) {
        if (const size_t n = contraction_len(r, pos, false)) {
            ends.push_back(pos += n);
            continue;
        }
        const uint32_t cpt = r.cpt(pos);
        const size_t start = pos + (cpt == ' ' ? 1 : 0);  // the optional leading space
        const uint8_t f = r.flags(start);
        if (f & (CPT_LETTER | CPT_NUMBER)) {  // ' ?\p{L}+' and ' ?\p{N}+'
            const uint8_t cls = f & CPT_LETTER ? CPT_LETTER : CPT_NUMBER;
            for (pos = start; r.flags(pos) & cls;) ++pos;
            ends.push_back(pos);
            continue;
        }
        if (is_other(f)) {  // ' ?[^\s\p{L}\p{N}]+'
            for (pos = start; is_other(r.flags(pos));) ++pos;
            ends.push_back(pos);
            continue;
        }
        size_t n_space = 0;
        while (r.flags(pos + n_space) & CPT_WHITESPACE) ++n_space;
        if (n_space > 1 && r.cpt(pos + n_space) != OUT_OF_RANGE) {
            pos += n_space - 1;  // '\s+(?!\S)': leave the last space to the word that follows
        } else {
            pos += n_space > 0 ? n_space : 1;  // '\s+', or a lone unmatched code point
        }
        ends.push_back(pos);
    }
}

// Ends of the words of the Llama 3 / Qwen2 regex (max_digits 3 or 1) over one range.
void split_llama3(const Range& r, size_t max_digits, std::vector<size_t>& ends) {
    size_t pos = r.begin;
    while (pos < r.end) {
        if (const size_t n = contraction_len(r, pos, true)) {
            ends.push_back(pos += n);
            continue;
        }
        const uint32_t cpt = r.cpt(pos);
        const uint8_t f = r.flags(pos);
        // '[^\r\n\p{L}\p{N}]?\p{L}+'
        if (cpt != '\r' && cpt != '\n' && !(f & CPT_NUMBER) &&
            ((f & CPT_LETTER) || (r.flags(pos + 1) & CPT_LETTER))) {
            for (++pos; r.flags(pos) & CPT_LETTER;) ++pos;
            ends.push_back(pos);
            continue;
        }
        if (f & CPT_NUMBER) {  // '\p{N}{1,max_digits}'
            const size_t start = pos;
            while ((r.flags(pos) & CPT_NUMBER) && pos - start < max_digits) ++pos;
            ends.push_back(pos);
            continue;
        }
        // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
        const size_t start = pos + (cpt == ' ' ? 1 : 0);
        if (is_other(r.flags(start))) {
            for (pos = start; is_other(r.flags(pos));) ++pos;
            while (r.cpt(pos) == '\r' || r.cpt(pos) == '\n') ++pos;
            ends.push_back(pos);
            continue;
        }
        size_t n_space = 0;
        size_t last_newline_end = 0;
        for (; r.flags(pos + n_space) & CPT_WHITESPACE; ++n_space) {
            const uint32_t c = r.cpt(pos + n_space);
            if (c == '\r' || c == '\n') last_newline_end = pos + n_space + 1;
        }
        if (last_newline_end > 0) {
            pos = last_newline_end;  // '\s*[\r\n]+'
        } else if (n_space > 1 && r.cpt(pos + n_space) != OUT_OF_RANGE) {
            pos += n_space - 1;  // '\s+(?!\S)'
        } else {
            pos += n_space > 0 ? n_space : 1;  // '\s+', or a lone unmatched code point
        }
        ends.push_back(pos);
    }
}

// Mistral's Tekken regex as llama.cpp runs it: not by a hand-written splitter but through std::regex
// over a "collapsed" text in which each non-ASCII code point stands for its class (whitespace, letter,
// number, other) and the regex's \p{L} / \p{N} become those stand-ins plus the ASCII ranges; llama.cpp
// also rewrites the upper-/lower-case classes as "a letter but not a-z" / "a letter but not A-Z", so a
// non-ASCII letter counts as both. The alternatives, tried in order at each position (ECMAScript: the
// first that matches wins, quantifiers greedy with backtracking):
//   P?U*W+ | P?U+W* | N | ' '?O+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+
// with L letters, U = L minus a-z, W = L minus A-Z, N numbers, P = [^\r\n L N], O = [^\s L N], and \s
// on ASCII being std::regex's (space, \t \n \v \f \r), on other code points Unicode's White_Space.
class TekkenClasses {
public:
    explicit TekkenClasses(const Range& r) : r_(r) {}
    bool in(size_t i) const { return i < r_.end; }
    bool s(size_t i) const {
        const uint32_t c = r_.cpt(i);
        if (c < 128) return c == ' ' || (c >= '\t' && c <= '\r');
        return in(i) && (r_.flags(i) & CPT_WHITESPACE);
    }
    bool l(size_t i) const {
        const uint32_t c = r_.cpt(i);
        if (c < 128) return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
        return in(i) && !s(i) && (r_.flags(i) & CPT_LETTER);
    }
    bool n(size_t i) const {
        const uint32_t c = r_.cpt(i);
        if (c < 128) return c >= '0' && c <= '9';
        return in(i) && !s(i) && !l(i) && (r_.flags(i) & CPT_NUMBER);
    }
    bool u(size_t i) const { return l(i) && !(r_.cpt(i) >= 'a' && r_.cpt(i) <= 'z'); }
    bool w(size_t i) const { return l(i) && !(r_.cpt(i) >= 'A' && r_.cpt(i) <= 'Z'); }
    bool p(size_t i) const { return in(i) && r_.cpt(i) != '\r' && r_.cpt(i) != '\n' && !l(i) && !n(i); }
    bool o(size_t i) const { return in(i) && !s(i) && !l(i) && !n(i); }
    // Length of the run of code points from i that pass `pred`.
    template <typename Pred>
    size_t run(size_t i, Pred pred) const {
        size_t k = 0;
        while (in(i + k) && pred(i + k)) ++k;
        return k;
    }

private:
    const Range& r_;
};

// End of 'U*W+' from j (the longest U* that still leaves a W after it), or 0 if it does not match.
size_t tekken_upper_then_lower(const TekkenClasses& c, size_t j) {
    const size_t n_upper = c.run(j, [&](size_t i) { return c.u(i); });
    for (size_t k = n_upper + 1; k-- > 0;) {
        const size_t n_lower = c.run(j + k, [&](size_t i) { return c.w(i); });
        if (n_lower > 0) return j + k + n_lower;
    }
    return 0;
}

// End of the letter alternatives 'P?U*W+' then 'P?U+W*' at pos, or 0.
size_t tekken_letters(const TekkenClasses& c, size_t pos) {
    const bool has_p = c.p(pos);
    for (const size_t j : {pos + 1, pos}) {  // with the optional P first, as a greedy '?' tries
        if (j == pos + 1 && !has_p) continue;
        if (const size_t end = tekken_upper_then_lower(c, j)) return end;
    }
    for (const size_t j : {pos + 1, pos}) {
        if (j == pos + 1 && !has_p) continue;
        const size_t n_upper = c.run(j, [&](size_t i) { return c.u(i); });
        if (n_upper > 0) return j + n_upper + c.run(j + n_upper, [&](size_t i) { return c.w(i); });
    }
    return 0;
}

void split_tekken(const Range& r, std::vector<size_t>& ends) {
    const TekkenClasses c(r);
    size_t pos = r.begin;
    while (pos < r.end) {
        if (const size_t end = tekken_letters(c, pos)) {
            ends.push_back(pos = end);
            continue;
        }
        if (c.n(pos)) {  // '\p{N}': one at a time
            ends.push_back(++pos);
            continue;
        }
        // ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
        const size_t start = pos + (r.cpt(pos) == ' ' && c.o(pos + 1) ? 1 : 0);
        if (c.o(start)) {
            pos = start + c.run(start, [&](size_t i) { return c.o(i); });
            pos += c.run(pos, [&](size_t i) { return r.cpt(i) == '\r' || r.cpt(i) == '\n' || r.cpt(i) == '/'; });
            ends.push_back(pos);
            continue;
        }
        // Whitespace: '\s*[\r\n]+' up to its last line break, else '\s+(?!\S)', else '\s+'.
        const size_t n_space = c.run(pos, [&](size_t i) { return c.s(i); });
        size_t last_newline_end = 0;
        for (size_t i = pos; i < pos + n_space; ++i)
            if (r.cpt(i) == '\r' || r.cpt(i) == '\n') last_newline_end = i + 1;
        if (last_newline_end > 0) pos = last_newline_end;
        else if (n_space > 1 && c.in(pos + n_space)) pos += n_space - 1;
        else pos += n_space > 0 ? n_space : 1;  // a lone unmatched code point cannot occur; kept safe
        ends.push_back(pos);
    }
}

// '\p{N}' applied as a split: every number code point alone, the gaps between them kept as pieces.
void split_digits(const Range& r, std::vector<size_t>& ends) {
    for (size_t pos = r.begin; pos < r.end; ++pos) {
        if ((r.flags(pos) & CPT_NUMBER) || (r.flags(pos + 1) & CPT_NUMBER) || pos + 1 == r.end) {
            ends.push_back(pos + 1);
        }
    }
}

}  // namespace

namespace {

struct PreEntry {
    std::string_view name;
    PreTokenizerKind kind;
};

// tokenizer.ggml.pre names and the splitter llama.cpp gives each (llama-vocab.cpp's pre types).
constexpr std::array<PreEntry, 23> kPreNames = {{
        {"default", PreTokenizerKind::GPT2},      {"gpt-2", PreTokenizerKind::GPT2},
        {"phi-2", PreTokenizerKind::GPT2},        {"mpt", PreTokenizerKind::GPT2},
        {"olmo", PreTokenizerKind::GPT2},         {"smollm", PreTokenizerKind::SMOLLM},
        {"starcoder", PreTokenizerKind::SMOLLM},  {"refact", PreTokenizerKind::SMOLLM},
        {"command-r", PreTokenizerKind::SMOLLM},  {"codeshell", PreTokenizerKind::SMOLLM},
        {"exaone", PreTokenizerKind::SMOLLM},     {"minerva-7b", PreTokenizerKind::SMOLLM},
        {"llama-bpe", PreTokenizerKind::LLAMA3},  {"llama3", PreTokenizerKind::LLAMA3},
        {"llama-v3", PreTokenizerKind::LLAMA3},   {"falcon3", PreTokenizerKind::LLAMA3},
        {"pixtral", PreTokenizerKind::LLAMA3},    {"qwen2", PreTokenizerKind::QWEN2},
        {"deepseek-r1-qwen", PreTokenizerKind::QWEN2}, {"megrez", PreTokenizerKind::QWEN2},
        {"kormo", PreTokenizerKind::QWEN2},       {"f2llmv2", PreTokenizerKind::QWEN2},
        {"tekken", PreTokenizerKind::TEKKEN},
}};

}  // namespace

std::optional<PreTokenizerKind> pre_tokenizer_from_name(std::string_view name) {
    for (const PreEntry& e : kPreNames) {
        if (e.name == name) return e.kind;
    }
    return std::nullopt;
}

std::string pre_tokenizer_names() {
    std::string out;
    for (const PreEntry& e : kPreNames) out += (out.empty() ? "" : ", ") + std::string(e.name);
    return out;
}

std::vector<std::string_view> pre_tokenize(PreTokenizerKind kind, std::string_view text) {
    const CptText t = decode(text);
    const size_t n = t.cpts.size();
    std::vector<size_t> ends;
    ends.reserve(n);
    switch (kind) {
        case PreTokenizerKind::GPT2: split_gpt2({t, 0, n}, ends); break;
        case PreTokenizerKind::LLAMA3: split_llama3({t, 0, n}, 3, ends); break;
        case PreTokenizerKind::QWEN2: split_llama3({t, 0, n}, 1, ends); break;
        case PreTokenizerKind::TEKKEN: split_tekken({t, 0, n}, ends); break;
        case PreTokenizerKind::SMOLLM: {
            std::vector<size_t> pieces;
            split_digits({t, 0, n}, pieces);
            size_t begin = 0;
            for (const size_t end : pieces) {
                split_gpt2({t, begin, end}, ends);
                begin = end;
            }
            break;
        }
    }
    std::vector<std::string_view> words;
    words.reserve(ends.size());
    size_t begin = 0;
    for (const size_t end : ends) {
        words.push_back(text.substr(t.byte_offsets[begin], t.byte_offsets[end] - t.byte_offsets[begin]));
        begin = end;
    }
    return words;
}

}  // namespace wb
