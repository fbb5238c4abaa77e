#include <functional>

#include "chat/chat_formats.h"
#include "util/error.h"

namespace wb {

namespace {

// A system prompt merged into a user turn is input as a whole: the markers around it (Llama 2's
// <<SYS>>) are plain text in those vocabularies.
// One user or assistant turn after the system prompt was merged into the user turn that follows it.
struct Turn {
    bool is_user;
    std::string content;
};

std::string trim(const std::string& s) {
    constexpr const char* kSpace = " \t\n\r\f\v";
    const size_t begin = s.find_first_not_of(kSpace);
    if (begin == std::string::npos) {
        return {};
    }
    return s.substr(begin, s.find_last_not_of(kSpace) - begin + 1);
}

// For formats without a system role. Several system messages join with a blank line; one that no
// user message follows still becomes a user turn of its own, so the instruction is never lost.
using CombineSystem = std::function<std::string(const std::string& system, const std::string& user)>;

std::vector<Turn> merge_system(const std::vector<ChatMessage>& messages, const CombineSystem& combine) {
    std::vector<Turn> turns;
    std::string system;
    bool has_system = false;
    for (const ChatMessage& m : messages) {
        if (m.role == "system") {
            system += (has_system ? "\n\n" : "") + m.content;
            has_system = true;
        } else if (m.role == "user" && has_system) {
            turns.push_back({true, combine(system, m.content)});
            system.clear();
            has_system = false;
        } else {
            turns.push_back({m.role == "user", m.content});
        }
    }
    if (has_system) {
        turns.push_back({true, combine(system, "")});
    }
    return turns;
}

}  // namespace

void PromptWriter::add(std::string_view s, bool from_input) {
    if (s.empty()) return;
    if (!segments_.empty() && segments_.back().from_input == from_input) {
        segments_.back().text += s;
    } else {
        segments_.push_back({std::string(s), from_input});
    }
}

void check_roles(const std::vector<ChatMessage>& messages) {
    for (const ChatMessage& m : messages) {
        if (m.role != "system" && m.role != "user" && m.role != "assistant") {
            throw Error("chat message has role \"" + m.role + "\"; expected system, user or assistant");
        }
    }
}

// ChatML writes contents verbatim, as SmolLM2's and Qwen2.5's templates do.
std::vector<ChatSegment> render_chatml(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
    PromptWriter out;
    for (const ChatMessage& m : messages) {
        out += "<|im_start|>" + m.role + "\n";
        out.input(m.content);
        out += "<|im_end|>\n";
    }
    if (add_generation_prompt) {
        out += "<|im_start|>assistant\n";
    }
    return out.take();
}

// Meta's Llama 2 chat format, as its Hugging Face template writes it (the tokenizer adds the first
// <s>): "[INST] <<SYS>>\n{system}\n<</SYS>>\n\n{user} [/INST] {assistant} </s><s>[INST] {user} [/INST]".
// llama.cpp's llama2-sys-bos variant is the same without the spaces around the assistant's text; we
// keep Meta's spaces because the model was trained with them. Contents are trimmed as Meta's
// template strips them. The text always ends where the reply begins, so add_generation_prompt
// changes nothing (llama.cpp ignores it for this format too).
std::vector<ChatSegment> render_llama2(const std::vector<ChatMessage>& messages, bool /*add_generation_prompt*/) {
    const auto turns = merge_system(messages, [](const std::string& system, const std::string& user) {
        return "<<SYS>>\n" + trim(system) + "\n<</SYS>>\n\n" + trim(user);
    });
    PromptWriter out;
    for (const Turn& t : turns) {
        if (t.is_user) {
            out += out.empty() ? "[INST] " : "<s>[INST] ";
            out.input(trim(t.content));
            out += " [/INST]";
        } else {
            out += " ";
            out.input(trim(t.content));
            out += " </s>";
        }
    }
    return out.take();
}

// llama.cpp's llama3 format; <|begin_of_text|> is the BOS the tokenizer adds, not template text.
std::vector<ChatSegment> render_llama3(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
    PromptWriter out;
    for (const ChatMessage& m : messages) {
        out += "<|start_header_id|>" + m.role + "<|end_header_id|>\n\n";
        out.input(trim(m.content));
        out += "<|eot_id|>";
    }
    if (add_generation_prompt) {
        out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    }
    return out.take();
}

// Gemma has no system role: the system text opens the first user turn ("{system}\n\n{user}"), the
// assistant is called "model", and contents are trimmed (Gemma 3's own template and llama.cpp agree).
std::vector<ChatSegment> render_gemma(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
    const auto turns = merge_system(messages, [](const std::string& system, const std::string& user) {
        const std::string u = trim(user);
        return u.empty() ? trim(system) : trim(system) + "\n\n" + u;
    });
    PromptWriter out;
    for (const Turn& t : turns) {
        out += std::string("<start_of_turn>") + (t.is_user ? "user" : "model") + "\n";
        out.input(trim(t.content));
        out += "<end_of_turn>\n";
    }
    if (add_generation_prompt) {
        out += "<start_of_turn>model\n";
    }
    return out.take();
}

// Mistral's v3 format (Mistral 7B Instruct v0.3 and llama.cpp's "mistral-v3"):
// "[INST] {system}\n\n{user}[/INST] {assistant}</s>[INST] {user}[/INST]". Only the assistant's text
// is trimmed, as there. Like Llama 2, the text always ends where the reply begins.
std::vector<ChatSegment> render_mistral(const std::vector<ChatMessage>& messages, bool /*add_generation_prompt*/) {
    const auto turns = merge_system(messages, [](const std::string& system, const std::string& user) {
        return user.empty() ? system : system + "\n\n" + user;
    });
    PromptWriter out;
    for (const Turn& t : turns) {
        if (t.is_user) {
            out += "[INST] ";
            out.input(t.content);
            out += "[/INST]";
        } else {
            out += " ";
            out.input(trim(t.content));
            out += "</s>";
        }
    }
    return out.take();
}

}  // namespace wb
