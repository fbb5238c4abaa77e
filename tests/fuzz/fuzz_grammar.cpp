// libFuzzer target: the GBNF grammar parser (core/sampling/grammar/gbnf_parser.cpp) on any text, as a
// user's grammar file, the Sampling panel's editor or a saved conversation hands it over. Parsing must
// end in a Grammar or a wb::Error. A grammar that parses is matched the way the sampler uses it: the
// input's last bytes, taken as text, are fed to a GrammarMatcher one byte at a time (feed_byte, the
// vocabulary trie's path) and as whole strings (allows/accept), so the accept path walks the parsed
// rules with real code points, partial UTF-8 and invalid bytes. The two paths must agree: a byte string
// allows() takes must be one the byte-wise walk survives (the filter and accept() would otherwise
// disagree on a token), and accept() must take exactly what allows() does.
// The seeds are grammars as people write them (corpus/fuzz_grammar) and the Sampling panel's example.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "sampling/grammar/gbnf.h"
#include "sampling/grammar/grammar_matcher.h"
#include "util/error.h"

namespace {

// Text to match: the bytes after the input's last NUL (a grammar people write holds none, so the
// fuzzer can append any text to try after one), or without a NUL the grammar's last 16 bytes, which
// in a mutated grammar are often a literal of its own.
std::string text_to_match(const std::string& input, std::string& grammar) {
    const size_t nul = input.rfind('\0');
    if (nul != std::string::npos) {
        grammar = input.substr(0, nul);
        return input.substr(nul + 1, 64);
    }
    grammar = input;
    return input.substr(input.size() - std::min<size_t>(input.size(), 16));
}

// The byte-wise walk over text; returns how many bytes it survived.
size_t walk_bytes(const wb::GrammarMatcher& m, const std::string& text) {
    wb::GrammarMatcher::State st = m.state(), next;
    size_t n = 0;
    for (unsigned char b : text) {
        if (!m.feed_byte(st, b, next)) break;
        st = std::move(next);
        ++n;
    }
    return n;
}

void match(const std::shared_ptr<const wb::Grammar>& g, const std::string& text) {
    wb::GrammarMatcher m(g);
    const size_t survived = walk_bytes(m, text);
    if (m.allows(text) != (survived == text.size())) std::abort();  // the two paths disagree
    // accept() in pieces of up to 3 bytes (so a UTF-8 character may be cut): a refused piece leaves the
    // state as it was, and the rest is tried from there.
    for (size_t i = 0; i < text.size(); i += 3) {
        const std::string piece = text.substr(i, 3);
        const bool allowed = m.allows(piece);
        try {
            m.accept(piece);
            if (!allowed) std::abort();  // accept() took what allows() refused
        } catch (const wb::Error&) {
            if (allowed) std::abort();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string grammar;
    const std::string text = text_to_match(std::string(reinterpret_cast<const char*>(data), size), grammar);
    try {
        auto g = std::make_shared<const wb::Grammar>(wb::parse_gbnf(grammar));
        if (g->root < 0 || static_cast<size_t>(g->root) >= g->rules.size()) std::abort();
        match(g, text);
    } catch (const wb::Error&) {
        // A malformed or never-finishing grammar, or one too ambiguous to match: an error is the answer.
    }
    return 0;
}
