// The TSan pass's self-check for its Qt Test binaries (scripts/test-sanitizers.sh): a race between a
// lambda run on a QThread's event loop and a Qt Test function, the shape of every race that
// test_worker_threads, test_session and test_thread_pool could find. Each stack of such a race passes
// through libQt6Core (the test function runs under QMetaMethod::invoke, the lambda under the thread's
// event dispatch, the thread is created by QThread::start), so a suppression that matches any Qt frame
// hides it; sanitizer_canary's race between two std::threads from a plain main() cannot show that.
// The lambda is queued as the worker tests queue theirs (cross_thread::postQueued, whose mutex TSan
// sees in place of Qt's event queue). Without WB_SANITIZER_CANARY=qthread-race the shared counter is
// an atomic: the same machinery with no race, which must run without a report (a Qt false positive
// left unsuppressed would fail it). With it the counter is a plain int: TSan must report the race and
// end the process with a non-zero status. Any other WB_SANITIZER_CANARY (sanitizer_canary's kinds)
// leaves this program correct.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include <QObject>
#include <QSemaphore>
#include <QThread>
#include <QtTest>

#include "cross_thread.h"

namespace {

// The optimiser cannot see through it, so every access below happens at run time.
volatile int g_one = 1;
constexpr int kRounds = 100000;

bool raceWanted() {
    const char* kind = std::getenv("WB_SANITIZER_CANARY");
    return kind && !std::strcmp(kind, "qthread-race");
}

}  // namespace

class SanitizerCanaryQt : public QObject {
    Q_OBJECT

private Q_SLOTS:
    // Both threads add kRounds to one counter: under the race it is a plain int bumped without a lock
    // (the sum may come out short: only the report matters), else an atomic.
    void qthreadAndTestFunctionShareACounter() {
        const bool race = raceWanted();
        if (race) qInfo("sanitizer_canary_qt: committing a qthread-race on purpose");
        int plain = 0;
        std::atomic<int> atomic{0};
        auto bump = [&] {
            for (int i = 0; i < kRounds; ++i) {
                if (race)
                    plain = plain + g_one;
                else
                    atomic += g_one;
            }
        };
        QThread thread;
        QObject onThread;
        onThread.moveToThread(&thread);
        thread.start();
        QSemaphore done;
        cross_thread::postQueued(&onThread, [&] {
            bump();
            done.release();
        });
        bump();
        QVERIFY(done.tryAcquire(1, 600000));
        thread.quit();
        QVERIFY(thread.wait(600000));
        if (!race) QCOMPARE(atomic.load(), 2 * kRounds);
    }
};

QTEST_GUILESS_MAIN(SanitizerCanaryQt)
#include "sanitizer_canary_qt.moc"
