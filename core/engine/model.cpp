#include "engine/model.h"

#include "util/error.h"

namespace wb {

std::unique_ptr<Model> Model::load(const std::string& path) {
    std::unique_ptr<Model> m(new Model());
    m->file_ = GgufFile::open(path);
    try {
        m->config_ = ModelConfig::from_gguf(*m->file_);
        m->weights_ = bind_weights(*m->file_, m->config_);
        m->tokenizer_ = Tokenizer::from_gguf(*m->file_);
    } catch (const Error& e) {
        throw Error(path + ": " + e.what());
    }
    const std::string jinja = m->file_->get_string("tokenizer.chat_template").value_or("");
    // Some files (e.g. base Gemma 3 checkpoints) carry no template; their vocabulary still names the
    // turn markers of their family, which is a better guess than ChatML.
    if (jinja.empty() && m->tokenizer_->find_token("<start_of_turn>"))
        m->chat_template_ = ChatTemplate::of_kind(ChatTemplateKind::GEMMA);
    else
        m->chat_template_ = ChatTemplate::detect(jinja);
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
