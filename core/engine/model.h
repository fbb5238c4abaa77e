#pragma once
// A loaded model: the mapped GGUF file, its hyperparameters, bound weights, tokenizer and chat template.
// Immutable after load, so one Model can serve several sessions.
#include <memory>
#include <optional>
#include <string>

#include "chat/chat_template.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

namespace wb {

// Which chat template a model uses. By default the file's own tokenizer.chat_template; a file
// without one gets the built-in format of its family (Gemma by its turn markers, else ChatML).
struct ChatTemplateChoice {
    std::string jinja_source;                 // non-empty: this template instead of the file's
    std::string jinja_origin;                 // where it came from, for messages (a file name)
    std::optional<ChatTemplateKind> builtin;  // a built-in format instead of any template
};

// The template load() would pick for this file and vocabulary (info describes files without loading them).
ChatTemplate choose_chat_template(const GgufFile& file, const Tokenizer& tok, const ChatTemplateChoice& chat = {});

class Model {
public:
    // Opens, validates and binds everything; wb::Error with a specific message on any problem. A
    // chat template that does not parse does not stop the load: chat_template().error() says why,
    // and rendering with it throws that message.
    static std::unique_ptr<Model> load(const std::string& path, const ChatTemplateChoice& chat = {});
    // Why an opened file cannot be run (the first check of load() that fails: architecture and
    // hyperparameters, tensors, tokenizer), or an empty string when it can. For listings (info, the
    // Models dialog) that describe files without loading them.
    static std::string check(const GgufFile& file);

    const GgufFile& file() const { return *file_; }
    const ModelConfig& config() const { return config_; }
    const ModelWeights& weights() const { return weights_; }
    const Tokenizer& tokenizer() const { return *tokenizer_; }
    const ChatTemplate& chat_template() const { return chat_template_; }
    // general.name, else the file name.
    std::string display_name() const;

private:
    Model() = default;
    std::unique_ptr<GgufFile> file_;
    ModelConfig config_;
    ModelWeights weights_;
    std::unique_ptr<Tokenizer> tokenizer_;
    ChatTemplate chat_template_;
};

}  // namespace wb
