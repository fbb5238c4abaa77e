// The architectures beyond SmolLM2 and Gemma 3 against llama.cpp, on random-weight models.
//
// Each case of tests/reference/random-archs/ (made by tests/reference/make_random_reference.py with
// llama-cpp-python) names the make_random_gguf arguments that wrote its model. The test writes the
// same file again (its SHA-256 must equal the recorded one: the weights are the reference's), loads
// it and checks, as the real-model parity suites do. The *-llamaq-* cases (make_quantized_reference.py)
// are files llama.cpp's quantizer made from F32 random models (qwen2 in every quantized type, the other
// architectures in Q4_K_M) into the model cache (model files are not committed; a test cannot run
// llama.cpp; scripts/make-test-models.sh makes them, and scripts/test.sh runs it): their SHA-256 is
// checked the same way, and a missing one skips its row, saying how to make it. Checks:
//  - teacher forcing over three sequences of random tokens: top-1 agreement >= 99 % and mean
//    KL(llama.cpp || WhiteBox) <= 0.005 nats (the bounds), and beyond them, since the CPU
//    backend follows llama.cpp's arithmetic in every case, logits bit-identical (SHA-256 of every
//    float32 row);
//  - greedy decoding of 32 tokens identical for >= 9 of 10 prompts, and in fact bit-identical on all;
//  - for the cases with a real vocabulary copied from a fetched GGUF, four texts (one a user turn in the
//    file's chat template) tokenized exactly as llama.cpp tokenized them, and decoded greedily too;
//  - the features are really exercised: the same weights without Llama 3.1's rope_freqs.weight, the
//    YaRN metadata, the biases, the q/k norms or Gemma 2's local rope factor disagree with the
//    reference (ignoring rope_freqs is how Llama 3.1 files used to run wrong);
//  - what cannot be computed (an unknown rope scaling, a tensor nothing reads) is refused by name.
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>

#include "engine/backend_cpu.h"
#include "engine/model.h"
#include "engine/session.h"
#include "gguf/gguf_file.h"
#include "model/forward.h"
#include "model/model_config.h"
#include "model/model_paths.h"
#include "model/weights.h"
#include "parity_support.h"
#include "util/error.h"

using namespace wb;
using wb_test::Agreement;
using wb_test::ids_of;

namespace {

QString sha256_of(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    QCryptographicHash h(QCryptographicHash::Sha256);
    h.addData(&f);
    return QString::fromLatin1(h.result().toHex());
}

// SHA-256 of float32 rows as the reference hashes them (little-endian bytes in order).
QString rows_sha256(const float* rows, size_t n_floats) {
    QCryptographicHash h(QCryptographicHash::Sha256);
    h.addData(QByteArrayView(reinterpret_cast<const char*>(rows), qsizetype(n_floats * sizeof(float))));
    return QString::fromLatin1(h.result().toHex());
}

// Writes a random model with make_random_gguf; the path, or an empty string after a failed QVERIFY.
QString write_model(const QString& dir, const QString& name, const QStringList& args) {
    const QString path = dir + "/" + name + ".gguf";
    QProcess p;
    p.start(QStringLiteral(WB_MAKE_RANDOM_GGUF), QStringList{path} + args);
    if (!p.waitForFinished(120000) || p.exitCode() != 0) {
        qWarning("make_random_gguf %s failed: %s", qPrintable(args.join(' ')), p.readAllStandardError().constData());
        return {};
    }
    return path;
}

// make_random_gguf arguments as the reference records them, "@models/NAME" naming a file of the
// model cache (a real vocabulary to copy).
QStringList strings_of(const QJsonArray& a) {
    QStringList out;
    for (const auto& v : a) {
        QString arg = v.toString();
        if (arg.startsWith("@models/")) arg = QString::fromStdString(wb::models_dir()) + arg.mid(7);
        out << arg;
    }
    return out;
}

struct CaseResult {
    Agreement agreement;
    int docs = 0, docs_identical = 0;
    int greedy = 0, greedy_same = 0, greedy_identical = 0;
    int texts = 0, texts_tokenized_same = 0;  // real-vocabulary cases: llama.cpp's ids for each text
};

// Greedy decoding after a prompt: one token per forward pass, argmax of the raw logits; `steps` gets
// every row a token was chosen from.
std::vector<int32_t> greedy(Session& session, const std::vector<int32_t>& prompt, size_t n, std::vector<float>& steps) {
    const int32_t n_vocab = session.model().config().n_vocab;
    session.reset();
    const std::vector<float>* logits = &session.append(prompt.data(), int32_t(prompt.size()));
    std::vector<int32_t> got;
    while (got.size() < n) {
        steps.insert(steps.end(), logits->begin(), logits->end());
        const int32_t next = wb_test::argmax(logits->data(), n_vocab);
        got.push_back(next);
        logits = &session.append(&next, 1);
    }
    return got;
}

// Greedy steps as the reference made them: the tokens, and the SHA-256 of the rows they came from.
void add_greedy(CaseResult& r, Session& session, const std::vector<int32_t>& prompt, const QJsonObject& c) {
    const std::vector<int32_t> expected = ids_of(c["generated"].toArray());
    std::vector<float> steps;
    const std::vector<int32_t> got = greedy(session, prompt, expected.size(), steps);
    ++r.greedy;
    if (got == expected) ++r.greedy_same;
    if (rows_sha256(steps.data(), steps.size()) == c["steps_sha256"].toString()) ++r.greedy_identical;
}

// Teacher forcing and greedy decoding of a model against a reference file's data.
CaseResult run_case(const QString& model_path, const QJsonObject& ref) {
    CaseResult r;
    std::unique_ptr<Model> model = Model::load(model_path.toStdString());
    CpuBackend backend(2);
    SessionOptions so;
    so.n_ctx = 1024;
    so.n_batch = 512;  // each sequence in one batch, as the reference evaluates it
    Session session(*model, backend, so);
    const int32_t n_vocab = model->config().n_vocab;
    for (const auto& dv : ref["docs"].toArray()) {
        const QJsonObject doc = dv.toObject();
        const std::vector<int32_t> tokens = ids_of(doc["tokens"].toArray());
        const QJsonArray pos = doc["positions"].toArray();
        const std::vector<float> logits = session.evaluate(tokens);
        for (qsizetype i = 0; i < pos.size(); ++i)
            r.agreement.add(logits.data() + size_t(i) * size_t(n_vocab), n_vocab, pos[i].toObject());
        ++r.docs;
        if (rows_sha256(logits.data(), logits.size()) == doc["logits_sha256"].toString()) ++r.docs_identical;
    }
    for (const auto& cv : ref["cases"].toArray()) {
        const QJsonObject c = cv.toObject();
        add_greedy(r, session, ids_of(c["prompt_ids"].toArray()), c);
    }
    // Real text through the model's own tokenizer (special tokens parsed, BOS as llama.cpp added it).
    for (const auto& tv : ref["texts"].toArray()) {
        const QJsonObject t = tv.toObject();
        const std::vector<int32_t> ids =
            model->tokenizer().encode(t["text"].toString().toStdString(), t["add_bos"].toBool(), true);
        ++r.texts;
        if (ids == ids_of(t["ids"].toArray())) ++r.texts_tokenized_same;
        add_greedy(r, session, ids, t);
    }
    return r;
}

}  // namespace

class TestArchParity : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

    QJsonObject load_case(const QString& name) { return wb_test::load_reference("random-archs", name + ".json"); }

private Q_SLOTS:
    void initTestCase() { QVERIFY(dir_.isValid()); }

    void matchesLlamaCpp_data() {
        QTest::addColumn<QString>("name");
        QSet<QString> added;  // a matrix cell may be a case listed by name
        const auto add_row = [&](const QString& name) {
            if (!added.contains(name)) QTest::newRow(qPrintable(name)) << name;
            added.insert(name);
        };
        for (const char* name :
             {"llama31-q8_0", "llama31-q4_1", "llama31-iq4_xs", "qwen2-q8_0", "qwen2-q4_k", "qwen2-yarn-q8_0", "qwen2-q4_0",
              "qwen2-q2_k", "qwen2-q3_k", "qwen2-q5_k", "qwen2-q6_k", "qwen2-iq4_nl", "qwen2-iq4_xs", "qwen2-tq1_0",
              "qwen2-tq2_0", "qwen2-iq3_s", "qwen2-iq3_xxs", "qwen2-iq2_s", "qwen2-iq2_xs", "qwen2-iq2_xxs", "qwen2-iq1_s",
              "qwen2-iq1_m", "qwen3-q8_0", "qwen3-q5_0", "qwen3-q4_0", "phi3-q8_0", "phi3-q4_k", "phi3-iq4_nl",
              "gemma2-q8_0", "gemma2-q4_k_m", "gemma2-iq4_nl", "gemma3-linear-q8_0", "llama-linear-q8_0",
              "gemma2-none-factor-q8_0", "qwen3-bias-q8_0", "gemma2-bias-q8_0",
              // F16 weights with f16 activations, in tinyBLAS's and ggml_vec_dot_f16's orders.
              "qwen3-f16", "llama31-f16", "qwen2-f16", "qwen2-f16-odd",
              // F32 and BF16 weights (BF16 activations), in tinyBLAS's and the row dots' orders.
              "qwen2-f32", "qwen2-f32-odd", "qwen2-bf16", "qwen2-bf16-odd",
              // Mistral-shaped (llama without rope_freqs.weight) and YaRN on a llama file.
              "mistral-q8_0", "mistral-q4_k_m", "llama-yarn-q8_0",
              // Real vocabularies (and the chat template) of fetched files: their texts tokenized too.
              "qwen2-dsvocab-q4_k_m", "llama31-l32vocab-q4_k_m"})
            add_row(QString(name));
        // Quantized by llama.cpp itself from an F32 random model (make_quantized_reference.py): every
        // quantized type of the matrix, with its own types by role (IQ3_XXS, IQ2_XS: a uniform imatrix).
        for (const char* type :
             {"q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k", "iq4_xs", "iq4_nl", "iq3_s", "iq3_xxs", "iq2_xs"})
            add_row(QString("qwen2-llamaq-%1").arg(type));
        // ... and every other architecture in Q4_K_M from its own F32 model.
        for (const char* arch : {"llama31", "qwen3", "phi3", "gemma2", "gemma3"}) add_row(QString("%1-llamaq-q4_k_m").arg(arch));
        // The matrix, as make_random_reference.py's MATRIX_SHAPES x MATRIX_TYPES: every
        // architecture in every type people download (the _M files with llama.cpp's types by role).
        for (const char* arch : {"llama31", "qwen2", "qwen3", "phi3", "gemma2", "gemma3"})
            for (const char* type : {"f16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k", "iq4_xs", "iq4_nl",
                                     "iq3_s", "iq3_xxs", "iq2_xs"})
                add_row(QString("%1-%2").arg(arch, type));
    }

    void matchesLlamaCpp() {
        QFETCH(QString, name);
        const QJsonObject ref = load_case(name);
        QVERIFY2(!ref.isEmpty(), "reference file missing or empty");
        const QStringList args = strings_of(ref["make_random_gguf"].toArray());
        // A real vocabulary comes from a fetched file: missing, the row is skipped and says so, as the
        // tokenizer suites skip theirs (CI fetches every file, scripts/fetch-models.sh --all).
        for (qsizetype i = 0; i + 1 < args.size(); ++i)
            if (args[i] == "--vocab-from" && !QFileInfo::exists(args[i + 1]))
                QSKIP(qPrintable(args[i + 1] + " is missing; run scripts/fetch-models.sh --all to download it"));
        // The model: a file llama.cpp's quantizer wrote into the model cache (a model file, never
        // committed: make_quantized_reference.py makes it), or written again by make_random_gguf.
        const QString quantized = ref["llama_quantized"].toObject()["file"].toString();
        const QString cached = strings_of(QJsonArray{quantized}).value(0);
        if (!quantized.isEmpty() && !QFileInfo::exists(cached))
            QSKIP(qPrintable(cached + " is missing: llama.cpp's quantizer makes it; run scripts/make-test-models.sh "
                                      "(scripts/test.sh does) or see tests/reference/README.md"));
        const QString path = quantized.isEmpty() ? write_model(dir_.path(), name, args) : cached;
        QVERIFY(!path.isEmpty());
        QCOMPARE(sha256_of(path), ref["sha256"].toString());  // the reference's weights, byte for byte
        QCOMPARE(ref["cases"].toArray().size(), 10);
        for (const char* key : {"cases", "texts"})
            for (const auto& c : ref[key].toArray()) QCOMPARE(c.toObject()["generated"].toArray().size(), 32);
        const CaseResult r = run_case(path, ref);
        const Agreement& a = r.agreement;
        qInfo("%-16s top-1 %.2f %%, mean KL %.2e (max %.2e), bit-identical sequences %d/%d, greedy %d/%d "
              "(bit-identical %d), texts tokenized as llama.cpp %d/%d", qPrintable(name), 100.0 * a.top1(), a.kl_mean(),
              a.kl_max, r.docs_identical, r.docs, r.greedy_same, r.greedy, r.greedy_identical, r.texts_tokenized_same,
              r.texts);
        QVERIFY(a.positions >= 300);
        QVERIFY2(a.top1() >= 0.99, qPrintable(QString("top-1 agreement %1 < 0.99").arg(a.top1())));
        QVERIFY2(a.kl_mean() <= 0.005, qPrintable(QString("mean KL %1 > 0.005").arg(a.kl_mean())));
        QVERIFY2(r.greedy_same >= 9 * r.greedy / 10,
                 qPrintable(QString("greedy identical on %1 of %2 prompts").arg(r.greedy_same).arg(r.greedy)));
        QCOMPARE(r.texts_tokenized_same, r.texts);
        QCOMPARE(r.texts, ref["make_random_gguf"].toArray().contains("--vocab-from") ? 4 : 0);
        // Every case: the CPU backend follows llama.cpp's arithmetic, so the logits are bit-identical.
        QCOMPARE(r.docs_identical, r.docs);
        QCOMPARE(r.greedy_identical, r.greedy);
    }

    // The same weights without what the reference's model has must not pass for it: the features are
    // computed, not ignored (ignoring rope_freqs.weight is how Llama 3.1 files ran wrong before).
    void featuresMatter_data() {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QStringList>("drop");  // make_random_gguf arguments appended to the reference's
        QTest::newRow("llama31 without rope_freqs") << QString("llama31-q8_0") << QStringList{"--no-rope-freqs"};
        QTest::newRow("qwen2 without yarn") << QString("qwen2-yarn-q8_0") << QStringList{"--no-rope-scaling"};
        QTest::newRow("qwen2 without biases") << QString("qwen2-q8_0") << QStringList{"--no-qkv-bias"};
        QTest::newRow("qwen3 without qk norm") << QString("qwen3-q8_0") << QStringList{"--arch", "qwen2"};
        // A 4096-token original context: the short factors instead of the long ones.
        QTest::newRow("phi3 short rope factors") << QString("phi3-q8_0") << QStringList{"--rope-orig-ctx", "4096"};
        QTest::newRow("gemma3 without linear scaling") << QString("gemma3-linear-q8_0") << QStringList{"--no-rope-scaling"};
        QTest::newRow("llama without linear scaling") << QString("llama-linear-q8_0") << QStringList{"--no-rope-scaling"};
        // rope.scaling.type none still scales Gemma 2's local layers by the factor (llama.cpp).
        QTest::newRow("gemma2 none without its factor") << QString("gemma2-none-factor-q8_0") << QStringList{"--no-rope-scaling"};
        QTest::newRow("qwen3 without biases") << QString("qwen3-bias-q8_0") << QStringList{"--no-qkv-bias"};
        QTest::newRow("gemma2 without biases") << QString("gemma2-bias-q8_0") << QStringList{"--no-qkv-bias"};
        // The loader's default caps (50 and 30) instead of the file's (2.5 and 8).
        QTest::newRow("gemma2 default soft-caps") << QString("gemma2-q8_0")
                                                  << QStringList{"--attn-softcap", "0", "--final-softcap", "0"};
    }

    void featuresMatter() {
        QFETCH(QString, name);
        QFETCH(QStringList, drop);
        const QJsonObject ref = load_case(name);
        const QString path = write_model(dir_.path(), name + "-without", strings_of(ref["make_random_gguf"].toArray()) + drop);
        QVERIFY(!path.isEmpty());
        const CaseResult r = run_case(path, ref);
        qInfo("%-16s %s: top-1 %.2f %%, mean KL %.3f, greedy %d/10", qPrintable(name), qPrintable(drop.join(' ')),
              100.0 * r.agreement.top1(), r.agreement.kl_mean(), r.greedy_same);
        // Four times the parity bound, and visible in the argmax.
        QVERIFY2(r.agreement.kl_mean() > 0.02 && r.agreement.top1() < 0.99,
                 qPrintable(QString("mean KL %1, top-1 %2: the reference does not tell the feature apart")
                                .arg(r.agreement.kl_mean())
                                .arg(r.agreement.top1())));
    }

    // Phi-3's long or short rope factors, chosen as llama.cpp's get_rope_factors chooses them: the
    // long ones when the context padded to 256 (llama_context pads n_ctx and n_ctx_seq) exceeds the
    // original training context, strictly; Llama 3.1's rope_freqs whenever the file has them.
    void phi3RopeFactorsFollowThePaddedContext_data() {
        QTest::addColumn<int>("orig");
        QTest::addColumn<int>("n_ctx");
        QTest::addColumn<bool>("long_factors");
        QTest::newRow("n_ctx == orig") << 1024 << 1024 << false;
        QTest::newRow("one past orig pads to 1280") << 1024 << 1025 << true;
        QTest::newRow("900 pads to 1024, within 1024") << 1024 << 900 << false;
        QTest::newRow("900 pads to 1024, past 1000") << 1000 << 900 << true;
        QTest::newRow("768 within 1000") << 1000 << 768 << false;
        QTest::newRow("4096 past 4095") << 4095 << 4096 << true;
    }

    void phi3RopeFactorsFollowThePaddedContext() {
        QFETCH(int, orig);
        QFETCH(int, n_ctx);
        QFETCH(bool, long_factors);
        ModelConfig c;
        c.arch = "phi3";
        c.head_dim = c.n_rot = 64;
        c.rope_n_ctx_orig = orig;
        GgufTensor long_t, short_t, freqs_t;
        ModelWeights w;
        w.rope_factors_long.src = &long_t;
        w.rope_factors_short.src = &short_t;
        const RopeParams p = layer_rope(c, w, n_ctx, 4, 10000.0f, 1.0f);
        QCOMPARE(p.freq_factors, long_factors ? &w.rope_factors_long : &w.rope_factors_short);
        w.rope_freqs.src = &freqs_t;
        QCOMPARE(layer_rope(c, w, n_ctx, 4, 10000.0f, 1.0f).freq_factors, &w.rope_freqs);
    }

    // What the engine cannot compute is refused with a line that says what, never run wrongly.
    void refusesWhatItCannotRun_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("error");
        QTest::newRow("unknown rope scaling") << QStringList{"--shape", "qwen2-tiny", "--rope-scaling", "longrope"}
                                              << "model uses rope scaling 'longrope', which WhiteBox does not support "
                                                 "(none, linear, yarn)";
        QTest::newRow("a tensor no architecture reads")
            << QStringList{"--shape", "llama31-tiny", "--extra-tensor", "blk.0.attn_qkv.weight"}
            << "model file has tensor 'blk.0.attn_qkv.weight', which the llama architecture does not use here "
               "(not supported)";
        // Tensors llama.cpp's loader does not take for the architecture (it refuses the file: "wrong
        // number of tensors"): attn_output.bias is llama's only, rope_freqs.weight too.
        QTest::newRow("qwen3 attn_output.bias")
            << QStringList{"--shape", "qwen3-tiny", "--extra-tensor", "blk.0.attn_output.bias"}
            << "model file has tensor 'blk.0.attn_output.bias', which the qwen3 architecture does not use here "
               "(not supported)";
        QTest::newRow("qwen2 rope_freqs") << QStringList{"--shape", "qwen2-tiny", "--rope-freqs"}
                                          << "model file has tensor 'rope_freqs.weight', which the qwen2 architecture "
                                             "does not use here (not supported)";
    }

    void refusesWhatItCannotRun() {
        QFETCH(QStringList, args);
        QFETCH(QString, error);
        const QString path = write_model(dir_.path(), "refused", args);
        QVERIFY(!path.isEmpty());
        try {
            Model::load(path.toStdString());
            QFAIL("the model loaded");
        } catch (const Error& e) {
            QCOMPARE(QString::fromStdString(e.what()), path + ": " + error);
        }
    }
};

QTEST_GUILESS_MAIN(TestArchParity)
#include "test_arch_parity.moc"
