#pragma once
// What a hostile input costs, measured so that the answer holds under a sanitizer and on a loaded
// machine. A wall-clock bound ("parses in < 1500 ms") measures the machine as much as the code: under
// ASan the code runs several times slower and under load the thread waits for a core. Two things are
// measured instead:
// - the calling thread's own CPU time (CLOCK_THREAD_CPUTIME_ID), which does not grow while the thread
//   waits for a core;
// - how that time grows with the input: the cost per unit at a scale r times larger over the cost per
//   unit at the smaller one. A linear algorithm gives 1 (a little above for n log n), a quadratic one r,
//   whatever the sanitizer's constant factor. The same linear code still varies by up to 2.6x when
//   the larger working set leaves a cache level, so a test's bound sits between that and r.
#include <algorithm>
#include <ctime>
#include <functional>

namespace wb_test {

// How many times slower than a plain Release build this test binary runs: a sanitizer's constant factor
// (ASan + UBSan about 2-5x, TSan 5-15x; 10 covers both). An absolute CPU ceiling times this factor holds
// in every CI pass while still catching a path that became tens of times dearer.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr double kBuildSlowdown = 10.0;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(undefined_behavior_sanitizer)
constexpr double kBuildSlowdown = 10.0;
#else
constexpr double kBuildSlowdown = 1.0;
#endif
#else
constexpr double kBuildSlowdown = 1.0;
#endif

// CPU seconds used by the calling thread so far.
inline double thread_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

// The thread CPU seconds of one call of f.
inline double cpu_seconds_of(const std::function<void()>& f) {
    const double start = thread_cpu_seconds();
    f();
    return thread_cpu_seconds() - start;
}

// The least of `runs` measurements of f: the noise of a shared machine (cache misses caused by other
// processes, page faults) only ever adds time.
inline double min_cpu_seconds_of(int runs, const std::function<void()>& f) {
    double best = cpu_seconds_of(f);
    for (int i = 1; i < runs; ++i) best = std::min(best, cpu_seconds_of(f));
    return best;
}

// How the cost per unit grows from `units_small` to `units_large` units of input: (large_s /
// units_large) / (small_s / units_small). Below `floor_s` a time is mostly clock and cache noise, so the
// small run's time counts as at least floor_s (a tiny small run cannot make a linear large run look
// quadratic; a quadratic path still shows once it costs more than the floor). The floor scales with the
// sanitizer's slowdown: ASan unpoisons the whole stack at every throw, and the Jinja renderer catches
// and rethrows at each macro level (to restore its output), so the recursion-depth limit's error costs
// O(depth^2) there only: a quarter of the depth vs all of it took 0.9 vs 6-8 ms under ASan (0.3 vs
// 1.2 ms, linear, in Release) and failed CI once. The Release pass keeps the 1 ms floor.
inline double cost_growth(double small_s, double units_small, double large_s, double units_large,
                          double floor_s = 1e-3 * kBuildSlowdown) {
    return (large_s / units_large) / (std::max(small_s, floor_s) / units_small);
}

}  // namespace wb_test
