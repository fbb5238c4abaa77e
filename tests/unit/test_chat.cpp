// Chat templates: family detection from Jinja sources, exact rendered prompts per family, and the
// default system prompt read out of ChatML templates such as SmolLM2's.
#include <QtTest>

#include "chat/chat_template.h"
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

const std::string kSmolLm2System = "You are a helpful AI assistant named SmolLM, trained by Hugging Face";

// Qwen2.5-Instruct's template, shortened: the tools branch opens the system turn in one literal
// and writes the default in another; the plain branch has the whole turn in one literal. Written
// with the two-character escape \n, as templates copied from JSON sometimes are.
const std::string kQwenTemplate =
    "{%- if tools %}{{- '<|im_start|>system\\n' }}{%- if messages[0]['role'] == 'system' %}"
    "{{- messages[0]['content'] }}{%- else %}"
    "{{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}{%- endif %}"
    "{%- else %}{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}{%- else %}"
    "{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}{%- endif %}";

const std::string kPlainChatMl =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
    "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

std::vector<ChatMessage> full_conversation() {
    return {{"system", "You are terse."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Bye"}};
}

}  // namespace

class TestChat : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void detect_recognises_family_data();
    void detect_recognises_family();
    void unknown_template_warning_shows_one_line_excerpt();
    void default_system_is_read_from_chatml_template_data();
    void default_system_is_read_from_chatml_template();
    void render_gives_exact_prompt_data();
    void render_gives_exact_prompt();
    void unknown_role_throws_data();
    void unknown_role_throws();
    void end_of_turn_texts_per_family_data();
    void end_of_turn_texts_per_family();
};

void TestChat::detect_recognises_family_data() {
    QTest::addColumn<QString>("source");
    QTest::addColumn<ChatTemplateKind>("kind");
    QTest::addColumn<bool>("warns");

    QTest::newRow("smollm2 chatml") << QString::fromStdString(kSmolLm2Template) << ChatTemplateKind::CHATML << false;
    QTest::newRow("llama3") << "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
                               "+ message['content'] | trim + '<|eot_id|>' %}"
                            << ChatTemplateKind::LLAMA3 << false;
    QTest::newRow("gemma") << "{{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else '') }}"
                              "{{ message['content'] | trim }}{{ '<end_of_turn>\\n' }}"
                           << ChatTemplateKind::GEMMA << false;
    QTest::newRow("llama2") << "{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + "
                               "system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% endif %}"
                               "{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
                            << ChatTemplateKind::LLAMA2 << false;
    QTest::newRow("mistral") << "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + '[/INST]' }}"
                                "{% elif message['role'] == 'assistant' %}{{ ' ' + message['content'] + eos_token }}"
                                "{% endif %}"
                             << ChatTemplateKind::MISTRAL << false;
    QTest::newRow("unknown") << "{% for m in messages %}{{ m['role'] + ': ' + m['content'] }}{% endfor %}"
                             << ChatTemplateKind::CHATML << true;
    QTest::newRow("empty") << "" << ChatTemplateKind::CHATML << true;
}

void TestChat::detect_recognises_family() {
    QFETCH(QString, source);
    QFETCH(ChatTemplateKind, kind);
    QFETCH(bool, warns);
    const ChatTemplate t = ChatTemplate::detect(source.toStdString());
    QCOMPARE(t.kind(), kind);
    QCOMPARE(!t.warning().empty(), warns);
}

void TestChat::unknown_template_warning_shows_one_line_excerpt() {
    const std::string source = "{% for m in messages %}\n{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
                               "{{ 'a long tail that the warning must not show' }}";
    const std::string warning = ChatTemplate::detect(source).warning();
    QVERIFY2(warning.find("unknown chat template (first 60 chars: {% for m in messages %}\\n{{ m['role'] }}") == 0,
             warning.c_str());
    QVERIFY(warning.find("using ChatML") != std::string::npos);
    QVERIFY(warning.find('\n') == std::string::npos);
    QVERIFY(warning.find("long tail") == std::string::npos);
}

void TestChat::default_system_is_read_from_chatml_template_data() {
    QTest::addColumn<QString>("source");
    QTest::addColumn<QString>("expected");

    QTest::newRow("smollm2, real newlines") << QString::fromStdString(kSmolLm2Template)
                                            << QString::fromStdString(kSmolLm2System);
    QString escaped = QString::fromStdString(kSmolLm2Template);
    escaped.replace("\n", "\\n");
    QTest::newRow("smollm2, escaped newlines") << escaped << QString::fromStdString(kSmolLm2System);
    QTest::newRow("qwen2.5") << QString::fromStdString(kQwenTemplate)
                             << "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";
    QTest::newRow("plain chatml has none") << QString::fromStdString(kPlainChatMl) << "";
    // Text outside tags is output verbatim; its apostrophe must not start a literal.
    QTest::newRow("apostrophe outside tags, delimiters inside literal")
        << "Don't panic {{ \"<|im_start|>system\\nSay \\\"}}\\\" and don't stop<|im_end|>\\n\" }}"
        << "Say \"}}\" and don't stop";
    QTest::newRow("literal in a comment is ignored")
        << "{# '<|im_start|>system\nold<|im_end|>' #}{{ '<|im_start|>user\n' }}" << "";
}

void TestChat::default_system_is_read_from_chatml_template() {
    QFETCH(QString, source);
    QFETCH(QString, expected);
    const ChatTemplate t = ChatTemplate::detect(source.toStdString());
    QCOMPARE(t.kind(), ChatTemplateKind::CHATML);
    QCOMPARE(QString::fromStdString(t.default_system()), expected);
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
        << QString::fromStdString(kSmolLm2Template) << ChatTemplateKind::CHATML << just_user << true
        << "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
           "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n";
    QTest::newRow("smollm2 keeps the user's system")
        << QString::fromStdString(kSmolLm2Template) << ChatTemplateKind::CHATML
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
    const ChatTemplate t = source.isEmpty() ? ChatTemplate::of_kind(kind) : ChatTemplate::detect(source.toStdString());
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
