// The two stages that read the model's token texts against llama.cpp's own samplers over SmolLM2's
// whole vocabulary (tests/reference/smollm2-135m-instruct-q4_1/vocab_samplers.json, written by
// make_vocab_sampler_reference.py through llama-cpp-python): the grammar keeps exactly the tokens
// llama.cpp's grammar sampler keeps, before each token of a text that follows it and after the last
// (where only the end-of-generation tokens may follow), and DRY with llama.cpp's default sequence
// breakers, found by text in the vocabulary, penalises as llama.cpp's to the bit.
#include <QtTest>

#include <QCryptographicHash>

#include <bit>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/model.h"
#include "sampling/grammar/grammar_constraint.h"
#include "sampling/sampler.h"
#include "sampling/samplers.h"
#include "test_paths.h"

using namespace wb;
using nlohmann::json;

namespace {

// SHA-256 of token ids as the script hashes them (int32, little-endian, in order).
QString ids_sha256(const std::vector<int32_t>& ids) {
    QCryptographicHash h(QCryptographicHash::Sha256);
    h.addData(QByteArrayView(reinterpret_cast<const char*>(ids.data()), qsizetype(ids.size() * sizeof(int32_t))));
    return QString::fromLatin1(h.result().toHex());
}

}  // namespace

class TestVocabSamplerParity : public QObject {
    Q_OBJECT

    std::unique_ptr<Model> model_;
    std::shared_ptr<SamplerVocab> vocab_;
    json reference_;

private Q_SLOTS:
    void initTestCase() {
        if (!std::ifstream(wb_test::default_model()).good()) QFAIL("default model missing: run scripts/fetch-models.sh");
        model_ = Model::load(wb_test::default_model());
        std::ifstream in(wb_test::reference_dir() + "/smollm2-135m-instruct-q4_1/vocab_samplers.json");
        QVERIFY2(in.good(), "tests/reference/smollm2-135m-instruct-q4_1/vocab_samplers.json missing");
        reference_ = json::parse(in);
        const Tokenizer& tok = model_->tokenizer();
        QCOMPARE(int64_t(tok.n_vocab()), reference_["meta"]["n_vocab"].get<int64_t>());
        // The vocabulary the session hands its sampler chain (engine/session.cpp).
        vocab_ = std::make_shared<SamplerVocab>();
        vocab_->n_vocab = int32_t(tok.n_vocab());
        vocab_->piece = [&tok](int32_t id) { return tok.token_to_piece(id, true); };
        vocab_->tokenize = [&tok](const std::string& text) { return tok.encode(text, false, false); };
        vocab_->is_eog = [&tok](int32_t id) { return tok.is_eog(id); };
    }

    void grammarKeepsWhatLlamaCppKeeps_data() {
        QTest::addColumn<int>("index");
        for (size_t i = 0; i < reference_["grammar"].size(); ++i)
            QTest::newRow(reference_["grammar"][i]["name"].get<std::string>().c_str()) << int(i);
    }
    void grammarKeepsWhatLlamaCppKeeps() {
        QFETCH(int, index);
        const json& c = reference_["grammar"][size_t(index)];
        GrammarConstraint grammar(c["grammar"].get<std::string>(), vocab_);
        const auto tokens = c["tokens"].get<std::vector<int32_t>>();
        const json& steps = c["steps"];
        QCOMPARE(steps.size(), tokens.size() + 1);
        for (size_t i = 0; i < steps.size(); ++i) {
            // The tokens the chain's second draw reads the logits of.
            const std::vector<int32_t> kept = grammar.allowed_tokens(vocab_->n_vocab);
            const json& s = steps[i];
            const QString where = QString("%1, before token %2").arg(c["name"].get<std::string>().c_str()).arg(i);
            if (s.contains("kept")) QCOMPARE(kept, s["kept"].get<std::vector<int32_t>>());
            QVERIFY2(kept.size() == s["n_kept"].get<size_t>(),
                     qPrintable(where + QString(": kept %1, llama.cpp %2").arg(kept.size()).arg(s["n_kept"].get<size_t>())));
            QVERIFY2(ids_sha256(kept) == QString::fromStdString(s["sha256"].get<std::string>()), qPrintable(where));
            if (i < tokens.size()) grammar.accept(tokens[i]);
        }
        QVERIFY(grammar.complete());
    }

    void dryWithBreakersPenalisesAsLlamaCpp() {
        const json& cases = reference_["dry"];
        QVERIFY(!cases.empty());
        int penalised = 0;
        for (const json& c : cases) {
            const DryBreakers breakers =
                process_dry_breakers(*vocab_, c["breakers"].get<std::vector<std::string>>());
            // The history is llama.cpp's tokens of the text; ours must be the same for the case to be fair.
            QCOMPARE(model_->tokenizer().encode(c["text"].get<std::string>(), false, false),
                     c["history"].get<std::vector<int32_t>>());
            const auto history = c["history"].get<std::vector<int32_t>>();
            const auto ids = c["ids"].get<std::vector<int32_t>>();
            const auto logits = c["logits"].get<std::vector<float>>();
            const auto after = c["after"].get<std::vector<float>>();
            CandidateSet cands;
            for (size_t i = 0; i < ids.size(); ++i) cands.data.push_back({ids[i], logits[i], 0.0f});
            DrySampler(history, breakers, c["multiplier"].get<float>(), c["base"].get<float>(),
                       c["allowed_length"].get<int>(), c["last_n"].get<int>())
                .apply(cands);
            QCOMPARE(cands.data.size(), ids.size());
            for (size_t i = 0; i < ids.size(); ++i) {
                QCOMPARE(cands.data[i].id, ids[i]);
                QVERIFY2(std::bit_cast<uint32_t>(cands.data[i].logit) == std::bit_cast<uint32_t>(after[i]),
                         qPrintable(QString("%1: token %2 logit %3, llama.cpp %4")
                                        .arg(c["text"].get<std::string>().c_str()).arg(ids[i])
                                        .arg(double(cands.data[i].logit), 0, 'g', 9).arg(double(after[i]), 0, 'g', 9)));
                penalised += cands.data[i].logit != logits[i];
            }
        }
        QVERIFY(penalised > 0);  // the cases exercise a penalty, not only breakers that stop every repeat
    }
};

QTEST_GUILESS_MAIN(TestVocabSamplerParity)
#include "test_vocab_sampler_parity.moc"
