#pragma once
// Where models live: $WHITEBOX_MODELS, else ~/.cache/whitebox/models (the cache fetch-models.sh fills).
#include <string>

namespace wb {

std::string models_dir();
// File name of the default model (SmolLM2-135M-Instruct Q4_1) inside models_dir().
const char* default_model_file();
std::string default_model_path();

}  // namespace wb
