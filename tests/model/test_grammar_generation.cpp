// Grammars on the default model (SmolLM2): greedy replies under GBNF grammars are token-identical to
// llama.cpp's own grammar sampler (tests/reference/make_grammar_reference.py writes
// grammar_greedy.json), and sampled replies to 10 prompts under a JSON Schema parse and validate
// against the schema (a validator here, independent of the schema -> grammar conversion).
#include <QtTest>

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/backend_cpu.h"
#include "engine/chat_prompt.h"
#include "engine/model.h"
#include "engine/session.h"
#include "sampling/grammar/json_schema.h"
#include "test_paths.h"

using namespace wb;
using nlohmann::json;

namespace {

// Checks doc against the keywords the schema below uses; "" when valid, else what is wrong.
std::string validate(const json& schema, const json& doc, const std::string& at) {
    if (schema.contains("enum")) {
        for (const json& v : schema["enum"])
            if (v == doc) return "";
        return at + ": not one of the enum values";
    }
    const std::string type = schema.value("type", "");
    if (type == "string") {
        if (!doc.is_string()) return at + ": not a string";
        if (schema.contains("maxLength") && doc.get<std::string>().size() > schema["maxLength"].get<size_t>() * 4)
            return at + ": longer than maxLength";  // (characters; up to 4 bytes each)
        if (schema.contains("minLength") && doc.get<std::string>().size() < schema["minLength"].get<size_t>())
            return at + ": shorter than minLength";
    } else if (type == "integer") {
        if (!doc.is_number_integer()) return at + ": not an integer";
    } else if (type == "boolean") {
        if (!doc.is_boolean()) return at + ": not a boolean";
    } else if (type == "array") {
        if (!doc.is_array()) return at + ": not an array";
        if (doc.size() < schema.value("minItems", size_t(0)) || doc.size() > schema.value("maxItems", size_t(1000)))
            return at + ": item count outside minItems..maxItems";
        for (size_t i = 0; i < doc.size(); ++i) {
            const std::string e = validate(schema["items"], doc[i], at + "/" + std::to_string(i));
            if (!e.empty()) return e;
        }
    } else if (type == "object") {
        if (!doc.is_object()) return at + ": not an object";
        for (const json& r : schema["required"])
            if (!doc.contains(r.get<std::string>())) return at + ": missing required " + r.get<std::string>();
        for (const auto& [key, value] : doc.items()) {
            if (!schema["properties"].contains(key)) return at + ": unexpected property " + key;
            const std::string e = validate(schema["properties"][key], value, at + "/" + key);
            if (!e.empty()) return e;
        }
    }
    return "";
}

const char* kSchema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 16},
    "age": {"type": "integer"},
    "species": {"enum": ["cat", "dog", "bird", "fish", "other"]},
    "likes": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 2},
    "friendly": {"type": "boolean"}
  },
  "required": ["name", "age", "species"]
})";

}  // namespace

class TestGrammarGeneration : public QObject {
    Q_OBJECT

    std::unique_ptr<Model> model_;
    std::unique_ptr<CpuBackend> backend_;
    json reference_;

private Q_SLOTS:
    void initTestCase() {
        if (!std::ifstream(wb_test::default_model()).good()) QFAIL("default model missing: run scripts/fetch-models.sh");
        model_ = Model::load(wb_test::default_model());
        backend_ = std::make_unique<CpuBackend>(0);
        std::ifstream in(wb_test::reference_dir() + "/grammar_greedy.json");
        QVERIFY2(in.good(), "tests/reference/grammar_greedy.json missing");
        reference_ = json::parse(in);
    }

    void greedyMatchesLlamaCpp_data() {
        QTest::addColumn<int>("index");
        for (size_t i = 0; i < reference_["cases"].size(); ++i)
            QTest::newRow(reference_["cases"][i]["name"].get<std::string>().c_str()) << int(i);
    }
    void greedyMatchesLlamaCpp() {
        QFETCH(int, index);
        const json& c = reference_["cases"][size_t(index)];
        SamplingParams p;
        p.temperature = 0.0f;
        p.repeat_penalty = 1.0f;
        p.max_tokens = reference_["max_tokens"].get<int>();
        p.grammar = c["grammar"].get<std::string>();
        Session s(*model_, *backend_);
        const GenerateResult r = s.generate(c["prompt"].get<std::vector<int32_t>>(), LiveSamplingParams(p));
        QVERIFY2(r.reason != StopReason::ERROR, r.error.c_str());
        QCOMPARE(r.tokens, c["tokens"].get<std::vector<int32_t>>());
        QCOMPARE(r.reason == StopReason::EOS, c["ended_by_eog"].get<bool>());
    }

    void jsonSchemaRepliesValidate() {
        const json schema = json::parse(kSchema);
        SamplingParams p;  // the default sampler chain: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05
        p.max_tokens = 160;
        p.grammar = json_schema_to_gbnf(kSchema);
        const std::vector<std::string> prompts = {
            "Describe a pet as JSON.", "Invent a cartoon animal and give it as JSON.", "Tell me about your dog.",
            "Write a JSON record for a goldfish named Bubbles.", "Who is the oldest cat you know?",
            "Make up a parrot.", "Give me a JSON profile of a friendly hamster.", "Hello!",
            "List a pet's name, age and what it likes.", "Write a short story about a bird."};
        for (size_t i = 0; i < prompts.size(); ++i) {
            p.seed = 1000 + i;
            Session s(*model_, *backend_);
            const auto prompt = build_chat_prompt(*model_, {{"user", prompts[i]}}, true).ids;
            const GenerateResult r = s.generate(prompt, LiveSamplingParams(p));
            QVERIFY2(r.reason == StopReason::EOS, qPrintable(QString("prompt %1 did not end by EOS: %2 %3")
                                                                 .arg(i).arg(r.error.c_str(), r.text.c_str())));
            json doc;
            try {
                doc = json::parse(r.text);
            } catch (const json::exception& e) {
                QFAIL(qPrintable(QString("prompt %1: not JSON: %2: %3").arg(i).arg(e.what(), r.text.c_str())));
            }
            const std::string problem = validate(schema, doc, "#");
            QVERIFY2(problem.empty(), qPrintable(QString("prompt %1: %2 in %3").arg(i).arg(problem.c_str(), r.text.c_str())));
        }
    }
};

QTEST_GUILESS_MAIN(TestGrammarGeneration)
#include "test_grammar_generation.moc"
