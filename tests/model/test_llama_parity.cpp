// Engine parity with llama.cpp on SmolLM2-135M-Instruct Q4_1 (reference data in tests/reference/,
// made by tests/reference/make_reference.py with llama-cpp-python on the same file):
//  - teacher forcing over every position of the reference documents: bit-identical logits (the
//    SHA-256 of every document's float32 logits rows equals llama.cpp's), in batches of 128 as well as
//    in the reference's one batch per document;
//  - greedy decoding of 64 tokens identical for all 10 prompts, each step's logits bit-identical;
//  - Session::generate with temperature 0 follows the same greedy path up to the end-of-turn token.
#include <QtTest>

#include <fstream>

#include "engine/backend_cpu.h"
#include "engine/model.h"
#include "engine/session.h"
#include "parity_support.h"

using namespace wb;

using wb_test::Agreement;
using wb_test::ids_of;

namespace {

QJsonObject load_json(const QString& name) { return wb_test::load_reference("smollm2-135m-instruct-q4_1", name); }

}  // namespace

class TestLlamaParity : public QObject {
    Q_OBJECT

    std::unique_ptr<Model> model_;
    std::unique_ptr<CpuBackend> backend_;
    std::unique_ptr<Session> session_;

private Q_SLOTS:
    void initTestCase() {
        const std::string path = wb_test::default_model();
        if (!std::ifstream(path).good())
            QFAIL(qPrintable(QString("model not found at %1: run scripts/fetch-models.sh").arg(QString::fromStdString(path))));
        model_ = Model::load(path);
        backend_ = std::make_unique<CpuBackend>(0);
        SessionOptions so;
        so.n_ctx = 1024;
        so.n_batch = 128;  // several batches per document: exercises cache reuse across batches
        session_ = std::make_unique<Session>(*model_, *backend_, so);
    }

    // Every document's logits, bit for bit, through a session of n_batch 512 (the reference's: one
    // batch per document) and the suite's n_batch 128 (several batches: the cache reused across them).
    void teacherForcedIsBitIdenticalToLlamaCpp_data() {
        QTest::addColumn<int>("n_batch");
        QTest::newRow("one batch per document") << 512;
        QTest::newRow("batches of 128") << 128;
    }
    void teacherForcedIsBitIdenticalToLlamaCpp() {
        QFETCH(int, n_batch);
        SessionOptions so;
        so.n_ctx = 1024;
        so.n_batch = n_batch;
        Session session(*model_, *backend_, so);
        const QJsonObject ref = load_json("teacher_forced.json");
        const int32_t n_vocab = model_->config().n_vocab;
        Agreement all;
        int docs = 0, identical = 0;
        for (const auto& docv : ref["docs"].toArray()) {
            const QJsonObject doc = docv.toObject();
            const std::vector<int32_t> tokens = ids_of(doc["tokens"].toArray());
            const QJsonArray pos = doc["positions"].toArray();
            QCOMPARE(size_t(pos.size()), tokens.size());
            const std::vector<float> logits = session.evaluate(tokens);
            Agreement d;
            for (qsizetype i = 0; i < pos.size(); ++i)
                d.add(logits.data() + size_t(i) * size_t(n_vocab), n_vocab, pos[i].toObject());
            const bool same = wb_test::logits_sha256(logits.data(), size_t(pos.size()) * size_t(n_vocab)) ==
                              doc["logits_sha256"].toString();
            qInfo("%-28s %4lld positions, top-1 %.2f %%, max KL %.2e, %s", qPrintable(doc["name"].toString()),
                  static_cast<long long>(d.positions), 100.0 * d.top1(), d.kl_max, same ? "bit-identical" : "DIFFERENT");
            ++docs;
            identical += same;
            all.merge(d);
        }
        qInfo("teacher forcing over %lld positions: top-1 %.3f %%, mean KL %.6f nats (max %.5f)",
              static_cast<long long>(all.positions), 100.0 * all.top1(), all.kl_mean(), all.kl_max);
        QVERIFY(all.positions >= 512);
        QCOMPARE(docs, 5);
        QCOMPARE(identical, docs);
    }

    void greedyIsBitIdenticalToLlamaCpp() {
        const QJsonObject ref = load_json("greedy.json");
        int identical = 0, bit_identical = 0, cases = 0;
        for (const auto& cv : ref["cases"].toArray()) {
            const QJsonObject c = cv.toObject();
            const std::vector<int32_t> prompt = ids_of(c["prompt_ids"].toArray());
            const std::vector<int32_t> expected = ids_of(c["generated"].toArray());
            std::vector<float> steps;
            const std::vector<int32_t> got = wb_test::greedy_tokens(*session_, prompt, expected.size(), &steps);
            if (wb_test::logits_sha256(steps.data(), steps.size()) == c["steps_sha256"].toString()) ++bit_identical;
            size_t first_diff = 0;
            while (first_diff < got.size() && got[first_diff] == expected[first_diff]) ++first_diff;
            ++cases;
            if (first_diff == got.size()) ++identical;
            else
                qInfo("%s: differs from token %zu (expected %d, got %d)", qPrintable(c["name"].toString()), first_diff,
                      expected[first_diff], got[first_diff]);
        }
        qInfo("greedy: %d of %d prompts identical over %lld tokens, %d with bit-identical logits at every step", identical,
              cases, static_cast<long long>(ref["n_predict"].toInt()), bit_identical);
        QCOMPARE(cases, 10);
        QCOMPARE(identical, cases);
        QCOMPARE(bit_identical, cases);
    }

    // The full generate() path (sampler chain at temperature 0, EOG handling, detokenization) gives
    // the reference's tokens up to its first end-of-generation token.
    void generateAtTemperatureZeroFollowsReference() {
        const QJsonObject ref = load_json("greedy.json");
        const Tokenizer& tok = model_->tokenizer();
        int matching = 0, cases = 0;
        for (const auto& cv : ref["cases"].toArray()) {
            const QJsonObject c = cv.toObject();
            std::vector<int32_t> expected = ids_of(c["generated"].toArray());
            for (size_t i = 0; i < expected.size(); ++i)
                if (tok.is_eog(expected[i])) {
                    expected.resize(i);
                    break;
                }
            SamplingParams sp;
            sp.temperature = 0.0f;
            sp.max_tokens = int32_t(ref["n_predict"].toInt());
            session_->reset();
            const GenerateResult r = session_->generate(ids_of(c["prompt_ids"].toArray()), LiveSamplingParams(sp));
            QVERIFY2(r.reason != StopReason::ERROR, r.error.c_str());
            ++cases;
            if (r.tokens == expected) ++matching;
            QCOMPARE(r.text, tok.decode(r.tokens, false));
        }
        QVERIFY2(matching == cases, qPrintable(QString("generate() matched the reference on %1 of %2").arg(matching).arg(cases)));
    }
};

QTEST_GUILESS_MAIN(TestLlamaParity)
#include "test_llama_parity.moc"
