// exp_sum (the normaliser of greedy's p over the whole row) and first_max_index (the greedy token):
// each term within 2 ulp of exp computed in double, the sum within 2 ulp of a double-precision sum,
// the AVX2 version equal to the portable one bit for bit, and the NaN / -inf / tail rules.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "sampling/exp_sum.h"
#include "sampling/exp_sum_internal.h"
#include "sampling/top_logits.h"

using namespace wb;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// One float ulp at the magnitude of v (> 0): the spacing of floats in v's binade.
double float_ulp(double v) { return std::ldexp(1.0, std::ilogb(v) - 23); }

// The reference: exp in double of each difference as exp_sum forms it (rounded to float), NaN as 0.
double reference_sum(const std::vector<float>& x, float m) {
    double sum = 0.0;
    for (float v : x)
        if (!std::isnan(v)) sum += std::exp(double(v - m));
    return sum;
}

// A row of a kind the tests name, with its maximum as the last value pushed in somewhere: "model"
// (a language model's spread), "wide" (down to e^-100, past the cut-off), "narrow" (all within 1e-3
// of the maximum), "specials" (model with NaN and -inf sprinkled in).
std::vector<float> make_row(const QString& kind, size_t n, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::uniform_real_distribution<float> wide(-100.0f, 0.0f), narrow(-1e-3f, 0.0f);
    std::vector<float> row(n);
    for (size_t i = 0; i < n; ++i) {
        if (kind == "wide") row[i] = wide(rng);
        else if (kind == "narrow") row[i] = narrow(rng);
        else row[i] = normal(rng);
        if (kind == "specials" && i % 5 == 1) row[i] = i % 2 ? std::nanf("") : -kInf;
    }
    return row;
}

// exp_sum_portable, and the AVX2 version where the build and the CPU have it: the tests of the rules
// hold each one to them, not only the one exp_sum() picks here.
std::vector<std::pair<const char*, ExpSumFn>> implementations() {
    std::vector<std::pair<const char*, ExpSumFn>> out{{"portable", exp_sum_portable}};
    if (const ExpSumFn avx2 = exp_sum_avx2_if_supported()) out.emplace_back("avx2", avx2);
    return out;
}

float max_of(const std::vector<float>& x) {
    float m = -kInf;
    for (float v : x)
        if (v > m) m = v;
    return m;
}

}  // namespace

class TestExpSum : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Every argument from -87 (the cut-off) to 0 in steps of about 1e-4, and a few beyond.
    void eachTermIsWithinTwoUlpOfExp() {
        std::vector<float> d;
        for (double v = 0.0; v >= -87.0; v -= 1.0137e-4) d.push_back(float(v));
        for (float v : {-87.0f, -1e-30f, -0.0f, -1e-7f, -0.34657359f, -0.34657362f}) d.push_back(v);
        std::vector<float> terms(d.size());
        exp_sum_portable(d.data(), d.size(), 0.0f, terms.data());  // the AVX2 version's are the same bits
        double worst = 0.0;
        for (size_t i = 0; i < d.size(); ++i) {
            const double ref = std::exp(double(d[i]));
            const double err = std::fabs(double(terms[i]) - ref) / float_ulp(ref);
            worst = std::max(worst, err);
            if (err > 2.0)
                QFAIL(qPrintable(QString("exp(%1) = %2, reference %3 (%4 ulp)").arg(double(d[i]), 0, 'g', 9)
                                     .arg(double(terms[i]), 0, 'g', 9).arg(ref, 0, 'g', 17).arg(err)));
        }
        qInfo("worst term error %.3f ulp over %zu arguments", worst, d.size());
        float zero = 0.0f, one = 0.0f;
        exp_sum_portable(&zero, 1, 0.0f, &one);
        QVERIFY(same_bits(one, 1.0f));  // the drawn token's term: its p is then exactly 1 / sum
    }

    void sumIsWithinTwoUlpOfADoubleSum_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<int>("n");
        for (const char* kind : {"model", "wide", "narrow", "specials"})
            for (int n : {1, 7, 8, 9, 1000, 49152, 262144})
                QTest::newRow(qPrintable(QString("%1 n=%2").arg(kind).arg(n))) << QString(kind) << n;
    }
    void sumIsWithinTwoUlpOfADoubleSum() {
        QFETCH(QString, kind);
        QFETCH(int, n);
        for (uint64_t seed = 1; seed <= 3; ++seed) {
            const std::vector<float> x = make_row(kind, size_t(n), seed);
            const float m = max_of(x);
            const double ref = reference_sum(x, m);
            for (const auto& [name, fn] : implementations()) {
                const double got = fn(x.data(), x.size(), m, nullptr);
                QVERIFY2(std::fabs(got - ref) <= 2.0 * float_ulp(ref),
                         qPrintable(QString("%1: sum %2, reference %3").arg(name).arg(got, 0, 'g', 17).arg(ref, 0, 'g', 17)));
            }
        }
    }

    // A NaN counts as -inf and both add nothing; an entry above m counts as m; below the cut-off, 0.
    void specialEntriesCountAsDocumented_data() {
        QTest::addColumn<int>("n");
        for (int n = 0; n <= 17; ++n) QTest::addRow("n=%d", n) << n;
    }
    void specialEntriesCountAsDocumented() {
        QFETCH(int, n);
        for (const auto& [name, fn] : implementations()) {
            // n entries equal to the maximum: every term is exactly 1 and the sum exactly n.
            std::vector<float> x(size_t(n), 2.5f);
            QVERIFY2(same_bits(fn(x.data(), x.size(), 2.5f, nullptr), double(n)), name);
            // The same with a NaN or -inf in each of the positions 0-7 (inside the row or its tail): still n.
            for (size_t at = 0; at < 8; ++at)
                for (float special : {std::nanf(""), -kInf}) {
                    std::vector<float> y = x;
                    y.insert(y.begin() + long(std::min(at, y.size())), special);
                    std::vector<float> terms(y.size(), 7.0f);
                    QVERIFY2(same_bits(fn(y.data(), y.size(), 2.5f, terms.data()), double(n)), name);
                    for (size_t i = 0; i < y.size(); ++i) QCOMPARE(terms[i], std::isfinite(y[i]) ? 1.0f : 0.0f);
                }
            // Above m (outside the contract: m is the maximum) a term is 1, even at +inf.
            std::vector<float> above = x;
            above.insert(above.begin(), {3.0f, 1e30f, kInf});
            QVERIFY2(same_bits(fn(above.data(), above.size(), 2.5f, nullptr), double(n + 3)), name);
            // Below the cut-off a term is 0 too.
            std::vector<float> z = x;
            z.push_back(2.5f - 87.5f);
            QVERIFY2(same_bits(fn(z.data(), z.size(), 2.5f, nullptr), double(n)), name);
        }
    }

    // Every CPU gives the same p: the AVX2 version does the portable version's operations.
    void avx2EqualsPortableBitForBit_data() {
        QTest::addColumn<QString>("kind");
        for (const char* kind : {"model", "wide", "narrow", "specials"}) QTest::newRow(kind) << QString(kind);
    }
    void avx2EqualsPortableBitForBit() {
        QFETCH(QString, kind);
        const ExpSumFn avx2 = exp_sum_avx2_if_supported();
        if (!avx2) QSKIP("this build or CPU has no AVX2 + FMA version");
        std::vector<size_t> lengths;
        for (size_t n = 0; n <= 40; ++n) lengths.push_back(n);
        lengths.push_back(49152);
        lengths.push_back(49157);
        for (size_t n : lengths) {
            const std::vector<float> x = make_row(kind, n, 40 + n);
            const float m = n ? max_of(x) : 0.0f;
            std::vector<float> ta(n), tp(n);
            const double a = avx2(x.data(), n, m, ta.data());
            const double p = exp_sum_portable(x.data(), n, m, tp.data());
            QVERIFY2(same_bits(a, p), qPrintable(QString("n = %1: %2 vs %3").arg(n).arg(a, 0, 'g', 17).arg(p, 0, 'g', 17)));
            for (size_t i = 0; i < n; ++i) QVERIFY2(same_bits(ta[i], tp[i]), qPrintable(QString("term %1 of %2").arg(i).arg(n)));
            // In place (GreedySampler's use) gives the same terms.
            std::vector<float> in_place = x;
            QVERIFY(same_bits(avx2(in_place.data(), n, m, in_place.data()), p));
            QVERIFY(in_place == tp);
            // exp_sum() itself is one of the two.
            QVERIFY(same_bits(exp_sum(x.data(), n, m), p));
        }
    }

    void firstMaxIndexTakesTheFirstOfTheBest_data() {
        QTest::addColumn<QList<float>>("row");
        QTest::addColumn<int>("expected");
        const float nan = std::nanf("");
        QTest::newRow("one entry") << QList<float>{-3.0f} << 0;
        QTest::newRow("clear maximum") << QList<float>{1, 5, 2} << 1;
        QTest::newRow("tie: the first") << QList<float>{1, 3, 3, 2} << 1;
        QTest::newRow("tie at the end") << QList<float>{-1, -2, 0, 0} << 2;
        QTest::newRow("NaN ahead of the maximum") << QList<float>{nan, 0.5f, nan, 0.25f} << 1;
        QTest::newRow("NaN after it") << QList<float>{-1, 2, nan} << 1;
        QTest::newRow("only NaN") << QList<float>{nan, nan, nan} << 0;
        QTest::newRow("only -inf") << QList<float>{-kInf, -kInf} << 0;
        QTest::newRow("NaN then -inf") << QList<float>{nan, -kInf, -kInf} << 0;
        QTest::newRow("-inf then one finite") << QList<float>{-kInf, nan, -kInf, -7.0f} << 3;
        QTest::newRow("+inf") << QList<float>{1, kInf, 3, kInf} << 1;
        QList<float> long_row(100, 0.0f);
        long_row[77] = 1.0f;
        long_row[93] = 1.0f;
        QTest::newRow("past a run of 16") << long_row << 77;
    }
    void firstMaxIndexTakesTheFirstOfTheBest() {
        QFETCH(QList<float>, row);
        QFETCH(int, expected);
        const std::vector<float> x(row.begin(), row.end());
        QCOMPARE(first_max_index(x.data(), int32_t(x.size())), expected);
    }
};

QTEST_GUILESS_MAIN(TestExpSum)
#include "test_exp_sum.moc"
