// GBNF grammars: the parser (good grammars, malformed ones with their line and column), the matcher
// on hand-written strings, the vocabulary trie against checking every piece on its own, and the
// grammar stage of the sampler chain on a tiny vocabulary.
#include <QtTest>

#include <algorithm>
#include <memory>

#include "sampling/grammar/gbnf.h"
#include "sampling/grammar/grammar_matcher.h"
#include "sampling/grammar/grammar_constraint.h"
#include "sampling/grammar/vocab_trie.h"
#include "sampling/sampler.h"
#include "util/error.h"

using namespace wb;

namespace {

bool matches(const std::string& gbnf, const std::string& text) {
    GrammarMatcher m(std::make_shared<const Grammar>(parse_gbnf(gbnf)));
    if (!m.allows(text)) return false;
    m.accept(text);
    return m.complete();
}

std::string parse_error(const std::string& gbnf) {
    try {
        parse_gbnf(gbnf);
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

// A vocabulary of hand-picked pieces; the last token is the end of generation.
std::shared_ptr<SamplerVocab> tiny_vocab(const std::vector<std::string>& pieces) {
    auto v = std::make_shared<SamplerVocab>();
    v->n_vocab = int32_t(pieces.size()) + 1;
    v->piece = [pieces](int32_t id) { return size_t(id) < pieces.size() ? pieces[size_t(id)] : std::string(); };
    const int32_t eos = int32_t(pieces.size());
    v->is_eog = [eos](int32_t id) { return id == eos; };
    return v;
}

// (Plain literals: moc reads a line starting with # inside a raw string as a directive.)
const char* kJsonish =
    "  # a small JSON-like object\n"
    "root   ::= \"{\" ws ( pair ( \",\" ws pair )* )? \"}\"\n"
    "pair   ::= key \":\" ws value\n"
    "key    ::= \"\\\"\" [a-z_]+ \"\\\"\"     # quoted lower-case names\n"
    "value  ::= [0-9]+ | \"true\" | \"false\" | \"\\\"\" [^\"\\\\]* \"\\\"\"\n"
    "ws     ::= [ \\t\\n]*\n";

}  // namespace

class TestGrammar : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void matchesHandStrings_data() {
        QTest::addColumn<QString>("grammar");
        QTest::addColumn<QString>("text");
        QTest::addColumn<bool>("match");
        const QString json = QString::fromUtf8(kJsonish);
        QTest::newRow("object") << json << "{\"a_b\":12,\"c\":true}" << true;
        QTest::newRow("empty object") << json << "{}" << true;
        QTest::newRow("string value") << json << "{ \"s\": \"x y, z\"}" << true;
        QTest::newRow("missing brace") << json << "{\"a\":1" << false;
        QTest::newRow("upper key") << json << "{\"A\":1}" << false;
        QTest::newRow("trailing comma") << json << "{\"a\":1,}" << false;
        QTest::newRow("alternation") << "root ::= \"yes\" | \"no\"" << "no" << true;
        QTest::newRow("alternation other") << "root ::= \"yes\" | \"no\"" << "maybe" << false;
        QTest::newRow("class range") << "root ::= [a-c]+" << "abcab" << true;
        QTest::newRow("class outside") << "root ::= [a-c]+" << "abd" << false;
        QTest::newRow("negated") << "root ::= [^0-9]+" << "ab-c" << true;
        QTest::newRow("negated digit") << "root ::= [^0-9]+" << "a1" << false;
        QTest::newRow("optional") << "root ::= \"a\" \"b\"? \"c\"" << "ac" << true;
        QTest::newRow("plus needs one") << "root ::= \"x\" [0-9]+" << "x" << false;
        QTest::newRow("bounded ok") << "root ::= [0-9]{2,4}" << "1234" << true;
        QTest::newRow("bounded short") << "root ::= [0-9]{2,4}" << "1" << false;
        QTest::newRow("bounded long") << "root ::= [0-9]{2,4}" << "12345" << false;
        QTest::newRow("exact count") << "root ::= \"ab\"{3}" << "ababab" << true;
        QTest::newRow("at least") << "root ::= \"a\"{2,}" << "aaaaa" << true;
        QTest::newRow("at least short") << "root ::= \"a\"{2,}" << "a" << false;
        QTest::newRow("escapes") << "root ::= \"\\x41\\u00e9\\t\\n\\\"\\\\\"" << "A\u00e9\t\n\"\\" << true;
        QTest::newRow("utf8 class") << "root ::= [\u00e0-\u00ff]+" << "\u00e9\u00e8" << true;
        QTest::newRow("any") << "root ::= \"<\" . \">\"" << "<\u4e2d>" << true;
        QTest::newRow("group repeat") << "root ::= (\"ab\" | \"c\")* \"!\"" << "abcab!" << true;
        QTest::newRow("right recursion") << "root ::= \"a\" root | \"b\"" << "aaaab" << true;
        QTest::newRow("multi-line group") << "root ::= (\n  \"a\"\n  | \"b\" )\n" << "b" << true;
        // A rule named as the parser once named a group's or repetition's rule (root-1): taken by the
        // group first, its definition was "defined twice" (a schema with properties "a b" and "a-b").
        QTest::newRow("rule named like a repetition") << "root ::= \"a\"{0,2} root-1\nroot-1 ::= \"x\"" << "aax" << true;
        QTest::newRow("rule named like a group") << "root ::= (\"a\" | \"b\") root-1\nroot-1 ::= \"x\"" << "bx" << true;
    }
    void matchesHandStrings() {
        QFETCH(QString, grammar);
        QFETCH(QString, text);
        QFETCH(bool, match);
        QCOMPARE(matches(grammar.toStdString(), text.toStdString()), match);
    }

    void prefixesAreAllowedButNotComplete() {
        GrammarMatcher m(std::make_shared<const Grammar>(parse_gbnf(kJsonish)));
        QVERIFY(m.allows("{\"ke"));
        m.accept("{\"ke");
        QVERIFY(!m.complete());
        QVERIFY(!m.allows("1"));
        QVERIFY_THROWS_EXCEPTION(Error, m.accept("1"));
        m.accept("y\":");  // the failed accept left the state as it was
        QVERIFY(m.allows(" 42}"));
        m.accept(" 42}");
        QVERIFY(m.complete());
        QVERIFY(!m.allows(" "));
    }

    // A token may end inside a UTF-8 character; the next one finishes it.
    void partialUtf8AcrossTokens() {
        GrammarMatcher m(std::make_shared<const Grammar>(parse_gbnf("root ::= \"\u00e9\" [a-z]")));
        const std::string e = "\u00e9";  // 0xC3 0xA9
        QVERIFY(m.allows(e.substr(0, 1)));
        QVERIFY(!m.allows("\xC4"));  // would start U+0100..U+013F, not U+00E9
        // Overlong forms cannot sneak an ASCII character in: 0xC1 0xBB would be '{', 0xE0 0x81 0xBB too.
        GrammarMatcher brace(std::make_shared<const Grammar>(parse_gbnf("root ::= \"{\"")));
        QVERIFY(!brace.allows("\xC1"));
        QVERIFY(!brace.allows("\xE0"));
        QVERIFY(!brace.allows("\xF0"));
        QVERIFY(brace.allows("{"));
        m.accept(e.substr(0, 1));
        QVERIFY(!m.complete());
        QVERIFY(m.allows(e.substr(1) + "x"));
        QVERIFY(!m.allows("\xFF"));
        m.accept(e.substr(1) + "x");
        QVERIFY(m.complete());
    }

    void malformedGrammarsSayWhere_data() {
        QTest::addColumn<QString>("grammar");
        QTest::addColumn<QString>("message");
        QTest::newRow("undefined rule") << "root ::= item\nitem ::= \"a\" value" << "grammar line 2, column 14: undefined rule 'value'";
        QTest::newRow("unclosed paren") << "root ::= (\"a\" | \"b\"\n" << "grammar line 1, column 10: unbalanced parentheses: this '(' has no matching ')'";
        QTest::newRow("extra paren") << "root ::= \"a\")" << "grammar line 1, column 13: unbalanced parentheses: ')' without a matching '('";
        QTest::newRow("bad escape") << "root ::= \"a\\qb\"" << "grammar line 1, column 12: bad escape '\\q'";
        QTest::newRow("short hex") << "root ::= \"\\x4\"" << "grammar line 1, column 11: bad escape: expected 2 hex digits";
        QTest::newRow("unterminated") << "root ::= \"abc" << "grammar line 1, column 10: unterminated string literal";
        QTest::newRow("unterminated class") << "root ::= [a-z" << "grammar line 1, column 10: unterminated character class";
        QTest::newRow("no assign") << "root = \"a\"" << "grammar line 1, column 6: expected '::=' after the rule name 'root'";
        QTest::newRow("nothing to repeat") << "root ::= *" << "grammar line 1, column 10: '*' has nothing to repeat";
        QTest::newRow("bad count") << "root ::= \"a\"{3,1}" << "grammar line 1, column 13: bad repetition: the maximum is below the minimum";
        QTest::newRow("twice") << "root ::= \"a\"\nroot ::= \"b\"" << "grammar line 2, column 1: rule 'root' is defined twice";
        QTest::newRow("no root") << "item ::= \"a\"" << "there is no 'root' rule";
        QTest::newRow("left recursion") << "root ::= expr\nexpr ::= expr \"+\" term | term\nterm ::= [0-9]"
                                        << "rule 'expr' is left-recursive (expr -> expr";
        QTest::newRow("indirect left recursion") << "root ::= a\na ::= b? c \"x\"\nb ::= \"b\"\nc ::= a | \"c\""
                                                 << "is left-recursive (a -> c -> a";
        QTest::newRow("top-level newline ends the rule") << "root ::= \"a\"\n  | \"b\"" << "grammar line 2, column 3: expected a rule name, found '|' (a rule goes on over a new line only inside parentheses)";
        QTest::newRow("column counts characters") << "root ::= \"\u00e9\u00e9\" @" << "grammar line 1, column 15: unexpected '@'";
        // Hostile sizes are refused while parsing, not after exhausting memory or the stack.
        QTest::newRow("nested 300 deep") << QString("root ::= ") + QString(300, '(') + "\"a\"" + QString(300, ')')
                                         << "parentheses nested more than 256 deep";
        QTest::newRow("repetition of repetition") << "root ::= \"a\"{10000}{10000}"
                                                  << "expands to more than 1000000 elements";
    }
    void malformedGrammarsSayWhere() {
        QFETCH(QString, grammar);
        QFETCH(QString, message);
        const QString got = QString::fromStdString(parse_error(grammar.toStdString()));
        QVERIFY2(got.contains(message), qPrintable("got: " + got));
    }

    // A rule that matching can reach and that can match no finite text is refused when the grammar
    // is parsed, at its definition, naming it and the cycle that keeps it going (a group's rule, which
    // the user never named, is left out of the cycle).
    void grammarsThatNeverFinishAreRefused_data() {
        QTest::addColumn<QString>("grammar");
        QTest::addColumn<QString>("message");
        QTest::newRow("endless rule") << "root ::= a\na ::= \"x\" a"
                                      << "grammar line 2, column 1: rule 'a' can never finish: every alternative of it "
                                         "goes on to a rule that cannot finish either (a -> a)";
        QTest::newRow("cycle without an exit") << "root ::= \"(\" b \")\"\nb ::= \"[\" root \"]\""
                                               << "grammar line 1, column 1: rule 'root' can never finish: every "
                                                  "alternative of it goes on to a rule that cannot finish either "
                                                  "(root -> b -> root)";
        QTest::newRow("through a group") << "root ::= \"x\" (\"y\" root)" << "rule 'root' can never finish: every alternative "
                                                                          "of it goes on to a rule that cannot finish "
                                                                          "either (root -> root)";
        QTest::newRow("one way of several") << "root ::= \"y\" | a\na ::= \"b\" a | \"c\" a"
                                            << "grammar line 2, column 1: rule 'a' can never finish";
        QTest::newRow("under a repetition") << "root ::= item+\nitem ::= \"<\" item \">\""
                                            << "grammar line 2, column 1: rule 'item' can never finish: every "
                                               "alternative of it goes on to a rule that cannot finish either (item -> item)";
        QTest::newRow("class matching nothing") << "root ::= \"a\" [^\\x00-\\U0010FFFF]"
                                                << "rule 'root' can never finish: each of its alternatives needs a "
                                                   "character that its class excludes";
        QTest::newRow("ranges covering everything") << "root ::= x\nx ::= [^\\x00-\\x7F\\x80-\\U0010FFFF] | \"a\" x"
                                                    << "grammar line 2, column 1: rule 'x' can never finish";
    }
    void grammarsThatNeverFinishAreRefused() {
        QFETCH(QString, grammar);
        QFETCH(QString, message);
        try {
            parse_gbnf(grammar.toStdString());
            QFAIL("parsed");
        } catch (const GrammarNeverFinishesError& e) {
            QVERIFY2(QString(e.what()).contains(message), e.what());
        }
    }

    // Recursion with a way out, an endless rule nothing refers to, a class that leaves a character
    // out, and a chain of ~10^5 rules ending in a character all parse.
    void grammarsThatFinishAreKept() {
        for (const char* ok : {"root ::= \"a\" root | \"b\"", "root ::= \"a\"\nunused ::= \"x\" unused",
                               "root ::= [^\\x00-\\x60\\x62-\\U0010FFFF]", "root ::= (\"(\" root \")\")*",
                               "root ::= a\na ::= \"[\" b? \"]\"\nb ::= a (\",\" a)*"})
            QVERIFY2(parse_error(ok) == "(no error)", qPrintable(QString(ok) + ": " + QString::fromStdString(parse_error(ok))));
        QVERIFY(matches("root ::= [^\\x00-\\x60\\x62-\\U0010FFFF]", "a"));
        std::string chain = "root ::= r1\n";
        const int n = 99990;  // under the limit of 10^5 rules
        const auto rule = [](int i) { return std::string("r").append(std::to_string(i)); };
        for (int i = 1; i < n; ++i) chain.append(rule(i)).append(" ::= ").append(rule(i + 1)).append("\n");
        chain.append(rule(n)).append(" ::= \"x\"\n");
        QCOMPARE(parse_error(chain), std::string("(no error)"));
    }

    // Which rules can match the empty text (for the left-recursion check) is found in one pass over
    // the rules: a chain of ~10^5 rules that is empty only because its last rule is, each rule defined
    // before the one it refers to, took a pass per rule (~5 * 10^9 steps) when it was a fixed point
    // over all rules.
    void nullableChainsParseInLinearTime() {
        std::string chain = "root ::= r1 \"y\"\n";
        const int n = 99990;
        const auto rule = [](int i) { return std::string("r").append(std::to_string(i)); };
        for (int i = 1; i < n; ++i) chain.append(rule(i)).append(" ::= ").append(rule(i + 1)).append("\n");
        chain.append(rule(n)).append(" ::= \"x\"?\n");
        QElapsedTimer timer;
        timer.start();
        QCOMPARE(parse_error(chain), std::string("(no error)"));
        QVERIFY2(timer.elapsed() < 3000, qPrintable(QString("%1 ms").arg(timer.elapsed())));
        QVERIFY(matches(chain, "y") && matches(chain, "xy") && !matches(chain, "x"));
    }

    // A long chain of optional rules neither overflows the stack (left-recursion check, expansion)
    // nor hangs: one level works, three nested levels are a clear error.
    void longOptionalChainsAreHandled() {
        GrammarMatcher m(std::make_shared<const Grammar>(parse_gbnf("root ::= (\"a\"?){0,10000} \"b\"")));
        QVERIFY(m.allows("b"));
        QVERIFY(!m.allows("c"));
        // After an "a" each of the 10^4 ways on opens up to 10^4 more: refused, not computed.
        QVERIFY_THROWS_EXCEPTION(wb::Error, m.allows("ab"));
        bool refused = false;
        try {
            GrammarMatcher three(std::make_shared<const Grammar>(parse_gbnf("root ::= (((\"a\"?){0,100}){0,100}){0,100}")));
        } catch (const wb::Error& e) {
            refused = QString(e.what()).contains("too ambiguous");
        }
        QVERIFY(refused);
    }

    // Bytes that decode to a grammar's character only in a non-UTF-8 form (overlong, surrogate,
    // beyond U+10FFFF) are refused whole, as byte by byte through the trie.
    void invalidUtf8NeverMatches() {
        GrammarMatcher m(std::make_shared<const Grammar>(parse_gbnf("root ::= [^a] \"!\"")));
        for (const char* bad : {"\xC0\xA2", "\xC1\xBB", "\xE0\x80\xA2", "\xED\xA0\x80", "\xF4\x90\x80\x80"})
            QVERIFY2(!m.allows(bad), qPrintable(QByteArray(bad).toHex()));
        QVERIFY(m.allows("\xC3\xA9!"));
    }

    // The trie must allow exactly the pieces that checking each one alone allows, in every state
    // along a text (including states inside a UTF-8 character).
    void trieAgreesWithEachPieceAlone() {
        std::vector<std::string> pieces = {"{", "{\"", "\"", "\":", ":", " ", "  ", "1", "12", "123", "a", "ab",
                                           "abc", "}", "\"}", ",", ", \"", "true", "tr", "x", "\u00e9", "\xC3",
                                           "\xA9", "é!", "", "\n", "\"a", "a\"", "\xE4\xB8", "\xAD",
                                           "\xC0\xA2", "\xC1\xBB"};
        VocabTrie trie(pieces);
        GrammarMatcher m(std::make_shared<const Grammar>(parse_gbnf(kJsonish)));
        for (const char* step : {"", "{", "\"", "ab", "\":", " ", "12", ",", " \"", "x\":", "\"", "\xC3"}) {
            m.accept(step);
            std::vector<uint8_t> allowed(pieces.size(), 0);
            trie.mark_allowed(m, allowed);
            for (size_t i = 0; i < pieces.size(); ++i) {
                const bool alone = !pieces[i].empty() && m.allows(pieces[i]);
                QVERIFY2(bool(allowed[i]) == alone, qPrintable(QString("after '%1', piece %2 ('%3')")
                                                                   .arg(QString::fromUtf8(step)).arg(i)
                                                                   .arg(QString::fromStdString(pieces[i]))));
            }
        }
    }

    // The trie of a large vocabulary is built once and shared by every grammar over it (a chain and
    // its grammar are made per reply: on Gemma 3 a rebuild costs ~150 ms a reply), and the shared trie
    // filters each grammar by its own rules.
    void grammarsOverOneVocabularyShareItsTrie() {
        std::vector<std::string> pieces;
        for (int i = 0; i < 1500; ++i) pieces.push_back(std::to_string(i));
        pieces.push_back("a");
        auto vocab = tiny_vocab(pieces);
        GrammarConstraint digits("root ::= [0-9]+", vocab), letter("root ::= \"a\"", vocab);
        QVERIFY(digits.trie() == nullptr);
        QCOMPARE(digits.allowed_tokens(vocab->n_vocab).size(), size_t(1500));  // every number, not "a" nor the end of generation
        QVERIFY(digits.trie() != nullptr);
        QCOMPARE(letter.allowed_tokens(vocab->n_vocab), std::vector<int32_t>{1500});
        QCOMPARE(letter.trie(), digits.trie());  // the same trie, not a second one
        // Another vocabulary gets its own.
        auto other = tiny_vocab(pieces);
        GrammarConstraint third("root ::= [0-9]+", other);
        third.allowed_tokens(other->n_vocab);
        QVERIFY(third.trie() != nullptr && third.trie() != digits.trie());
    }

    // Greedy under a grammar: the best token that fits, and the end of generation only where the
    // grammar is complete.
    void chainDrawsOnlyWhatTheGrammarAllows() {
        const std::vector<std::string> pieces = {"yes", "no", "maybe", "y", "es", "!"};
        auto vocab = tiny_vocab(pieces);
        SamplingParams p;
        p.temperature = 0.0f;
        p.grammar = "root ::= (\"yes\" | \"no\") \"!\"?";
        SamplerChain chain(p, vocab);
        // Logits favour "maybe", then the end of generation, then "y".
        const std::vector<float> logits = {0.0f, -1.0f, 5.0f, 1.0f, 0.5f, -2.0f, 3.0f};
        std::vector<SamplerStageTrace> trace;
        QCOMPARE(chain.sample(logits.data(), int32_t(logits.size()), &trace, 3), 3);  // "y"
        QCOMPARE(trace.front().stage, std::string("grammar"));
        QCOMPARE(trace.front().n_after, size_t(3));  // yes, no, y
        QCOMPARE(chain.sample(logits.data(), int32_t(logits.size())), 4);  // "es"
        // Now complete: end of generation (logit 3) beats "!" (-2); "maybe" is refused.
        QCOMPARE(chain.sample(logits.data(), int32_t(logits.size()), &trace, 3), 6);
        QCOMPARE(trace.front().n_after, size_t(2));  // "!" and the end of generation
        QVERIFY(trace.front().detail.find("does not fit") != std::string::npos);
        // Where the model's own choice fits, nothing is filtered and the trace says so.
        chain.reset();
        const std::vector<float> likes_yes = {4.0f, -1.0f, 2.0f, 1.0f, 0.5f, -2.0f, 3.0f};
        QCOMPARE(chain.sample(likes_yes.data(), int32_t(likes_yes.size()), &trace, 3), 0);
        QCOMPARE(trace.back().stage, std::string("grammar"));
        QVERIFY(trace.back().detail.find("fits the grammar") != std::string::npos);
    }

    // A grammar no token can begin is refused where it is set, before any draw, naming what it must
    // start with; one that can begin but runs out of tokens later fails at that draw.
    void grammarNoTokenCanBeginIsRefusedWhenSet() {
        auto vocab = tiny_vocab({"a", "b"});
        SamplingParams p;
        p.temperature = 0.0f;
        p.grammar = "root ::= \"c\" | [x-z] \"a\"";
        try {
            SamplerChain chain(p, vocab);
            QFAIL("a grammar no token can begin was accepted");
        } catch (const Error& e) {
            QCOMPARE(std::string(e.what()), std::string("the grammar cannot begin the reply: it must start with \"c\" or [x-z], "
                                                        "and no token of the model's vocabulary (3 tokens) can begin that way"));
        }
        SamplingParams can_begin = p;
        can_begin.grammar = "root ::= \"a\" \"c\"";
        SamplerChain chain(can_begin, vocab);
        QVERIFY_THROWS_EXCEPTION(Error, chain.set_params(p));  // before the first draw: refused too
        QCOMPARE(chain.params().grammar, can_begin.grammar);
        const std::vector<float> logits = {1.0f, 0.0f, -1.0f};
        QCOMPARE(chain.sample(logits.data(), 3), 0);  // "a"
        chain.accept(0);
        QVERIFY_THROWS_EXCEPTION(Error, chain.sample(logits.data(), 3));  // nothing gives "c"
        // Mid-reply the reply so far decides (a refusal, the grammar in force kept), not the start.
        SamplerChain mid(can_begin, vocab);
        QCOMPARE(mid.sample(logits.data(), 3), 0);
        mid.accept(0);
        mid.set_params(p);
        QVERIFY(mid.take_grammar_refusal().has_value());
        // The empty text is a start where an end of generation exists to end it.
        p.grammar = "root ::= \"c\"?";
        SamplerChain empty(p, vocab);
        QCOMPARE(empty.sample(logits.data(), 3), 2);
    }

    void malformedGrammarRefusedByTheChain() {
        auto vocab = tiny_vocab({"a"});
        SamplingParams p;
        p.grammar = "root ::= (";
        QVERIFY_THROWS_EXCEPTION(Error, SamplerChain(p, vocab));
        p.grammar = "root ::= \"a\"";
        SamplerChain chain(p, vocab);
        SamplingParams bad = p;
        bad.grammar = "root ::= undefined-rule";
        QVERIFY_THROWS_EXCEPTION(Error, chain.set_params(bad));
        QCOMPARE(chain.params().grammar, p.grammar);  // the chain kept its previous settings
    }

    // A grammar chosen mid-reply constrains the next token, its parse advanced over the reply so far
    // (the prompt's tokens, accepted before the first draw, are not part of it).
    void grammarChangedMidReplyAppliesFromTheNextToken() {
        auto vocab = tiny_vocab({"a", "b"});
        SamplingParams p;
        p.temperature = 0.0f;
        SamplerChain chain(p, vocab);
        for (int32_t prompt_token : {1, 1}) chain.accept(prompt_token);  // "bb", the prompt
        const std::vector<float> likes_a = {1.0f, 0.0f, -5.0f};
        for (int i = 0; i < 2; ++i) {
            QCOMPARE(chain.sample(likes_a.data(), 3), 0);
            chain.accept(0);
        }
        SamplingParams q = p;
        q.grammar = "root ::= \"a\" \"a\" \"b\"+";
        q.grammar_mode = GrammarMode::GBNF;
        q.grammar_source = q.grammar;
        chain.set_params(q);
        QVERIFY(!chain.take_grammar_refusal());
        QCOMPARE(chain.params().grammar, q.grammar);
        std::vector<SamplerStageTrace> trace;
        QCOMPARE(chain.sample(likes_a.data(), 3, &trace, 3), 1);  // "aa" is parsed: only "b" may follow
        QVERIFY(std::any_of(trace.begin(), trace.end(), [](const SamplerStageTrace& t) { return t.stage == "grammar"; }));
        chain.accept(1);
        // ... and the end of generation now, the text "aab" being complete.
        const std::vector<float> likes_end = {0.0f, 0.0f, 5.0f};
        QCOMPARE(chain.sample(likes_end.data(), 3), 2);
    }

    // A grammar the reply so far does not parse under is refused: the one in force stays (with its mode
    // and text, for the GUI to show again), the refusal says why, once, and the same text is not parsed
    // again with every token until the grammar in force is set back.
    void grammarThatTheReplyDoesNotParseIsRefused() {
        auto vocab = tiny_vocab({"a", "b", "ab"});
        SamplingParams p;
        p.temperature = 0.0f;
        p.grammar = "root ::= \"a\"+";
        p.grammar_mode = GrammarMode::GBNF;
        p.grammar_source = "root ::= \"a\"+   # as typed";
        SamplerChain chain(p, vocab);
        const std::vector<float> likes_b = {0.0f, 1.0f, -5.0f, -5.0f};
        for (int i = 0; i < 2; ++i) {
            QCOMPARE(chain.sample(likes_b.data(), 4), 0);
            chain.accept(0);
        }
        SamplingParams q = p;
        q.grammar = "root ::= \"a\" \"b\"+";
        q.grammar_mode = GrammarMode::JSON_SCHEMA;
        q.grammar_source = "{}";
        q.top_k = 7;  // the other settings of the same change apply
        chain.set_params(q);
        std::optional<GrammarRefusal> refusal = chain.take_grammar_refusal();
        QVERIFY(refusal);
        QCOMPARE(refusal->refused, q.grammar);
        QCOMPARE(refusal->kept_grammar, p.grammar);
        QCOMPARE(refusal->kept_source, p.grammar_source);
        QCOMPARE(int(refusal->kept_mode), int(GrammarMode::GBNF));
        QVERIFY2(refusal->why.find("after \"a\" it does not allow \"a\" (token 2 of the reply)") != std::string::npos,
                 refusal->why.c_str());
        QCOMPARE(chain.params().grammar, p.grammar);
        QCOMPARE(chain.params().grammar_source, p.grammar_source);
        QCOMPARE(chain.params().top_k, 7);
        QVERIFY(!chain.take_grammar_refusal());  // said once
        QCOMPARE(chain.sample(likes_b.data(), 4), 0);  // still "a"+
        chain.accept(0);
        chain.set_params(q);  // still asked for: not parsed again, no second refusal
        QVERIFY(!chain.take_grammar_refusal());
        chain.set_params(p);  // the GUI shows the grammar in force again
        QVERIFY(!chain.take_grammar_refusal());
        chain.set_params(q);  // ... and the user tries once more
        QVERIFY(chain.take_grammar_refusal());
        // A reply that cannot even start under it says so.
        chain.reset();
        QCOMPARE(chain.sample(likes_b.data(), 4), 0);
        chain.accept(0);
        SamplingParams starts_with_b = p;
        starts_with_b.grammar = "root ::= \"b\"+";
        chain.set_params(starts_with_b);
        refusal = chain.take_grammar_refusal();
        QVERIFY(refusal);
        QVERIFY2(refusal->why.find("it cannot start with \"a\"") != std::string::npos, refusal->why.c_str());
    }

    // None mid-reply drops the constraint from the next token; a malformed grammar mid-reply is refused
    // as before a reply (wb::Error, nothing changed).
    void noneMidReplyDropsTheConstraint() {
        auto vocab = tiny_vocab({"a", "b"});
        SamplingParams p;
        p.temperature = 0.0f;
        p.grammar = "root ::= \"a\"+";
        SamplerChain chain(p, vocab);
        const std::vector<float> likes_b = {0.0f, 1.0f, -5.0f};
        QCOMPARE(chain.sample(likes_b.data(), 3), 0);
        chain.accept(0);
        SamplingParams bad = p;
        bad.grammar = "root ::= (";
        QVERIFY_THROWS_EXCEPTION(Error, chain.set_params(bad));
        QCOMPARE(chain.params().grammar, p.grammar);
        QCOMPARE(chain.sample(likes_b.data(), 3), 0);
        chain.accept(0);
        SamplingParams none = p;
        none.grammar.clear();
        chain.set_params(none);
        QVERIFY(!chain.take_grammar_refusal());
        QCOMPARE(chain.sample(likes_b.data(), 3), 1);
    }
};

QTEST_GUILESS_MAIN(TestGrammar)
#include "test_grammar.moc"
