// Chat templates: a model's own Jinja template rendered with Hugging Face's variables, its parse and
// render errors, and the exact prompts of the built-in formats that files without a template use.
#include <QtTest>

#include "chat/chat_template.h"
#include "chat/jinja/json.h"
#include "util/error.h"

using namespace wb;

Q_DECLARE_METATYPE(wb::ChatTemplateKind)
Q_DECLARE_METATYPE(std::vector<wb::ChatMessage>)

namespace {

// tokenizer.chat_template of SmolLM2-135M-Instruct.Q4_1.gguf, verbatim (checked against the file):
// the '\n' inside its Jinja string literals are real newline characters.
const std::string kSmolLm2Template =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";


std::vector<ChatMessage> full_conversation() {
    return {{"system", "You are terse."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Bye"}};
}

}  // namespace

class TestChat : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void jinja_template_gets_hugging_face_variables();
    void jinja_template_reads_tool_calls_and_tools();
    void parse_error_names_line_and_column();
    void unusable_template_refuses_to_render();
    void raise_exception_reaches_the_caller();
    void jinja_end_of_turn_texts_come_from_the_template();
    void builtin_format_names_round_trip();
    void render_gives_exact_prompt_data();
    void render_gives_exact_prompt();
    void unknown_role_throws_data();
    void unknown_role_throws();
    void end_of_turn_texts_per_family_data();
    void end_of_turn_texts_per_family();
};

void TestChat::jinja_template_gets_hugging_face_variables() {
    const ChatTemplate t = ChatTemplate::from_jinja(
        "{{ bos_token }}|{{ tools is none }}|{{ documents is none }}|{{ add_generation_prompt }}|"
        "{% for m in messages %}{{ m.role }}={{ m['content'] }};{% endfor %}{{ eos_token }}",
        "<s>", "</s>");
    QCOMPARE(t.kind(), ChatTemplateKind::JINJA);
    QCOMPARE(QString::fromStdString(t.render(std::vector<ChatMessage>{{"user", "Hi"}, {"tool", "42"}}, true)),
             QString("<s>|True|True|True|user=Hi;tool=42;</s>"));
}

void TestChat::jinja_template_reads_tool_calls_and_tools() {
    const ChatTemplate t = ChatTemplate::from_jinja(
        "{% for tool in tools %}[{{ tool.function.name }}]{% endfor %}"
        "{% for m in messages %}{% for c in m.tool_calls %}{{ c.function.name }}({{ c.function.arguments | tojson }})"
        "{% endfor %}{% endfor %}",
        "", "");
    const jinja::Value messages = jinja::parse_json(
        R"([{"role": "assistant", "content": null, "tool_calls": [{"type": "function",
            "function": {"name": "get_weather", "arguments": {"city": "Zürich"}}}]}])");
    const jinja::Value tools = jinja::parse_json(R"([{"type": "function", "function": {"name": "get_weather"}}])");
    QCOMPARE(QString::fromStdString(t.render(messages, tools, false)),
             QString::fromUtf8("[get_weather]get_weather({\"city\": \"Zürich\"})"));
}

void TestChat::parse_error_names_line_and_column() {
    try {
        ChatTemplate::from_jinja("{% for m in messages %}\n{{ m.content }\n{% endfor %}", "", "");
        QFAIL("a broken template parsed");
    } catch (const Error& e) {
        const std::string what = e.what();
        QVERIFY2(what.starts_with("the chat template cannot be parsed: line 2, column "), e.what());
    }
}

void TestChat::unusable_template_refuses_to_render() {
    const ChatTemplate t = ChatTemplate::unusable("{% if %}", "tokenizer.chat_template: line 1, column 7: oops");
    QCOMPARE(t.kind(), ChatTemplateKind::JINJA);
    QVERIFY(!t.error().empty());
    QVERIFY_THROWS_EXCEPTION(Error, t.render(std::vector<ChatMessage>{{"user", "Hi"}}, true));
}

void TestChat::raise_exception_reaches_the_caller() {
    const ChatTemplate t = ChatTemplate::from_jinja(
        "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}", "", "");
    try {
        t.render(std::vector<ChatMessage>{{"system", "x"}}, true);
        QFAIL("raise_exception did not throw");
    } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("System role not supported") != std::string::npos, e.what());
    }
}

void TestChat::jinja_end_of_turn_texts_come_from_the_template() {
    const ChatTemplate t = ChatTemplate::from_jinja(kSmolLm2Template, "<|im_start|>", "<|im_end|>");
    QCOMPARE(t.end_of_turn_texts(), std::vector<std::string>{"<|im_end|>"});
    const ChatTemplate u = ChatTemplate::from_jinja("{{ messages[0].content }}", "", "<eos>");
    QCOMPARE(u.end_of_turn_texts(), std::vector<std::string>{"<eos>"});
}

void TestChat::builtin_format_names_round_trip() {
    for (ChatTemplateKind k : {ChatTemplateKind::CHATML, ChatTemplateKind::LLAMA2, ChatTemplateKind::LLAMA3,
                               ChatTemplateKind::GEMMA, ChatTemplateKind::MISTRAL})
        QCOMPARE(builtin_chat_format(chat_template_kind_name(k)), std::optional<ChatTemplateKind>(k));
    QVERIFY(!builtin_chat_format("jinja"));
    QVERIFY(!builtin_chat_format("ChatML"));
}

void TestChat::render_gives_exact_prompt_data() {
    QTest::addColumn<QString>("source");  // template source; empty: of_kind(kind)
    QTest::addColumn<ChatTemplateKind>("kind");
    QTest::addColumn<std::vector<ChatMessage>>("messages");
    QTest::addColumn<bool>("add_generation_prompt");
    QTest::addColumn<QString>("expected");

    const auto conv = full_conversation();
    const std::vector<ChatMessage> just_user = {{"user", "Hello"}};

    QTest::newRow("chatml") << "" << ChatTemplateKind::CHATML << conv << true
                            << "<|im_start|>system\nYou are terse.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                               "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n"
                               "<|im_start|>assistant\n";
    QTest::newRow("chatml without generation prompt")
        << "" << ChatTemplateKind::CHATML << just_user << false << "<|im_start|>user\nHello<|im_end|>\n";
    QTest::newRow("smollm2 inserts its default system")
        << QString::fromStdString(kSmolLm2Template) << ChatTemplateKind::JINJA << just_user << true
        << "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
           "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n";
    QTest::newRow("smollm2 keeps the user's system")
        << QString::fromStdString(kSmolLm2Template) << ChatTemplateKind::JINJA
        << std::vector<ChatMessage>{{"system", "Be brief."}, {"user", "Hello"}} << true
        << "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n";
    QTest::newRow("chatml keeps whitespace") << "" << ChatTemplateKind::CHATML
                                             << std::vector<ChatMessage>{{"user", " Hi \n"}} << false
                                             << "<|im_start|>user\n Hi \n<|im_end|>\n";
    QTest::newRow("llama3") << "" << ChatTemplateKind::LLAMA3 << conv << true
                            << "<|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
                               "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                               "<|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|>"
                               "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
                               "<|start_header_id|>assistant<|end_header_id|>\n\n";
    QTest::newRow("llama3 trims") << "" << ChatTemplateKind::LLAMA3 << std::vector<ChatMessage>{{"user", "\n Hi  "}}
                                  << false << "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>";
    QTest::newRow("llama2") << "" << ChatTemplateKind::LLAMA2 << conv << true
                            << "[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi [/INST] Hello! </s>"
                               "<s>[INST] Bye [/INST]";
    QTest::newRow("llama2 without system") << "" << ChatTemplateKind::LLAMA2 << just_user << true
                                           << "[INST] Hello [/INST]";
    QTest::newRow("gemma") << "" << ChatTemplateKind::GEMMA << conv << true
                           << "<start_of_turn>user\nYou are terse.\n\nHi<end_of_turn>\n"
                              "<start_of_turn>model\nHello!<end_of_turn>\n"
                              "<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n";
    QTest::newRow("gemma trims") << "" << ChatTemplateKind::GEMMA
                                 << std::vector<ChatMessage>{{"system", " Sys \n"}, {"user", "  Hi \n"}} << false
                                 << "<start_of_turn>user\nSys\n\nHi<end_of_turn>\n";
    QTest::newRow("gemma system alone becomes a user turn")
        << "" << ChatTemplateKind::GEMMA << std::vector<ChatMessage>{{"system", "Sys"}} << true
        << "<start_of_turn>user\nSys<end_of_turn>\n<start_of_turn>model\n";
    QTest::newRow("mistral") << "" << ChatTemplateKind::MISTRAL << conv << true
                             << "[INST] You are terse.\n\nHi[/INST] Hello!</s>[INST] Bye[/INST]";
}

void TestChat::render_gives_exact_prompt() {
    QFETCH(QString, source);
    QFETCH(ChatTemplateKind, kind);
    QFETCH(std::vector<ChatMessage>, messages);
    QFETCH(bool, add_generation_prompt);
    QFETCH(QString, expected);
    const ChatTemplate t = source.isEmpty() ? ChatTemplate::of_kind(kind)
                                          : ChatTemplate::from_jinja(source.toStdString(), "", "");
    QCOMPARE(t.kind(), kind);
    QCOMPARE(QString::fromStdString(t.render(messages, add_generation_prompt)), expected);
}

void TestChat::unknown_role_throws_data() {
    QTest::addColumn<ChatTemplateKind>("kind");
    for (ChatTemplateKind k : {ChatTemplateKind::CHATML, ChatTemplateKind::LLAMA2, ChatTemplateKind::LLAMA3,
                               ChatTemplateKind::GEMMA, ChatTemplateKind::MISTRAL}) {
        QTest::newRow(chat_template_kind_name(k)) << k;
    }
}

void TestChat::unknown_role_throws() {
    QFETCH(ChatTemplateKind, kind);
    const std::vector<ChatMessage> messages = {{"user", "Hi"}, {"tool", "42"}};
    try {
        ChatTemplate::of_kind(kind).render(messages, true);
        QFAIL("an unknown role was rendered");
    } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("\"tool\"") != std::string::npos, e.what());
    }
}

void TestChat::end_of_turn_texts_per_family_data() {
    QTest::addColumn<ChatTemplateKind>("kind");
    QTest::addColumn<QString>("text");
    QTest::newRow("chatml") << ChatTemplateKind::CHATML << "<|im_end|>";
    QTest::newRow("llama3") << ChatTemplateKind::LLAMA3 << "<|eot_id|>";
    QTest::newRow("gemma") << ChatTemplateKind::GEMMA << "<end_of_turn>";
    QTest::newRow("llama2") << ChatTemplateKind::LLAMA2 << "</s>";
    QTest::newRow("mistral") << ChatTemplateKind::MISTRAL << "</s>";
}

void TestChat::end_of_turn_texts_per_family() {
    QFETCH(ChatTemplateKind, kind);
    QFETCH(QString, text);
    const std::vector<std::string> texts = ChatTemplate::of_kind(kind).end_of_turn_texts();
    QCOMPARE(texts.size(), size_t{1});
    QCOMPARE(QString::fromStdString(texts.front()), text);
}

QTEST_GUILESS_MAIN(TestChat)
#include "test_chat.moc"
