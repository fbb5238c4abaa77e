#include "engine/pass_rows.h"

namespace wb {

void PassAttentionRows::add(const AttentionEvent& e) {
    if (pass_.starts_new_pass(e)) rows_.clear();
    if (e.n_queries <= 0) return;
    const int32_t last = e.n_queries - 1;
    for (size_t h = 0; h < e.heads.size(); ++h) {
        const float* row = &e.probs[(h * size_t(e.n_queries) + size_t(last)) * size_t(e.n_keys)];
        rows_.push_back({e.layer, e.heads[h], std::vector<float>(row, row + e.n_keys)});
    }
}

}  // namespace wb
