#pragma once
// Locations the tests need: the committed reference data and the model cache.
#include <string>

#include "model/model_paths.h"

namespace wb_test {

inline std::string reference_dir() { return WB_REFERENCE_DIR; }
inline std::string default_model() { return wb::default_model_path(); }

}  // namespace wb_test
