// whitebox-cli as a user runs it: the JSON contracts of info, tokenize, generate and bench on the real
// default model, seeded reproducibility, and bad input (unknown flags, missing or truncated files, an
// over-long prompt) ending with a non-zero exit and exactly one line on stderr.
#include <QCryptographicHash>
#include <QMap>
#include <QJsonArray>
#include <QJsonDocument>
#include <QFile>
#include <QDir>
#include <QFileInfo>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <functional>

#include "chat/jinja/json.h"
#include "test_paths.h"

namespace {

// Greedy decoding of SmolLM2 repeats this forever without DRY.
const QString kLoopPrompt = QStringLiteral("a whispered oath, a whispered oath, a whispered oath, a whispered oath,");

struct Run {
    int exit_code = -1;
    QByteArray out;
    QByteArray err;
};

Run run_cli(const QStringList& args) {
    QProcess p;
    p.start(WB_CLI_PATH, args);
    if (!p.waitForFinished(300000)) qFatal("whitebox-cli did not finish: %s", qPrintable(args.join(' ')));
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(), p.readAllStandardError()};
}

QJsonObject json_of(const Run& r) {
    QJsonParseError e;
    const QJsonDocument d = QJsonDocument::fromJson(r.out, &e);
    if (e.error != QJsonParseError::NoError) qFatal("not JSON (%s): %s", qPrintable(e.errorString()), r.out.constData());
    return d.object();
}

QString model() { return QString::fromStdString(wb_test::default_model()); }

QString templates_dir() { return QString::fromStdString(wb_test::reference_dir()) + "/templates"; }

// tests/reference/templates/expected.json: what Python's Jinja2 renders (make_template_reference.py).
const QJsonObject& corpus() {
    static const QJsonObject c = [] {
        QFile f(templates_dir() + "/expected.json");
        if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(f.fileName()));
        return QJsonDocument::fromJson(f.readAll()).object();
    }();
    return c;
}

QJsonArray corpus_messages(const QString& set) { return corpus()["message_sets"].toObject()[set].toObject()["messages"].toArray(); }

// A message set's "messages" or "tools" as JSON text in the file's key order (QJsonObject sorts keys,
// and templates print dicts in insertion order, as Python does).
QByteArray corpus_json(const QString& set, const char* key) {
    static const wb::jinja::Value c = [] {
        QFile f(templates_dir() + "/expected.json");
        if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(f.fileName()));
        return wb::jinja::parse_json(f.readAll().toStdString());
    }();
    const wb::jinja::Value* v = c.dict().find("message_sets")->dict().find(set.toStdString())->dict().find(key);
    return v ? QByteArray::fromStdString(wb::jinja::to_json(*v)) : QByteArray();
}

QString corpus_output(const QString& tmpl, const QString& set, bool add_generation_prompt) {
    for (const auto& cv : corpus()["cases"].toArray()) {
        const QJsonObject c = cv.toObject();
        if (c["template"].toString() == tmpl && c["set"].toString() == set &&
            c["add_generation_prompt"].toBool() == add_generation_prompt)
            return c["output"].toString();
    }
    qFatal("no case %s / %s in expected.json", qPrintable(tmpl), qPrintable(set));
}

QString write_file(const QTemporaryDir& dir, const QString& name, const QByteArray& bytes) {
    QFile f(dir.filePath(name));
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size()) qFatal("cannot write %s", qPrintable(f.fileName()));
    return f.fileName();
}

// The perplexity references' text (make_perplexity_reference.py's perplexity_text): the corpus's
// teacher-forced texts joined by blank lines, twice, written to `path`.
bool write_perplexity_text(const QString& path) {
    QFile corpus(QString::fromStdString(wb_test::reference_dir()) + "/corpus/teacher_forced_texts.json");
    if (!corpus.open(QIODevice::ReadOnly)) return false;
    QStringList docs;
    for (const auto& d : QJsonDocument::fromJson(corpus.readAll()).array()) docs << d.toObject()["text"].toString();
    QFile out(path);
    return out.open(QIODevice::WriteOnly) && out.write((docs.join("\n\n") + docs.join("\n\n")).toUtf8()) > 0;
}

}  // namespace

class TestCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        if (!std::ifstream(wb_test::default_model()).good())
            QFAIL("default model missing: run scripts/fetch-models.sh");
    }

    void versionNamesVersionAndCommit() {
        const Run r = run_cli({"--version"});
        QCOMPARE(r.exit_code, 0);
        QVERIFY(r.out.startsWith("whitebox-cli "));
        QVERIFY(r.out.contains("commit"));
    }

    void badInputGivesOneLine_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("needle");
        QTest::newRow("no command") << QStringList{} << "no command";
        QTest::newRow("unknown command") << QStringList{"frobnicate"} << "unknown command";
        QTest::newRow("unknown flag") << QStringList{"generate", "-p", "x", "--bogus"} << "unknown option";
        QTest::newRow("missing prompt") << QStringList{"generate", "-m", model()} << "needs a prompt";
        QTest::newRow("bad number") << QStringList{"generate", "-p", "x", "--temp", "hot"} << "--temp expects";
        QTest::newRow("missing model") << QStringList{"info", "-m", "/nonexistent/model.gguf"} << "not found";
        QTest::newRow("bad backend") << QStringList{"generate", "-m", model(), "-p", "x", "--backend", "tpu"} << "unknown backend";
        QTest::newRow("over-long prompt")
            << QStringList{"generate", "-m", model(), "--backend", "cpu", "--ctx", "16", "-p",
                           QString("one two three four five six seven eight nine ten ").repeated(4)}
            << "context";
        QTest::newRow("lens without json") << QStringList{"generate", "-p", "x", "--logit-lens", "3"}
                                           << "--logit-lens adds to generate --json";
        QTest::newRow("head stats off generate") << QStringList{"info", "--json", "--head-stats"}
                                                 << "--head-stats adds to generate --json";
        QTest::newRow("lens of 0") << QStringList{"generate", "-p", "x", "--json", "--logit-lens", "0"} << "--logit-lens";
        QTest::newRow("mirostat 3") << QStringList{"generate", "-p", "x", "--mirostat", "3"} << "--mirostat expects";
        QTest::newRow("bad logit bias") << QStringList{"generate", "-p", "x", "--logit-bias", "12x"} << "--logit-bias expects";
        QTest::newRow("unknown sampler") << QStringList{"generate", "-p", "x", "--samplers", "top_k;bogus"}
                                         << "unknown sampler 'bogus'";
        QTest::newRow("dry base below 1") << QStringList{"generate", "-p", "x", "--dry-base", "0.5"} << "--dry-base expects";
        QTest::newRow("bad context policy") << QStringList{"generate", "-p", "x", "--context-policy", "rotate"}
                                            << "unknown context policy 'rotate' (stop, shift or trim)";
        QTest::newRow("trace attention without export") << QStringList{"generate", "-p", "x", "--trace-attention"}
                                                        << "--trace-attention adds the attention rows to --export-trace's file";
        QTest::newRow("bad keep") << QStringList{"generate", "-p", "x", "--keep", "-2"} << "--keep expects";
        QTest::newRow("bad cache type k") << QStringList{"generate", "-p", "x", "--cache-type-k", "q5_1"}
                                          << "--cache-type-k: unknown KV cache type 'q5_1' (expected f16|q8_0|q4_0)";
        QTest::newRow("bad cache type v") << QStringList{"bench", "--cache-type-v", "Q8_0"}
                                          << "--cache-type-v: unknown KV cache type 'Q8_0'";
        QTest::newRow("cache type without value") << QStringList{"perplexity", "-f", "x", "--cache-type-k"}
                                                  << "--cache-type-k needs a value";
        QTest::newRow("malformed grammar") << QStringList{"generate", "-p", "x", "--grammar", "root ::= \"a\" item"}
                                           << "--grammar: grammar line 1, column 14: undefined rule 'item'";
        QTest::newRow("missing grammar file") << QStringList{"generate", "-p", "x", "--grammar-file", "/nonexistent.gbnf"}
                                              << "--grammar-file: cannot read '/nonexistent.gbnf'";
        QTest::newRow("unsupported schema") << QStringList{"chat", "--json-schema", "{\"type\":\"string\",\"pattern\":\"a+\"}"}
                                            << "--json-schema: JSON Schema at #: the keyword 'pattern' is not supported";
        QTest::newRow("schema not json") << QStringList{"generate", "-p", "x", "--json-schema", "{\"type\": }"}
                                         << "--json-schema: the JSON Schema is not valid JSON";
        QTest::newRow("schema file named true") << QStringList{"generate", "-p", "x", "--json-schema", "true.json"}
                                                << "--json-schema: cannot read 'true.json'";
        QTest::newRow("grammar for serve") << QStringList{"serve", "--grammar", "root ::= \"a\""}
                                           << "--grammar is for generate and chat; serve does not take a grammar";
        QTest::newRow("schema for bench") << QStringList{"bench", "--json-schema", "{}"}
                                          << "--json-schema is for generate and chat; bench does not take a grammar";
        QTest::newRow("grammar and schema") << QStringList{"generate", "-p", "x", "--grammar", "root ::= \"a\"",
                                                           "--json-schema", "{}"}
                                            << "--json-schema and --grammar were both given";
        QTest::newRow("grammar no token can begin")  // (a piece that starts with NUL counts as no text)
            << QStringList{"generate", "-m", model(), "-p", "x", "--backend", "cpu", "--grammar", "root ::= \"\\x00\" [a-z]+"}
            << "error: the grammar cannot begin the reply: it must start with \"\\x00\", and no token of the model's vocabulary";
        QTest::newRow("logit bias beyond vocab")
            << QStringList{"generate", "-m", model(), "-p", "x", "--backend", "cpu", "--logit-bias", "99999999+1"}
            << "beyond the vocabulary";
    }
    void badInputGivesOneLine() {
        QFETCH(QStringList, args);
        QFETCH(QString, needle);
        const Run r = run_cli(args);
        QVERIFY2(r.exit_code != 0 && r.exit_code != -1, r.err.constData());
        const QList<QByteArray> lines = r.err.trimmed().split('\n');
        QCOMPARE(lines.size(), 1);
        QVERIFY2(lines[0].contains(needle.toUtf8()), lines[0].constData());
    }

    // A grammar that can never finish, from a file, and a schema no finite value satisfies are refused
    // before any generation: one line naming the rule (or the place in the schema), exit 1, no reply.
    void endlessGrammarIsOneLineBeforeLoading() {
        QTemporaryDir dir;
        const QString gbnf = write_file(dir, "endless.gbnf", "root ::= a\na ::= \"x\" a\n");
        const QString schema = write_file(dir, "endless.json",
                                          "{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#\"}},"
                                          "\"required\":[\"next\"]}");  // (moc misreads a raw string holding "#")
        const QList<std::pair<QStringList, QByteArray>> cases = {
            {{"generate", "-m", model(), "-p", "x", "--grammar-file", gbnf},
             "--grammar-file: grammar line 2, column 1: rule 'a' can never finish"},
            {{"chat", "-m", model(), "--json-schema", schema},
             "--json-schema: JSON Schema at #: no finite JSON value is valid against it"},
        };
        for (const auto& [args, needle] : cases) {
            const Run r = run_cli(args);
            QCOMPARE(r.exit_code, 1);
            const QList<QByteArray> lines = r.err.trimmed().split('\n');
            QCOMPARE(lines.size(), 1);
            QVERIFY2(lines[0].contains(needle), lines[0].constData());
            QVERIFY2(r.out.isEmpty(), r.out.constData());
        }
    }

    // The flags end to end on the model: --json-schema FILE holds the reply to a JSON document of the
    // schema (parsed and checked here), --grammar-file to the GBNF's language, each ended by EOS.
    void schemaAndGrammarFileHoldTheReply() {
        QTemporaryDir dir;
        const QString schema = write_file(dir, "person.json",
                                          R"({"type": "object", "properties": {"name": {"type": "string", )"
                                          R"("minLength": 1, "maxLength": 12}, "age": {"type": "integer"}}, )"
                                          R"("required": ["name", "age"]})");
        const QString gbnf = write_file(dir, "answer.gbnf", "root ::= (\"yes\" | \"no\") \".\"\n");
        const QStringList base{"generate", "-m", model(), "--chat", "-n", "64", "--temp", "0", "--backend", "cpu", "--json"};
        const Run r = run_cli(base + QStringList{"-p", "Describe a person as JSON.", "--json-schema", schema});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QJsonObject o = json_of(r);
        QCOMPARE(o["stop_reason"].toString(), QString("eos"));
        QJsonParseError error;
        const QJsonDocument doc = QJsonDocument::fromJson(o["text"].toString().toUtf8(), &error);
        QVERIFY2(error.error == QJsonParseError::NoError && doc.isObject(), qPrintable(o["text"].toString()));
        const QJsonObject person = doc.object();
        QCOMPARE(person.keys(), (QStringList{"age", "name"}));
        const QString name = person["name"].toString();
        QVERIFY2(person["name"].isString() && !name.isEmpty() && name.size() <= 12, qPrintable(o["text"].toString()));
        QVERIFY2(person["age"].isDouble() && person["age"].toDouble() == std::floor(person["age"].toDouble()),
                 qPrintable(o["text"].toString()));
        const Run yes_no = run_cli(base + QStringList{"-p", "Is the sky blue?", "--grammar-file", gbnf});
        QVERIFY2(yes_no.exit_code == 0, yes_no.err.constData());
        const QJsonObject a = json_of(yes_no);
        QCOMPARE(a["stop_reason"].toString(), QString("eos"));
        QVERIFY2(a["text"].toString() == "yes." || a["text"].toString() == "no.", qPrintable(a["text"].toString()));
    }

    // --context-policy: stop ends a reply at the full context; shift goes on past it, dropping tokens.
    void contextPolicyShiftGoesOnPastTheContext() {
        const QStringList common{"generate", "-m", model(), "--backend", "cpu", "--ctx", "64", "-n", "120",
                                 "--temp", "0", "--ignore-eos", "-p", "Once upon a time"};
        const Run stop = run_cli(common);
        QVERIFY2(stop.exit_code == 0, stop.err.constData());
        QVERIFY2(stop.err.contains("stop: context_full"), stop.err.constData());
        const Run shift = run_cli(common + QStringList{"--context-policy", "shift", "--keep", "4"});
        QVERIFY2(shift.exit_code == 0, shift.err.constData());
        QVERIFY2(shift.err.contains("120 generated") && shift.err.contains("stop: max_tokens"), shift.err.constData());
        QVERIFY2(shift.err.contains("tokens dropped after the first 4"), shift.err.constData());
    }

    // chat on the local engine (the loop of app/cli/chat_repl, shared with --remote; test_chat_repl
    // checks what each turn is sent): a greedy turn, /reset, the same turn again with the same reply,
    // and /exit ending the chat with a line left unread.
    void chatTurnsResetAndExit() {
        QProcess p;
        p.start(WB_CLI_PATH, {"chat", "-m", model(), "--backend", "cpu", "--temp", "0", "-n", "12", "--system", "Be brief."});
        p.write("Name a color.\n/reset\nName a color.\n/exit\nName a fruit.\n");
        p.closeWriteChannel();
        QVERIFY(p.waitForFinished(300000));
        QCOMPARE(p.exitCode(), 0);
        const QString out = QString::fromUtf8(p.readAllStandardOutput());
        const QStringList turns = out.split("\n> ");
        // "", reply 1, "(conversation cleared)", reply 2, "" (the prompt /exit answered), nothing more.
        QVERIFY2(turns.size() == 5 && turns[2] == "(conversation cleared)\n" && turns[4] == "\n", qPrintable(out));
        QVERIFY2(!turns[1].trimmed().isEmpty() && turns[1] == turns[3], qPrintable(out));
    }

    void truncatedModelIsRejectedClearly() {
        QTemporaryDir dir;
        const QString path = dir.filePath("truncated.gguf");
        std::ifstream in(wb_test::default_model(), std::ios::binary);
        std::vector<char> head(1 << 20);
        in.read(head.data(), std::streamsize(head.size()));
        std::ofstream(path.toStdString(), std::ios::binary).write(head.data(), std::streamsize(head.size()));
        const Run r = run_cli({"generate", "-m", path, "-p", "hi", "--backend", "cpu"});
        QCOMPARE(r.exit_code, 1);
        QCOMPARE(r.err.trimmed().split('\n').size(), 1);
        QVERIFY2(r.err.contains("truncated"), r.err.constData());
    }

    void infoJsonDescribesTheFile() {
        const Run r = run_cli({"info", "-m", model(), "--json"});
        QCOMPARE(r.exit_code, 0);
        const QJsonObject o = json_of(r);
        QCOMPARE(o["metadata"].toObject()["general.architecture"].toString(), QString("llama"));
        QCOMPARE(o["tensors"].toArray().size(), 272);
        QVERIFY(o["memory"].toObject()["weights_bytes"].toDouble() > 50e6);
        QCOMPARE(o["memory"].toObject()["kv_bytes_per_token"].toInt(), 2 * 30 * 192 * 2);
        QCOMPARE(o["memory"].toObject()["kv_type_k"].toString(), QString("f16"));
    }

    // info's memory estimate in the chosen cache types: 30 layers x 3 kv heads x (a head's K row + V
    // row), 64 values a row: 128 bytes in f16, 2 blocks of 34 in q8_0, 2 of 18 in q4_0.
    void infoKvBytesFollowTheCacheTypes() {
        const Run r = run_cli({"info", "-m", model(), "--json", "--cache-type-k", "q8_0", "--cache-type-v", "q4_0"});
        QCOMPARE(r.exit_code, 0);
        const QJsonObject m = json_of(r)["memory"].toObject();
        QCOMPARE(m["kv_bytes_per_token"].toInt(), 30 * 3 * (68 + 36));
        QCOMPARE(m["kv_type_k"].toString(), QString("q8_0"));
        QCOMPARE(m["kv_type_v"].toString(), QString("q4_0"));
        const Run text = run_cli({"info", "-m", model(), "--cache-type-k", "q4_0", "--cache-type-v", "q4_0"});
        QVERIFY2(text.out.contains("KV cache         6.3 KiB per token") && text.out.contains("(K q4_0, V q4_0)"),
                 text.out.constData());
    }

    // generate runs with a quantized cache (greedy, a few tokens; the arithmetic is proven against
    // llama.cpp by test_kv_quant_parity).
    void generateWithAQuantizedCache() {
        const Run r = run_cli({"generate", "-m", model(), "--backend", "cpu", "-p", "The capital of France is", "-n", "4",
                               "--temp", "0", "--cache-type-k", "q8_0", "--cache-type-v", "q4_0"});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        QVERIFY2(!r.out.trimmed().isEmpty(), r.err.constData());
    }

    // A file whose header parses but that cannot run is described, with the reason (here a tensor
    // nothing reads, found only when the weights are bound), and refused by generate in one line.
    // Each defect `generate` refuses, made by make_random_gguf: `info` still shows the file and gives
    // the same one-line reason as `generate` (issue 18: it used to stay silent on these). A row's
    // options come after `--vocab 1024`, so a --shape in them sets its own vocabulary.
    void infoSaysWhyEachDefectiveFileCannotRun_data() {
        QTest::addColumn<QStringList>("defect");
        QTest::addColumn<QString>("why");
        QTest::newRow("tensor the architecture does not use")
            << QStringList{"--shape", "qwen2-tiny", "--extra-tensor", "blk.1.attn_qkv.weight"}
            << "model file has tensor 'blk.1.attn_qkv.weight', which the qwen2 architecture does not use here (not supported)";
        QTest::newRow("unknown architecture")
            << QStringList{"--set-string", "general.architecture=falcon"}
            << "unsupported model architecture 'falcon' (supported: llama, qwen2, qwen3, phi3, gemma2, gemma3)";
        QTest::newRow("missing tensor") << QStringList{"--omit-tensor", "blk.0.attn_q.weight"}
                                        << "model file is missing tensor 'blk.0.attn_q.weight'";
        QTest::newRow("unknown tokenizer") << QStringList{"--set-string", "tokenizer.ggml.model=wordpiece"}
                                           << "unsupported tokenizer model 'wordpiece' (tokenizer.ggml.model); supported: gpt2, llama";
        // Another splitter would give other tokens without a word (issue 13: it used to run with GPT-2's).
        QTest::newRow("unknown pre-tokenizer")
            << QStringList{"--set-string", "tokenizer.ggml.pre=viking"}
            << "unsupported pre-tokenizer 'viking' (tokenizer.ggml.pre); supported: default, gpt-2, phi-2, mpt, olmo, "
               "smollm, starcoder, refact, command-r, codeshell, exaone, minerva-7b, llama-bpe, llama3, llama-v3, "
               "falcon3, pixtral, qwen2, deepseek-r1-qwen, megrez, kormo, f2llmv2, tekken";
        QTest::newRow("BOS out of range") << QStringList{"--set-u32", "tokenizer.ggml.bos_token_id=999999"}
                                          << "tokenizer BOS id 999999 is outside the vocabulary of 1024 tokens";
        QTest::newRow("block count wrong") << QStringList{"--set-u32", "llama.block_count=7"}
                                           << "model file is missing tensor 'blk.2.attn_norm.weight'";
        QTest::newRow("vocabulary shorter than the embedding")
            << QStringList{"--vocab-tokens", "512"} << "tensor 'token_embd.weight' has shape [256, 1024], expected [256, 512]";
    }

    void infoSaysWhyEachDefectiveFileCannotRun() {
        QFETCH(QStringList, defect);
        QFETCH(QString, why);
        QTemporaryDir dir;
        const QString path = dir.filePath("defect.gguf");
        QProcess make;
        make.start(QStringLiteral(WB_MAKE_RANDOM_GGUF), QStringList{path, "--vocab", "1024"} + defect);
        QVERIFY(make.waitForFinished(60000) && make.exitCode() == 0);
        const Run json = run_cli({"info", "-m", path, "--json"});
        QCOMPARE(json.exit_code, 0);
        QCOMPARE(json_of(json)["unsupported"].toString(), why);
        const Run text = run_cli({"info", "-m", path});
        QCOMPARE(text.exit_code, 0);
        QVERIFY2(text.out.contains(("this file cannot be run: " + why).toUtf8()), text.out.constData());
        const Run gen = run_cli({"generate", "-m", path, "-p", "hi", "--backend", "cpu"});
        QCOMPARE(gen.exit_code, 1);
        QCOMPARE(gen.err.trimmed().split('\n').size(), 1);
        QVERIFY2(gen.err.contains(why.toUtf8()), gen.err.constData());
    }

    void tokenizeJson() {
        const Run r = run_cli({"tokenize", "-m", model(), "-p", "Hello, we can use", "--json"});
        QCOMPARE(r.exit_code, 0);
        const QJsonObject o = json_of(r);
        QCOMPARE(o["tokens"].toArray(), (QJsonArray{19556, 28, 392, 416, 722}));
        QCOMPARE(o["pieces"].toArray().first().toString(), QString("Hello"));
    }

    // Greedy on a prompt that loops: the most frequent token of the reply, banned with -inf by id and
    // by text, never appears, and the reply is still produced.
    void logitBiasBansAToken() {
        const QStringList base{"generate", "-m", model(), "-p", kLoopPrompt, "-n", "24", "--temp", "0", "--backend", "cpu", "--json"};
        const QJsonArray free_tokens = json_of(run_cli(base))["tokens"].toArray();
        QVERIFY(free_tokens.size() >= 20);
        const int banned = free_tokens[0].toInt();
        QVERIFY(std::count(free_tokens.begin(), free_tokens.end(), QJsonValue(banned)) >= 3);  // it recurs
        const Run by_id = run_cli(base + QStringList{"--logit-bias", QString("%1-inf").arg(banned)});
        QCOMPARE(by_id.exit_code, 0);
        const QJsonArray tokens = json_of(by_id)["tokens"].toArray();
        QVERIFY(tokens.size() >= 20);
        QVERIFY(!tokens.contains(QJsonValue(banned)));
        const QString piece = json_of(run_cli(base))["steps"].toArray()[0].toObject()["piece"].toString();
        const Run by_text = run_cli(base + QStringList{"--logit-bias", "'" + piece + "'-inf"});
        QCOMPARE(by_text.exit_code, 0);
        QVERIFY(!json_of(by_text)["tokens"].toArray().contains(QJsonValue(banned)));
        // A bias with an exponent belongs to the id before its first sign (not the text "ID-1e").
        const Run by_exponent = run_cli(base + QStringList{"--logit-bias", QString("%1-1e+30").arg(banned)});
        QCOMPARE(by_exponent.exit_code, 0);
        QVERIFY(!json_of(by_exponent)["tokens"].toArray().contains(QJsonValue(banned)));
    }

    // Each of llama.cpp's sampler flags sets the setting it names, as the reply's exported trace
    // records the settings it ran with (the other tests run a few of them for their effect).
    void everySamplerFlagReachesItsSetting() {
        QTemporaryDir dir;
        const QString grammar = write_file(dir, "g.gbnf", "root ::= [a-z ]+\n");
        const QString trace = dir.filePath("trace.json");
        const Run r = run_cli({"generate", "-m", model(), "-p", "Hi", "-n", "2", "--backend", "cpu", "--seed", "3",
                               "--dry-multiplier", "0.6", "--dry-base", "1.5", "--dry-allowed-length", "3",
                               "--dry-penalty-last-n", "32", "--dry-sequence-breaker", "\\n", "--dry-sequence-breaker", ";",
                               "--xtc-probability", "0.25", "--xtc-threshold", "0.15", "--mirostat", "2",
                               "--mirostat-lr", "0.3", "--mirostat-ent", "4.5", "--top-nsigma", "1.5",
                               "--logit-bias", "7+2.5", "--samplers", "top-k;temp", "--grammar-file", grammar,
                               "--export-trace", trace});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        QFile f(trace);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject p = QJsonDocument::fromJson(f.readAll()).object()["params"].toObject();
        auto number = [&](const char* key) { return float(p[key].toDouble()); };
        QCOMPARE(number("dry_multiplier"), 0.6f);
        QCOMPARE(number("dry_base"), 1.5f);
        QCOMPARE(p["dry_allowed_length"].toInt(), 3);
        QCOMPARE(p["dry_penalty_last_n"].toInt(), 32);
        QCOMPARE(p["dry_sequence_breakers"].toArray(), (QJsonArray{"\n", ";"}));  // the first replaces the defaults
        QCOMPARE(number("xtc_probability"), 0.25f);
        QCOMPARE(number("xtc_threshold"), 0.15f);
        QCOMPARE(p["mirostat"].toInt(), 2);
        QCOMPARE(number("mirostat_eta"), 0.3f);  // llama.cpp's --mirostat-lr is eta
        QCOMPARE(number("mirostat_tau"), 4.5f);  // and --mirostat-ent tau
        QCOMPARE(number("top_n_sigma"), 1.5f);
        QCOMPARE(p["logit_bias"].toArray().size(), 1);
        QCOMPARE(p["logit_bias"].toArray()[0].toObject()["token"].toInt(), 7);
        QCOMPARE(float(p["logit_bias"].toArray()[0].toObject()["bias"].toDouble()), 2.5f);
        QCOMPARE(p["samplers"].toArray(), (QJsonArray{"top_k", "temperature"}));  // aliases resolved
        QCOMPARE(p["grammar"].toString(), QString("root ::= [a-z ]+\n"));
    }

    // DRY on the same loop: repeated 4-grams of the greedy reply drop by at least a third (53 -> 29
    // on the CPU when this was written).
    void dryReducesRepeatedNgrams() {
        const QStringList base{"generate", "-m", model(), "-p", kLoopPrompt, "-n", "60", "--temp", "0", "--backend", "cpu", "--json"};
        auto repeated_4grams = [](const QJsonArray& t) {
            QSet<QString> seen;
            int repeats = 0;
            for (qsizetype i = 0; i + 4 <= t.size(); ++i) {
                const QString key = QString("%1 %2 %3 %4").arg(t[i].toInt()).arg(t[i + 1].toInt()).arg(t[i + 2].toInt()).arg(t[i + 3].toInt());
                repeats += seen.contains(key);
                seen.insert(key);
            }
            return repeats;
        };
        const int without = repeated_4grams(json_of(run_cli(base))["tokens"].toArray());
        const Run dry = run_cli(base + QStringList{"--dry-multiplier", "1.0"});
        QCOMPARE(dry.exit_code, 0);
        const int with = repeated_4grams(json_of(dry)["tokens"].toArray());
        QVERIFY2(without >= 30, qPrintable(QString::number(without)));  // the prompt does loop
        QVERIFY2(with * 3 <= without * 2, qPrintable(QString("%1 repeated 4-grams with DRY, %2 without").arg(with).arg(without)));
    }

    void generateJsonContract() {
        const Run r = run_cli({"generate", "-m", model(), "-p", "The capital of France is", "-n", "6", "--temp", "0",
                               "--backend", "cpu", "--json"});
        QCOMPARE(r.exit_code, 0);
        const QJsonObject o = json_of(r);
        QVERIFY(o.contains("text") && o.contains("tokens") && o.contains("timings"));
        QCOMPARE(o["prompt_tokens"].toInt(), 5);
        QVERIFY(o["tokens"].toArray().size() <= 6);
        const QString reason = o["stop_reason"].toString();
        QVERIFY2(reason == "max_tokens" || reason == "eos", qPrintable(reason));
        QVERIFY(o["timings"].toObject()["prefill_ms"].toDouble() > 0);
    }

    void generateJsonStepsCarryCandidates() {
        const Run r = run_cli({"generate", "-m", model(), "-p", "The capital of France is", "-n", "3", "--seed", "5",
                               "--top-candidates", "5", "--backend", "cpu", "--json"});
        QCOMPARE(r.exit_code, 0);
        const QJsonArray steps = json_of(r)["steps"].toArray();
        QVERIFY(!steps.isEmpty());
        for (const auto& sv : steps) {
            const QJsonObject st = sv.toObject();
            QVERIFY(st.contains("token") && st.contains("piece") && st.contains("p") && st.contains("entropy"));
            const QJsonArray cands = st["candidates"].toArray();
            QCOMPARE(cands.size(), 5);
            double final_sum = 0.0;
            for (const auto& cv : cands) {
                const QJsonObject c = cv.toObject();
                QVERIFY(c.contains("id") && c.contains("piece") && c.contains("p_raw"));
                final_sum += c["p_final"].toDouble();
            }
            QVERIFY(final_sum <= 1.0 + 1e-5);
        }
    }

    // --logit-lens K: every step has one entry per layer; the last layer's is the raw distribution
    // the step's candidates come from (the same numbers).
    void generateJsonLogitLens() {
        const Run r = run_cli({"generate", "-m", model(), "-p", "The capital of France is", "-n", "3", "--temp", "0",
                               "--top-candidates", "4", "--logit-lens", "4", "--backend", "cpu", "--json"});
        QCOMPARE(r.exit_code, 0);
        const QJsonArray steps = json_of(r)["steps"].toArray();
        QCOMPARE(steps.size(), 3);
        for (const auto& sv : steps) {
            const QJsonObject st = sv.toObject();
            const QJsonArray lens = st["lens"].toArray();
            QCOMPARE(lens.size(), 30);  // SmolLM2-135M's layers
            for (int l = 0; l < lens.size(); ++l) {
                const QJsonObject e = lens[l].toObject();
                QCOMPARE(e["layer"].toInt(), l);
                QCOMPARE(e["top"].toArray().size(), 4);
                QVERIFY(e["p_drawn"].toDouble() >= 0.0 && e["p_drawn"].toDouble() <= 1.0);
                QVERIFY(e["entropy"].toDouble() >= 0.0);
            }
            const QJsonObject last = lens.last().toObject();
            const QJsonArray cands = st["candidates"].toArray();
            for (int i = 0; i < 4; ++i) {
                const QJsonArray pair = last["top"].toArray()[i].toArray();
                QCOMPARE(pair[0].toInt(), cands[i].toObject()["id"].toInt());
                QCOMPARE(pair[1].toDouble(), cands[i].toObject()["p_raw"].toDouble());
            }
            QCOMPARE(last["entropy"].toDouble(), st["entropy"].toDouble());
            QCOMPARE(last["p_drawn"].toDouble(), cands[0].toObject()["p_raw"].toDouble());  // greedy: the best
        }
        // Without the flag there is no lens.
        const Run plain = run_cli({"generate", "-m", model(), "-p", "Hi", "-n", "1", "--backend", "cpu", "--json"});
        QVERIFY(!json_of(plain)["steps"].toArray()[0].toObject().contains("lens"));
    }

    // --head-stats: per step, one entry per captured head, equal to the statistics recomputed here
    // from the probabilities --dump-attention wrote for the row that drew the step's token.
    void generateJsonHeadStatsMatchTheDumpedAttention() {
        QTemporaryDir dir;
        const QString path = dir.filePath("att.json");
        const Run r = run_cli({"generate", "-m", model(), "-p", "Hello there my good friend", "-n", "3", "--temp", "0",
                               "--backend", "cpu", "--json", "--head-stats", "--dump-attention", path, "--layers",
                               "0,17"});
        QCOMPARE(r.exit_code, 0);
        const QJsonArray steps = json_of(r)["steps"].toArray();
        QCOMPARE(steps.size(), 3);
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonArray events = QJsonDocument::fromJson(f.readAll()).object()["events"].toArray();
        QCOMPARE(events.size(), 2 * 3);  // the prompt and 2 fed-back tokens, 2 layers each
        for (int s = 0; s < steps.size(); ++s) {
            const QJsonArray heads = steps[s].toObject()["heads"].toArray();
            QCOMPARE(heads.size(), 2 * 9);
            for (int i = 0; i < heads.size(); ++i) {
                const QJsonObject h = heads[i].toObject();
                const QJsonObject ev = events[2 * s + i / 9].toObject();
                QCOMPARE(h["layer"].toInt(), ev["layer"].toInt());
                QCOMPARE(h["head"].toInt(), i % 9);
                QCOMPARE(h["kv_head"].toInt(), (i % 9) / 3);  // 9 query heads over 3 KV heads
                const QJsonArray rows = ev["probs"].toArray()[i % 9].toArray();
                const QJsonArray row = rows.last().toArray();  // the row whose logits drew the token
                const int q = ev["query_pos0"].toInt() + ev["n_queries"].toInt() - 1;
                double entropy = 0, distance = 0;
                for (int k = 0; k < row.size(); ++k) {
                    const double p = row[k].toDouble();
                    if (p > 0) entropy -= p * std::log(p);
                    distance += p * (q - k);
                }
                QVERIFY2(std::fabs(h["entropy"].toDouble() - entropy) < 1e-5, qPrintable(QString::number(entropy)));
                QVERIFY(std::fabs(h["distance"].toDouble() - distance) < 1e-4);
                QCOMPARE(h["sink"].toDouble(), row[0].toDouble());
                QCOMPARE(h["prev"].toDouble(), q > 0 ? row[q - 1].toDouble() : 0.0);
                QCOMPARE(h["in_window"].toDouble(), 1.0);  // SmolLM2 has no sliding window
            }
        }
    }

    void dumpAttentionWritesTheDocumentedFormat() {
        QTemporaryDir dir;
        const QString path = dir.filePath("att.json");
        const Run r = run_cli({"generate", "-m", model(), "-p", "Hello there friend", "-n", "3", "--temp", "0",
                               "--backend", "cpu", "--dump-attention", path, "--layers", "0,29", "--heads", "1,4"});
        QCOMPARE(r.exit_code, 0);
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject o = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(o["format"].toString(), QString("whitebox-attention-1"));
        const QJsonArray tokens = o["tokens"].toArray();
        QCOMPARE(o["pieces"].toArray().size(), tokens.size());
        const QJsonArray events = o["events"].toArray();
        QCOMPARE(events.size(), 2 * 3);  // prompt + 2 fed-back tokens, 2 layers each
        const QJsonObject first = events[0].toObject();
        QCOMPARE(first["heads"].toArray(), (QJsonArray{1, 4}));
        QCOMPARE(first["kv_head_of"].toArray(), (QJsonArray{0, 1}));
        QVERIFY(first["prefill"].toBool());
        const QJsonArray rows = first["probs"].toArray()[0].toArray();
        QCOMPARE(rows.size(), first["n_queries"].toInt());
        QCOMPARE(rows[0].toArray()[0].toDouble(), 1.0);  // the first token can only attend to itself
        QVERIFY(!events.last().toObject()["prefill"].toBool());
    }

    void exportedTraceReplaysAndAnEditedOneDiffersWhereEdited() {
        QTemporaryDir dir;
        const QString path = dir.filePath("trace.json");
        // A random seed: the replay must take the one the file says was used (and the file's
        // ignore_eos, or the replay could end early).
        const Run first = run_cli({"generate", "-m", model(), "-p", "The capital of France is", "-n", "8",
                                   "--ignore-eos", "--backend", "cpu", "--json", "--export-trace", path});
        QCOMPARE(first.exit_code, 0);
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject trace = QJsonDocument::fromJson(f.readAll()).object();
        f.close();
        QCOMPARE(trace["format"].toString(), QString("whitebox-sampler-trace"));
        QCOMPARE(trace["model_sha256"].toString(), [] {
            QFile m(model());
            m.open(QIODevice::ReadOnly);
            return QString(QCryptographicHash::hash(m.readAll(), QCryptographicHash::Sha256).toHex());
        }());
        QCOMPARE(trace["seed_in_use"].toInteger(), json_of(first)["seed"].toInteger());
        const QJsonArray steps = trace["steps"].toArray();
        QCOMPARE(steps.size(), json_of(first)["tokens"].toArray().size());
        QVERIFY(!steps[0].toObject()["stages"].toArray().isEmpty());

        const Run replay = run_cli({"generate", "-m", model(), "--backend", "cpu", "--replay", path});
        QCOMPARE(replay.exit_code, 0);
        QCOMPARE(replay.out.trimmed(), QByteArray("replay: the same 8 tokens and sampler trace"));

        // Step 3 says another token was drawn: the replay must name that step and no stage. Edited as
        // text: QJsonDocument holds numbers as doubles and would round a 64-bit seed_in_use.
        const int drawn = steps[3].toObject()["token"].toInt();
        QByteArray text = [&] { QFile g(path); g.open(QIODevice::ReadOnly); return g.readAll(); }();
        qsizetype at = -1;
        for (int i = 0; i <= 3; ++i) at = text.indexOf("}],\"token\":", at + 1);  // a step's end: its stages, its token
        QVERIFY(at >= 0);
        const QByteArray old_token = "}],\"token\":" + QByteArray::number(drawn) + "}";
        QCOMPARE(text.mid(at, old_token.size()), old_token);
        text.replace(at, old_token.size(), "}],\"token\":" + QByteArray::number(drawn + 1) + "}");
        const QString edited = write_file(dir, "edited.json", text);
        const Run differs = run_cli({"generate", "-m", model(), "--backend", "cpu", "--replay", edited});
        QCOMPARE(differs.exit_code, 1);
        QCOMPARE(differs.out.trimmed(), QString("replay: differs at token 3: token %1 vs %2").arg(drawn + 1).arg(drawn).toUtf8());

        const Run bad = run_cli({"generate", "-m", model(), "--replay", write_file(dir, "bad.json", "{\"format\": 1}")});
        QCOMPARE(bad.exit_code, 1);
        QVERIFY2(bad.err.contains("bad.json: trace file: format must be a string, got number 1"), bad.err.constData());
        // Above the size limit: refused before it is read (a sparse file; nothing is written).
        const QString huge = dir.filePath("huge.json");
        {
            QFile h(huge);
            QVERIFY(h.open(QIODevice::WriteOnly) && h.resize(qint64(256) * 1024 * 1024 + 1));
        }
        const Run big = run_cli({"generate", "-m", model(), "--replay", huge});
        QCOMPARE(big.exit_code, 1);
        QVERIFY2(big.err.contains("huge.json: the trace file has 268435457 bytes, more than the 256 MiB a trace may have"),
                 big.err.constData());
        QFile::remove(huge);
        // Another model file: said as such, not as a difference in the numbers.
        const Run other = run_cli({"generate", "-m", QFileInfo(model()).dir().filePath("gemma-3-270m-Q4_K_M.gguf"), "--backend", "cpu",
                                   "--replay", path});
        QCOMPARE(other.exit_code, 1);
        QVERIFY2(other.out.startsWith("replay: the trace was made with another model file (SHA-256 " +
                                      trace["model_sha256"].toString().toUtf8()), other.out.constData());
        // A flag the file's settings would silently override is refused.
        QVERIFY(run_cli({"generate", "-m", model(), "--replay", path, "-p", "x"}).err.contains("-p cannot be used with it"));
        QVERIFY(run_cli({"generate", "-m", model(), "--replay", path, "--temp", "0"}).err.contains("--temp cannot be used"));
    }

    void traceWithManyTopCandidatesReplaysTheSame() {
        // --top-candidates 20 makes each stage record 20 candidates; a replay that recorded its default
        // 10 would report a difference at the first stage of the first token.
        QTemporaryDir dir;
        const QString path = dir.filePath("trace.json");
        // --ignore-eos: the reply is 6 tokens whatever the random seed draws (an EOS drawn early made it 2).
        QCOMPARE(run_cli({"generate", "-m", model(), "-p", "The capital of France is", "-n", "6", "--ignore-eos",
                          "--backend", "cpu", "--json", "--top-candidates", "20", "--export-trace", path}).exit_code, 0);
        const Run replay = run_cli({"generate", "-m", model(), "--backend", "cpu", "--replay", path});
        QCOMPARE(replay.exit_code, 0);
        QCOMPARE(replay.out.trimmed(), QByteArray("replay: the same 6 tokens and sampler trace"));
    }

    // --export-trace with --logit-lens and --head-stats: each step of the file carries the lens and the
    // head statistics --json printed (the same numbers, as floats), the file replays as the same reply
    // with every lens and head record recomputed bit for bit, a record altered by one value is named at
    // exactly its step and layer, and a replay refuses a file whose lens record is damaged, naming it.
    // Without the flags the file has neither.
    void traceCarriesTheLensAndHeadStatsJsonPrinted() {
        QTemporaryDir dir;
        const QString path = dir.filePath("trace.json");
        const Run r = run_cli({"generate", "-m", model(), "-p", "The capital of France is", "-n", "3", "--ignore-eos",
                               "--backend", "cpu", "--json", "--logit-lens", "3", "--head-stats", "--layers", "0,17",
                               "--export-trace", path});
        QCOMPARE(r.exit_code, 0);
        const QJsonArray printed = json_of(r)["steps"].toArray();
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QJsonObject file = QJsonDocument::fromJson(f.readAll()).object();
        f.close();
        const QJsonArray steps = file["steps"].toArray();
        QCOMPARE(steps.size(), 3);
        const auto same_floats = [](const QJsonValue& a, const QJsonValue& b) { return float(a.toDouble()) == float(b.toDouble()); };
        for (int s = 0; s < steps.size(); ++s) {
            const QJsonArray lens = steps[s].toObject()["lens"].toArray();
            const QJsonArray want = printed[s].toObject()["lens"].toArray();
            QCOMPARE(lens.size(), 30);
            QCOMPARE(lens.size(), want.size());
            for (int l = 0; l < lens.size(); ++l) {
                const QJsonObject a = lens[l].toObject(), b = want[l].toObject();
                QCOMPARE(a["layer"].toInt(), b["layer"].toInt());
                QVERIFY(same_floats(a["entropy"], b["entropy"]) && same_floats(a["p_drawn"], b["p_drawn"]));
                QCOMPARE(a["top"].toArray().size(), 3);
                for (int i = 0; i < 3; ++i) {
                    const QJsonArray x = a["top"].toArray()[i].toArray(), y = b["top"].toArray()[i].toArray();
                    QCOMPARE(x[0].toInt(), y[0].toInt());
                    QVERIFY(same_floats(x[1], y[1]));
                }
            }
            const QJsonArray heads = steps[s].toObject()["heads"].toArray();
            const QJsonArray want_heads = printed[s].toObject()["heads"].toArray();
            QCOMPARE(heads.size(), 2 * 9);
            QCOMPARE(heads.size(), want_heads.size());
            for (int i = 0; i < heads.size(); ++i) {
                const QJsonObject a = heads[i].toObject(), b = want_heads[i].toObject();
                for (const char* key : {"layer", "head", "kv_head", "window"}) QCOMPARE(a[key].toInt(), b[key].toInt());
                for (const char* key : {"entropy", "sink", "prev", "distance", "in_window"})
                    QVERIFY2(same_floats(a[key], b[key]), key);
            }
        }
        const Run replay = run_cli({"generate", "-m", model(), "--backend", "cpu", "--replay", path});
        QCOMPARE(replay.exit_code, 0);
        QCOMPARE(replay.out.trimmed(), QByteArray("replay: the same 3 tokens and sampler trace\nreplay: the same logit lens "
                                                  "(90 layer records) and head statistics (54 head records), bit for bit"));
        // One value changed in the file: the replay names its step, layer (and head), tokens the same.
        const auto altered = [&](int s, const char* key, int index, const std::function<void(QJsonObject&)>& edit) {
            QJsonArray edited = steps;
            QJsonObject step = edited[s].toObject();
            QJsonArray records = step[key].toArray();
            QJsonObject record = records[index].toObject();
            edit(record);
            records[index] = record;
            step[key] = records;
            edited[s] = step;
            QJsonObject copy = file;
            copy["steps"] = edited;
            return run_cli({"generate", "-m", model(), "--backend", "cpu", "--replay",
                            write_file(dir, QStringLiteral("altered-%1-%2.json").arg(key).arg(s), QJsonDocument(copy).toJson())});
        };
        const Run lens_altered = altered(1, "lens", 17, [](QJsonObject& l) {
            QJsonArray top = l["top"].toArray();
            QJsonArray first = top[0].toArray();
            first[1] = first[1].toDouble() * 0.5;
            top[0] = first;
            l["top"] = top;
        });
        QCOMPARE(lens_altered.exit_code, 1);
        QVERIFY2(lens_altered.out.startsWith("replay: the same 3 tokens and sampler trace\nreplay: the logit lens differs at "
                                             "token 1, layer 17: top[0] p "), lens_altered.out.constData());
        // heads[12]: layer 17 (the second captured layer), head 3.
        const Run heads_altered = altered(2, "heads", 12, [](QJsonObject& h) { h["entropy"] = h["entropy"].toDouble() + 0.25; });
        QCOMPARE(heads_altered.exit_code, 1);
        QVERIFY2(heads_altered.out.contains("replay: the head statistics differ at token 2, layer 17, head 3: entropy "),
                 heads_altered.out.constData());

        QJsonArray damaged = steps;
        QJsonObject step = damaged[1].toObject();
        step["lens"] = 7;
        damaged[1] = step;
        file["steps"] = damaged;
        const QString bad = write_file(dir, "bad.json", QJsonDocument(file).toJson());
        const Run refused = run_cli({"generate", "-m", model(), "--backend", "cpu", "--replay", bad});
        QCOMPARE(refused.exit_code, 1);
        QVERIFY2(refused.err.contains("steps[1].lens must be an array, got number 7"), refused.err.constData());

        const QString plain = dir.filePath("plain.json");
        QCOMPARE(run_cli({"generate", "-m", model(), "-p", "Hi", "-n", "1", "--backend", "cpu", "--export-trace", plain})
                     .exit_code, 0);
        QFile p(plain);
        QVERIFY(p.open(QIODevice::ReadOnly));
        const QJsonObject first = QJsonDocument::fromJson(p.readAll()).object()["steps"].toArray()[0].toObject();
        QVERIFY(!first.contains("lens") && !first.contains("heads"));
    }

    // --trace-attention: each step of the file carries, for every captured layer and head, the attention
    // row whose logits drew its token, equal value for value to that row in --dump-attention's file of
    // the same run (the last query row of the pass ending at that position); without the flag, none;
    // without --export-trace, the flag is refused (badInputGivesOneLine).
    void traceAttentionRowsAreTheCapturedOnes() {
        QTemporaryDir dir;
        const QString path = dir.filePath("trace.json"), dump = dir.filePath("dump.json");
        const Run r = run_cli({"generate", "-m", model(), "-p", "The capital of France is", "-n", "3", "--ignore-eos",
                               "--backend", "cpu", "--layers", "0,17", "--heads", "1,4", "--dump-attention", dump,
                               "--export-trace", path, "--trace-attention"});
        QCOMPARE(r.exit_code, 0);
        const auto read = [](const QString& p) {
            QFile f(p);
            return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
        };
        const QJsonObject file = read(path), dumped = read(dump);
        const QJsonArray steps = file["steps"].toArray(), events = dumped["events"].toArray();
        const int prompt = file["prompt"].toArray().size();
        QCOMPARE(steps.size(), 3);
        for (int s = 0; s < steps.size(); ++s) {
            const QJsonArray rows = steps[s].toObject()["attention"].toArray();
            QCOMPARE(rows.size(), 2 * 2);
            for (const QJsonValue& v : rows) {
                const QJsonObject row = v.toObject();
                const int layer = row["layer"].toInt(), head = row["head"].toInt();
                const QJsonArray probs = row["probs"].toArray();
                QCOMPARE(probs.size(), prompt + s);  // keys 0 .. the drawing position
                // The dump's event of this layer whose pass ends at that position, its last query row.
                QJsonArray want;
                for (const QJsonValue& ev : events) {
                    const QJsonObject e = ev.toObject();
                    if (e["layer"].toInt() != layer || e["n_keys"].toInt() != prompt + s) continue;
                    int hi = -1;
                    for (int i = 0; i < e["heads"].toArray().size(); ++i)
                        if (e["heads"].toArray()[i].toInt() == head) hi = i;
                    QVERIFY(hi >= 0);
                    const QJsonArray queries = e["probs"].toArray()[hi].toArray();
                    want = queries.last().toArray();
                }
                QCOMPARE(want.size(), probs.size());
                for (int k = 0; k < probs.size(); ++k)
                    QVERIFY2(float(probs[k].toDouble()) == float(want[k].toDouble()),
                             qPrintable(QString("step %1 layer %2 head %3 key %4").arg(s).arg(layer).arg(head).arg(k)));
            }
        }
        QVERIFY(!steps[0].toObject().contains("lens") && !steps[0].toObject().contains("heads"));
        // The rows do not change the replay: the same tokens.
        const Run replay = run_cli({"generate", "-m", model(), "--backend", "cpu", "--replay", path});
        QCOMPARE(replay.exit_code, 0);

        const QString plain = dir.filePath("plain.json");
        QCOMPARE(run_cli({"generate", "-m", model(), "-p", "Hi", "-n", "1", "--backend", "cpu", "--export-trace", plain,
                          "--layers", "0"}).exit_code, 0);
        QVERIFY(!read(plain)["steps"].toArray()[0].toObject().contains("attention"));
    }

    void traceOfABiggerVocabularyIsRefusedBeforeGenerating() {
        // Gemma 3's token ids go past SmolLM2's vocabulary: the hash must be checked before the prompt
        // runs, or the replay fails on "token id N outside the vocabulary" instead.
        QTemporaryDir dir;
        const QString path = dir.filePath("gemma.json");
        const QString gemma = QFileInfo(model()).dir().filePath("gemma-3-270m-Q4_K_M.gguf");
        QCOMPARE(run_cli({"generate", "-m", gemma, "-p", "Bonjour, comment allez-vous aujourd'hui?", "-n", "3",
                          "--backend", "cpu", "--export-trace", path}).exit_code, 0);
        const Run r = run_cli({"generate", "-m", model(), "--backend", "cpu", "--replay", path});
        QCOMPARE(r.exit_code, 1);
        QVERIFY2(r.out.startsWith("replay: the trace was made with another model file (SHA-256 "), r.out.constData());
        QVERIFY2(!r.err.contains("vocabulary"), r.err.constData());
        QVERIFY2(!r.err.contains("tok/s"), r.err.constData());  // nothing was generated
    }

    void replayRunsWithTheTracesEngineSettings() {
        // Exported with a 4-bit V cache and a small context: the replay takes both from the file
        // (with the defaults the numbers would differ) and says so when a flag overrides one.
        QTemporaryDir dir;
        const QString path = dir.filePath("trace.json");
        QCOMPARE(run_cli({"generate", "-m", model(), "-p", "The capital of France is", "-n", "6", "--backend", "cpu",
                          "--ctx", "256", "--cache-type-v", "q4_0", "--ignore-eos", "--export-trace", path}).exit_code, 0);
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject engine = QJsonDocument::fromJson(f.readAll()).object()["engine"].toObject();
        QCOMPARE(engine["n_ctx"].toInt(), 256);
        QCOMPARE(engine["cache_type_v"].toString(), QString("q4_0"));
        const Run same = run_cli({"generate", "-m", model(), "--replay", path});
        QCOMPARE(same.exit_code, 0);
        QCOMPARE(same.out.trimmed(), QByteArray("replay: the same 6 tokens and sampler trace"));
        const Run other = run_cli({"generate", "-m", model(), "--replay", path, "--cache-type-v", "f16"});
        QVERIFY2(other.err.contains("note: replay with --cache-type-v f16; the trace was made with q4_0"),
                 other.err.constData());
    }

    void replayFileAndFlagErrorsAreSaidOnceAndPlainly() {
        QTemporaryDir dir;
        const QString missing = dir.filePath("t.json");
        const Run none = run_cli({"generate", "-m", model(), "--replay", missing});
        QCOMPARE(none.exit_code, 1);
        QVERIFY2(none.err.contains("cannot read the trace file " + missing.toUtf8() + ": No such file or directory"),
                 none.err.constData());
        QCOMPARE(none.err.count(missing.toUtf8()), qsizetype(1));  // the path once, not "t.json: ... t.json"
        // Exporting over the file being replayed would lose it.
        const Run same = run_cli({"generate", "-m", model(), "--replay", missing, "--export-trace",
                                  dir.path() + "/./t.json"});
        QCOMPARE(same.exit_code, 1);
        QVERIFY2(same.err.contains("is the file --replay reads; export to another file"), same.err.constData());
        // Said as what it is, not as "--compare-model cannot be used with it".
        const Run both = run_cli({"generate", "-m", model(), "--replay", missing, "--compare-model", model()});
        QVERIFY2(both.err.contains("--compare-model and --replay exclude each other"), both.err.constData());
    }

    void compareModelAgainstItselfGivesKlZero() {
        const Run r = run_cli({"generate", "-m", model(), "-p", "The capital of France is", "-n", "5", "--temp", "0",
                               "--backend", "cpu", "--json", "--compare-model", model()});
        QCOMPARE(r.exit_code, 0);
        const QJsonObject o = json_of(r);
        const QJsonObject c = o["compare"].toObject();
        QCOMPARE(c["model"].toString(), model());
        QCOMPARE(c["kl_max"].toDouble(), 0.0);
        QCOMPARE(c["flips"].toInt(), 0);
        const QJsonArray tokens = c["tokens"].toArray();
        QCOMPARE(tokens.size(), o["tokens"].toArray().size());
        for (qsizetype i = 0; i < tokens.size(); ++i) {
            QCOMPARE(tokens[i].toObject()["token"].toInt(), o["tokens"].toArray()[i].toInt());
            // Greedy: the drawn token is each model's top-1.
            QCOMPARE(tokens[i].toObject()["top"].toInt(), o["tokens"].toArray()[i].toInt());
        }
        const Run text = run_cli({"generate", "-m", model(), "-p", "Hi", "-n", "2", "--temp", "0", "--backend", "cpu",
                                  "--compare-model", model()});
        QVERIFY2(text.err.contains("KL mean 0.000000, max 0.000000 nats; top-1 flips 0 of 2 tokens"), text.err.constData());
    }

    void sameSeedSameText() {
        const QStringList args{"generate", "-m", model(), "-p", "Once upon a time", "-n", "12", "--temp", "1.0",
                               "--seed", "1234", "--backend", "cpu", "--json"};
        const QJsonObject a = json_of(run_cli(args)), b = json_of(run_cli(args));
        QCOMPARE(a["tokens"].toArray(), b["tokens"].toArray());
        QCOMPARE(a["seed"].toDouble(), 1234.0);
    }

    // The prompt of generate --chat is exactly Jinja2's rendering of SmolLM2's template (the corpus
    // of test_jinja_templates), tokenized.
    void chatFlagUsesTheTemplate() {
        const QString text = corpus_output("gguf-SmolLM2-135M-Instruct.jinja", "one_user", true);
        QVERIFY(text.contains("You are a helpful AI assistant named SmolLM"));
        const QString user = corpus_messages("one_user")[0].toObject()["content"].toString();
        const Run r = run_cli({"generate", "-m", model(), "--chat", "-p", user, "-n", "2", "--temp", "0",
                               "--backend", "cpu", "--json"});
        QCOMPARE(r.exit_code, 0);
        const QJsonObject o = json_of(r);
        const QJsonArray expected = json_of(run_cli({"tokenize", "-m", model(), "-p", text, "--json"}))["tokens"].toArray();
        QCOMPARE(o["prompt_token_ids"].toArray(), expected);
        QCOMPARE(o["prompt_tokens"].toInt(), int(expected.size()));
    }

    // whitebox-cli template prints Jinja2's text byte for byte: a template file alone, the model's own
    // template, and tools with a tool call.
    void templateCommandMatchesJinja2_data() {
        QTest::addColumn<QString>("source");  // a file in tests/reference/templates, or "model"
        QTest::addColumn<QString>("template_name");
        QTest::addColumn<QString>("set");
        QTest::addColumn<bool>("add_generation_prompt");
        QTest::newRow("smollm2 file, multi-turn") << "file" << "gguf-SmolLM2-135M-Instruct.jinja" << "multi_turn" << false;
        QTest::newRow("smollm2 model, tricky content")
            << "model" << "gguf-SmolLM2-135M-Instruct.jinja" << "tricky_content" << true;
        QTest::newRow("qwen2.5 tools and a call") << "file" << "Qwen-Qwen2.5-7B-Instruct.jinja" << "tools_call" << true;
        QTest::newRow("r1 distill writes the bos") << "file" << "gguf-DeepSeek-R1-Distill-Qwen-7B.jinja" << "system_user" << true;
    }
    void templateCommandMatchesJinja2() {
        QFETCH(QString, source);
        QFETCH(QString, template_name);
        QFETCH(QString, set);
        QFETCH(bool, add_generation_prompt);
        QTemporaryDir dir;
        QStringList args{"template", "--messages", write_file(dir, "messages.json", corpus_json(set, "messages"))};
        const QByteArray tools = corpus_json(set, "tools");
        if (!tools.isEmpty()) args << "--tools" << write_file(dir, "tools.json", tools);
        if (source == "model") {
            args << "-m" << model();
        } else {
            args << "--template" << templates_dir() + "/" + template_name << "--bos-token"
                 << corpus()["bos_token"].toString() << "--eos-token" << corpus()["eos_token"].toString();
        }
        if (add_generation_prompt) args << "--add-generation-prompt";
        const Run r = run_cli(args);
        QVERIFY2(r.exit_code == 0, r.err.constData());
        QCOMPARE(r.err, QByteArray());
        QCOMPARE(QString::fromUtf8(r.out), corpus_output(template_name, set, add_generation_prompt));
    }

    void templateErrorsAreOneLine_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("messages");
        QTest::addColumn<QString>("needle");
        QTest::newRow("parse error") << "{% for m in messages %}{{ m.content }" << "[]" << "line 1, column";
        QTest::newRow("raise_exception with a newline")
            << "{{ raise_exception('no\nsystem') }}" << "[]" << "no system";
        QTest::newRow("messages not JSON") << "{{ 1 }}" << "[{" << "messages.json";
    }
    void templateErrorsAreOneLine() {
        QFETCH(QString, source);
        QFETCH(QString, messages);
        QFETCH(QString, needle);
        QTemporaryDir dir;
        const Run r = run_cli({"template", "--template", write_file(dir, "t.jinja", source.toUtf8()), "--messages",
                               write_file(dir, "messages.json", messages.toUtf8())});
        QCOMPARE(r.exit_code, 1);
        QCOMPARE(r.out, QByteArray());
        QCOMPARE(r.err.trimmed().split('\n').size(), 1);
        QVERIFY2(r.err.contains(needle.toUtf8()), r.err.constData());
    }

    // --chat-template replaces the model's template: the prompt is that template's text, tokenized.
    void chatTemplateFlagOverridesTheModels() {
        QTemporaryDir dir;
        const QString tmpl = write_file(dir, "t.jinja", "<|im_start|>[{{ messages[0]['content'] }}]");
        const Run r = run_cli({"generate", "-m", model(), "--chat", "--chat-template", tmpl, "-p", "Hi <|im_end|>",
                               "-n", "1", "--temp", "0", "--backend", "cpu", "--json"});
        QVERIFY2(r.exit_code == 0, r.err.constData());
        const QJsonArray ids = json_of(r)["prompt_token_ids"].toArray();
        // The template's <|im_start|> is one control token; the user's <|im_end|> stays characters.
        const QJsonArray special = json_of(run_cli({"tokenize", "-m", model(), "-p", "<|im_start|>[Hi <|im_end|>]", "--json"}))["tokens"].toArray();
        QCOMPARE(ids.first(), special.first());
        QVERIFY(ids.size() > special.size());
        QVERIFY(!ids.contains(special[special.size() - 2]));
    }

    void chatTemplateParseErrorNamesTheFlag() {
        QTemporaryDir dir;
        const QString bad = write_file(dir, "bad.jinja", "{% if messages %}no end");
        const Run r = run_cli({"generate", "-m", model(), "--chat", "--chat-template", bad, "-p", "Hi", "-n", "1"});
        QCOMPARE(r.exit_code, 1);
        QCOMPARE(r.err.trimmed().split('\n').size(), 1);
        QVERIFY2(r.err.contains("bad.jinja: the chat template cannot be parsed: line 1"), r.err.constData());
        QVERIFY2(r.err.contains("--chat-template FILE"), r.err.constData());
        // Without --chat the template is not needed, and a broken one does not matter.
        QCOMPARE(run_cli({"generate", "-m", model(), "--chat-template", bad, "-p", "Hi", "-n", "1", "--backend", "cpu"}).exit_code, 0);
    }

    void benchJsonContract() {
        const Run r = run_cli({"bench", "-m", model(), "-p", "16", "-n", "4", "-r", "2", "--backend", "cpu", "--json"});
        QCOMPARE(r.exit_code, 0);
        const QJsonObject o = json_of(r);
        QVERIFY(o["prefill_tps"].toObject()["mean"].toDouble() > 0);
        QVERIFY(o["decode_tps"].toObject()["mean"].toDouble() > 0);
        QVERIFY(o.contains("weight_bytes_per_token"));
        // Per phase: every repetition's figure, and the depth each phase ran at.
        const QJsonObject pre = o["prefill"].toObject(), dec = o["decode"].toObject();
        QCOMPARE(pre["tokens"].toInt(), 16);
        QCOMPARE(pre["depth"].toInt(), 0);
        QCOMPARE(pre["samples"].toArray().size(), 2);
        QCOMPARE(dec["depth"].toInt(), 16);
        QCOMPARE(dec["samples"].toArray().size(), 2);
    }

    // bench -d D: the timed phases start with D tokens in the context (llama-bench's -d), and -p 0
    // measures the decode alone, starting at position D.
    void benchAtDepth() {
        const Run r = run_cli({"bench", "-m", model(), "-p", "0", "-n", "3", "-d", "40", "-r", "2", "--backend", "cpu", "--json"});
        QCOMPARE(r.exit_code, 0);
        const QJsonObject o = json_of(r);
        QCOMPARE(o["depth"].toInt(), 40);
        QCOMPARE(o["prefill"].toObject()["samples"].toArray().size(), 0);
        const QJsonObject dec = o["decode"].toObject();
        QCOMPARE(dec["depth"].toInt(), 40);
        const QJsonArray samples = dec["samples"].toArray();
        QCOMPARE(samples.size(), 2);
        for (const auto& x : samples) QVERIFY(x.toDouble() > 0);
        const Run withPrompt = run_cli({"bench", "-m", model(), "-p", "8", "-n", "2", "-d", "40", "-r", "1", "--backend", "cpu", "--json"});
        QCOMPARE(withPrompt.exit_code, 0);
        QCOMPARE(json_of(withPrompt)["decode"].toObject()["depth"].toInt(), 48);
        const Run nothing = run_cli({"bench", "-m", model(), "-p", "0", "-n", "0", "--backend", "cpu"});
        QCOMPARE(nothing.exit_code, 1);
        QVERIFY2(nothing.err.contains("nothing to measure"), nothing.err.constData());
    }

    // KL-divergence mode between two quantizations of one model (Q8_0 base, Q4_0 other; the same random
    // floats), against llama.cpp's logits of the same two files (tests/reference/make_kl_reference.py):
    // with the base stored in the 16-bit code of --save-logits, mean and max KL and the top-token
    // agreement are what the reference computes from llama.cpp's logits with that code; the exact KL
    // (no code) is within 1 % of it.
    void klModeMatchesLlamaCpp() {
        QFile f(QString::fromStdString(wb_test::reference_dir()) + "/random-archs/kl-q8_0-q4_0.json");
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject ref = QJsonDocument::fromJson(f.readAll()).object();
        QTemporaryDir dir;
        const QString text = dir.filePath("text.txt"), logprobs = dir.filePath("base.logprobs");
        QVERIFY(write_perplexity_text(text));
        QMap<QString, QString> files;
        for (const char* role : {"base", "other"}) {
            const QJsonObject r = ref[role].toObject();
            const QString path = dir.filePath(QString(role) + ".gguf");
            QStringList args{path};
            for (const auto& a : r["make_random_gguf"].toArray()) args << a.toString();
            QProcess make;
            make.start(QStringLiteral(WB_MAKE_RANDOM_GGUF), args);
            QVERIFY(make.waitForFinished(60000) && make.exitCode() == 0);
            QFile m(path);
            QVERIFY(m.open(QIODevice::ReadOnly));
            QCOMPARE(QString(QCryptographicHash::hash(m.readAll(), QCryptographicHash::Sha256).toHex()), r["sha256"].toString());
            files[role] = path;
        }
        const QString ctx = QString::number(ref["n_ctx"].toInt());
        const QStringList common = {"-f", text, "--ctx", ctx, "--backend", "cpu", "--json"};
        const Run saved = run_cli(QStringList{"perplexity", "-m", files["base"], "--save-logits", logprobs} + common);
        QCOMPARE(saved.exit_code, 0);
        QCOMPARE(json_of(saved)["positions"].toArray().size(), ref["n_scored"].toInt());
        const Run r = run_cli(QStringList{"perplexity", "-m", files["other"], "--kl-base", logprobs} + common);
        QCOMPARE(r.exit_code, 0);
        const QJsonObject kl = json_of(r)["kl"].toObject();
        const QJsonObject stored = ref["kl_stored"].toObject(), exact = ref["kl_exact"].toObject();
        qInfo("KL mean %.9g max %.9g same top %.6f; llama.cpp's logits: stored base %.9g / %.9g / %.6f, exact %.9g",
              kl["mean"].toDouble(), kl["max"].toDouble(), kl["same_top"].toDouble(), stored["mean"].toDouble(),
              stored["max"].toDouble(), ref["same_top"].toDouble(), exact["mean"].toDouble());
        QVERIFY(exact["mean"].toDouble() > 1e-3);  // two quantizations that really differ
        QVERIFY(std::fabs(kl["mean"].toDouble() / stored["mean"].toDouble() - 1.0) < 1e-6);
        QVERIFY(std::fabs(kl["max"].toDouble() / stored["max"].toDouble() - 1.0) < 1e-6);
        const double n = ref["n_scored"].toDouble();  // the same positions agree (JSON rounds the share)
        QCOMPARE(std::lround(kl["same_top"].toDouble() * n), std::lround(ref["same_top"].toDouble() * n));
        QVERIFY(std::fabs(kl["mean"].toDouble() / exact["mean"].toDouble() - 1.0) < 0.01);
    }

    // perplexity: llama.cpp's value on the same text and windows (reference: perplexity.json, made by
    // tests/reference/make_perplexity_reference.py), the JSON contract, and the KL mode against itself
    // (0, the same top token everywhere) and against a file of another vocabulary (refused).
    void perplexityMatchesLlamaCpp() {
        QFile f(QString::fromStdString(wb_test::reference_dir()) + "/smollm2-135m-instruct-q4_1/perplexity.json");
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject ref = QJsonDocument::fromJson(f.readAll()).object();
        QTemporaryDir dir;
        const QString text = dir.filePath("text.txt"), base = dir.filePath("base.logprobs");
        QVERIFY(write_perplexity_text(text));
        const QStringList common = {"perplexity", "-m", model(), "-f", text, "--ctx", "256", "--backend", "cpu", "--json"};
        const Run r = run_cli(common + QStringList{"--top", "5", "--save-logits", base});
        QCOMPARE(r.exit_code, 0);
        const QJsonObject o = json_of(r);
        QCOMPARE(o["tokens"].toArray().size(), ref["n_tokens"].toInt());
        const QJsonArray pos = o["positions"].toArray();
        QCOMPARE(pos.size(), ref["n_scored"].toInt());
        const double ppl = o["ppl"].toDouble();
        qInfo("perplexity %.9f, llama.cpp %.9f", ppl, ref["ppl"].toDouble());
        QVERIFY(std::fabs(ppl / ref["ppl"].toDouble() - 1.0) < 1e-9);
        double sum = 0.0;
        for (const auto& pv : pos) {
            const QJsonObject p = pv.toObject();
            sum += p["logprob"].toDouble();
            const QJsonArray top = p["top"].toArray();
            QCOMPARE(top.size(), 5);
            QVERIFY(top[0].toArray()[1].toDouble() >= top[4].toArray()[1].toDouble());
            QVERIFY(p["logprob"].toDouble() <= top[0].toArray()[1].toDouble());
            QCOMPARE(o["tokens"].toArray()[p["pos"].toInt() + 1].toInt(), p["next"].toInt());
        }
        QVERIFY(std::fabs(std::exp(-sum / double(pos.size())) / ppl - 1.0) < 1e-6);  // ppl = exp(-mean logprob)

        const QJsonObject kl = json_of(run_cli(common + QStringList{"--kl-base", base}))["kl"].toObject();
        QVERIFY2(kl["max"].toDouble() < 1e-6, qPrintable(QString::number(kl["max"].toDouble())));
        QCOMPARE(kl["same_top"].toDouble(), 1.0);
        QVERIFY(std::fabs(kl["base_ppl"].toDouble() / ppl - 1.0) < 1e-3);

        const QString other = dir.filePath("other.gguf"), other_base = dir.filePath("other.logprobs");
        QProcess make;
        make.start(QStringLiteral(WB_MAKE_RANDOM_GGUF), {other, "--shape", "qwen2-tiny"});
        QVERIFY(make.waitForFinished(60000) && make.exitCode() == 0);
        QCOMPARE(run_cli({"perplexity", "-m", other, "-f", text, "--ctx", "64", "--save-logits", other_base}).exit_code, 0);
        const Run bad = run_cli(common + QStringList{"--kl-base", other_base});
        QCOMPARE(bad.exit_code, 1);
        QCOMPARE(bad.err.trimmed().split('\n').size(), 1);
        QVERIFY2(bad.err.contains("vocabulary of 1024 tokens, this model has 49152"), bad.err.constData());
        // A text too short for the context is refused before a --save-logits file is made.
        const QString unmade = dir.filePath("unmade.logprobs");
        const Run short_text =
            run_cli({"perplexity", "-m", model(), "-f", text, "--ctx", "4096", "--backend", "cpu", "--save-logits", unmade});
        QCOMPARE(short_text.exit_code, 1);
        QVERIFY2(short_text.err.contains("needs at least 8192"), short_text.err.constData());
        QVERIFY(!QFileInfo::exists(unmade));
        // A hostile base (a header promising 2^34 values in 32 bytes) is refused without allocating them.
        const QString hostile = dir.filePath("hostile.logprobs");
        QFile h(hostile);
        QVERIFY(h.open(QIODevice::WriteOnly));
        const uint32_t head[4] = {1u << 22, 256, 1u << 20, 1u << 12};
        h.write("WBLOGPR1", 8);
        h.write(reinterpret_cast<const char*>(head), sizeof head);
        h.close();
        const Run bad_base = run_cli(common + QStringList{"--kl-base", hostile});
        QCOMPARE(bad_base.exit_code, 1);
        QVERIFY2(bad_base.err.contains("does not match its header"), bad_base.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
