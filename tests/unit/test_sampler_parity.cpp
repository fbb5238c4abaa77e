// WhiteBox's XTC, top-nσ, mirostat 1/2, DRY and logit-bias stages against llama.cpp's own samplers
// on the same logits (tests/reference/llama_samplers.json, written by llama_samplers.py through
// llama-cpp-python). Bit-identical where the arithmetic is the same (top-nσ's cut-off, DRY's and the
// logit bias's logits); within float tolerance where llama.cpp's softmax sums in float and ours in
// double (XTC's, top-nσ's and mirostat's p).
#include <bit>
#include <QtTest>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>
#include <limits>
#include <random>

#include "sampling/sampler.h"
#include "sampling/samplers.h"

using namespace wb;

namespace {

QJsonObject reference() {
    QFile f(QStringLiteral(WB_REFERENCE_DIR "/llama_samplers.json"));
    if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(f.fileName()));
    return QJsonDocument::fromJson(f.readAll()).object();
}

float as_logit(const QJsonValue& v) {
    return v.isNull() ? -std::numeric_limits<float>::infinity() : static_cast<float>(v.toDouble());
}

CandidateSet set_of(const QJsonArray& logits) {
    std::vector<float> row;
    for (const auto& v : logits) row.push_back(as_logit(v));
    CandidateSet cands;
    cands.assign(row.data(), static_cast<int32_t>(row.size()));
    return cands;
}

// The survivors in order as (id, p) against the reference's [[id, p], ...].
void compare_kept(const CandidateSet& cands, const QJsonArray& kept, double tol) {
    QCOMPARE(cands.data.size(), static_cast<size_t>(kept.size()));
    for (qsizetype i = 0; i < kept.size(); ++i) {
        const QJsonArray e = kept[i].toArray();
        QCOMPARE(cands.data[size_t(i)].id, e[0].toInt());
        QVERIFY2(std::fabs(cands.data[size_t(i)].p - e[1].toDouble()) <= tol,
                 qPrintable(QString("p of %1: %2 vs llama.cpp %3").arg(e[0].toInt()).arg(cands.data[size_t(i)].p).arg(e[1].toDouble())));
    }
}

}  // namespace

class TestSamplerParity : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // The survivors and the p a draw after the stage sees: llama.cpp's top-nσ masks logits and leaves p
    // to the draw (dist's softmax over the survivors), ours removes them and the next softmax renormalises.
    void top_n_sigma_keeps_what_llama_cpp_keeps() {
        const QJsonArray cases = reference()["top_n_sigma"].toArray();
        QVERIFY(!cases.isEmpty());
        for (const auto& c : cases) {
            const QJsonObject o = c.toObject();
            CandidateSet cands = set_of(o["logits"].toArray());
            TopNSigmaSampler(static_cast<float>(o["n"].toDouble())).apply(cands);
            cands.softmax();
            std::sort(cands.data.begin(), cands.data.end(), [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
            compare_kept(cands, o["kept"].toArray(), 1e-6);
        }
    }

    void xtc_removes_what_llama_cpp_removes() {
        const QJsonArray cases = reference()["xtc"].toArray();
        QVERIFY(!cases.isEmpty());
        std::mt19937_64 rng(1);
        for (const auto& c : cases) {
            const QJsonObject o = c.toObject();
            CandidateSet cands = set_of(o["logits"].toArray());
            XtcSampler(1.0f, static_cast<float>(o["threshold"].toDouble()), rng).apply(cands);
            compare_kept(cands, o["kept"].toArray(), 1e-6);
        }
    }

    // Below probability 1, llama.cpp draws one uniform number per application, before anything else,
    // and acts unless it exceeds the probability; acting, XTC removes what it removes at probability 1.
    // Our draw is the chain's 53-bit uniform (as the final draw's), so a copy of the generator says
    // which applications act; the rest leave the set untouched.
    void xtc_below_probability_one_acts_when_its_draw_is_at_most_the_probability() {
        const QJsonArray cases = reference()["xtc"].toArray();
        QVERIFY(!cases.isEmpty());
        const float probability = 0.3f;
        std::mt19937_64 rng(17);
        std::mt19937_64 copy = rng;
        int acted = 0, skipped = 0;
        for (int round = 0; round < 20; ++round) {
            for (const auto& c : cases) {
                const QJsonObject o = c.toObject();
                const QJsonArray logits = o["logits"].toArray();
                CandidateSet cands = set_of(logits);
                XtcSampler(probability, static_cast<float>(o["threshold"].toDouble()), rng).apply(cands);
                const double chance = static_cast<double>(copy() >> 11) * 0x1.0p-53;
                QCOMPARE(rng, copy);  // exactly one draw per application
                if (chance <= probability) {
                    ++acted;
                    compare_kept(cands, o["kept"].toArray(), 1e-6);
                    continue;
                }
                ++skipped;
                QCOMPARE(cands.data.size(), static_cast<size_t>(logits.size()));
                for (qsizetype i = 0; i < logits.size(); ++i) {
                    QCOMPARE(cands.data[size_t(i)].id, int32_t(i));
                    QCOMPARE(std::bit_cast<uint32_t>(cands.data[size_t(i)].logit), std::bit_cast<uint32_t>(as_logit(logits[i])));
                }
            }
        }
        // Both branches ran, in about the proportion the probability asks (60 draws: 18 expected).
        QVERIFY2(acted >= 8 && acted <= 30 && skipped > 0, qPrintable(QString("acted %1, skipped %2").arg(acted).arg(skipped)));
    }

    void mirostat_follows_llama_cpp_over_several_tokens_data() {
        QTest::addColumn<int>("version");
        QTest::newRow("mirostat 1") << 1;
        QTest::newRow("mirostat 2") << 2;
    }
    void mirostat_follows_llama_cpp_over_several_tokens() {
        QFETCH(int, version);
        const QJsonObject o = reference()[version == 1 ? "mirostat" : "mirostat_v2"].toArray()[0].toObject();
        const auto tau = static_cast<float>(o["tau"].toDouble());
        const auto eta = static_cast<float>(o["eta"].toDouble());
        float mu = 2.0f * tau;  // llama.cpp's start
        std::mt19937_64 rng(1);
        MirostatSampler v1(tau, eta, 100, mu, rng);
        MirostatV2Sampler v2(tau, eta, mu, rng);
        // Each step truncates with the mu left by the token llama.cpp drew: a wrong update shows as
        // different survivors in the next steps.
        for (const auto& s : o["steps"].toArray()) {
            const QJsonObject step = s.toObject();
            CandidateSet cands = set_of(step["logits"].toArray());
            if (version == 1) v1.truncate(cands, static_cast<int32_t>(cands.data.size()));
            else v2.truncate(cands);
            compare_kept(cands, step["kept"].toArray(), 2e-6);
            const int32_t selected = step["selected"].toInt();
            auto it = std::find_if(cands.data.begin(), cands.data.end(), [&](const Candidate& k) { return k.id == selected; });
            QVERIFY(it != cands.data.end());
            mu = mirostat_next_mu(mu, eta, tau, it->p);
        }
    }

    void dry_penalises_as_llama_cpp_to_the_bit() {
        const QJsonArray cases = reference()["dry"].toArray();
        QVERIFY(!cases.isEmpty());
        const DryBreakers none;
        for (const auto& c : cases) {
            const QJsonObject o = c.toObject();
            std::vector<int32_t> history;
            for (const auto& v : o["history"].toArray()) history.push_back(v.toInt());
            CandidateSet cands = set_of(o["logits"].toArray());
            DrySampler(history, none, static_cast<float>(o["multiplier"].toDouble()),
                       static_cast<float>(o["base"].toDouble()), o["allowed_length"].toInt(), o["last_n"].toInt())
                .apply(cands);
            const QJsonArray after = o["after"].toArray();
            int changed = 0;
            for (qsizetype i = 0; i < after.size(); ++i) {
                // Bit for bit: QCOMPARE on floats would accept a last-bit difference.
                QCOMPARE(std::bit_cast<uint32_t>(cands.data[size_t(i)].logit), std::bit_cast<uint32_t>(as_logit(after[i])));
                changed += cands.data[size_t(i)].logit != as_logit(o["logits"].toArray()[i]);
            }
            QVERIFY(changed > 0);  // the case exercises a penalty
        }
    }

    void logit_bias_adds_as_llama_cpp() {
        const QJsonObject o = reference()["logit_bias"].toArray()[0].toObject();
        std::vector<LogitBias> biases;
        for (const auto& b : o["biases"].toArray()) biases.push_back({b.toArray()[0].toInt(), as_logit(b.toArray()[1])});
        CandidateSet cands = set_of(o["logits"].toArray());
        LogitBiasSampler(biases).apply(cands);
        const QJsonArray after = o["after"].toArray();
        for (qsizetype i = 0; i < after.size(); ++i)
            QCOMPARE(std::bit_cast<uint32_t>(cands.data[size_t(i)].logit), std::bit_cast<uint32_t>(as_logit(after[i])));
    }
};

QTEST_GUILESS_MAIN(TestSamplerParity)
#include "test_sampler_parity.moc"
