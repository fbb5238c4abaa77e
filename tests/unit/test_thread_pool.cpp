// ThreadPool::parallel_for: every task runs exactly once on a valid thread, many back-to-back loops
// never hang (no lost wake-up between spinning and sleeping), results do not depend on the thread
// count, and an idle pool shuts down cleanly.
#include <QtTest>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "util/thread_pool.h"

namespace {

// A per-task value whose floating-point sum depends on summation order, so a reduction that is not
// done in task order would show up as a bit difference.
double task_value(int64_t task) { return 1.0 / double(task + 1) + double(task % 7) * 1e-9; }

// Runs n_tasks tasks on the pool and reports whether each ran exactly once on a valid thread index.
bool covers_each_task_once(wb::ThreadPool& pool, int64_t n_tasks) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n_tasks));
    std::atomic<bool> bad_thread{false};
    pool.parallel_for(n_tasks, [&](int64_t task, int thread) {
        if (thread < 0 || thread >= pool.size()) bad_thread.store(true);
        hits[size_t(task)].fetch_add(1, std::memory_order_relaxed);
    });
    for (const auto& h : hits)
        if (h.load() != 1) return false;
    return !bad_thread.load();
}

}  // namespace

class TestThreadPool : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void parallel_for_runs_every_task_exactly_once();
    void parallel_for_runs_every_task_exactly_once_data();
    void thousands_of_back_to_back_loops_complete();
    void thousands_of_back_to_back_loops_complete_data();
    void loop_after_workers_fell_asleep_completes();
    void results_are_identical_for_every_thread_count();
    void zero_or_negative_task_count_calls_nothing();
    void size_counts_the_calling_thread();
    void idle_pool_is_destroyed_promptly();
};

void TestThreadPool::parallel_for_runs_every_task_exactly_once_data() {
    QTest::addColumn<int>("threads");
    QTest::addColumn<qint64>("n_tasks");
    for (int threads : {1, 2, 4})
        for (qint64 n : {1, 2, 3, 4, 5, 7, 64, 1000, 100000})
            QTest::addRow("%d threads, %lld tasks", threads, n) << threads << n;
}

void TestThreadPool::parallel_for_runs_every_task_exactly_once() {
    QFETCH(int, threads);
    QFETCH(qint64, n_tasks);
    wb::ThreadPool pool(threads);
    // Several rounds on the same pool, since state left over from one loop could break the next.
    for (int round = 0; round < 5; ++round) QVERIFY(covers_each_task_once(pool, n_tasks));
}

void TestThreadPool::thousands_of_back_to_back_loops_complete_data() {
    QTest::addColumn<int>("threads");
    QTest::newRow("2 threads") << 2;
    QTest::newRow("4 threads") << 4;
}

void TestThreadPool::thousands_of_back_to_back_loops_complete() {
    QFETCH(int, threads);
    wb::ThreadPool pool(threads);
    // Decode issues hundreds of short loops per token; a lost wake-up would hang one of these calls
    // (ctest's timeout then fails the test) and a miscounted loop would break the exact sum.
    for (int call = 0; call < 2000; ++call) {
        const int64_t n_tasks = 1 + call % 9;
        std::atomic<int64_t> sum{0};
        pool.parallel_for(n_tasks, [&](int64_t task, int) { sum.fetch_add(task + 1, std::memory_order_relaxed); });
        QCOMPARE(sum.load(), n_tasks * (n_tasks + 1) / 2);
    }
}

void TestThreadPool::loop_after_workers_fell_asleep_completes() {
    wb::ThreadPool pool(4);
    for (int round = 0; round < 3; ++round) {
        // Long enough for the workers to give up spinning and block on the condition variable.
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        QVERIFY(covers_each_task_once(pool, 257));
    }
}

void TestThreadPool::results_are_identical_for_every_thread_count() {
    constexpr int64_t kTasks = 4096;
    std::vector<double> reference;
    for (int threads : {1, 2, 4}) {
        wb::ThreadPool pool(threads);
        for (int run = 0; run < 3; ++run) {
            // Each task writes only its own slot; the reduction happens afterwards in task order.
            std::vector<double> out(kTasks);
            pool.parallel_for(kTasks, [&](int64_t task, int) { out[size_t(task)] = task_value(task); });
            double total = 0.0;
            for (double v : out) total += v;
            out.push_back(total);
            if (reference.empty()) reference = out;
            QVERIFY(std::memcmp(out.data(), reference.data(), out.size() * sizeof(double)) == 0);
        }
    }
}

void TestThreadPool::zero_or_negative_task_count_calls_nothing() {
    wb::ThreadPool pool(3);
    std::atomic<int> calls{0};
    pool.parallel_for(0, [&](int64_t, int) { calls.fetch_add(1); });
    pool.parallel_for(-5, [&](int64_t, int) { calls.fetch_add(1); });
    QCOMPARE(calls.load(), 0);
    QVERIFY(covers_each_task_once(pool, 10));  // and the pool still works afterwards
}

void TestThreadPool::size_counts_the_calling_thread() {
    QCOMPARE(wb::ThreadPool(1).size(), 1);
    QCOMPARE(wb::ThreadPool(3).size(), 3);
    QCOMPARE(wb::ThreadPool(0).size(), wb::ThreadPool::default_threads());
    QVERIFY(wb::ThreadPool::default_threads() >= 1);
}

void TestThreadPool::idle_pool_is_destroyed_promptly() {
    QElapsedTimer timer;
    timer.start();
    // Destroyed right after construction (workers still spinning), after work, and after sleeping.
    for (int k = 0; k < 50; ++k) wb::ThreadPool pool(4);
    for (int k = 0; k < 20; ++k) {
        wb::ThreadPool pool(4);
        QVERIFY(covers_each_task_once(pool, 16));
    }
    {
        wb::ThreadPool pool(4);
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
    }
    QVERIFY2(timer.elapsed() < 10000, qPrintable(QString("took %1 ms").arg(timer.elapsed())));
}

QTEST_GUILESS_MAIN(TestThreadPool)
#include "test_thread_pool.moc"
