#include "sampling/top_logits.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace wb {

void select_top_logits(const float* logits, int32_t n, int32_t k, int32_t* ids, float* values) {
    k = std::clamp(k, 0, std::max(n, 0));
    if (k == 0) return;
    using Entry = std::pair<float, int32_t>;  // (logit, id)
    // "a ranks higher than b". As the heap's order it keeps the lowest-ranked member on top.
    const auto higher = [](const Entry& a, const Entry& b) {
        return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    std::vector<Entry> heap;
    heap.reserve(size_t(k));
    for (int32_t i = 0; i < n; ++i) {
        const float v = std::isnan(logits[i]) ? -std::numeric_limits<float>::infinity() : logits[i];
        if (int32_t(heap.size()) < k) {
            heap.emplace_back(v, i);
            std::push_heap(heap.begin(), heap.end(), higher);
        } else if (v > heap.front().first) {  // an equal value ranks lower: its index is larger
            std::pop_heap(heap.begin(), heap.end(), higher);
            heap.back() = {v, i};
            std::push_heap(heap.begin(), heap.end(), higher);
        }
    }
    std::sort_heap(heap.begin(), heap.end(), higher);  // ascending in "ranks higher": best first
    for (int32_t j = 0; j < k; ++j) {
        values[j] = heap[size_t(j)].first;
        ids[j] = heap[size_t(j)].second;
    }
}

}  // namespace wb
