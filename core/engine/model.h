#pragma once
// A loaded model: the mapped GGUF file, its hyperparameters, bound weights, tokenizer and chat template.
// Immutable after load, so one Model can serve several sessions.
#include <memory>
#include <string>

#include "chat/chat_template.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"

namespace wb {

class Model {
public:
    // Opens, validates and binds everything; wb::Error with a specific message on any problem.
    static std::unique_ptr<Model> load(const std::string& path);
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
