#include "sampling/top_logits.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace wb {

namespace {

constexpr int32_t kRun = 16;

using Entry = std::pair<float, int32_t>;  // (logit, id)

// "a ranks higher than b": the order of the selected logits.
bool ranks_higher(const Entry& a, const Entry& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); }

// Whether any of v[0..kRun) is above bound (NaN never is). Compilers do not vectorise this test on
// their own without fast-math, and it is the whole cost of a scan.
bool run_beats(const float* v, float bound) {
#if defined(__SSE2__)
    const __m128 b = _mm_set1_ps(bound);
    const __m128 above = _mm_or_ps(_mm_or_ps(_mm_cmpgt_ps(_mm_loadu_ps(v), b), _mm_cmpgt_ps(_mm_loadu_ps(v + 4), b)),
                                   _mm_or_ps(_mm_cmpgt_ps(_mm_loadu_ps(v + 8), b), _mm_cmpgt_ps(_mm_loadu_ps(v + 12), b)));
    return _mm_movemask_ps(above) != 0;
#else
    bool any = false;
    for (int32_t j = 0; j < kRun; ++j) any |= v[j] > bound;
    return any;
#endif
}

}  // namespace

void select_top_logits(const float* logits, int32_t n, int32_t k, int32_t* ids, float* values) {
    k = std::clamp(k, 0, std::max(n, 0));
    if (k == 0) return;
    // As the heap's order, ranks_higher keeps the lowest-ranked member on top.
    const auto higher = ranks_higher;
    const auto sampler_value = [](float v) { return std::isnan(v) ? -std::numeric_limits<float>::infinity() : v; };
    std::vector<Entry> heap;
    heap.reserve(size_t(k));
    for (int32_t i = 0; i < k; ++i) heap.emplace_back(sampler_value(logits[i]), i);
    std::make_heap(heap.begin(), heap.end(), higher);
    // Only a value above the weakest member gets in (an equal one ranks lower: its index is larger;
    // NaN, as -inf, never does). Runs of 16 are tested against that bound first: on a model's
    // distribution almost none pass, and the scan runs at the speed of the loads.
    float bound = heap.front().first;
    const auto offer = [&](int32_t i) {
        const float v = logits[i];
        if (!(v > bound)) return;
        std::pop_heap(heap.begin(), heap.end(), higher);
        heap.back() = {v, i};
        std::push_heap(heap.begin(), heap.end(), higher);
        bound = heap.front().first;
    };
    int32_t i = k;
    for (; i + kRun <= n; i += kRun) {
        if (run_beats(logits + i, bound))
            for (int32_t j = 0; j < kRun; ++j) offer(i + j);
    }
    for (; i < n; ++i) offer(i);
    std::sort_heap(heap.begin(), heap.end(), higher);  // ascending in "ranks higher": best first
    for (int32_t j = 0; j < k; ++j) {
        values[j] = heap[size_t(j)].first;
        ids[j] = heap[size_t(j)].second;
    }
}

int32_t first_max_index(const float* logits, int32_t n) {
    int32_t id = 0;
    float value = 0.0f;
    select_top_logits(logits, n, 1, &id, &value);
    return id;
}

void order_top_logits(int32_t* ids, float* values, int32_t k) {
    std::vector<Entry> top(static_cast<size_t>(std::max(k, 0)));
    for (int32_t i = 0; i < k; ++i) top[size_t(i)] = {values[i], ids[i]};
    std::sort(top.begin(), top.end(), ranks_higher);
    for (int32_t i = 0; i < k; ++i) {
        values[i] = top[size_t(i)].first;
        ids[i] = top[size_t(i)].second;
    }
}

}  // namespace wb
