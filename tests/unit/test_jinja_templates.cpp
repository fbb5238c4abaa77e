// Real chat templates (tests/reference/templates: the llama.cpp collection and the templates of our
// GGUF files) rendered by the Jinja engine equal Python Jinja2's rendering byte for byte, for every
// message set of make_template_reference.py, with and without the generation prompt. Where Jinja2
// raised (a template that refuses a role order), the engine raises too, with the same message when
// the template called raise_exception. Prints the pass rate per template.
#include <QtTest>

#include "jinja_fixed_time.h"

#include <fstream>
#include <map>
#include <sstream>

#include "chat/jinja/json.h"
#include "chat/jinja/template.h"
#include "util/error.h"

using namespace wb::jinja;

namespace {

const std::string kDir = std::string(WB_REFERENCE_DIR) + "/templates/";

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw wb::Error("cannot read " + path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

const Value& expected_data() {
    static const Value data = parse_json(slurp(kDir + "expected.json"));
    return data;
}


// The variables apply_chat_template passes (make_template_reference.py's render()).
Value context_for(const Value& message_set, bool add_generation_prompt) {
    const Value& data = expected_data();
    Dict ctx;
    ctx.set("messages", *message_set.dict().find("messages"));
    const Value* tools = message_set.dict().find("tools");
    ctx.set("tools", tools ? *tools : Value::none());
    ctx.set("documents", Value::none());
    ctx.set("add_generation_prompt", Value(add_generation_prompt));
    ctx.set("bos_token", *data.dict().find("bos_token"));
    ctx.set("eos_token", *data.dict().find("eos_token"));
    return Value(std::move(ctx));
}

// The families the issue names: every one of their cases must pass.
bool is_common_family(const std::string& name) {
    for (const char* f : {"Llama-3", "Qwen2.5", "Qwen3", "Qwen-Qwen", "Phi-3.5", "gemma-2", "gemma3", "Mistral", "DeepSeek-R1",
                          "deepseek-r1", "SmolLM", "granite"}) {
        if (name.find(f) != std::string::npos) return true;
    }
    return false;
}

// "" when the engine agrees with Jinja2 on this case, else what differs.
std::string check_case(const Value& c) {
    const std::string name = c.dict().find("template")->str();
    const Value& set = *expected_data().dict().find("message_sets")->dict().find(c.dict().find("set")->str());
    const bool agp = c.dict().find("add_generation_prompt")->as_bool();
    RenderOptions options;
    options.local_time = jinja_reference_time;
    const Value* expected = c.dict().find("output");
    try {
        const std::string got = Template::parse(slurp(kDir + name)).render(context_for(set, agp), options);
        if (!expected) return "rendered, but jinja2 raised " + c.dict().find("error")->str() + ": " + c.dict().find("message")->str();
        if (got == expected->str()) return "";
        std::size_t i = 0;
        while (i < got.size() && i < expected->str().size() && got[i] == expected->str()[i]) ++i;
        return "differs at byte " + std::to_string(i) + ": expected " + to_repr(Value(expected->str().substr(i, 60))) +
               ", got " + to_repr(Value(got.substr(i, 60)));
    } catch (const TemplateRaised& e) {
        if (expected) return std::string("raised: ") + e.what();
        if (c.dict().find("error")->str() != "TemplateError") return "raise_exception, but jinja2 raised " + c.dict().find("error")->str();
        if (c.dict().find("message")->str() != e.what()) return std::string("raise_exception message differs: ") + e.what();
        return "";
    } catch (const std::exception& e) {
        if (expected) return std::string("raised: ") + e.what();
        if (c.dict().find("error")->str() == "TemplateError") return std::string("jinja2 called raise_exception; we raised ") + e.what();
        return "";
    }
}

}  // namespace

class TestJinjaTemplates : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void corpus_is_complete();
    void template_renders_like_jinja2_data();
    void template_renders_like_jinja2();
    void all_pairs_pass_rate();
};

void TestJinjaTemplates::corpus_is_complete() {
    const auto& cases = expected_data().dict().find("cases")->items();
    std::map<std::string, int> per_template;
    for (const Value& c : cases) ++per_template[c.dict().find("template")->str()];
    QVERIFY2(per_template.size() >= 70, qPrintable(QString("%1 templates").arg(per_template.size())));
    const int sets = static_cast<int>(expected_data().dict().find("message_sets")->dict().size());
    for (const auto& [name, n] : per_template) QCOMPARE(n, 2 * sets);
    for (const char* required : {"meta-llama-Llama-3.1-8B-Instruct.jinja", "Qwen-Qwen2.5-7B-Instruct.jinja", "Qwen-Qwen3-0.6B.jinja",
                                 "microsoft-Phi-3.5-mini-instruct.jinja", "google-gemma-2-2b-it.jinja",
                                 "gguf-SmolLM2-135M-Instruct.jinja", "gguf-DeepSeek-R1-Distill-Qwen-7B.jinja",
                                 "HuggingFaceTB-SmolLM3-3B.jinja", "ibm-granite-granite-3.3-2B-Instruct.jinja"}) {
        QVERIFY2(per_template.count(required), required);
    }
}

void TestJinjaTemplates::template_renders_like_jinja2_data() {
    QTest::addColumn<QString>("name");
    std::map<std::string, int> seen;
    for (const Value& c : expected_data().dict().find("cases")->items()) {
        const std::string name = c.dict().find("template")->str();
        if (seen[name]++ == 0) QTest::newRow(name.c_str()) << QString::fromStdString(name);
    }
}

void TestJinjaTemplates::template_renders_like_jinja2() {
    QFETCH(QString, name);
    int pass = 0, total = 0;
    for (const Value& c : expected_data().dict().find("cases")->items()) {
        if (c.dict().find("template")->str() != name.toStdString()) continue;
        ++total;
        const std::string why = check_case(c);
        if (why.empty()) {
            ++pass;
        } else {
            qWarning("%s / %s / add_generation_prompt=%s: %s", qPrintable(name), c.dict().find("set")->str().c_str(),
                     c.dict().find("add_generation_prompt")->as_bool() ? "true" : "false", why.c_str());
        }
    }
    qInfo("%s: %d/%d", qPrintable(name), pass, total);
    if (is_common_family(name.toStdString())) QCOMPARE(pass, total);
}

void TestJinjaTemplates::all_pairs_pass_rate() {
    int pass = 0, total = 0;
    for (const Value& c : expected_data().dict().find("cases")->items()) {
        ++total;
        pass += check_case(c).empty() ? 1 : 0;
    }
    qInfo("all pairs: %d/%d (%.1f %%)", pass, total, 100.0 * pass / total);
    QVERIFY2(pass * 100 >= total * 95, qPrintable(QString("%1/%2").arg(pass).arg(total)));
}

QTEST_APPLESS_MAIN(TestJinjaTemplates)
#include "test_jinja_templates.moc"
