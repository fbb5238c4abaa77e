// The inference worker on its own thread, as the app runs it, where the GUI thread and the worker's
// thread meet: Stop and live sampling parameters from the GUI thread while a reply streams (the
// session reads both between tokens), a stop for a request still queued behind a running one, New
// chat and a model switch while a reply streams, the GUI thread's calls while the worker tears the old
// model down, and the GUI thread's event loop turning through a model load, a prefill, a generation
// and a model switch. Also the ThreadSanitizer pass's test of these paths
// (scripts/test-sanitizers.sh), so it links only the worker (wb_worker), no widgets.
#include <atomic>
#include <string>

#include <QSemaphore>
#include <QTimer>
#include <QtTest>

#include "model/model_paths.h"
#include "worker_on_thread.h"

namespace {

// Generous: under ThreadSanitizer a model runs many times slower than in the normal build.
constexpr int kLoadTimeoutMs = 300000;
constexpr int kReplyTimeoutMs = 600000;
// How long the worker stays parked in a teardown waiting for this thread: ending it means this
// thread was blocked (the test then fails on `hung`), so a generous figure only slows a failing run.
constexpr int kParkedTimeoutMs = 60000;

wb::SamplingParams greedy(int maxTokens) {
    wb::SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = maxTokens;
    return p;
}

const ChatMessages kCount = {{"user", "Count from 1 to 200, one number per line."}};

QString defaultModel() { return QString::fromStdString(wb::default_model_path()); }
QString secondModel() { return QString::fromStdString(wb::models_dir() + "/gemma-3-270m-Q4_K_M.gguf"); }

}  // namespace

class TestWorkerThreads : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase() {
        if (!QFileInfo::exists(defaultModel()))
            QFAIL(qPrintable(QString("default model missing at %1: run scripts/fetch-models.sh").arg(defaultModel())));
    }

    // Stop from this thread while the worker's thread generates: the reply ends as stopped, long
    // before its 400-token limit.
    void stopFromTheGuiThreadEndsTheReply() {
        WorkerOnThread w;
        w.load(defaultModel());
        QVERIFY(w.waitLoaded(1, kLoadTimeoutMs));
        w.worker()->setSamplingParams(greedy(400));
        w.generate(1, kCount);
        QVERIFY(w.waitFor([&] { return w.tokens >= 3; }, kReplyTimeoutMs));
        w.worker()->requestStop(1);
        QVERIFY(w.waitFinished(1, kReplyTimeoutMs));
        QCOMPARE(w.finished[0].reason, wb::StopReason::STOPPED);
        QVERIFY2(w.tokens < 400, qPrintable(QString::number(w.tokens)));
    }

    // A new token limit set from this thread mid-reply applies to the running reply: it ends at the
    // new limit (unchanged, it would run to 400 tokens).
    void liveParametersApplyToTheRunningReply() {
        WorkerOnThread w;
        w.load(defaultModel());
        QVERIFY(w.waitLoaded(1, kLoadTimeoutMs));
        w.worker()->setSamplingParams(greedy(400));
        w.generate(1, kCount);
        QVERIFY(w.waitFor([&] { return w.tokens >= 2; }, kReplyTimeoutMs));
        wb::SamplingParams p = greedy(0);
        p.max_tokens = w.tokens + 3;  // tokens already counted here; the worker may be ahead
        w.worker()->setSamplingParams(p);
        QVERIFY(w.waitFinished(1, kReplyTimeoutMs));
        QCOMPARE(w.finished[0].reason, wb::StopReason::MAX_TOKENS);
        QVERIFY2(w.tokens < 400, qPrintable(QString::number(w.tokens)));
    }

    // Stop for a request queued behind a running one (Esc, then the user's next message is also
    // stopped before it starts): the queued one never prefills; the one after it runs.
    void stopOfAQueuedRequestSkipsItsPrefill() {
        WorkerOnThread w;
        w.load(defaultModel());
        QVERIFY(w.waitLoaded(1, kLoadTimeoutMs));
        w.worker()->setSamplingParams(greedy(400));
        w.generate(1, kCount);
        w.generate(2, kCount);
        w.generate(3, {{"user", "Say hi."}});
        QVERIFY(w.waitFor([&] { return w.tokens >= 1; }, kReplyTimeoutMs));
        w.worker()->requestStop(2);
        QVERIFY(w.waitFinished(1, kReplyTimeoutMs));
        // Request 3 may already stream: a short limit ends it at its next token.
        w.worker()->setSamplingParams(greedy(6));
        QVERIFY(w.waitFinished(3, kReplyTimeoutMs));
        QCOMPARE(w.finished[0].reason, wb::StopReason::STOPPED);
        QCOMPARE(w.finished[1].requestId, quint64(2));
        QCOMPARE(w.finished[1].reason, wb::StopReason::STOPPED);
        QCOMPARE(w.finished[1].timings.n_prefill, 0);
        QCOMPARE(w.finished[2].requestId, quint64(3));
        QVERIFY(w.finished[2].reason != wb::StopReason::STOPPED);
        QVERIFY(w.finished[2].reason != wb::StopReason::ERROR);
    }

    // New chat and then a model switch while replies stream: each reply ends (stopped), the new model
    // loads, and a reply on it runs to its limit.
    void newChatAndModelSwitchWhileGenerating() {
        if (!QFileInfo::exists(secondModel())) QSKIP("gemma-3-270m not fetched (scripts/fetch-models.sh --all)");
        WorkerOnThread w;
        w.load(defaultModel());
        QVERIFY(w.waitLoaded(1, kLoadTimeoutMs));
        w.worker()->setSamplingParams(greedy(400));
        w.generate(1, kCount);
        QVERIFY(w.waitFor([&] { return w.tokens >= 2; }, kReplyTimeoutMs));
        w.worker()->requestStop(1);
        w.newChat();
        w.generate(2, kCount);
        QVERIFY(w.waitFinished(1, kReplyTimeoutMs));
        const int before = w.tokens;
        QVERIFY(w.waitFor([&] { return w.tokens > before; }, kReplyTimeoutMs));  // request 2 streams
        w.worker()->requestStop(2);
        w.load(secondModel());
        QVERIFY(w.waitLoaded(2, kLoadTimeoutMs));
        QVERIFY(w.waitFinished(2, kReplyTimeoutMs));
        QCOMPARE(w.finished[0].reason, wb::StopReason::STOPPED);
        QCOMPARE(w.finished[1].reason, wb::StopReason::STOPPED);
        w.worker()->setSamplingParams(greedy(5));
        w.generate(3, {{"user", "Say hi."}});
        QVERIFY(w.waitFinished(3, kReplyTimeoutMs));
        QVERIFY2(w.finished[2].reason != wb::StopReason::ERROR, qPrintable(w.finished[2].error));
        QVERIFY(w.finished[2].timings.n_prefill > 0);
    }

    // A model switch while a reply streams, as ChatController::loadModel does it (Stop, then the
    // load): while the worker is inside the old engine's teardown (parked there by the release
    // probe), every call this thread makes directly on the worker returns. One that waited for the
    // teardown would block here until the probe's guard gives up, and `hung` fails the test.
    void stopDuringAModelSwitchDoesNotWaitForTheTeardown() {
        // Before the worker: a probe not reached by a failed run fires in the worker's destructor.
        QSemaphore inTeardown, proceed;
        std::atomic<bool> hung{false};
        WorkerOnThread w;
        w.load(defaultModel());
        QVERIFY(w.waitLoaded(1, kLoadTimeoutMs));
        w.worker()->setSamplingParams(greedy(400));
        w.generate(1, kCount);
        QVERIFY(w.waitFor([&] { return w.tokens >= 2; }, kReplyTimeoutMs));
        w.worker()->setReleaseProbeForTest([&] {
            inTeardown.release();
            if (!proceed.tryAcquire(1, kParkedTimeoutMs)) hung = true;
        });
        w.worker()->requestStop(1);
        w.load(defaultModel());
        QVERIFY(inTeardown.tryAcquire(1, kLoadTimeoutMs));
        w.worker()->requestStop(2);
        w.worker()->setSamplingParams(greedy(5));
        std::vector<int32_t> ids;
        QString error;
        const bool encoded = w.worker()->encodeText("hi", &ids, &error);
        const wb::Model* model = w.worker()->loadedModel();
        proceed.release();
        QVERIFY(w.waitLoaded(2, kLoadTimeoutMs));
        QVERIFY2(!hung, "a call from this thread waited for the worker's teardown");
        QVERIFY(!encoded);
        QVERIFY2(error.contains("needs a loaded model"), qPrintable(error));
        QVERIFY(model == nullptr);
        QVERIFY(w.waitFinished(1, kReplyTimeoutMs));
        QCOMPARE(w.finished[0].reason, wb::StopReason::STOPPED);
        QVERIFY(w.worker()->loadedModel() != nullptr);
    }

    // This thread's event loop keeps turning while the worker loads a model, prefills, generates and
    // switches models: a 5 ms timer here ticks during each phase. Each phase's end is read on the
    // worker's thread at the moment it emits (direct connections), so a worker that blocked this
    // thread would see no tick in it. How late the timer fires is the benchmark's business
    // (tests/tools/event_loop_stall.cpp); here only that it fires, so a loaded machine cannot fail it.
    void eventLoopTurnsWhileTheWorkerIsBusy() {
        if (!QFileInfo::exists(secondModel())) QSKIP("gemma-3-270m not fetched (scripts/fetch-models.sh --all)");
        // Before the worker: its thread reads them until it ends.
        std::atomic<int> ticks{0}, loadEnd{-1}, firstToken{-1}, replyEnd{-1}, switchEnd{-1};
        WorkerOnThread w;
        QTimer timer;
        connect(&timer, &QTimer::timeout, &timer, [&] { ++ticks; });
        connect(w.worker(), &InferenceWorker::modelLoaded, w.worker(), [&] {
            (loadEnd < 0 ? loadEnd : switchEnd) = ticks.load();
        }, Qt::DirectConnection);
        connect(w.worker(), &InferenceWorker::tokenGenerated, w.worker(), [&] {
            if (firstToken < 0) firstToken = ticks.load();
        }, Qt::DirectConnection);
        connect(w.worker(), &InferenceWorker::generationFinished, w.worker(), [&] { replyEnd = ticks.load(); },
                Qt::DirectConnection);
        timer.start(5);
        const int loadStart = ticks;
        w.load(defaultModel());
        QVERIFY(w.waitLoaded(1, kLoadTimeoutMs));
        // A long prompt (its prefill takes several batches), then 24 tokens.
        w.worker()->setSamplingParams(greedy(24));
        std::string longText;
        for (int i = 0; i < 25; ++i) longText += "Sentence " + std::to_string(i) + " of a long message to prefill. ";
        const int requestStart = ticks;
        w.generate(1, {{"user", longText}});
        QVERIFY(w.waitFinished(1, kReplyTimeoutMs));
        QVERIFY(firstToken >= 0);
        const int switchStart = ticks;
        w.load(secondModel());
        QVERIFY(w.waitLoaded(2, kLoadTimeoutMs));
        qInfo("ticks of the 5 ms timer: load %d, prefill %d, generation %d, switch %d", loadEnd - loadStart,
              firstToken - requestStart, replyEnd - firstToken, switchEnd - switchStart);
        QVERIFY2(loadEnd > loadStart, "the event loop did not turn during the model load");
        QVERIFY2(firstToken > requestStart, "the event loop did not turn during the prefill");
        QVERIFY2(replyEnd > firstToken, "the event loop did not turn during the generation");
        QVERIFY2(switchEnd > switchStart, "the event loop did not turn during the model switch");
    }
};

QTEST_GUILESS_MAIN(TestWorkerThreads)
#include "test_worker_threads.moc"
