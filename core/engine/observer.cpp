#include "engine/observer.h"

#include <algorithm>

namespace wb {

bool CaptureSpec::wants_layer(int32_t il) const {
    return layers.empty() || std::find(layers.begin(), layers.end(), il) != layers.end();
}

bool CaptureSpec::wants_head(int32_t h) const {
    return heads.empty() || std::find(heads.begin(), heads.end(), h) != heads.end();
}

}  // namespace wb
