// inspect_candidates (the inspector's view of one sampling step) against a plain recomputation: the
// top-N by raw probability with llama.cpp's tie order (equal logits: smaller id first), p_raw and the
// entropy from a double-precision softmax, p_final looked up in the sampler's final set.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "engine/token_inspection.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

using namespace wb;

namespace {

// A byte-level vocabulary of n tokens: the 256 byte tokens, then "w256", "w257", ...
std::unique_ptr<Tokenizer> vocab_of(int32_t n) {
    VocabSpec s;
    s.model = "gpt2";
    s.pre = "gpt-2";
    for (int b = 0; b < 256; ++b) s.tokens.push_back(unicode::byte_to_utf8(uint8_t(b)));
    for (int32_t i = 256; i < n; ++i) s.tokens.push_back("w" + std::to_string(i));
    s.types.assign(size_t(n), TokenType::NORMAL);
    return Tokenizer::from_vocab(s);
}

struct Reference {
    std::vector<int32_t> order;  // every id, best first
    std::vector<double> p;       // softmax by id
    double entropy = 0.0;
};

Reference reference(const std::vector<float>& logits) {
    Reference r;
    r.order.resize(logits.size());
    std::iota(r.order.begin(), r.order.end(), 0);
    std::stable_sort(r.order.begin(), r.order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
    const double mx = *std::max_element(logits.begin(), logits.end());
    double z = 0.0;
    for (float l : logits) z += std::exp(double(l) - mx);
    for (float l : logits) r.p.push_back(std::exp(double(l) - mx) / z);
    for (double p : r.p)
        if (p > 0.0) r.entropy -= p * std::log(p);
    return r;
}

std::vector<float> random_logits(int32_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> l(static_cast<size_t>(n));
    for (auto& x : l) x = normal(rng);
    // Ties, at the top and in the middle: the order among equal logits is part of the contract.
    l[17] = l[900] = l[2999] = 25.0f;
    l[5] = l[6] = 0.5f;
    return l;
}

}  // namespace

class TestTokenInspection : public QObject {
    Q_OBJECT

private slots:
    void topCandidatesEntropyAndRawProbabilities() {
        const int32_t n_vocab = 3000;
        const auto tok = vocab_of(n_vocab);
        for (uint32_t seed : {1u, 2u, 3u}) {
            const std::vector<float> logits = random_logits(n_vocab, seed);
            const Reference ref = reference(logits);
            CandidateSet none;
            TokenEvent ev;
            ev.id = ref.order[100];  // the chosen token's raw p is reported even outside the candidates
            inspect_candidates(logits.data(), n_vocab, none, 40, *tok, ev);
            QCOMPARE(int(ev.candidates.size()), 40);
            QVERIFY(std::fabs(ev.p_raw - ref.p[size_t(ev.id)]) <= 1e-6 * ref.p[size_t(ev.id)] + 1e-12);
            QVERIFY(ev.p_raw > 0.0f);
            QVERIFY2(std::fabs(ev.entropy - ref.entropy) < 1e-5 * std::max(1.0, ref.entropy),
                     qPrintable(QString("entropy %1, expected %2").arg(ev.entropy).arg(ref.entropy)));
            for (int i = 0; i < 40; ++i) {
                const auto& c = ev.candidates[size_t(i)];
                QCOMPARE(c.id, ref.order[size_t(i)]);
                QCOMPARE(QString::fromStdString(c.piece), QString::fromStdString(tok->token_to_piece(c.id, true)));
                QVERIFY(std::fabs(c.p_raw - ref.p[size_t(c.id)]) <= 1e-6 * ref.p[size_t(c.id)] + 1e-12);
                QCOMPARE(c.p_final, 0.0f);  // the final set is empty
            }
            QCOMPARE(ev.candidates[0].id, 17);  // the three tied maxima, smaller id first
            QCOMPARE(ev.candidates[1].id, 900);
            QCOMPARE(ev.candidates[2].id, 2999);
        }
    }

    void finalProbabilitiesComeFromTheFinalSet() {
        const int32_t n_vocab = 3000;
        const auto tok = vocab_of(n_vocab);
        const std::vector<float> logits = random_logits(n_vocab, 7);
        const Reference ref = reference(logits);
        // A final set as a top-k 10 stage leaves it (shuffled, renormalised), plus one id that is not
        // among the inspected candidates at all.
        CandidateSet set;
        double kept = 0.0;
        for (int i = 0; i < 10; ++i) kept += ref.p[size_t(ref.order[size_t(i)])];
        for (int i = 9; i >= 0; --i) {
            const int32_t id = ref.order[size_t(i)];
            set.data.push_back({id, logits[size_t(id)], float(ref.p[size_t(id)] / kept)});
        }
        set.data.push_back({ref.order[2000], logits[size_t(ref.order[2000])], 0.5f});
        TokenEvent ev;
        inspect_candidates(logits.data(), n_vocab, set, 20, *tok, ev);
        QCOMPARE(int(ev.candidates.size()), 20);
        double sum_final = 0.0;
        for (int i = 0; i < 20; ++i) {
            const auto& c = ev.candidates[size_t(i)];
            const float expected = i < 10 ? float(ref.p[size_t(c.id)] / kept) : 0.0f;
            QCOMPARE(c.p_final, expected);
            sum_final += c.p_final;
        }
        QVERIFY(std::fabs(sum_final - 1.0) < 1e-5);
    }

    void uniformAndTinyRequests() {
        const int32_t n_vocab = 300;
        const auto tok = vocab_of(n_vocab);
        const std::vector<float> flat(size_t(n_vocab), 1.25f);
        TokenEvent ev;
        inspect_candidates(flat.data(), n_vocab, CandidateSet{}, 500, *tok, ev);  // more than the vocabulary
        QCOMPARE(int(ev.candidates.size()), n_vocab);
        for (int32_t i = 0; i < n_vocab; ++i) QCOMPARE(ev.candidates[size_t(i)].id, i);
        QVERIFY(std::fabs(ev.entropy - std::log(double(n_vocab))) < 1e-5);

        TokenEvent none;
        inspect_candidates(flat.data(), n_vocab, CandidateSet{}, 0, *tok, none);
        QVERIFY(none.candidates.empty());
        QVERIFY(std::fabs(none.entropy - std::log(double(n_vocab))) < 1e-5);
    }
};

QTEST_APPLESS_MAIN(TestTokenInspection)
#include "test_token_inspection.moc"
