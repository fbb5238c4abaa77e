// A quantized KV cache against llama.cpp with the same cache types: SmolLM2-135M (Q4_1) and Gemma 3
// 270M (Q4_K_M: sliding-window layers) with K/V q8_0/q8_0, q4_0/q4_0 and f16/q8_0. Reference data in
// tests/reference/<model>/kv_quant.json, made by tests/reference/make_kv_quant_reference.py with
// llama-cpp-python (type_k / type_v, flash attention on, as llama.cpp needs for a quantized V) on the
// same files. Per configuration:
//  - teacher forcing over the reference documents: top-1 agreement >= 99 % and mean KL <= 0.005 nats;
//  - greedy decoding identical on >= 9 of the 10 prompts;
//  - and, reported per document / prompt, whether the logits are bit-identical (SHA-256 of the float32
//    rows), asserted where docs/architecture.md says the arithmetic is llama.cpp's exactly.
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

struct ModelCase {
    const char* file;       // in the model cache
    const char* reference;  // directory under tests/reference
};

const ModelCase kModels[] = {
    {"SmolLM2-135M-Instruct.Q4_1.gguf", "smollm2-135m-instruct-q4_1"},
    {"gemma-3-270m-Q4_K_M.gguf", "gemma-3-270m-q4_k_m"},
};
constexpr int kModelCount = int(sizeof(kModels) / sizeof(kModels[0]));

QJsonObject find_config(const QJsonObject& ref, const QString& k, const QString& v) {
    for (const auto& c : ref["configs"].toArray())
        if (c.toObject()["type_k"].toString() == k && c.toObject()["type_v"].toString() == v) return c.toObject();
    return {};
}

}  // namespace

class TestKvQuantParity : public QObject {
    Q_OBJECT

    std::unique_ptr<CpuBackend> backend_;
    std::map<std::string, std::unique_ptr<Model>> models_;

    const Model& model(int which) {
        auto& m = models_[kModels[which].file];
        if (!m) m = Model::load(models_dir() + "/" + kModels[which].file);
        return *m;
    }

private Q_SLOTS:
    void initTestCase() { backend_ = std::make_unique<CpuBackend>(0); }

    void quantizedCacheAgreesWithLlamaCpp_data() {
        QTest::addColumn<int>("which");
        QTest::addColumn<QString>("type_k");
        QTest::addColumn<QString>("type_v");
        for (int m = 0; m < kModelCount; ++m)
            for (const auto& [k, v] : {std::pair{"q8_0", "q8_0"}, {"q4_0", "q4_0"}, {"f16", "q8_0"}})
                QTest::addRow("%s K %s V %s", kModels[m].reference, k, v) << m << QString(k) << QString(v);
    }
    void quantizedCacheAgreesWithLlamaCpp() {
        QFETCH(int, which);
        QFETCH(QString, type_k);
        QFETCH(QString, type_v);
        const std::string path = models_dir() + "/" + kModels[which].file;
        if (!std::ifstream(path).good())
            QFAIL(qPrintable(QString("model not found at %1: run scripts/fetch-models.sh --all").arg(QString::fromStdString(path))));
        const QJsonObject ref = wb_test::load_reference(kModels[which].reference, "kv_quant.json");
        const QJsonObject cfg = find_config(ref, type_k, type_v);
        QVERIFY2(!cfg.isEmpty(), "configuration missing from kv_quant.json");
        SessionOptions so;
        so.n_ctx = 1024;
        so.n_batch = 512;  // the reference's: one batch per document / prompt
        so.kv_type_k = kv_type_from_name(type_k.toStdString());
        so.kv_type_v = kv_type_from_name(type_v.toStdString());
        Session session(model(which), *backend_, so);
        const int32_t n_vocab = model(which).config().n_vocab;

        Agreement all;
        int docs = 0, docs_identical = 0;
        for (const auto& dv : cfg["teacher_forced"].toArray()) {
            const QJsonObject doc = dv.toObject();
            const std::vector<int32_t> tokens = ids_of(doc["tokens"].toArray());
            const QJsonArray pos = doc["positions"].toArray();
            QCOMPARE(size_t(pos.size()), tokens.size());
            session.reset();
            const std::vector<float> logits = session.evaluate(tokens);
            for (qsizetype i = 0; i < pos.size(); ++i)
                all.add(logits.data() + size_t(i) * size_t(n_vocab), n_vocab, pos[i].toObject());
            ++docs;
            docs_identical += wb_test::logits_sha256(logits.data(), logits.size()) == doc["logits_sha256"].toString();
        }

        int cases = 0, identical = 0, steps_identical = 0;
        for (const auto& cv : cfg["greedy"].toArray()) {
            const QJsonObject c = cv.toObject();
            const std::vector<int32_t> expected = ids_of(c["generated"].toArray());
            std::vector<float> steps;
            const std::vector<int32_t> got =
                wb_test::greedy_tokens(session, ids_of(c["prompt_ids"].toArray()), expected.size(), &steps);
            ++cases;
            identical += got == expected;
            steps_identical += wb_test::logits_sha256(steps.data(), steps.size()) == c["steps_sha256"].toString();
        }
        qInfo("K %s V %s: teacher forcing %lld positions, top-1 %.2f %%, mean KL %.6f (max %.5f), %d of %d documents "
              "bit-identical; greedy %d of %d identical, %d with bit-identical logits at every step",
              qPrintable(type_k), qPrintable(type_v), static_cast<long long>(all.positions), 100.0 * all.top1(),
              all.kl_mean(), all.kl_max, docs_identical, docs, identical, cases, steps_identical);
        QCOMPARE(docs, 2);
        QCOMPARE(cases, 10);
        QVERIFY(all.positions >= 200);
        QVERIFY2(all.top1() >= 0.99, qPrintable(QString("top-1 %1").arg(all.top1())));
        QVERIFY2(all.kl_mean() <= 0.005, qPrintable(QString("mean KL %1").arg(all.kl_mean())));
        QVERIFY2(identical >= 9, qPrintable(QString("greedy identical on %1 of 10").arg(identical)));
        // Where the arithmetic is llama.cpp's exactly (docs/architecture.md): every logit, bit for bit.
        QCOMPARE(docs_identical, docs);
        QCOMPARE(steps_identical, cases);
    }
};

QTEST_GUILESS_MAIN(TestKvQuantParity)
#include "test_kv_quant_parity.moc"
