#include "chat/chat_template.h"

#include <algorithm>

#include "chat/chat_formats.h"

namespace wb {

const char* chat_template_kind_name(ChatTemplateKind k) {
    switch (k) {
    case ChatTemplateKind::CHATML: return "chatml";
    case ChatTemplateKind::LLAMA2: return "llama2";
    case ChatTemplateKind::LLAMA3: return "llama3";
    case ChatTemplateKind::GEMMA: return "gemma";
    case ChatTemplateKind::MISTRAL: return "mistral";
    }
    return "unknown";
}

// The start of a template for a one-line warning: newlines escaped, cut on a UTF-8 character boundary.
static std::string template_excerpt(const std::string& src) {
    constexpr size_t kMaxBytes = 60;
    size_t end = std::min(src.size(), kMaxBytes);
    while (end > 0 && end < src.size() && (static_cast<unsigned char>(src[end]) & 0xC0) == 0x80) {
        --end;
    }
    std::string out;
    for (size_t i = 0; i < end; ++i) {
        out += src[i] == '\n' ? std::string("\\n") : std::string(1, src[i]);
    }
    return out;
}

ChatTemplate ChatTemplate::detect(const std::string& jinja_source) {
    auto has = [&](const char* marker) { return jinja_source.find(marker) != std::string::npos; };
    ChatTemplate t;
    if (jinja_source.empty()) {
        t.kind_ = ChatTemplateKind::CHATML;
        t.warning_ = "the model has no chat template, using ChatML";
    } else if (has("<|im_start|>")) {
        t.kind_ = ChatTemplateKind::CHATML;
        t.default_system_ = extract_default_system(jinja_source);
    } else if (has("<|start_header_id|>")) {
        t.kind_ = ChatTemplateKind::LLAMA3;
    } else if (has("<start_of_turn>")) {
        t.kind_ = ChatTemplateKind::GEMMA;
    } else if (has("[INST]")) {
        // Meta's Llama 2 template wraps the system prompt in <<SYS>>; Mistral's has no such block.
        t.kind_ = has("<<SYS>>") ? ChatTemplateKind::LLAMA2 : ChatTemplateKind::MISTRAL;
    } else {
        t.kind_ = ChatTemplateKind::CHATML;
        t.warning_ = "unknown chat template (first 60 chars: " + template_excerpt(jinja_source) + "), using ChatML";
    }
    return t;
}

ChatTemplate ChatTemplate::of_kind(ChatTemplateKind kind) {
    ChatTemplate t;
    t.kind_ = kind;
    return t;
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
    check_roles(messages);
    switch (kind_) {
    case ChatTemplateKind::CHATML: return render_chatml(messages, add_generation_prompt, default_system_);
    case ChatTemplateKind::LLAMA2: return render_llama2(messages, add_generation_prompt);
    case ChatTemplateKind::LLAMA3: return render_llama3(messages, add_generation_prompt);
    case ChatTemplateKind::GEMMA: return render_gemma(messages, add_generation_prompt);
    case ChatTemplateKind::MISTRAL: return render_mistral(messages, add_generation_prompt);
    }
    return {};
}

std::vector<std::string> ChatTemplate::end_of_turn_texts() const {
    switch (kind_) {
    case ChatTemplateKind::CHATML: return {"<|im_end|>"};
    case ChatTemplateKind::LLAMA3: return {"<|eot_id|>"};
    case ChatTemplateKind::GEMMA: return {"<end_of_turn>"};
    case ChatTemplateKind::LLAMA2:
    case ChatTemplateKind::MISTRAL: return {"</s>"};
    }
    return {};
}

}  // namespace wb
