#pragma once
// GBNF grammars (llama.cpp's format) parsed into flat rules the matcher walks.
//
//   root   ::= object            # `root` is where matching starts
//   object ::= "{" ws ( pair ( "," ws pair )* )? "}"
//   pair   ::= [a-z]+ ":" ws [^,}]{1,8}
//   ws     ::= [ \t\n]*
//
// Groups, repetition (* + ? {m} {m,} {m,n}) and literals are lowered while parsing: a literal becomes
// one character element per code point, a group or repetition a generated rule (named after its rule,
// "object_1": '_' is in no name the text can define), so the matcher only ever sees character sets,
// rule references and ends of alternatives.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "util/error.h"

namespace wb {

enum GrammarElemKind : uint8_t {
    GRAMMAR_END,       // end of an alternative
    GRAMMAR_CHARS,     // one code point in ranges (or not in them, when negated)
    GRAMMAR_ANY,       // `.`: any one code point
    GRAMMAR_RULE_REF,  // the rule `rule`
};

struct GrammarElem {
    GrammarElemKind kind = GRAMMAR_END;
    bool negated = false;                                // GRAMMAR_CHARS: [^...]
    int32_t rule = -1;                                   // GRAMMAR_RULE_REF: index into Grammar::rules
    std::vector<std::pair<uint32_t, uint32_t>> ranges;   // GRAMMAR_CHARS: inclusive code point ranges

    bool matches(uint32_t cp) const;
    // Whether some code point in [lo, hi] matches (a partial UTF-8 sequence could still become one).
    bool matches_some(uint32_t lo, uint32_t hi) const;
};

struct GrammarRule {
    std::string name;
    std::vector<int32_t> alts;  // index into Grammar::elems of each alternative's first element
};

// A parsed grammar: every alternative is a run of elements in elems ending with GRAMMAR_END.
struct Grammar {
    std::vector<GrammarElem> elems;
    std::vector<GrammarRule> rules;
    int32_t root = -1;  // index of the rule named root

    // The rule of this name (-1 if there is none).
    int32_t find_rule(const std::string& name) const;
};

// What parse_gbnf throws for a rule that matching can reach and that can match no finite text
// (root ::= a, a ::= "x" a): the reply could start down it and never end. rule() is its name, so a
// JSON Schema converter can say which part of the schema it came from.
class GrammarNeverFinishesError : public Error {
public:
    GrammarNeverFinishesError(const std::string& what, std::string rule) : Error(what), rule_(std::move(rule)) {}
    const std::string& rule() const { return rule_; }

private:
    std::string rule_;
};

// What parse_gbnf throws for a left-recursive rule (root ::= root | "x"): matching would expand it
// for ever. rule() is its name, for the JSON Schema converter as above.
class GrammarLeftRecursionError : public Error {
public:
    GrammarLeftRecursionError(const std::string& what, std::string rule) : Error(what), rule_(std::move(rule)) {}
    const std::string& rule() const { return rule_; }

private:
    std::string rule_;
};

// Parses GBNF text. wb::Error with "grammar line L, column C: ..." for malformed text (an undefined
// rule, unbalanced parentheses or quotes, a bad escape or repetition, a rule defined twice), for a
// rule reachable from root that can never finish (GrammarNeverFinishesError, at the rule's
// definition, naming the cycle of rules that keeps it going), and for a grammar without a root rule
// or with a left-recursive rule (GrammarLeftRecursionError: it would never finish matching; the
// message names the cycle).
Grammar parse_gbnf(const std::string& text);

// The sequence of code points a UTF-8 string holds, with the state of an incomplete last character.
struct Utf8Partial {
    uint32_t value = 0;   // bits read so far
    int32_t remain = 0;   // continuation bytes still expected; -1: the bytes are not UTF-8
    int32_t length = 0;   // bytes of the whole character (while remain > 0)
};
// Decodes bytes after an earlier partial character; appends the complete code points to out.
Utf8Partial decode_utf8(const std::string& bytes, Utf8Partial start, std::vector<uint32_t>& out);

}  // namespace wb
