// Real vocabularies against llama.cpp: every string of the committed tokenizer corpus must give exactly
// the ids llama.cpp gave (tests/reference/<vocab>/tokenize.json, produced by
// tests/reference/make_reference.py and make_vocab_reference.py), with and without special-token
// parsing, and decode back as llama.cpp's detokenizer does. One data row per vocabulary:
//   smollm2  SmolLM2-135M-Instruct (pre "smollm"), the default model: missing file = failure.
//   qwen2    DeepSeek-R1-Distill-Qwen-7B (pre "deepseek-r1-qwen", Qwen 2 vocabulary), only the first
//            part of the model (scripts/fetch-models.sh qwen2-vocab): metadata complete, tensor data
//            cut off, so it is opened metadata-only. Missing file = skipped.
//   llama3   Meta's Llama 3.2 (Vision) tokenizer (pre "llama-bpe"), made into a tensor-less GGUF by
//            scripts/hf-vocab-to-gguf.py (scripts/fetch-models.sh llama3-vocab). Missing file = skipped.
//   phi3     Phi-3's SentencePiece vocabulary (llama.cpp's models/ggml-vocab-phi-3.gguf from the
//            llama-cpp-python sdist; scripts/fetch-models.sh phi3-vocab), whose special tokens strip the
//            whitespace after them; the corpus plus its own chat markers. Missing file = skipped.
//   tekken   Mistral's Tekken pre-tokenizer (Mistral Nemo, Ministral): no Tekken vocabulary can be
//            fetched, so the Llama 3.2 vocabulary is loaded with tokenizer.ggml.pre "tekken", as the
//            reference's llama.cpp loaded it; the splits decide the ids. Missing file = skipped.
//   llamaspm Llama 2's SentencePiece vocabulary (32000 tokens; Mistral 7B v0.1-v0.3 files tokenize by
//            the same rules), llama.cpp's models/ggml-vocab-llama-spm.gguf from the same sdist
//            (scripts/fetch-models.sh llama-spm-vocab). Missing file = skipped.
#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cpu_cost.h"
#include "gguf/gguf_file.h"
#include "model/model_paths.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace {

using Ids = std::vector<int32_t>;

struct Case {
    std::string text;
    Ids ids_special;
    Ids ids_plain;
    // What llama_detokenize gives back (specials rendered for ids_special); the text itself unless the
    // reference lists the case in detokenize_differs.
    std::string detok_special;
    std::string detok_plain;
};

// One vocabulary under test: where its file and reference are, and what was loaded from them.
struct Vocab {
    QString ref_dir;           // tests/reference/<ref_dir>/tokenize.json
    std::string file;          // inside the model cache
    bool optional = false;     // skip (not fail) when the file has not been fetched
    wb::GgufTensorData tensor_data = wb::GgufTensorData::REQUIRED;
    std::unique_ptr<wb::GgufFile> gguf;
    std::unique_ptr<wb::Tokenizer> tok;
    std::string pre_override;  // tokenizer.ggml.pre to use instead of the file's (the reference did too)
    QJsonObject ref;           // tokenize.json without its cases
    std::vector<Case> cases;

    std::string path() const { return wb::models_dir() + "/" + file; }
    QString ref_path() const { return QString::fromStdString(wb_test::reference_dir()) + "/" + ref_dir + "/tokenize.json"; }
};

Ids to_ids(const QJsonArray& a) {
    Ids ids;
    ids.reserve(size_t(a.size()));
    for (const auto& v : a) ids.push_back(int32_t(v.toInteger()));
    return ids;
}

QString show(const Ids& ids) {
    QStringList parts;
    for (const int32_t id : ids) parts << QString::number(id);
    return parts.join(' ');
}

QJsonObject read_json(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    QByteArray json = f.readAll();
    // Qt 6.4's JSON parser drops a raw U+FEFF BOM at the start of a string value (the corpus has one);
    // the escaped form survives, and inside a string both mean the same.
    json.replace("\xEF\xBB\xBF", "\\ufeff");
    return QJsonDocument::fromJson(json).object();
}

// Reads tokenize.json into v; false when it is missing or empty.
bool load_reference(Vocab& v) {
    QJsonObject root = read_json(v.ref_path());
    std::map<std::string, std::pair<std::string, std::string>> differs;
    for (const auto& d : root.value("detokenize_differs").toArray()) {
        const QJsonObject o = d.toObject();
        differs[o["text"].toString().toStdString()] = {o["special"].toString().toStdString(),
                                                       o["plain"].toString().toStdString()};
    }
    for (const auto& c : root.value("cases").toArray()) {
        const QJsonObject o = c.toObject();
        Case k{o.value("text").toString().toStdString(), to_ids(o.value("ids_special").toArray()),
               to_ids(o.value("ids_plain").toArray()), {}, {}};
        const auto it = differs.find(k.text);
        k.detok_special = it == differs.end() ? k.text : it->second.first;
        k.detok_plain = it == differs.end() ? k.text : it->second.second;
        v.cases.push_back(std::move(k));
    }
    root.remove("cases");
    v.ref = root;
    return !v.cases.empty();
}

}  // namespace

class TestTokenizerParity : public QObject {
    Q_OBJECT

    std::map<QString, Vocab> vocabs_;

    // The vocabulary of the current data row, loaded on first use; stays nullptr after a QFAIL or
    // QSKIP here, and the caller then returns.
    void current(Vocab*& out) {
        out = nullptr;
        QFETCH_GLOBAL(QString, vocab);
        Vocab& v = vocabs_.at(vocab);
        if (!v.tok) {
            if (!QFile::exists(QString::fromStdString(v.path()))) {
                const QString msg = "model file " + QString::fromStdString(v.path()) +
                                    " is missing; run scripts/fetch-models.sh --all to download it";
                if (v.optional) QSKIP(qPrintable(msg));
                QFAIL(qPrintable(msg));
            }
            if (v.cases.empty() && !load_reference(v)) {
                QFAIL(qPrintable("reference data " + v.ref_path() +
                                 " is missing or empty; generate it with tests/reference/make_reference.py"));
            }
            v.gguf = wb::GgufFile::open(v.path(), v.tensor_data);
            QElapsedTimer timer;
            timer.start();
            wb::VocabSpec spec = wb::Tokenizer::read_vocab(*v.gguf);
            if (!v.pre_override.empty()) spec.pre = v.pre_override;
            v.tok = wb::Tokenizer::from_vocab(std::move(spec));
            qInfo("%s: vocabulary of %d tokens loaded in %.1f ms", qPrintable(vocab), v.tok->n_vocab(),
                  double(timer.nsecsElapsed()) / 1e6);
        }
        out = &v;
    }

    // Compares one id list per case; prints every mismatch with the text, then fails on any.
    void compare_all(bool parse_special) {
        Vocab* v = nullptr;
        current(v);
        if (!v) return;
        int mismatches = 0;
        for (const Case& c : v->cases) {
            const Ids& expected = parse_special ? c.ids_special : c.ids_plain;
            const Ids got = v->tok->encode(c.text, false, parse_special);
            if (got == expected) continue;
            ++mismatches;
            qWarning() << "text" << QString::fromStdString(c.text) << "expected" << show(expected) << "got" << show(got);
        }
        QVERIFY2(v->cases.size() >= 200, "the reference corpus should hold at least 200 strings");
        qInfo("%s: %zu of %zu cases match llama.cpp", parse_special ? "special" : "plain",
              v->cases.size() - size_t(mismatches), v->cases.size());
        QCOMPARE(mismatches, 0);
    }

private slots:
    void initTestCase() {
        vocabs_["smollm2"] = Vocab{"smollm2-135m-instruct-q4_1", wb::default_model_file(), false,
                                   wb::GgufTensorData::REQUIRED, {}, {}, {}, {}, {}};
        vocabs_["qwen2"] = Vocab{"deepseek-r1-distill-qwen-7b-vocab", "DeepSeek-R1-Distill-Qwen-7B-Q4_K_M.part0000.gguf",
                                 true, wb::GgufTensorData::MAY_BE_TRUNCATED, {}, {}, {}, {}, {}};
        vocabs_["llama3"] = Vocab{"llama-3.2-vocab", "Llama-3.2-tokenizer.vocab.gguf", true,
                                  wb::GgufTensorData::REQUIRED, {}, {}, {}, {}, {}};
        vocabs_["phi3"] = Vocab{"phi-3-vocab", "Phi-3-tokenizer.vocab.gguf", true, wb::GgufTensorData::REQUIRED,
                                {}, {}, {}, {}, {}};
        vocabs_["llamaspm"] = Vocab{"llama-spm-vocab", "Llama-SPM-tokenizer.vocab.gguf", true,
                                    wb::GgufTensorData::REQUIRED, {}, {}, {}, {}, {}};
        vocabs_["tekken"] = Vocab{"tekken-on-llama-3.2-vocab", "Llama-3.2-tokenizer.vocab.gguf", true,
                                  wb::GgufTensorData::REQUIRED, {}, {}, "tekken", {}, {}};
    }

    void initTestCase_data() {
        QTest::addColumn<QString>("vocab");
        QTest::newRow("smollm2") << QString("smollm2");
        QTest::newRow("qwen2") << QString("qwen2");
        QTest::newRow("llama3") << QString("llama3");
        QTest::newRow("phi3") << QString("phi3");
        QTest::newRow("llamaspm") << QString("llamaspm");
        QTest::newRow("tekken") << QString("tekken");
    }

    void reference_was_made_from_this_file() {
        Vocab* v = nullptr;
        current(v);
        if (!v) return;
        QFile f(QString::fromStdString(v->path()));
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCryptographicHash hash(QCryptographicHash::Sha256);
        QVERIFY(hash.addData(&f));
        QCOMPARE(QString::fromLatin1(hash.result().toHex()), v->ref.value("sha256").toString());
    }

    void vocabulary_facts() {
        Vocab* v = nullptr;
        current(v);
        if (!v) return;
        const wb::Tokenizer& tok = *v->tok;
        QVERIFY2(tok.warning().empty(), tok.warning().c_str());
        QFETCH_GLOBAL(QString, vocab);
        QCOMPARE(tok.model_name(), std::string(vocab == "phi3" || vocab == "llamaspm" ? "llama" : "gpt2"));
        if (vocab == "tekken") {
            QCOMPARE(tok.n_vocab(), v->ref.value("n_vocab").toInt());
            QCOMPARE(tok.pre_name(), std::string("tekken"));
            QCOMPARE(tok.eos_id(), v->ref.value("eos_id").toInt());
        } else if (vocab == "llamaspm") {
            QCOMPARE(tok.n_vocab(), 32000);
            QCOMPARE(tok.pre_name(), std::string("default"));
            QCOMPARE(tok.find_token("<s>"), std::optional<int32_t>(1));
            QCOMPARE(tok.find_token("</s>"), std::optional<int32_t>(2));
            QCOMPARE(tok.eos_id(), v->ref.value("eos_id").toInt());
        } else if (vocab == "phi3") {
            QCOMPARE(tok.n_vocab(), 32064);
            QCOMPARE(tok.pre_name(), std::string("default"));
            QCOMPARE(tok.find_token("<|user|>"), std::optional<int32_t>(32010));
            QCOMPARE(tok.find_token("<|end|>"), std::optional<int32_t>(32007));
            QCOMPARE(tok.eos_id(), v->ref.value("eos_id").toInt());
        } else if (vocab == "smollm2") {
            QCOMPARE(tok.n_vocab(), 49152);
            QCOMPARE(tok.pre_name(), std::string("smollm"));
            QVERIFY(!tok.add_bos());
            QCOMPARE(tok.find_token("<|im_start|>"), std::optional<int32_t>(1));
            QCOMPARE(tok.find_token("<|im_end|>"), std::optional<int32_t>(2));
        } else if (vocab == "llama3") {
            QCOMPARE(tok.n_vocab(), v->ref.value("n_vocab").toInt());
            QCOMPARE(tok.pre_name(), std::string("llama-bpe"));
            QCOMPARE(tok.find_token("<|begin_of_text|>"), std::optional<int32_t>(128000));
            QCOMPARE(tok.find_token("<|eot_id|>"), std::optional<int32_t>(128009));
            QCOMPARE(tok.find_token("<|image|>"), std::optional<int32_t>(128256));
            QCOMPARE(tok.eos_id(), v->ref.value("eos_id").toInt());
        } else {
            QCOMPARE(tok.n_vocab(), v->ref.value("n_vocab").toInt());
            QCOMPARE(tok.pre_name(), std::string("deepseek-r1-qwen"));
            QCOMPARE(tok.find_token("<｜begin▁of▁sentence｜>"), std::optional<int32_t>(151646));
            QCOMPARE(tok.find_token("<｜end▁of▁sentence｜>"), std::optional<int32_t>(151643));
            QCOMPARE(tok.find_token("<｜User｜>"), std::optional<int32_t>(151644));
            QCOMPARE(tok.find_token("<｜Assistant｜>"), std::optional<int32_t>(151645));
            QCOMPARE(tok.find_token("<think>"), std::optional<int32_t>(151648));
            QCOMPARE(tok.eos_id(), v->ref.value("eos_id").toInt());
            // A metadata-only file: the tensors are listed but their data is cut off, and the default
            // (model) open refuses the file, as Model::load does.
            QVERIFY(v->gguf->n_truncated_tensors() > 0);
            QVERIFY_THROWS_EXCEPTION(wb::Error, wb::GgufFile::open(v->path()));
        }
        QCOMPARE(tok.add_bos(), v->ref.value("vocab_add_bos").toBool());  // absent = false (SmolLM2)
        if (v->ref.contains("bos_id")) QCOMPARE(tok.bos_id(), v->ref.value("bos_id").toInt());
    }

    // The end-of-generation set llama.cpp reports for the file (llama_vocab_is_eog over every id).
    void eog_set_matches_llama_cpp() {
        Vocab* v = nullptr;
        current(v);
        if (!v) return;
        QFETCH_GLOBAL(QString, vocab);
        // SmolLM2's set was recorded with its greedy data, before tokenize.json carried it.
        const QJsonObject src = vocab == "smollm2"
            ? read_json(QString::fromStdString(wb_test::reference_dir()) + "/smollm2-135m-instruct-q4_1/greedy.json")
            : v->ref;
        const Ids expected = to_ids(src.value("eog_ids").toArray());
        QVERIFY(!expected.empty());
        if (v->tok->eog_ids() != expected) qWarning().noquote() << "expected" << show(expected) << "got" << show(v->tok->eog_ids());
        QCOMPARE(v->tok->eog_ids(), expected);
    }

    // With BOS requested, exactly the vocabulary's BOS in front when llama.cpp adds one, else nothing.
    void bos_is_added_as_llama_cpp_adds_it() {
        Vocab* v = nullptr;
        current(v);
        if (!v) return;
        const bool vocab_add_bos = v->ref.value("vocab_add_bos").toBool();
        int mismatches = 0;
        for (const Case& c : v->cases) {
            Ids expected;
            if (vocab_add_bos) expected.push_back(v->ref.value("bos_id").toInt());
            expected.insert(expected.end(), c.ids_special.begin(), c.ids_special.end());
            if (v->tok->encode(c.text, true, true) != expected) ++mismatches;
        }
        QCOMPARE(mismatches, 0);
    }

    // Third-party vectors from the facts sheet; they are kept because they agree with the reference.
    void smollm2_self_check_vectors_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<Ids>("ids");
        QTest::newRow("hello") << "Hello, we can use" << Ids{19556, 28, 392, 416, 722};
        QTest::newRow("capital") << "The capital of France is" << Ids{504, 3575, 282, 4649, 314};
        QTest::newRow("newline") << "\n" << Ids{198};
        QTest::newRow("digits") << "Hello world! 123" << Ids{19556, 905, 17, 216, 33, 34, 35};
        QTest::newRow("spaces") << "  multiple   spaces" << Ids{216, 2701, 256, 5600};
    }

    void smollm2_self_check_vectors() {
        QFETCH_GLOBAL(QString, vocab);
        if (vocab != "smollm2") QSKIP("SmolLM2 vectors");
        Vocab* v = nullptr;
        current(v);
        if (!v) return;
        QFETCH(QString, text);
        QFETCH(Ids, ids);
        const Ids got = v->tok->encode(text.toStdString(), false, true);
        if (got != ids) qWarning().noquote() << "expected" << show(ids) << "got" << show(got);
        QVERIFY(got == ids);
    }

    void matches_llama_cpp_with_special_parsing() { compare_all(true); }
    void matches_llama_cpp_without_special_parsing() { compare_all(false); }

    // Decoding llama.cpp's ids gives llama.cpp's detokenized text, specials rendered for the
    // special-parsed ids: the input itself, except where a vocabulary's clean-up rules (Llama 3's
    // clean_spaces) change it the way llama.cpp does.
    void decode_matches_llama_cpp_detokenize() {
        Vocab* v = nullptr;
        current(v);
        if (!v) return;
        int failures = 0;
        for (const Case& c : v->cases) {
            const std::string plain = v->tok->decode(c.ids_plain, false);
            const std::string special = v->tok->decode(c.ids_special, true);
            if (plain == c.detok_plain && special == c.detok_special) continue;
            ++failures;
            qWarning() << "decode differs for" << QString::fromStdString(c.text) << "plain" << QString::fromStdString(plain)
                       << "special" << QString::fromStdString(special);
        }
        QCOMPARE(failures, 0);
    }

    // A chat prompt is encoded in pieces (template text with specials, the user's text without).
    // Cut after a special token's line break and before the next marker, the pieces must give the
    // ids of the whole text: on Phi-3 the whitespace a special token eats runs on into the user's piece.
    void pieces_give_the_ids_of_the_whole_text() {
        Vocab* v = nullptr;
        current(v);
        if (!v) return;
        int checked = 0, mismatches = 0;
        for (const Case& c : v->cases) {
            const size_t nl = c.text.find(">\n");
            if (nl == std::string::npos) continue;
            // The user's text runs to the next marker and is not parsed for specials, as in a prompt.
            const size_t next = std::min(c.text.find("<|", nl + 2), c.text.size());
            const std::string_view whole(c.text);
            const std::vector<wb::Tokenizer::Piece> pieces = {{whole.substr(0, nl + 2), true},
                                                              {whole.substr(nl + 2, next - nl - 2), false},
                                                              {whole.substr(next), true}};
            ++checked;
            const Ids got = v->tok->encode_pieces(pieces, false);
            if (got == c.ids_special) continue;
            ++mismatches;
            qWarning() << "text" << QString::fromStdString(c.text) << "expected" << show(c.ids_special) << "got" << show(got);
        }
        QVERIFY(checked > 0);
        QCOMPARE(mismatches, 0);
    }

    void encoding_a_few_kilobytes_takes_milliseconds() {
        Vocab* v = nullptr;
        current(v);
        if (!v) return;
        std::string text;
        for (const Case& c : v->cases) text += c.text + "\n";
        while (text.size() < 8192) text += text;
        Ids ids;
        // The thread's CPU time: waiting for a core on a loaded machine does not count.
        const double ms = wb_test::cpu_seconds_of([&] { ids = v->tok->encode(text, false, true); }) * 1e3;
        qInfo("encoded %zu bytes into %zu tokens in %.2f ms of CPU", text.size(), ids.size(), ms);
        QVERIFY2(ms < 200.0, "tokenizing a few KB should take milliseconds");
    }
};

QTEST_GUILESS_MAIN(TestTokenizerParity)
#include "test_tokenizer_parity.moc"
