#pragma once
// A fixed pool of worker threads for data-parallel loops (matmul rows, attention heads).
//
// Decode runs a few hundred short parallel loops per token, so waking sleeping threads through a
// condition variable each time would cost more than the work. Workers therefore spin for a short while
// on an atomic before they fall back to sleeping, and the calling thread takes part in every loop.
//
// Tasks are claimed from one atomic word that holds (generation << 32 | next task), and completion is
// counted per task, not per worker: a loop ends as soon as its tasks are done, even if a worker was
// descheduled and never showed up (which happens whenever other programs keep the cores busy).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace wb {

class ThreadPool {
public:
    // n_threads counts the calling thread; 0 means "all hardware threads".
    explicit ThreadPool(int n_threads = 0);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Calls fn(task, thread) for task in [0, n_tasks); tasks are handed out dynamically, so uneven
    // tasks balance. Returns when all are done. Not re-entrant; call from one thread at a time.
    void parallel_for(int64_t n_tasks, const std::function<void(int64_t task, int thread)>& fn);

    static int default_threads();

private:
    void worker_main(int thread);
    // Claims and runs tasks of generation gen until none are left or the generation moved on.
    void run_tasks(uint32_t gen, int thread);

    int n_threads_ = 1;
    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<int> sleepers_{0};
    std::atomic<uint64_t> work_{0};     // generation << 32 | next task index
    std::atomic<int64_t> n_tasks_{0};
    std::atomic<int64_t> done_{0};      // tasks of the current generation finished
    std::atomic<bool> quit_{false};
    const std::function<void(int64_t, int)>* fn_ = nullptr;
};

}  // namespace wb
