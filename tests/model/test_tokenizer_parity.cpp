// SmolLM2's real vocabulary against llama.cpp: every string of the committed tokenizer corpus must
// give exactly the ids llama.cpp gave (tests/reference/<model>/tokenize.json, produced by
// tests/reference/make_reference.py), with and without special-token parsing.
#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace {

using Ids = std::vector<int32_t>;

struct Case {
    std::string text;
    Ids ids_special;
    Ids ids_plain;
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

QString reference_path() {
    return QString::fromStdString(wb_test::reference_dir()) + "/smollm2-135m-instruct-q4_1/tokenize.json";
}

}  // namespace

class TestTokenizerParity : public QObject {
    Q_OBJECT

    std::unique_ptr<wb::GgufFile> file_;
    std::unique_ptr<wb::Tokenizer> tok_;
    std::vector<Case> cases_;
    QString reference_sha256_;

    // Reads the reference once; false (and a message) when it is missing, so only the tests that
    // need it fail and the self-check vectors still run.
    bool load_reference() {
        if (!cases_.empty()) return true;
        QFile ref(reference_path());
        if (!ref.open(QIODevice::ReadOnly)) return false;
        QByteArray json = ref.readAll();
        // Qt 6.4's JSON parser drops a raw U+FEFF BOM at the start of a string value (the corpus has
        // one); the escaped form survives, and inside a string both mean the same.
        if (json.startsWith("\xEF\xBB\xBF")) json.remove(0, 3);
        json.replace("\xEF\xBB\xBF", "\\ufeff");
        const QJsonObject root = QJsonDocument::fromJson(json).object();
        reference_sha256_ = root.value("sha256").toString();
        for (const auto& v : root.value("cases").toArray()) {
            const QJsonObject o = v.toObject();
            cases_.push_back({o.value("text").toString().toStdString(), to_ids(o.value("ids_special").toArray()),
                              to_ids(o.value("ids_plain").toArray())});
        }
        return !cases_.empty();
    }

    // Compares one id list per case; prints every mismatch with the text, then fails on any.
    void compare_all(bool parse_special) {
        if (!load_reference()) {
            QFAIL(qPrintable("reference data " + reference_path() +
                             " is missing or empty; generate it with tests/reference/make_reference.py"));
        }
        int mismatches = 0;
        for (const Case& c : cases_) {
            const Ids& expected = parse_special ? c.ids_special : c.ids_plain;
            const Ids got = tok_->encode(c.text, false, parse_special);
            if (got == expected) continue;
            ++mismatches;
            qWarning() << "text" << QString::fromStdString(c.text) << "expected" << show(expected) << "got" << show(got);
        }
        QVERIFY2(cases_.size() >= 200, "the reference corpus should hold at least 200 strings");
        qInfo("%s: %zu of %zu cases match llama.cpp", parse_special ? "special" : "plain",
              cases_.size() - size_t(mismatches), cases_.size());
        QCOMPARE(mismatches, 0);
    }

private slots:
    void initTestCase() {
        const std::string path = wb_test::default_model();
        if (!QFile::exists(QString::fromStdString(path))) {
            QFAIL(qPrintable("model file " + QString::fromStdString(path) +
                             " is missing; run scripts/fetch-models.sh to download it"));
        }
        file_ = wb::GgufFile::open(path);
        QElapsedTimer timer;
        timer.start();
        tok_ = wb::Tokenizer::from_gguf(*file_);
        qInfo("vocabulary of %d tokens loaded in %.1f ms", tok_->n_vocab(), double(timer.nsecsElapsed()) / 1e6);
    }

    void reference_was_made_from_this_file() {
        if (!load_reference()) {
            QFAIL(qPrintable("reference data " + reference_path() +
                             " is missing or empty; generate it with tests/reference/make_reference.py"));
        }
        QFile f(QString::fromStdString(wb_test::default_model()));
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCryptographicHash hash(QCryptographicHash::Sha256);
        QVERIFY(hash.addData(&f));
        QCOMPARE(QString::fromLatin1(hash.result().toHex()), reference_sha256_);
    }

    void vocabulary_facts() {
        QCOMPARE(tok_->n_vocab(), 49152);
        QCOMPARE(tok_->model_name(), std::string("gpt2"));
        QCOMPARE(tok_->pre_name(), std::string("smollm"));
        QVERIFY(tok_->warning().empty());
        QVERIFY(!tok_->add_bos());
        QCOMPARE(tok_->find_token("<|im_start|>"), std::optional<int32_t>(1));
        QCOMPARE(tok_->find_token("<|im_end|>"), std::optional<int32_t>(2));
        QVERIFY(tok_->is_eog(2));
        QVERIFY(tok_->is_eog(0));
        QVERIFY(!tok_->is_eog(1));
        // The end-of-generation set llama.cpp reports for this file (recorded in greedy.json), FIM
        // marker <reponame> included.
        QFile f(QString::fromStdString(wb_test::reference_dir()) + "/smollm2-135m-instruct-q4_1/greedy.json");
        QVERIFY(f.open(QIODevice::ReadOnly));
        std::vector<int32_t> expected;
        for (const auto& v : QJsonDocument::fromJson(f.readAll()).object()["eog_ids"].toArray()) expected.push_back(v.toInt());
        QCOMPARE(tok_->eog_ids(), expected);
    }

    // Third-party vectors from the facts sheet; they are kept because they agree with the reference.
    void self_check_vectors_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<Ids>("ids");
        QTest::newRow("hello") << "Hello, we can use" << Ids{19556, 28, 392, 416, 722};
        QTest::newRow("capital") << "The capital of France is" << Ids{504, 3575, 282, 4649, 314};
        QTest::newRow("newline") << "\n" << Ids{198};
        QTest::newRow("digits") << "Hello world! 123" << Ids{19556, 905, 17, 216, 33, 34, 35};
        QTest::newRow("spaces") << "  multiple   spaces" << Ids{216, 2701, 256, 5600};
    }

    void self_check_vectors() {
        QFETCH(QString, text);
        QFETCH(Ids, ids);
        const Ids got = tok_->encode(text.toStdString(), false, true);
        if (got != ids) qWarning().noquote() << "expected" << show(ids) << "got" << show(got);
        QVERIFY(got == ids);
    }

    void matches_llama_cpp_with_special_parsing() { compare_all(true); }
    void matches_llama_cpp_without_special_parsing() { compare_all(false); }

    void decode_inverts_encode() {
        if (!load_reference()) {
            QFAIL(qPrintable("reference data " + reference_path() +
                             " is missing or empty; generate it with tests/reference/make_reference.py"));
        }
        int failures = 0;
        for (const Case& c : cases_) {
            const std::string plain = tok_->decode(tok_->encode(c.text, false, false), false);
            const std::string special = tok_->decode(tok_->encode(c.text, false, true), true);
            if (plain == c.text && special == c.text) continue;
            ++failures;
            qWarning() << "round trip failed for" << QString::fromStdString(c.text);
        }
        QCOMPARE(failures, 0);
    }

    void encoding_a_few_kilobytes_takes_milliseconds() {
        if (!load_reference()) {
            QFAIL(qPrintable("reference data " + reference_path() +
                             " is missing or empty; generate it with tests/reference/make_reference.py"));
        }
        std::string text;
        for (const Case& c : cases_) text += c.text + "\n";
        while (text.size() < 8192) text += text;
        QElapsedTimer timer;
        timer.start();
        const Ids ids = tok_->encode(text, false, true);
        const double ms = double(timer.nsecsElapsed()) / 1e6;
        qInfo("encoded %zu bytes into %zu tokens in %.2f ms", text.size(), ids.size(), ms);
        QVERIFY2(ms < 200.0, "tokenizing a few KB should take milliseconds");
    }
};

QTEST_GUILESS_MAIN(TestTokenizerParity)
#include "test_tokenizer_parity.moc"
