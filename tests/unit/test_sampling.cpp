// The sampler chain against hand-computed distributions (llama.cpp's semantics), plus the chain's
// own promises: seeded reproducibility, live parameter updates, the trace, parameter validation.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "sampling/sampler.h"
#include "sampling/samplers.h"
#include "util/error.h"

using namespace wb;

namespace {

std::vector<float> to_floats(const QList<double>& values) {
    return std::vector<float>(values.begin(), values.end());
}

QList<double> log_of(const QList<double>& probs) {
    QList<double> out;
    for (double p : probs) {
        out.append(std::log(p));
    }
    return out;
}

CandidateSet make_set(const std::vector<float>& logits) {
    CandidateSet cands;
    cands.assign(logits.data(), static_cast<int32_t>(logits.size()));
    return cands;
}

// A chain that only draws: every filter off, temperature 1.
SamplingParams plain_params(uint64_t seed) {
    SamplingParams p;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = seed;
    return p;
}

// Uniform in [-5, 5) from a seeded 64-bit stream: the same matrix on every platform.
std::vector<float> random_logits(size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<float> out(n);
    for (float& v : out) {
        v = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-53 * 10.0 - 5.0);
    }
    return out;
}

// The reference distribution, computed here and not by the code under test: softmax in double over
// the logits, sorted most likely first (lower id first on ties).
struct RefToken {
    int32_t id;
    double p;
};
std::vector<RefToken> reference_distribution(const std::vector<float>& logits) {
    const double mx = *std::max_element(logits.begin(), logits.end());
    double z = 0.0;
    for (float l : logits) z += std::exp(double(l) - mx);
    std::vector<RefToken> out;
    for (size_t i = 0; i < logits.size(); ++i) out.push_back({int32_t(i), std::exp(double(logits[i]) - mx) / z});
    std::stable_sort(out.begin(), out.end(), [](const RefToken& a, const RefToken& b) { return a.p > b.p; });
    return out;
}

// Tokens kept by a cut-off at `mass` over `dist` (in its order): up to the first whose cumulative
// probability reaches it. The data must not put a cumulative sum within a few float ulps of the mass,
// where the sampler's float probabilities could legitimately cut one token earlier or later.
size_t kept_by_mass(const std::vector<RefToken>& dist, double mass) {
    double cum = 0.0;
    for (size_t i = 0; i < dist.size(); ++i) {
        cum += dist[i].p;
        if (std::fabs(cum - mass) < 3e-7) {
            QTest::qFail("the reference data puts a cumulative sum at the cut-off", __FILE__, __LINE__);
            return 0;
        }
        if (cum >= mass) return i + 1;
    }
    return dist.size();
}

std::vector<int32_t> generate(SamplerChain& chain, const std::vector<std::vector<float>>& rows, bool traced) {
    std::vector<int32_t> tokens;
    std::vector<SamplerStageTrace> trace;
    for (const auto& row : rows) {
        const int32_t t = chain.sample(row.data(), static_cast<int32_t>(row.size()), traced ? &trace : nullptr, 5);
        chain.accept(t);
        tokens.push_back(t);
    }
    return tokens;
}

std::unique_ptr<Sampler> make_stage(const QString& name, double value) {
    const auto v = static_cast<float>(value);
    if (name == "top_k") return std::make_unique<TopKSampler>(static_cast<int32_t>(value));
    if (name == "typical_p") return std::make_unique<TypicalSampler>(v);
    if (name == "top_p") return std::make_unique<TopPSampler>(v);
    if (name == "min_p") return std::make_unique<MinPSampler>(v);
    return std::make_unique<TemperatureSampler>(v);
}

}  // namespace

class TestSampling : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void stage_gives_hand_computed_distribution_data();
    void stage_gives_hand_computed_distribution();
    void penalties_adjust_logits_data();
    void penalties_adjust_logits();
    void penalties_find_tokens_in_a_reordered_set();
    void chain_penalises_accepted_tokens();
    void greedy_takes_argmax_lowest_id_on_ties_data();
    void greedy_takes_argmax_lowest_id_on_ties();
    void cutoffs_match_a_full_sort_on_a_large_vocab_data();
    void cutoffs_match_a_full_sort_on_a_large_vocab();
    void seeded_chain_is_reproducible_data();
    void seeded_chain_is_reproducible();
    void random_seed_is_reported_and_replayable();
    void draw_frequencies_match_probabilities_data();
    void draw_frequencies_match_probabilities();
    void set_params_changes_the_next_sample();
    void set_params_keeps_the_random_stream_unless_seed_changes();
    void trace_records_every_stage_data();
    void trace_records_every_stage();
    void invalid_param_throws_naming_it_data();
    void invalid_param_throws_naming_it();
    void empty_logits_throw();
};

void TestSampling::stage_gives_hand_computed_distribution_data() {
    QTest::addColumn<QString>("stage");
    QTest::addColumn<double>("value");
    QTest::addColumn<QList<double>>("logits");
    QTest::addColumn<QList<int>>("ids");      // survivors, most likely first
    QTest::addColumn<QList<double>>("probs");  // softmax over the survivors

    const QList<double> up = log_of({0.1, 0.2, 0.3, 0.4});
    const QList<double> down = log_of({0.4, 0.3, 0.2, 0.1});
    // .4, .3, .2 renormalised over .9; .3, .2 over .5.
    const QList<double> three = {0.4 / 0.9, 0.3 / 0.9, 0.2 / 0.9};

    QTest::newRow("top_k 3") << "top_k" << 3.0 << up << QList<int>{3, 2, 1} << three;
    QTest::newRow("top_k 0 is off") << "top_k" << 0.0 << up << QList<int>{3, 2, 1, 0}
                                    << QList<double>{0.4, 0.3, 0.2, 0.1};
    QTest::newRow("top_k >= n is off") << "top_k" << 9.0 << up << QList<int>{3, 2, 1, 0}
                                       << QList<double>{0.4, 0.3, 0.2, 0.1};
    // cum .4, .7 >= .7: two tokens, .4/.7 and .3/.7.
    QTest::newRow("top_p 0.7") << "top_p" << 0.7 << down << QList<int>{0, 1} << QList<double>{0.4 / 0.7, 0.3 / 0.7};
    QTest::newRow("top_p 0.75") << "top_p" << 0.75 << down << QList<int>{0, 1, 2} << three;
    QTest::newRow("top_p 1 is off") << "top_p" << 1.0 << down << QList<int>{0, 1, 2, 3}
                                    << QList<double>{0.4, 0.3, 0.2, 0.1};
    QTest::newRow("top_p 1.5 is off") << "top_p" << 1.5 << down << QList<int>{0, 1, 2, 3}
                                      << QList<double>{0.4, 0.3, 0.2, 0.1};
    QTest::newRow("top_p 0 keeps the best") << "top_p" << 0.0 << down << QList<int>{0} << QList<double>{1.0};
    // p >= 0.5 * 0.4 = 0.2: .4, .3, .2 stay.
    QTest::newRow("min_p 0.5") << "min_p" << 0.5 << down << QList<int>{0, 1, 2} << three;
    // p >= 0.76 * 0.4 = 0.304: only .4 stays.
    QTest::newRow("min_p 0.76") << "min_p" << 0.76 << down << QList<int>{0} << QList<double>{1.0};
    QTest::newRow("min_p 0 is off") << "min_p" << 0.0 << down << QList<int>{0, 1, 2, 3}
                                    << QList<double>{0.4, 0.3, 0.2, 0.1};
    QTest::newRow("min_p 2 acts as 1: ties with the best stay")
        << "min_p" << 2.0 << log_of({0.4, 0.2, 0.4}) << QList<int>{0, 2} << QList<double>{0.5, 0.5};
    // p = {.4, .3, .2, .1}: H = -sum p ln p = .366516 + .361192 + .321888 + .230259 = 1.279854.
    // |-ln p - H|: .4 -> |.916291 - H| = .363563; .3 -> |1.203973 - H| = .075881;
    //              .2 -> |1.609438 - H| = .329584; .1 -> |2.302585 - H| = 1.022731.
    // Most typical first: .3, .2, .4, .1; cumulative .3, .5, .9, 1.0.
    QTest::newRow("typical_p 0.45 keeps .3 .2") << "typical_p" << 0.45 << down << QList<int>{1, 2}
                                                << QList<double>{0.6, 0.4};
    QTest::newRow("typical_p 0.6 keeps .3 .2 .4") << "typical_p" << 0.6 << down << QList<int>{0, 1, 2} << three;
    QTest::newRow("typical_p 0.2 keeps .3") << "typical_p" << 0.2 << down << QList<int>{1} << QList<double>{1.0};
    QTest::newRow("typical_p 1 is off") << "typical_p" << 1.0 << down << QList<int>{0, 1, 2, 3}
                                        << QList<double>{0.4, 0.3, 0.2, 0.1};
    // logits {1, 2, 3} / 2 = {.5, 1, 1.5}; e^x = 1.648721, 2.718282, 4.481689; sum 8.848692.
    QTest::newRow("temperature 2") << "temperature" << 2.0 << QList<double>{1, 2, 3} << QList<int>{2, 1, 0}
                                   << QList<double>{0.506480, 0.307196, 0.186324};
    // logits {1, 2, 3} / 0.5 = {2, 4, 6}; e^(x-6) = 1, .135335, .018316; sum 1.153651.
    QTest::newRow("temperature 0.5") << "temperature" << 0.5 << QList<double>{1, 2, 3} << QList<int>{2, 1, 0}
                                     << QList<double>{0.866813, 0.117310, 0.015876};
}

void TestSampling::stage_gives_hand_computed_distribution() {
    QFETCH(QString, stage);
    QFETCH(double, value);
    QFETCH(QList<double>, logits);
    QFETCH(QList<int>, ids);
    QFETCH(QList<double>, probs);

    CandidateSet cands = make_set(to_floats(logits));
    make_stage(stage, value)->apply(cands);
    cands.softmax();
    QCOMPARE(static_cast<qsizetype>(cands.data.size()), ids.size());
    for (qsizetype i = 0; i < ids.size(); ++i) {
        QCOMPARE(cands.data[static_cast<size_t>(i)].id, ids[i]);
        QVERIFY2(std::fabs(cands.data[static_cast<size_t>(i)].p - probs[i]) < 1e-4,
                 qPrintable(QString("p[%1] = %2, expected %3").arg(i).arg(cands.data[i].p).arg(probs[i])));
    }
}

void TestSampling::penalties_adjust_logits_data() {
    QTest::addColumn<QList<double>>("logits");
    QTest::addColumn<QList<int>>("history");
    QTest::addColumn<int>("last_n");
    QTest::addColumn<double>("repeat");
    QTest::addColumn<double>("frequency");
    QTest::addColumn<double>("presence");
    QTest::addColumn<QList<double>>("expected");

    // Positive logits are divided, negative ones multiplied: both become less likely.
    QTest::newRow("repeat 2 on positive and negative") << QList<double>{2, -2, 1, 0.5} << QList<int>{0, 1} << 64
                                                       << 2.0 << 0.0 << 0.0 << QList<double>{1, -4, 1, 0.5};
    // id 0 seen 3 times: 1 - 3 * .5 - .25; id 2 once: 1 - .5 - .25.
    QTest::newRow("frequency and presence with counts") << QList<double>{1, 1, 1, 1} << QList<int>{0, 0, 0, 2}
                                                        << 64 << 1.0 << 0.5 << 0.25
                                                        << QList<double>{-0.75, 1, 0.25, 1};
    // id 0: 3 / 1.5 - .1 - .2 = 1.7; id 1 (twice): -1 * 1.5 - .2 - .2 = -1.9.
    QTest::newRow("all three") << QList<double>{3, -1, 0} << QList<int>{0, 1, 1} << 64 << 1.5 << 0.1 << 0.2
                               << QList<double>{1.7, -1.9, 0};
    QTest::newRow("window of 2 sees ids 2 and 3") << QList<double>{2, 2, 2, 2} << QList<int>{0, 1, 2, 3} << 2
                                                  << 2.0 << 0.0 << 0.0 << QList<double>{2, 2, 1, 1};
    QTest::newRow("window of 1 counts one occurrence") << QList<double>{2, 2} << QList<int>{1, 0, 0} << 1 << 1.0
                                                       << 1.0 << 0.0 << QList<double>{1, 2};
    // -1: all history; id 0 twice: 2 / 2 - 2 * 1.
    QTest::newRow("window -1 is all history") << QList<double>{2, 2, 2} << QList<int>{0, 1, 0} << -1 << 2.0 << 1.0
                                              << 0.0 << QList<double>{-1, 0, 2};
    QTest::newRow("window 0 is off") << QList<double>{2, 2} << QList<int>{0} << 0 << 2.0 << 1.0 << 1.0
                                     << QList<double>{2, 2};
}

void TestSampling::penalties_adjust_logits() {
    QFETCH(QList<double>, logits);
    QFETCH(QList<int>, history);
    QFETCH(int, last_n);
    QFETCH(double, repeat);
    QFETCH(double, frequency);
    QFETCH(double, presence);
    QFETCH(QList<double>, expected);

    const std::vector<int32_t> hist(history.begin(), history.end());
    CandidateSet cands = make_set(to_floats(logits));
    PenaltiesSampler(hist, last_n, static_cast<float>(repeat), static_cast<float>(frequency),
                     static_cast<float>(presence))
        .apply(cands);
    for (qsizetype i = 0; i < expected.size(); ++i) {
        QVERIFY(std::fabs(cands.data[static_cast<size_t>(i)].logit - expected[i]) < 1e-5);
    }
}

void TestSampling::penalties_find_tokens_in_a_reordered_set() {
    const std::vector<int32_t> hist = {0, 3};
    CandidateSet cands = make_set({4, 1, 2, 3});
    cands.sort_desc();  // ids 0, 3, 2, 1: no longer indexable by id
    PenaltiesSampler(hist, 64, 2.0f, 0.0f, 0.0f).apply(cands);
    for (const Candidate& c : cands.data) {
        const float expected = c.id == 0 ? 2.0f : c.id == 3 ? 1.5f : static_cast<float>(c.id);
        QCOMPARE(c.logit, expected);
    }
}

void TestSampling::chain_penalises_accepted_tokens() {
    SamplingParams p;
    p.temperature = 0.0f;
    p.repeat_penalty = 2.0f;
    SamplerChain chain(p);
    const std::vector<float> logits = {2.0f, 1.9f};
    QCOMPARE(chain.sample(logits.data(), 2), 0);
    chain.accept(0);
    QCOMPARE(chain.sample(logits.data(), 2), 1);  // 2 / 2 = 1 < 1.9
    chain.reset();
    QCOMPARE(chain.sample(logits.data(), 2), 0);  // a new generation forgets the history
}

void TestSampling::greedy_takes_argmax_lowest_id_on_ties_data() {
    QTest::addColumn<double>("temperature");
    QTest::addColumn<QList<double>>("logits");
    QTest::addColumn<int>("expected");
    QTest::newRow("clear maximum") << 0.0 << QList<double>{1, 5, 2} << 1;
    QTest::newRow("tie goes to the lowest id") << 0.0 << QList<double>{1, 3, 3, 2} << 1;
    QTest::newRow("tie at the end") << 0.0 << QList<double>{-1, -2, 0, 0} << 2;
    QTest::newRow("negative temperature is greedy") << -1.0 << QList<double>{1, 3, 3, 2} << 1;
}

void TestSampling::greedy_takes_argmax_lowest_id_on_ties() {
    QFETCH(double, temperature);
    QFETCH(QList<double>, logits);
    QFETCH(int, expected);
    SamplingParams p;
    p.temperature = static_cast<float>(temperature);
    SamplerChain chain(p);
    const std::vector<float> row = to_floats(logits);
    for (int i = 0; i < 5; ++i) {
        QCOMPARE(chain.sample(row.data(), static_cast<int32_t>(row.size())), expected);
    }
    const CandidateSet& last = chain.last_candidates();
    QCOMPARE(last.data[static_cast<size_t>(last.selected)].id, expected);
}

void TestSampling::cutoffs_match_a_full_sort_on_a_large_vocab_data() {
    QTest::addColumn<double>("mass");  // top_p, typical_p and the draw's uniform number
    // Cut-offs inside the first partial sort (256) and in later ones (up to 3458 of 5000 tokens). Not
    // nearer 1: there the tail's probabilities (~1e-7) are below float's resolution, and a float
    // sampler's cut is not defined by the reference's arithmetic (kept_by_mass refuses such data).
    for (double mass : {0.01, 0.1, 0.5, 0.9, 0.99, 0.999}) {
        QTest::newRow(qPrintable(QString("mass %1").arg(mass))) << mass;
    }
}

void TestSampling::cutoffs_match_a_full_sort_on_a_large_vocab() {
    QFETCH(double, mass);
    const float top_p = static_cast<float>(mass);  // the sampler's own precision
    const std::vector<float> logits = random_logits(5000, 99);

    const std::vector<RefToken> reference = reference_distribution(logits);
    const size_t expected = kept_by_mass(reference, top_p);

    CandidateSet cands = make_set(logits);
    TopPSampler(top_p).apply(cands);
    qInfo("mass %g keeps %zu of %zu tokens", mass, expected, reference.size());
    QCOMPARE(cands.data.size(), expected);
    for (size_t i = 0; i < expected; ++i) QCOMPARE(cands.data[i].id, reference[i].id);
    CandidateSet drawn = make_set(logits);
    compute_probs(drawn);
    QCOMPARE(sorted_prefix_reaching(drawn, top_p), expected);
    for (size_t i = 0; i < expected; ++i) {
        QCOMPARE(drawn.data[i].id, reference[i].id);
        QVERIFY(std::fabs(drawn.data[i].p - reference[i].p) < 1e-6);
    }

    // typical_p: every token scored, fully sorted by |-ln p - H|, cut where the mass is reached.
    double entropy = 0.0;
    for (const RefToken& t : reference) entropy -= t.p * std::log(t.p);
    std::vector<RefToken> typical = reference;
    auto shifted = [&](const RefToken& t) { return std::fabs(-std::log(t.p) - entropy); };
    std::stable_sort(typical.begin(), typical.end(),
                     [&](const RefToken& a, const RefToken& b) { return shifted(a) < shifted(b); });
    const size_t typical_keep = kept_by_mass(typical, top_p);
    CandidateSet typical_cands = make_set(logits);
    TypicalSampler(top_p).apply(typical_cands);
    QCOMPARE(typical_cands.data.size(), typical_keep);
    for (size_t i = 0; i < typical_keep; ++i) {
        QCOMPARE(typical_cands.data[i].id, typical[i].id);
    }
}

void TestSampling::seeded_chain_is_reproducible_data() {
    QTest::addColumn<int>("top_k");
    QTest::addColumn<double>("top_p");
    QTest::addColumn<double>("min_p");
    QTest::addColumn<double>("typical_p");
    QTest::newRow("defaults") << 40 << 0.95 << 0.05 << 1.0;
    QTest::newRow("top_p without top_k (sorting path)") << 0 << 0.9 << 0.0 << 1.0;
    QTest::newRow("min_p only") << 0 << 1.0 << 0.02 << 1.0;
    QTest::newRow("typical_p") << 100 << 1.0 << 0.0 << 0.8;
    QTest::newRow("nothing but the draw") << 0 << 1.0 << 0.0 << 1.0;
}

void TestSampling::seeded_chain_is_reproducible() {
    QFETCH(int, top_k);
    QFETCH(double, top_p);
    QFETCH(double, min_p);
    QFETCH(double, typical_p);
    SamplingParams p;
    p.temperature = 1.5f;  // flatter: more room for different seeds to disagree
    p.top_k = top_k;
    p.top_p = static_cast<float>(top_p);
    p.min_p = static_cast<float>(min_p);
    p.typical_p = static_cast<float>(typical_p);
    p.repeat_penalty = 1.1f;
    p.seed = 42;
    std::vector<std::vector<float>> rows;
    for (uint64_t r = 0; r < 200; ++r) {
        rows.push_back(random_logits(1000, r));
    }

    SamplerChain a(p);
    SamplerChain b(p);
    const auto tokens = generate(a, rows, false);
    QCOMPARE(generate(b, rows, false), tokens);
    a.reset();
    QCOMPARE(generate(a, rows, false), tokens);
    SamplerChain traced(p);
    QCOMPARE(generate(traced, rows, true), tokens);  // tracing never changes the draw

    p.seed = 43;
    SamplerChain other(p);
    QVERIFY(generate(other, rows, false) != tokens);
}

void TestSampling::random_seed_is_reported_and_replayable() {
    SamplingParams p = plain_params(SamplingParams::kRandomSeed);
    SamplerChain a(p);
    QVERIFY(a.seed_in_use() != SamplingParams::kRandomSeed);
    std::vector<std::vector<float>> rows(50, random_logits(100, 5));
    const auto tokens = generate(a, rows, false);

    p.seed = a.seed_in_use();
    SamplerChain replay(p);
    QCOMPARE(generate(replay, rows, false), tokens);
}

void TestSampling::draw_frequencies_match_probabilities_data() {
    QTest::addColumn<int>("top_k");
    QTest::addColumn<double>("temperature");
    QTest::addColumn<QList<double>>("expected");  // by token id
    QTest::newRow("plain") << 0 << 1.0 << QList<double>{0.1, 0.2, 0.3, 0.4};
    QTest::newRow("top_k 2") << 2 << 1.0 << QList<double>{0, 0, 0.3 / 0.7, 0.4 / 0.7};
    // p^(1/2) = .316228, .447214, .547723, .632456; sum 1.943621.
    QTest::newRow("temperature 2") << 0 << 2.0 << QList<double>{0.162701, 0.230096, 0.281807, 0.325396};
}

void TestSampling::draw_frequencies_match_probabilities() {
    QFETCH(int, top_k);
    QFETCH(double, temperature);
    QFETCH(QList<double>, expected);
    SamplingParams p = plain_params(7);
    p.top_k = top_k;
    p.temperature = static_cast<float>(temperature);
    SamplerChain chain(p);
    const std::vector<float> logits = to_floats(log_of({0.1, 0.2, 0.3, 0.4}));
    constexpr int kDraws = 20000;
    std::vector<int> counts(4, 0);
    for (int i = 0; i < kDraws; ++i) {
        ++counts[static_cast<size_t>(chain.sample(logits.data(), 4))];
    }
    for (int id = 0; id < 4; ++id) {
        const double freq = static_cast<double>(counts[static_cast<size_t>(id)]) / kDraws;
        QVERIFY2(std::fabs(freq - expected[id]) < 0.01,
                 qPrintable(QString("token %1: %2 drawn, p %3").arg(id).arg(freq).arg(expected[id])));
    }
}

void TestSampling::set_params_changes_the_next_sample() {
    SamplingParams p;
    p.temperature = 0.0f;
    SamplerChain chain(p);
    const std::vector<float> logits = {2.0f, 1.5f};
    QCOMPARE(chain.sample(logits.data(), 2), 0);
    chain.accept(0);
    QCOMPARE(chain.sample(logits.data(), 2), 0);  // no penalty yet

    p.repeat_penalty = 2.0f;
    chain.set_params(p);
    QCOMPARE(chain.params().repeat_penalty, 2.0f);
    QCOMPARE(chain.sample(logits.data(), 2), 1);  // the history accepted before the update counts

    p.temperature = 1.0f;
    p.top_k = 1;
    chain.set_params(p);  // greedy -> sampling chain; top_k 1 still makes it certain
    QCOMPARE(chain.sample(logits.data(), 2), 1);
}

void TestSampling::set_params_keeps_the_random_stream_unless_seed_changes() {
    const std::vector<std::vector<float>> rows(20, to_floats(log_of({0.25, 0.25, 0.25, 0.25})));
    const std::vector<std::vector<float>> first(rows.begin(), rows.begin() + 10);
    const std::vector<std::vector<float>> second(rows.begin() + 10, rows.end());

    SamplerChain reference(plain_params(11));
    const auto all = generate(reference, rows, false);

    SamplerChain updated(plain_params(11));
    generate(updated, first, false);
    SamplingParams same_seed = plain_params(11);
    same_seed.max_tokens = 9;  // anything but the seed
    updated.set_params(same_seed);
    QCOMPARE(generate(updated, second, false), std::vector<int32_t>(all.begin() + 10, all.end()));

    SamplerChain reseeded(plain_params(11));
    generate(reseeded, first, false);
    reseeded.set_params(plain_params(12));
    QCOMPARE(reseeded.seed_in_use(), uint64_t{12});
    SamplerChain fresh(plain_params(12));
    QCOMPARE(generate(reseeded, second, false), generate(fresh, second, false));
}

void TestSampling::trace_records_every_stage_data() {
    QTest::addColumn<double>("temperature");
    QTest::addColumn<QStringList>("stages");
    QTest::addColumn<QList<int>>("n_after");
    QTest::newRow("sampling") << 1.0
                              << QStringList{"penalties", "top_k", "typical_p", "top_p", "min_p", "temperature", "dist"}
                              << QList<int>{4, 3, 3, 2, 2, 2, 2};
    QTest::newRow("greedy") << 0.0 << QStringList{"penalties", "greedy"} << QList<int>{4, 4};
}

void TestSampling::trace_records_every_stage() {
    QFETCH(double, temperature);
    QFETCH(QStringList, stages);
    QFETCH(QList<int>, n_after);
    SamplingParams p = plain_params(3);
    p.temperature = static_cast<float>(temperature);
    p.top_k = 3;
    p.top_p = 0.7f;
    p.min_p = 0.05f;
    SamplerChain chain(p);
    const std::vector<float> logits = to_floats(log_of({0.1, 0.2, 0.3, 0.4}));
    std::vector<SamplerStageTrace> trace;
    chain.sample(logits.data(), 4, &trace, 2);

    QCOMPARE(static_cast<qsizetype>(trace.size()), stages.size());
    size_t n_before = 4;
    for (qsizetype i = 0; i < stages.size(); ++i) {
        const SamplerStageTrace& t = trace[static_cast<size_t>(i)];
        QCOMPARE(QString::fromStdString(t.stage), stages[i]);
        QCOMPARE(t.n_before, n_before);
        QCOMPARE(t.n_after, static_cast<size_t>(n_after[i]));
        QCOMPARE(t.top_after.size(), size_t{2});
        QCOMPARE(t.top_after[0].id, 3);
        n_before = t.n_after;
    }
    if (temperature > 0.0) {
        // After top_k 3: {.4, .3, .2} / .9; after top_p 0.7: {.4, .3} / .7.
        QVERIFY(std::fabs(trace[1].top_after[0].p - 0.4 / 0.9) < 1e-5);
        QVERIFY(std::fabs(trace[1].top_after[1].p - 0.3 / 0.9) < 1e-5);
        QVERIFY(std::fabs(trace[3].top_after[0].p - 0.4 / 0.7) < 1e-5);
        QVERIFY(std::fabs(trace[3].top_after[1].p - 0.3 / 0.7) < 1e-5);
    }
    chain.sample(logits.data(), 4, &trace, 0);
    QCOMPARE(static_cast<qsizetype>(trace.size()), stages.size());  // replaced, not appended
    QVERIFY(trace.back().top_after.empty());
}

void TestSampling::invalid_param_throws_naming_it_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<double>("value");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    for (const char* name : {"temperature", "top_p", "min_p", "typical_p", "repeat_penalty", "frequency_penalty",
                             "presence_penalty"}) {
        QTest::newRow(qPrintable(QString("%1 NaN").arg(name))) << QString(name) << nan;
    }
    QTest::newRow("temperature inf") << "temperature" << inf;
    QTest::newRow("repeat_penalty 0") << "repeat_penalty" << 0.0;
    QTest::newRow("repeat_penalty negative") << "repeat_penalty" << -1.0;
    QTest::newRow("repeat_last_n -2") << "repeat_last_n" << -2.0;
}

void TestSampling::invalid_param_throws_naming_it() {
    QFETCH(QString, name);
    QFETCH(double, value);
    SamplingParams bad;
    const auto v = static_cast<float>(value);
    if (name == "temperature") bad.temperature = v;
    if (name == "top_p") bad.top_p = v;
    if (name == "min_p") bad.min_p = v;
    if (name == "typical_p") bad.typical_p = v;
    if (name == "repeat_penalty") bad.repeat_penalty = v;
    if (name == "frequency_penalty") bad.frequency_penalty = v;
    if (name == "presence_penalty") bad.presence_penalty = v;
    if (name == "repeat_last_n") bad.repeat_last_n = static_cast<int32_t>(value);

    try {
        SamplerChain chain(bad);
        QFAIL("constructor accepted an invalid parameter");
    } catch (const Error& e) {
        QVERIFY2(QString(e.what()).contains(name), e.what());
    }

    SamplerChain chain(SamplingParams{});
    try {
        chain.set_params(bad);
        QFAIL("set_params accepted an invalid parameter");
    } catch (const Error& e) {
        QVERIFY2(QString(e.what()).contains(name), e.what());
    }
    QCOMPARE(chain.params().temperature, SamplingParams{}.temperature);  // previous settings kept
    QCOMPARE(chain.params().repeat_penalty, SamplingParams{}.repeat_penalty);
}

void TestSampling::empty_logits_throw() {
    SamplerChain chain(SamplingParams{});
    const float none = 0.0f;
    QVERIFY_THROWS_EXCEPTION(Error, chain.sample(&none, 0));
}

QTEST_GUILESS_MAIN(TestSampling)
#include "test_sampling.moc"
