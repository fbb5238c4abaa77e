#include "chat/chat_template.h"

#include <algorithm>
#include <cctype>

#include "chat/chat_formats.h"
#include "util/error.h"

namespace wb {

namespace {

constexpr ChatTemplateKind kBuiltins[] = {ChatTemplateKind::CHATML, ChatTemplateKind::LLAMA2, ChatTemplateKind::LLAMA3,
                                          ChatTemplateKind::GEMMA, ChatTemplateKind::MISTRAL};

// What a built-in format can read of a message: role and content, both strings.
std::vector<ChatMessage> plain_messages(const jinja::Value& messages) {
    if (!messages.is_list()) throw Error("chat messages must be a list of {\"role\", \"content\"} objects");
    std::vector<ChatMessage> out;
    for (const jinja::Value& m : messages.items()) {
        const jinja::Value* role = m.is_dict() ? m.dict().find("role") : nullptr;
        const jinja::Value* content = m.is_dict() ? m.dict().find("content") : nullptr;
        if (!role || !role->is_string() || (content && !content->is_string() && !content->is_none()))
            throw Error("a built-in chat format needs each message as {\"role\": string, \"content\": string}");
        out.push_back({role->str(), content && content->is_string() ? content->str() : std::string()});
    }
    return out;
}

}  // namespace

const char* chat_template_kind_name(ChatTemplateKind k) {
    switch (k) {
    case ChatTemplateKind::CHATML: return "chatml";
    case ChatTemplateKind::LLAMA2: return "llama2";
    case ChatTemplateKind::LLAMA3: return "llama3";
    case ChatTemplateKind::GEMMA: return "gemma";
    case ChatTemplateKind::MISTRAL: return "mistral";
    case ChatTemplateKind::JINJA: return "jinja";
    }
    return "unknown";
}

std::optional<ChatTemplateKind> builtin_chat_format(std::string_view name) {
    for (ChatTemplateKind k : kBuiltins)
        if (name == chat_template_kind_name(k)) return k;
    return std::nullopt;
}

std::string builtin_chat_format_names() {
    std::string out;
    for (ChatTemplateKind k : kBuiltins) out += std::string(out.empty() ? "" : ", ") + chat_template_kind_name(k);
    return out;
}

jinja::Value chat_messages_value(const std::vector<ChatMessage>& messages) {
    std::vector<jinja::Value> list;
    for (const ChatMessage& m : messages)
        list.emplace_back(jinja::Dict{{jinja::Value("role"), jinja::Value(m.role)},
                                      {jinja::Value("content"), jinja::Value(m.content)}});
    return jinja::Value(std::move(list));
}

ChatTemplate ChatTemplate::from_jinja(const std::string& source, std::string bos_token, std::string eos_token) {
    ChatTemplate t;
    t.kind_ = ChatTemplateKind::JINJA;
    t.source_ = source;
    t.bos_token_ = std::move(bos_token);
    t.eos_token_ = std::move(eos_token);
    try {
        t.jinja_ = jinja::Template::parse(source);
    } catch (const Error& e) {
        throw Error(std::string("the chat template cannot be parsed: ") + e.what());
    }
    return t;
}

ChatTemplate ChatTemplate::of_kind(ChatTemplateKind kind) {
    if (kind == ChatTemplateKind::JINJA) throw Error("a Jinja chat template needs its source (ChatTemplate::from_jinja)");
    ChatTemplate t;
    t.kind_ = kind;
    return t;
}

ChatTemplate ChatTemplate::unusable(const std::string& source, std::string error) {
    ChatTemplate t;
    t.kind_ = ChatTemplateKind::JINJA;
    t.source_ = source;
    t.error_ = std::move(error);
    t.warning_ = t.error_;
    return t;
}

std::string ChatTemplate::description() const {
    if (!error_.empty()) return "Jinja template (unusable: it does not parse)";
    if (kind_ == ChatTemplateKind::JINJA) return "Jinja template";
    return std::string("built-in ") + chat_template_kind_name(kind_);
}

std::string join_segments(const std::vector<ChatSegment>& segments) {
    std::string out;
    for (const ChatSegment& s : segments) out += s.text;
    return out;
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
    return join_segments(render_segments(messages, add_generation_prompt));
}

std::string ChatTemplate::render(const jinja::Value& messages, const jinja::Value& tools,
                                 bool add_generation_prompt) const {
    return join_segments(render_segments(messages, tools, add_generation_prompt));
}

std::vector<ChatSegment> ChatTemplate::render_segments(const std::vector<ChatMessage>& messages,
                                                       bool add_generation_prompt) const {
    if (kind_ == ChatTemplateKind::JINJA)
        return render_segments(chat_messages_value(messages), jinja::Value::none(), add_generation_prompt);
    check_roles(messages);
    switch (kind_) {
    case ChatTemplateKind::CHATML: return render_chatml(messages, add_generation_prompt);
    case ChatTemplateKind::LLAMA2: return render_llama2(messages, add_generation_prompt);
    case ChatTemplateKind::LLAMA3: return render_llama3(messages, add_generation_prompt);
    case ChatTemplateKind::GEMMA: return render_gemma(messages, add_generation_prompt);
    case ChatTemplateKind::MISTRAL: return render_mistral(messages, add_generation_prompt);
    case ChatTemplateKind::JINJA: break;
    }
    return {};
}

namespace {

// A role as templates splice it into their markers ('<|' + role + '|>' in Phi-4-mini and GLM-4):
// letters, digits, '_' and '-', so that it can carry no special-token text of its own.
bool is_plain_role(const std::string& r) {
    if (r.empty() || r.size() > 64) return false;
    for (char c : r)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
    return true;
}

// The messages as input, except a plain role: a template that builds a control token from its role
// ('<|' + role + '|>') must get llama.cpp's single token, not the text split around an input mark.
// Any other role is refused: it could only be a way to smuggle markup into the template's text.
jinja::Value mark_messages(const jinja::Value& messages) {
    const jinja::Value marked = jinja::mark_input(messages);
    if (!marked.is_list()) return marked;
    std::vector<jinja::Value> out;
    for (const jinja::Value& m : marked.items()) {
        const jinja::Value* role = m.is_dict() ? m.dict().find("role") : nullptr;
        if (!role || !role->is_string()) {
            out.push_back(m);
            continue;
        }
        if (!is_plain_role(role->str()))
            throw Error("a message's role must be letters, digits, '_' or '-' (got '" + role->str().substr(0, 40) + "')");
        jinja::Dict d = m.dict();
        d.set(jinja::Value("role"), jinja::Value(std::string(role->str())));
        out.emplace_back(std::move(d));
    }
    return jinja::Value(std::move(out));
}

}  // namespace

std::vector<ChatSegment> ChatTemplate::render_segments(const jinja::Value& messages, const jinja::Value& tools,
                                                       bool add_generation_prompt) const {
    if (kind_ != ChatTemplateKind::JINJA) return render_segments(plain_messages(messages), add_generation_prompt);
    if (!jinja_) throw Error(error_);
    // apply_chat_template's variables: render(messages=..., tools=..., documents=...,
    // add_generation_prompt=..., **special_tokens_map), the special tokens as strings. Messages and
    // tools are the caller's input; bos_token and eos_token are ours, so their text may be special.
    jinja::Dict context{{jinja::Value("messages"), mark_messages(messages)},
                        {jinja::Value("tools"), tools.is_undefined() ? jinja::Value::none() : jinja::mark_input(tools)},
                        {jinja::Value("documents"), jinja::Value::none()},
                        {jinja::Value("add_generation_prompt"), jinja::Value(add_generation_prompt)},
                        {jinja::Value("bos_token"), jinja::Value(bos_token_)},
                        {jinja::Value("eos_token"), jinja::Value(eos_token_)}};
    try {
        return jinja_->render_segments(jinja::Value(std::move(context)));
    } catch (const jinja::TemplateRaised& e) {
        throw Error(std::string("the chat template refused the conversation: ") + e.what());
    } catch (const Error& e) {
        throw Error(std::string("the chat template failed: ") + e.what());
    }
}

std::vector<std::string> ChatTemplate::end_of_turn_texts() const {
    switch (kind_) {
    case ChatTemplateKind::CHATML: return {"<|im_end|>"};
    case ChatTemplateKind::LLAMA3: return {"<|eot_id|>"};
    case ChatTemplateKind::GEMMA: return {"<end_of_turn>"};
    case ChatTemplateKind::LLAMA2:
    case ChatTemplateKind::MISTRAL: return {"</s>"};
    case ChatTemplateKind::JINJA: break;
    }
    // A Jinja template ends turns with whichever of the common markers it writes, or the EOS text.
    std::vector<std::string> texts;
    for (const char* marker : {"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<end_of_turn>", "<|end|>"})
        if (source_.find(marker) != std::string::npos) texts.emplace_back(marker);
    if (!eos_token_.empty() && std::find(texts.begin(), texts.end(), eos_token_) == texts.end())
        texts.push_back(eos_token_);
    return texts;
}

}  // namespace wb
