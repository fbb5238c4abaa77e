// The observed greedy fast path: SamplerChain::greedy_over_raw_row says when no stage before the
// argmax changes the row, and sample_greedy_row then draws the chain's token with the very bits of
// the p the chain reports (GreedySampler and the trace included), from the raw row.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "sampling/sampler.h"
#include "util/error.h"

using namespace wb;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

SamplingParams greedy() {
    SamplingParams p;
    p.temperature = 0.0f;
    p.seed = 3;
    return p;
}

// Tokens "a", "b", "c", ":" (3, DRY's only breaker, which ends a repeat on its own), "e" to "p".
std::shared_ptr<SamplerVocab> tiny_vocab() {
    auto v = std::make_shared<SamplerVocab>();
    v->n_vocab = 16;
    v->piece = [](int32_t id) { return std::string(1, id == 3 ? ':' : char('a' + id)); };
    v->tokenize = [](const std::string& text) {
        std::vector<int32_t> ids;
        for (char ch : text) ids.push_back(ch == ':' ? 3 : int32_t(ch - 'a'));
        return ids;
    };
    v->is_eog = [](int32_t) { return false; };
    return v;
}

// A logits row of a kind the tests name: "normal" (a language model's spread), "ties" (three values
// only), "nan" (normal with NaN and -inf sprinkled in, and NaN first), "masked" (all -inf but a few),
// "all masked" (no finite entry: the chain's uniform p), "plus inf" (a +inf entry: no distribution).
std::vector<float> make_row(const QString& kind, int32_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> row(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
        if (kind == "ties") row[size_t(i)] = float(rng() % 3);
        else if (kind == "masked") row[size_t(i)] = rng() % 50 == 0 ? normal(rng) : -kInf;
        else if (kind == "all masked") row[size_t(i)] = i % 2 ? -kInf : std::nanf("");
        else row[size_t(i)] = normal(rng);
    }
    if (kind == "nan")
        for (int32_t i = 0; i < n; i += 37) row[size_t(i)] = i % 2 == 0 ? std::nanf("") : -kInf;
    if (kind == "plus inf") row[size_t(n / 2)] = kInf;
    return row;
}

}  // namespace

class TestGreedyRow : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void saysWhenNoStageChangesTheRow() {
        struct Case {
            const char* name;
            SamplingParams params;
            std::vector<int32_t> history;
            bool expected;
        };
        std::vector<Case> cases;
        const auto with = [&](const char* name, auto change, std::vector<int32_t> history, bool expected) {
            SamplingParams p = greedy();
            change(p);
            cases.push_back({name, p, std::move(history), expected});
        };
        const auto nothing = [](SamplingParams&) {};
        with("greedy", nothing, {0, 1, 2, 0, 1}, true);
        with("sampled", [](SamplingParams& p) { p.temperature = 0.8f; }, {}, false);
        with("logit bias", [](SamplingParams& p) { p.logit_bias = {{5, -1.0f}}; }, {}, false);
        with("XTC", [](SamplingParams& p) { p.xtc_probability = 0.5f; }, {}, false);
        with("typical", [](SamplingParams& p) { p.typical_p = 0.9f; }, {}, false);
        with("grammar (it checks the argmax)", [](SamplingParams& p) { p.grammar = "root ::= \"a\""; }, {}, true);
        const auto repeat = [](SamplingParams& p) { p.repeat_penalty = 1.3f; };
        with("repeat penalty, no history yet", repeat, {}, true);
        with("repeat penalty with history", repeat, {7}, false);
        with("repeat penalty, window 0", [](SamplingParams& p) { p.repeat_penalty = 1.3f; p.repeat_last_n = 0; }, {7}, true);
        with("frequency penalty with history", [](SamplingParams& p) { p.frequency_penalty = 0.5f; }, {7}, false);
        with("presence penalty with history", [](SamplingParams& p) { p.presence_penalty = 0.5f; }, {7}, false);
        const auto dry = [](SamplingParams& p) {
            p.dry_multiplier = 0.8f;
            p.dry_sequence_breakers = {":"};
        };
        with("DRY, nothing repeated", dry, {0, 1, 2, 5, 6}, true);
        with("DRY, a repeat to extend", dry, {0, 1, 2, 0, 1}, false);
        with("DRY, the repeat's next token is a breaker", dry, {0, 1, 3, 0, 1}, true);
        for (const Case& c : cases) {
            SamplerChain chain(c.params, tiny_vocab());
            for (int32_t t : c.history) chain.accept(t);
            QVERIFY2(chain.greedy_over_raw_row() == c.expected, c.name);
            if (!c.expected) {
                const std::vector<float> row = make_row("normal", 16, 1);
                QVERIFY_THROWS_EXCEPTION(Error, chain.sample_greedy_row(row.data(), 16));
            }
        }
    }

    void drawsTheChainsTokenWithTheSameBits_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<int>("n");
        QTest::addColumn<float>("repeat_penalty");  // on, but nothing accepted yet
        for (const char* kind : {"normal", "ties", "nan", "masked", "all masked", "plus inf"})
            for (int n : {1, 13, 5000, 49152})
                QTest::newRow(qPrintable(QString("%1 n=%2").arg(kind).arg(n))) << QString(kind) << n << 1.0f;
        QTest::addRow("normal, penalties without history") << QString("normal") << 49152 << 1.3f;
    }
    void drawsTheChainsTokenWithTheSameBits() {
        QFETCH(QString, kind);
        QFETCH(int, n);
        QFETCH(float, repeat_penalty);
        SamplingParams p = greedy();
        p.repeat_penalty = repeat_penalty;
        SamplerChain whole(p), fast(p);
        QVERIFY(fast.greedy_over_raw_row());
        // std::exp's sum and exp_sum's round to different float p on about 1.5 % of rows (measured on
        // "normal" rows), so it takes hundreds of rows to see that both paths use the same one.
        const uint64_t rows = n > 5000 ? 60 : 400;
        for (uint64_t seed = 1; seed <= rows; ++seed) {
            const std::vector<float> row = make_row(kind, n, seed);
            std::vector<SamplerStageTrace> trace;
            const int32_t a = whole.sample(row.data(), n, &trace, 5);
            const int32_t b = fast.sample_greedy_row(row.data(), n);
            QCOMPARE(b, a);
            const CandidateSet& wa = whole.last_candidates();
            const CandidateSet& fb = fast.last_candidates();
            const float pa = wa.data[size_t(wa.selected)].p, pb = fb.data[size_t(fb.selected)].p;
            QCOMPARE(fb.data[size_t(fb.selected)].id, a);
            QVERIFY2(same_bits(pb, pa) || (std::isnan(pa) && std::isnan(pb)),
                     qPrintable(QString("p %1 vs the chain's %2").arg(double(pb), 0, 'g', 9).arg(double(pa), 0, 'g', 9)));
            QVERIFY(std::isnan(pa) || (pa > 0.0f && pa <= 1.0f));
            // The trace's greedy stage shows the same p for the drawn token.
            QVERIFY(!trace.empty() && !trace.back().top_after.empty());
            QCOMPARE(trace.back().top_after[0].id, a);
            const float pt = trace.back().top_after[0].p;
            QVERIFY(same_bits(pt, pa) || (std::isnan(pa) && std::isnan(pt)));
        }
    }

    // With a grammar: the argmax when it fits, else the second draw over the allowed part of the row,
    // as sample() draws them, with the same p bits; the grammar advances the same way on both (a
    // draw that went wrong once would show in every later one). Over 400 random rows of the 16-token
    // vocabulary, where each grammar refuses many argmaxes.
    void withAGrammarDrawsTheChainsTokenWithTheSameBits_data() {
        QTest::addColumn<QString>("grammar");
        QTest::addColumn<QString>("kind");
        QTest::newRow("vowels") << "root ::= [aeiou]+" << "normal";
        QTest::newRow("words") << "root ::= (\"ab\" | \"cab\" | \"h\")+" << "normal";
        QTest::newRow("letters, ties") << "root ::= [a-h]+" << "ties";
    }
    void withAGrammarDrawsTheChainsTokenWithTheSameBits() {
        QFETCH(QString, grammar);
        QFETCH(QString, kind);
        SamplingParams p = greedy();
        p.grammar = grammar.toStdString();
        SamplerChain whole(p, tiny_vocab()), fast(p, tiny_vocab());
        QVERIFY(fast.greedy_over_raw_row());
        int refused = 0;
        for (uint64_t seed = 1; seed <= 400; ++seed) {
            const std::vector<float> row = make_row(kind, 16, seed);
            std::vector<SamplerStageTrace> trace;
            const int32_t a = whole.sample(row.data(), 16, &trace, 0);
            const int32_t b = fast.sample_greedy_row(row.data(), 16);
            QCOMPARE(b, a);
            refused += trace.back().stage == "greedy";  // the grammar entry came first: a second draw
            const CandidateSet& wa = whole.last_candidates();
            const CandidateSet& fb = fast.last_candidates();
            QVERIFY(same_bits(fb.data[size_t(fb.selected)].p, wa.data[size_t(wa.selected)].p));
            whole.accept(a);
            fast.accept(b);
        }
        QVERIFY2(refused > 20, qPrintable(QString::number(refused)));
    }

    // The raw-row path starts the reply as sample() does: a grammar set after its draws must parse the
    // reply so far ("b" here, which it does not: refused), not start from an empty text.
    void aGrammarSetAfterRawRowDrawsParsesTheReplySoFar() {
        SamplerChain chain(greedy(), tiny_vocab());
        std::vector<float> row(16, 0.0f);
        row[1] = 5.0f;  // "b"
        QCOMPARE(chain.sample_greedy_row(row.data(), 16), 1);
        chain.accept(1);
        SamplingParams p = greedy();
        p.grammar = "root ::= \"a\" [a-p]*";
        chain.set_params(p);
        const std::optional<GrammarRefusal> refusal = chain.take_grammar_refusal();
        QVERIFY(refusal.has_value());
        QVERIFY2(refusal->why.find("cannot start with \"b\"") != std::string::npos, refusal->why.c_str());
        QVERIFY(chain.params().grammar.empty());
    }
};

QTEST_GUILESS_MAIN(TestGreedyRow)
#include "test_greedy_row.moc"
