#pragma once
// An InferenceWorker on its own QThread, driven as ChatController drives it in the app: its slots by
// queued calls, its thread-safe calls (requestStop, setSamplingParams) directly from this thread, its
// signals counted here. For the thread tests (also run under ThreadSanitizer), the soak and the
// event-loop benchmark. Header-only: each user is one executable.
// The queued calls and the signals' hand-over to this thread go through cross_thread.h rather than
// Qt's queued connections alone, so that ThreadSanitizer sees them ordered (that header says why).
#include <functional>

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QList>
#include <QThread>

#include "cross_thread.h"
#include "inference_worker.h"

class WorkerOnThread {
public:
    WorkerOnThread() : m_worker(new InferenceWorker) {
        registerEngineTypes();
        m_worker->moveToThread(&m_thread);
        m_thread.start();
        // Direct: each runs on the worker's thread at the emit and posts what it saw; waitFor runs the
        // posts on this thread.
        auto onWorker = [this](auto signal, auto here) {
            QObject::connect(m_worker, signal, m_worker, here, Qt::DirectConnection);
        };
        onWorker(&InferenceWorker::modelLoaded, [this] { m_mail.post([this] { ++loaded; }); });
        onWorker(&InferenceWorker::loadFailed, [this](const QString&, const QString& e) {
            m_mail.post([this, e] { loadErrors.append(e); });
        });
        onWorker(&InferenceWorker::tokenGenerated, [this] { m_mail.post([this] { ++tokens; }); });
        onWorker(&InferenceWorker::fileHashReady, [this] { m_mail.post([this] { ++hashes; }); });
        onWorker(&InferenceWorker::generationFinished, [this](const GenerationSummary& s) {
            m_mail.post([this, s] {
                finished.append(s);
                ++finishedCount;
            });
        });
    }
    ~WorkerOnThread() {
        // As the app ends: every request stopped, the worker deleted on its own thread, the thread ended.
        m_worker->requestStop(~quint64(0));
        cross_thread::postQueued(m_worker, [w = m_worker] { delete w; });
        m_thread.quit();
        m_thread.wait();
    }
    WorkerOnThread(const WorkerOnThread&) = delete;
    WorkerOnThread& operator=(const WorkerOnThread&) = delete;

    InferenceWorker* worker() { return m_worker; }

    void load(const QString& path, int threads = 2, int contextSize = 2048) {
        cross_thread::postQueued(m_worker, [w = m_worker, path, threads, contextSize] {
            w->loadModel(path, "cpu", contextSize, threads);
        });
    }
    void generate(quint64 requestId, const ChatMessages& messages) {
        cross_thread::postQueued(m_worker, [w = m_worker, requestId, messages] { w->generateChat(requestId, messages); });
    }
    void newChat() {
        cross_thread::postQueued(m_worker, [w = m_worker] { w->resetSession(); });
    }

    // Runs this thread's event loop, and the counting of the worker's signals, until `done` or the
    // timeout; false on the timeout.
    bool waitFor(const std::function<bool()>& done, int timeoutMs) {
        QDeadlineTimer deadline(timeoutMs);
        for (;;) {
            m_mail.drain();
            if (done()) return true;
            if (deadline.hasExpired()) return false;
            QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 20);
        }
    }
    // A load (counted as loaded or failed) and, after a success, its file hash.
    bool waitLoaded(int count, int timeoutMs) {
        return waitFor([&] { return loaded + loadErrors.size() >= count; }, timeoutMs) && loadErrors.isEmpty();
    }
    // Until `count` generations have finished in all.
    bool waitFinished(int count, int timeoutMs) {
        return waitFor([&] { return finishedCount >= count; }, timeoutMs);
    }

    int loaded = 0;
    int tokens = 0;
    int hashes = 0;
    QStringList loadErrors;
    QList<GenerationSummary> finished;  // may be cleared by the user; finishedCount keeps counting
    int finishedCount = 0;

private:
    QThread m_thread;
    cross_thread::Mailbox m_mail;  // the worker's signals, counted on this thread by waitFor
    InferenceWorker* m_worker;
};
