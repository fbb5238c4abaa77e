#include "engine/model.h"

#include "util/error.h"

namespace wb {

namespace {

// The text a template receives as bos_token / eos_token: the token's text as stored (HF passes the
// tokenizer's special-token strings).
std::string special_text(const Tokenizer& tok, int32_t id) { return id >= 0 ? tok.token_text(id) : std::string(); }

}  // namespace

ChatTemplate choose_chat_template(const GgufFile& file, const Tokenizer& tok, const ChatTemplateChoice& chat) {
    if (chat.builtin) return ChatTemplate::of_kind(*chat.builtin);
    const bool given = !chat.jinja_source.empty();
    const std::string source = given ? chat.jinja_source : file.get_string("tokenizer.chat_template").value_or("");
    if (source.empty()) {
        // Some files (e.g. base Gemma 3 checkpoints) carry no template; their vocabulary still names the
        // turn markers of their family, which is a better guess than ChatML.
        const ChatTemplateKind kind = tok.find_token("<start_of_turn>") ? ChatTemplateKind::GEMMA : ChatTemplateKind::CHATML;
        ChatTemplate t = ChatTemplate::of_kind(kind);
        t.set_warning(std::string("the model has no chat template; using the built-in ") + chat_template_kind_name(kind) +
                      " format");
        return t;
    }
    try {
        return ChatTemplate::from_jinja(source, special_text(tok, tok.bos_id()), special_text(tok, tok.eos_id()));
    } catch (const Error& e) {
        const std::string origin = given ? (chat.jinja_origin.empty() ? "the given template" : chat.jinja_origin)
                                         : "the model's tokenizer.chat_template";
        return ChatTemplate::unusable(source, origin + ": " + e.what());
    }
}

std::unique_ptr<Model> Model::load(const std::string& path, const ChatTemplateChoice& chat) {
    std::unique_ptr<Model> m(new Model());
    m->file_ = GgufFile::open(path);
    try {
        m->config_ = ModelConfig::from_gguf(*m->file_);
        m->weights_ = bind_weights(*m->file_, m->config_);
        m->tokenizer_ = Tokenizer::from_gguf(*m->file_);
    } catch (const Error& e) {
        throw Error(path + ": " + e.what());
    }
    m->chat_template_ = choose_chat_template(*m->file_, *m->tokenizer_, chat);
    return m;
}

std::string Model::check(const GgufFile& file) {
    try {
        const ModelConfig config = ModelConfig::from_gguf(file);
        bind_weights(file, config);
        Tokenizer::from_gguf(file);
    } catch (const std::exception& e) {  // wb::Error, or bad_alloc on an absurd vocabulary
        return e.what();
    }
    return {};
}

std::string Model::display_name() const {
    if (!config_.name.empty()) return config_.name;
    const std::string& p = file_->path();
    const auto slash = p.find_last_of('/');
    return slash == std::string::npos ? p : p.substr(slash + 1);
}

}  // namespace wb
