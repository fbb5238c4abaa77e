#include "model/model_paths.h"

#include <cstdlib>

namespace wb {

std::string models_dir() {
    if (const char* env = std::getenv("WHITEBOX_MODELS"); env && *env) return env;
    const char* home = std::getenv("HOME");
    return std::string(home && *home ? home : ".") + "/.cache/whitebox/models";
}

const char* default_model_file() { return "SmolLM2-135M-Instruct.Q4_1.gguf"; }

std::string default_model_path() { return models_dir() + "/" + default_model_file(); }

}  // namespace wb
