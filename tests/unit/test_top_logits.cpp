// Sampling from the best few logits (SamplerChain::top_needed / sample_top, select_top_logits): the
// session reads only those from the backend when the chain allows it, and promises the very token,
// survivors and probabilities that sampling the whole row gives. These tests hold it to that, and
// check the heap selections (select_top_logits, best_candidates) against full sorts.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>

#include "sampling/grammar/grammar_constraint.h"
#include "sampling/sampler.h"
#include "sampling/samplers.h"
#include "sampling/top_logits.h"

using namespace wb;

Q_DECLARE_METATYPE(wb::SamplingParams)

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// A logits row of a kind the tests name: "normal" (a language model's spread), "ties" (three values
// only), "nan" (normal with NaN, +-inf sprinkled in), "masked" (all -inf but a few).
std::vector<float> make_row(const QString& kind, int32_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> row(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
        if (kind == "ties") row[size_t(i)] = float(rng() % 3);
        else if (kind == "masked") row[size_t(i)] = rng() % 50 == 0 ? normal(rng) : -kInf;
        else row[size_t(i)] = normal(rng);
    }
    if (kind == "nan")
        for (int32_t i = 0; i < n; i += 37) row[size_t(i)] = i % 3 == 0 ? std::nanf("") : (i % 3 == 1 ? -kInf : kInf);
    return row;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// A vocabulary of random pieces of one to three letters of "abcdefgh" (repeats included, as real
// vocabularies have), its last token the end of generation.
std::shared_ptr<SamplerVocab> letter_vocab(int32_t n_vocab, uint64_t seed) {
    std::mt19937_64 rng(seed);
    auto pieces = std::make_shared<std::vector<std::string>>(size_t(n_vocab));
    for (int32_t id = 0; id + 1 < n_vocab; ++id)
        for (uint64_t len = 1 + rng() % 3; len > 0; --len) (*pieces)[size_t(id)] += char('a' + rng() % 8);
    auto vocab = std::make_shared<SamplerVocab>();
    vocab->n_vocab = n_vocab;
    vocab->piece = [pieces](int32_t id) { return (*pieces)[size_t(id)]; };
    vocab->is_eog = [n_vocab](int32_t id) { return id == n_vocab - 1; };
    return vocab;
}

// A random grammar over those letters, from one that allows most pieces to one that allows a handful:
// runs of a letter class, sequences of short words, or one word out of a few (then only the end).
std::string random_grammar(std::mt19937_64& rng) {
    const auto letters = [&](size_t n) {
        std::string all = "abcdefgh", out;
        std::shuffle(all.begin(), all.end(), rng);
        return all.substr(0, n);
    };
    const auto words = [&](int n) {
        std::string out;
        for (int i = 0; i < n; ++i) out += std::string(i ? " | " : "") + "\"" + letters(2 + rng() % 2) + "\"";
        return out;
    };
    switch (rng() % 3) {
        case 0: return "root ::= [" + letters(2 + rng() % 7) + "]+";
        case 1: return "root ::= (" + words(2 + int(rng() % 4)) + ")+";
        default: return "root ::= " + words(1 + int(rng() % 3));
    }
}

}  // namespace

class TestTopLogits : public QObject {
    Q_OBJECT

private slots:
    void select_matches_a_full_sort_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<int>("n");
        QTest::addColumn<int>("k");
        for (const char* kind : {"normal", "ties", "nan", "masked"}) {
            for (int k : {0, 1, 7, 40, 999, 1000, 1200})
                QTest::newRow((QByteArray(kind) + " k=" + QByteArray::number(k)).constData()) << QString(kind) << 1000 << k;
        }
        QTest::addRow("one entry") << QString("normal") << 1 << 1;
    }
    void select_matches_a_full_sort() {
        QFETCH(QString, kind);
        QFETCH(int, n);
        QFETCH(int, k);
        const std::vector<float> row = make_row(kind, n, 7);
        // The reference: CandidateSet's own order over the whole row.
        CandidateSet all;
        all.assign(row.data(), n);
        std::sort(all.data.begin(), all.data.end(), candidate_before);
        const int32_t kk = std::min(k, n);
        std::vector<int32_t> ids(size_t(std::max(kk, 1)), -1);
        std::vector<float> values(size_t(std::max(kk, 1)), 0.0f);
        select_top_logits(row.data(), n, k, ids.data(), values.data());
        for (int32_t i = 0; i < kk; ++i) {
            QCOMPARE(ids[size_t(i)], all.data[size_t(i)].id);
            QVERIFY2(same_bits(values[size_t(i)], all.data[size_t(i)].logit), qPrintable(QString::number(i)));
        }
        if (kk == 0) QCOMPARE(ids[0], -1);  // nothing written

        // The same pairs in any order (a GPU's top-k) come back in that order.
        std::vector<size_t> perm(static_cast<size_t>(kk));
        for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
        std::shuffle(perm.begin(), perm.end(), std::mt19937_64(3));
        std::vector<int32_t> shuffled_ids(perm.size());
        std::vector<float> shuffled(perm.size());
        for (size_t i = 0; i < perm.size(); ++i) {
            shuffled_ids[i] = ids[perm[i]];
            shuffled[i] = values[perm[i]];
        }
        order_top_logits(shuffled_ids.data(), shuffled.data(), kk);
        for (int32_t i = 0; i < kk; ++i) {
            QCOMPARE(shuffled_ids[size_t(i)], ids[size_t(i)]);
            QVERIFY(same_bits(shuffled[size_t(i)], values[size_t(i)]));
        }
    }

    // The top-k stage's selection (best_candidates) on a set in any order: ties by id, not by place.
    void best_candidates_match_a_full_sort_in_any_order_data() {
        QTest::addColumn<QString>("kind");
        for (const char* kind : {"normal", "ties", "nan", "masked"}) QTest::newRow(kind) << QString(kind);
    }
    void best_candidates_match_a_full_sort_in_any_order() {
        QFETCH(QString, kind);
        const std::vector<float> row = make_row(kind, 3000, 11);
        CandidateSet set;
        set.assign(row.data(), 3000);
        std::shuffle(set.data.begin(), set.data.end(), std::mt19937_64(5));
        std::vector<Candidate> sorted = set.data;
        std::sort(sorted.begin(), sorted.end(), candidate_before);
        for (size_t k : {size_t(0), size_t(1), size_t(40), size_t(2999), size_t(3000), size_t(4000)}) {
            const std::vector<Candidate> best = best_candidates(set.data, k);
            QCOMPARE(best.size(), std::min(k, sorted.size()));
            for (size_t i = 0; i < best.size(); ++i) {
                QCOMPARE(best[i].id, sorted[i].id);
                QVERIFY(same_bits(best[i].logit, sorted[i].logit));
            }
        }
    }

    void top_needed_counts_what_can_reach_the_top_k() {
        SamplingParams p;  // top_k 40, penalties off
        p.seed = 1;
        SamplerChain chain(p);
        QCOMPARE(chain.top_needed(50000, 0, true), 40);
        QCOMPARE(chain.top_needed(50000, 3, true), 43);  // three masked ids may sit among the best
        p.repeat_penalty = 1.2f;
        p.repeat_last_n = 64;
        chain.set_params(p);
        QCOMPARE(chain.top_needed(50000, 0, false), 40);  // no history yet: nothing to penalise
        for (int32_t t = 0; t < 10; ++t) chain.accept(t);
        QCOMPARE(chain.top_needed(50000, 0, false), 50);  // each token of the window may drop out
        for (int32_t t = 0; t < 100; ++t) chain.accept(t);
        QCOMPARE(chain.top_needed(50000, 0, false), 104);  // the window, not the history, counts
        p.repeat_last_n = -1;
        chain.set_params(p);
        QCOMPARE(chain.top_needed(50000, 0, false), 150);
        p.repeat_last_n = 0;  // penalties off again
        chain.set_params(p);
        QCOMPARE(chain.top_needed(50000, 0, false), 40);

        // The whole row: cases where a token outside the best few can still be drawn or shown.
        p = SamplingParams{};
        p.seed = 1;
        p.top_k = 0;
        chain.set_params(p);
        QCOMPARE(chain.top_needed(50000, 0, false), 0);  // no top-k stage
        p.top_k = 40;
        p.repeat_penalty = 0.9f;  // raises logits
        chain.set_params(p);
        QCOMPARE(chain.top_needed(50000, 0, false), 0);
        p.repeat_penalty = 1.0f;
        p.frequency_penalty = -0.1f;
        chain.set_params(p);
        QCOMPARE(chain.top_needed(50000, 0, false), 0);
        p.frequency_penalty = 0.0f;
        p.presence_penalty = -0.1f;
        chain.set_params(p);
        QCOMPARE(chain.top_needed(50000, 0, false), 0);
        p.presence_penalty = 0.0f;
        p.top_k = SamplerChain::kMaxTopNeeded + 1;
        chain.set_params(p);
        QCOMPARE(chain.top_needed(50000, 0, false), 0);
        p.top_k = 40;
        chain.set_params(p);
        QCOMPARE(chain.top_needed(40, 0, false), 0);  // as many as the vocabulary: read it all
        p.temperature = 0.0f;  // greedy
        chain.set_params(p);
        QCOMPARE(chain.top_needed(50000, 0, false), 1);
        QCOMPARE(chain.top_needed(50000, 0, true), 0);  // its p is over the whole vocabulary
    }

    // Two chains with one seed, one given whole rows, the other the best top_needed() logits of the
    // same rows, over a generation whose history feeds the penalties: the same tokens, and the same
    // final candidates bit for bit.
    void sample_top_draws_what_sample_draws_data() {
        QTest::addColumn<SamplingParams>("params");
        QTest::addColumn<QString>("kind");
        QTest::addColumn<bool>("mask");
        SamplingParams p;
        p.seed = 1234;
        QTest::addRow("defaults") << p << QString("normal") << false;
        QTest::addRow("defaults, ties") << p << QString("ties") << false;
        QTest::addRow("defaults, nan") << p << QString("nan") << false;
        QTest::addRow("defaults, masked") << p << QString("masked") << false;
        QTest::addRow("defaults, eog masked") << p << QString("normal") << true;
        SamplingParams q = p;
        q.top_k = 1;
        QTest::addRow("top_k 1") << q << QString("normal") << false;
        q = p;
        q.top_k = 5;
        q.top_p = 0.5f;
        q.min_p = 0.0f;
        QTest::addRow("top_k 5, top_p 0.5") << q << QString("normal") << false;
        q = p;
        q.typical_p = 0.7f;
        q.temperature = 1.5f;
        QTest::addRow("typical 0.7, hot") << q << QString("normal") << false;
        q = p;
        q.repeat_penalty = 1.3f;
        q.top_p = 1.0f;  // compare all top_k survivors, where a missed penalised token would show
        q.min_p = 0.0f;
        QTest::addRow("repeat penalty") << q << QString("normal") << true;
        q = p;
        q.frequency_penalty = 0.5f;
        q.presence_penalty = 0.3f;
        q.repeat_last_n = -1;
        q.top_k = 200;
        q.min_p = 0.0f;
        QTest::addRow("frequency, presence, whole history") << q << QString("ties") << false;
        q = p;
        q.temperature = 0.0f;
        q.repeat_penalty = 1.5f;
        QTest::addRow("greedy, repeat penalty") << q << QString("normal") << true;
    }
    void sample_top_draws_what_sample_draws() {
        QFETCH(SamplingParams, params);
        QFETCH(QString, kind);
        QFETCH(bool, mask);
        constexpr int32_t n_vocab = 5000;
        const std::vector<int32_t> masked = mask ? std::vector<int32_t>{3, 17, 4999} : std::vector<int32_t>{};
        SamplerChain whole(params), top(params);
        // A history made of likely tokens, so the penalties bite inside the best few.
        for (int32_t t = 0; t < 30; ++t) {
            whole.accept(t * 7);
            top.accept(t * 7);
        }
        for (int step = 0; step < 150; ++step) {
            std::vector<float> row = make_row(kind, n_vocab, 100 + uint64_t(step));
            for (int32_t t = 0; t < 30; ++t) row[size_t(t * 7)] += 4.0f;  // push the history up front

            // The top path as Session::sample_next runs it: select on the unmasked row, then mask.
            const int32_t k = top.top_needed(n_vocab, int32_t(masked.size()), false);
            QVERIFY(k > 0);
            std::vector<int32_t> ids(static_cast<size_t>(k));
            std::vector<float> values(static_cast<size_t>(k));
            select_top_logits(row.data(), n_vocab, k, ids.data(), values.data());
            for (int32_t i = 0; i < k; ++i)
                if (std::count(masked.begin(), masked.end(), ids[size_t(i)])) values[size_t(i)] = -kInf;
            const int32_t from_top = top.sample_top(ids.data(), values.data(), k);

            for (int32_t id : masked) row[size_t(id)] = -kInf;
            const int32_t from_whole = whole.sample(row.data(), n_vocab);
            QCOMPARE(from_top, from_whole);

            const CandidateSet& a = whole.last_candidates();
            const CandidateSet& b = top.last_candidates();
            QCOMPARE(b.data[size_t(b.selected)].id, a.data[size_t(a.selected)].id);
            if (!params.is_greedy()) {  // greedy's p is over whatever it was given (see top_needed)
                QCOMPARE(b.data.size(), a.data.size());
                QCOMPARE(b.selected, a.selected);
                for (size_t i = 0; i < a.data.size(); ++i) {
                    QCOMPARE(b.data[i].id, a.data[i].id);
                    QVERIFY(same_bits(b.data[i].logit, a.data[i].logit));
                    QVERIFY(same_bits(b.data[i].p, a.data[i].p));
                }
            }
            whole.accept(from_whole);
            top.accept(from_top);
        }
    }

    // What a grammar's second draw reads: the tokens allowed_tokens() finds by the trie are, in
    // ascending order, those allows() accepts one by one (the end of generation exactly where the text
    // is complete); a shorter row gets those below its size.
    void allowed_tokens_are_those_the_grammar_allows_one_by_one() {
        constexpr int32_t n_vocab = 3000;
        auto vocab = letter_vocab(n_vocab, 23);
        std::mt19937_64 rng(31);
        int states = 0, complete = 0, few = 0;
        for (int g = 0; g < 30; ++g) {
            GrammarConstraint grammar(random_grammar(rng), vocab);
            for (int step = 0; step < 6; ++step, ++states) {
                std::vector<int32_t> expected, pieces;
                for (int32_t id = 0; id < n_vocab; ++id) {
                    if (!grammar.allows(id)) continue;
                    expected.push_back(id);
                    if (!vocab->is_eog(id)) pieces.push_back(id);
                }
                QCOMPARE(grammar.allowed_tokens(n_vocab), expected);
                std::vector<int32_t> below;
                for (int32_t id : expected)
                    if (id < n_vocab / 2) below.push_back(id);
                if (!below.empty()) QCOMPARE(grammar.allowed_tokens(n_vocab / 2), below);
                complete += grammar.complete();
                few += expected.size() < 40;
                if (pieces.empty()) break;
                grammar.accept(pieces[size_t(rng() % pieces.size())]);
            }
        }
        QVERIFY2(complete > 10 && few >= 5 && states > 100, qPrintable(QString("%1 states, %2 complete, %3 with few allowed")
                                                                         .arg(states).arg(complete).arg(few)));
    }

    // The same with a grammar, on random grammars over random rows: the first draw fits or not, and
    // the second comes from the best few when they hold enough allowed tokens, else from the whole
    // row. Either way the token and the final candidates are those of the whole-row chain, and both
    // ways are taken in every row here (otherwise it would prove nothing about one of them).
    void sample_top_with_a_grammar_draws_what_sample_draws_data() {
        QTest::addColumn<SamplingParams>("params");
        QTest::addColumn<QString>("kind");
        QTest::addColumn<bool>("mask");
        SamplingParams p;
        p.seed = 4321;
        QTest::addRow("defaults") << p << QString("normal") << false;
        QTest::addRow("defaults, ties") << p << QString("ties") << false;
        QTest::addRow("defaults, masked row") << p << QString("masked") << false;
        QTest::addRow("defaults, ids masked") << p << QString("normal") << true;
        SamplingParams q = p;
        q.top_k = 3;
        q.top_p = 1.0f;
        q.min_p = 0.0f;
        QTest::addRow("top_k 3, every survivor compared") << q << QString("normal") << true;
        q = p;
        q.repeat_penalty = 1.4f;
        q.repeat_last_n = 16;
        q.top_p = 1.0f;
        q.min_p = 0.0f;
        QTest::addRow("repeat penalty") << q << QString("normal") << true;
        q = p;
        q.dry_multiplier = 0.8f;
        q.dry_sequence_breakers.clear();  // the defaults need a tokenizer
        q.logit_bias = {{5, -2.0f}, {9, -kInf}};
        QTest::addRow("dry, lowering bias") << q << QString("normal") << false;
        q = p;
        q.temperature = 0.0f;
        QTest::addRow("greedy") << q << QString("normal") << false;
        q.repeat_penalty = 1.5f;
        QTest::addRow("greedy, repeat penalty, ids masked") << q << QString("ties") << true;
    }
    void sample_top_with_a_grammar_draws_what_sample_draws() {
        QFETCH(SamplingParams, params);
        QFETCH(QString, kind);
        QFETCH(bool, mask);
        constexpr int32_t n_vocab = 3000;
        auto vocab = letter_vocab(n_vocab, 17);
        const std::vector<int32_t> masked = mask ? std::vector<int32_t>{3, 17, 400} : std::vector<int32_t>{};
        std::mt19937_64 rng(29);
        SamplerChain whole(params, vocab), top(params, vocab);
        int from_best = 0, from_row = 0, steps = 0;
        for (int reply = 0; reply < 40; ++reply) {
            SamplingParams now = params;
            now.grammar = random_grammar(rng);
            whole.reset();
            top.reset();
            whole.set_params(now);
            top.set_params(now);
            for (int step = 0; step < 25; ++step, ++steps) {
                std::vector<float> row = make_row(kind, n_vocab, 1000 + uint64_t(steps));
                const int32_t k = top.top_needed(n_vocab, int32_t(masked.size()), false);
                QVERIFY(k > 0);
                std::vector<int32_t> ids(static_cast<size_t>(k));
                std::vector<float> values(static_cast<size_t>(k));
                select_top_logits(row.data(), n_vocab, k, ids.data(), values.data());
                for (int32_t i = 0; i < k; ++i)
                    if (std::count(masked.begin(), masked.end(), ids[size_t(i)])) values[size_t(i)] = -kInf;
                for (int32_t id : masked) row[size_t(id)] = -kInf;
                int rows_read = 0;
                int32_t columns_read = 0;
                const int32_t from_top = top.sample_top(ids.data(), values.data(), k, [&](const int32_t* cols, int32_t n, float* out) {
                    ++rows_read;
                    columns_read = n;
                    QVERIFY(std::is_sorted(cols, cols + n));
                    for (int32_t i = 0; i < n; ++i) out[i] = row[size_t(cols[i])];
                });
                std::vector<SamplerStageTrace> trace;  // says whether the first draw was refused
                const int32_t from_whole = whole.sample(row.data(), n_vocab, &trace, 0);
                QCOMPARE(from_top, from_whole);
                QVERIFY(rows_read <= 1);
                const auto redrawn = std::find_if(trace.begin(), trace.end(), [](const SamplerStageTrace& t) {
                    return t.stage == "grammar" && t.detail.starts_with("the first draw");
                });
                if (redrawn != trace.end()) ++(rows_read ? from_row : from_best);
                else QCOMPARE(rows_read, 0);
                // Only the allowed tokens' columns are read: those the whole-row chain kept.
                if (rows_read) QCOMPARE(size_t(columns_read), redrawn->n_after);
                const CandidateSet& a = whole.last_candidates();
                const CandidateSet& b = top.last_candidates();
                QCOMPARE(b.data[size_t(b.selected)].id, a.data[size_t(a.selected)].id);
                if (!params.is_greedy()) {
                    QCOMPARE(b.data.size(), a.data.size());
                    QCOMPARE(b.selected, a.selected);
                    for (size_t i = 0; i < a.data.size(); ++i) {
                        QCOMPARE(b.data[i].id, a.data[i].id);
                        QVERIFY(same_bits(b.data[i].logit, a.data[i].logit));
                        QVERIFY(same_bits(b.data[i].p, a.data[i].p));
                    }
                }
                if (vocab->is_eog(from_whole)) break;
                whole.accept(from_whole);
                top.accept(from_top);
            }
        }
        qInfo("second draws from the best few: %d, from the allowed columns: %d, of %d draws", from_best, from_row, steps);
        QVERIFY2(from_row > 0 && from_best > 0, qPrintable(QString("second draws from the best few: %1, from the allowed columns: %2")
                                                              .arg(from_best).arg(from_row)));
    }
};

QTEST_GUILESS_MAIN(TestTopLogits)
#include "test_top_logits.moc"
