#include "util/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WB_CPU_RELAX() _mm_pause()
#else
#define WB_CPU_RELAX() std::this_thread::yield()
#endif

namespace wb {

namespace {
// Roughly 50-100 microseconds of spinning: longer than the gap between two matmuls of a decode step,
// far shorter than the gap between two user requests.
constexpr int kSpinIterations = 20000;
// While waiting for the last tasks, spin this long before yielding the core to whoever needs it.
constexpr int kSpinBeforeYield = 2000;

uint32_t generation_of(uint64_t w) { return uint32_t(w >> 32); }
// Task index of a closed generation: above every real index, so nobody claims anything from it.
constexpr uint32_t kClosed = 0xffffffffu;
}  // namespace

int ThreadPool::default_threads() {
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : int(hw);
}

ThreadPool::ThreadPool(int n_threads) {
    n_threads_ = n_threads > 0 ? n_threads : default_threads();
    for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { worker_main(t); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        quit_.store(true);
        work_.fetch_add(uint64_t(1) << 32);
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
}

void ThreadPool::run_tasks(uint32_t gen, int thread) {
    // The tasks this thread finished, published when it finds no more to claim: one increment of the
    // shared counter per thread and loop instead of one per task (each is a cache line moving between
    // cores). The loop cannot end while a claimed task runs anyway, so a thread descheduled mid-task
    // holds it up no longer than before; only between its last task and the publication it does.
    int64_t finished = 0;
    for (;;) {
        uint64_t w = work_.load(std::memory_order_acquire);
        if (generation_of(w) != gen) break;
        const int64_t task = int64_t(w & 0xffffffffu);
        if (task >= n_tasks_.load(std::memory_order_relaxed)) break;
        // Claiming succeeds only while this generation is current, so fn_ is still this loop's.
        if (!work_.compare_exchange_weak(w, w + 1, std::memory_order_acq_rel)) continue;
        (*fn_)(task, thread);
        ++finished;
    }
    if (finished > 0) done_.fetch_add(finished, std::memory_order_release);
}

void ThreadPool::worker_main(int thread) {
    uint32_t seen = 0;
    for (;;) {
        uint32_t gen = generation_of(work_.load(std::memory_order_acquire));
        for (int i = 0; gen == seen && i < kSpinIterations; ++i) {
            WB_CPU_RELAX();
            gen = generation_of(work_.load(std::memory_order_acquire));
        }
        if (gen == seen) {
            std::unique_lock<std::mutex> lock(mutex_);
            sleepers_.fetch_add(1);
            wake_.wait(lock, [&] { return generation_of(work_.load()) != seen; });
            sleepers_.fetch_sub(1);
            gen = generation_of(work_.load(std::memory_order_acquire));
        }
        seen = gen;
        if (quit_.load()) return;
        run_tasks(gen, thread);
    }
}

void ThreadPool::parallel_for(int64_t n_tasks, const std::function<void(int64_t, int)>& fn) {
    if (n_tasks <= 0) return;
    if (n_threads_ == 1 || n_tasks == 1) {
        for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
        return;
    }
    // Task indices live in the low 32 bits of work_; split absurdly large loops.
    if (n_tasks >= int64_t(kClosed)) {
        for (int64_t off = 0; off < n_tasks; off += kClosed - 1)
            parallel_for(std::min<int64_t>(kClosed - 1, n_tasks - off), [&](int64_t t, int th) { fn(off + t, th); });
        return;
    }
    // Close the previous loop before touching the loop data: a worker of the previous generation may
    // have read an old claim word and be about to compare-and-swap it; with work_ changed first, that
    // swap fails instead of claiming a task of this loop under the old bookkeeping (which ran tasks twice).
    const uint32_t closed = generation_of(work_.load()) + 1;
    work_.store((uint64_t(closed) << 32) | kClosed);
    fn_ = &fn;
    n_tasks_.store(n_tasks, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    const uint32_t gen = closed + 1;
    // seq_cst store and load: pairs with the sleepers' increment-then-check (a store-load fence).
    work_.store(uint64_t(gen) << 32);
    if (sleepers_.load() > 0) {
        // The lock pairs with the sleepers' predicate check so no wake-up is lost.
        std::lock_guard<std::mutex> lock(mutex_);
        wake_.notify_all();
    }
    run_tasks(gen, 0);
    for (int spins = 0; done_.load(std::memory_order_acquire) != n_tasks; ++spins) {
        if (spins < kSpinBeforeYield) WB_CPU_RELAX();
        else std::this_thread::yield();
    }
    fn_ = nullptr;
}

}  // namespace wb
