// whitebox-cli template: render a chat template on a conversation from a JSON file and print exactly
// the text, so that it can be compared byte for byte with Hugging Face's apply_chat_template.
#include <cstdio>

#include "chat/jinja/json.h"
#include "cli/commands.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace wb::cli {

namespace {

// The template to render: --template FILE alone needs no model (bos/eos empty unless given);
// otherwise the model's choice (its own template, --template/--chat-template or --chat-format), with
// bos/eos the vocabulary's texts unless given.
ChatTemplate template_for(const CliOptions& o) {
    const ChatTemplateChoice choice = chat_template_choice(o);
    if (!choice.jinja_source.empty() && o.model.empty()) {
        try {
            return ChatTemplate::from_jinja(choice.jinja_source, o.bos_token.value_or(""), o.eos_token.value_or(""));
        } catch (const Error& e) {
            throw Error(choice.jinja_origin + ": " + e.what());
        }
    }
    const auto file = GgufFile::open(resolve_model_path(o), GgufTensorData::MAY_BE_TRUNCATED);
    const auto tok = Tokenizer::from_gguf(*file);
    ChatTemplate t = choose_chat_template(*file, *tok, choice);
    require_chat_template(t);
    if (t.kind() != ChatTemplateKind::JINJA || (!o.bos_token && !o.eos_token)) return t;
    return ChatTemplate::from_jinja(t.source(), o.bos_token.value_or(t.bos_token()), o.eos_token.value_or(t.eos_token()));
}

jinja::Value json_file(const std::string& path) {
    try {
        return jinja::parse_json(read_text_file(path));
    } catch (const Error& e) {
        throw Error(path + ": " + e.what());
    }
}

// main() prints an error as one line; a template's own message may hold newlines.
std::string one_line(std::string s) {
    for (char& c : s)
        if (c == '\n' || c == '\r') c = ' ';
    return s;
}

}  // namespace

int cmd_template(const CliOptions& o) {
    std::string text;
    try {
        const ChatTemplate t = template_for(o);
        const jinja::Value messages = json_file(o.messages_file);
        const jinja::Value tools = o.tools_file.empty() ? jinja::Value::none() : json_file(o.tools_file);
        text = t.render(messages, tools, o.add_generation_prompt);
    } catch (const std::exception& e) {
        throw Error(one_line(e.what()));
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
}

}  // namespace wb::cli
