#pragma once
// An InferenceWorker on its own QThread, driven as ChatController drives it in the app: its slots by
// queued calls, its thread-safe calls (requestStop, setSamplingParams) directly from this thread, its
// signals counted here through queued connections. For the thread tests (also run under
// ThreadSanitizer), the soak and the event-loop benchmark. Header-only: each user is one executable.
#include <functional>

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QList>
#include <QThread>

#include "inference_worker.h"

class WorkerOnThread {
public:
    WorkerOnThread() : m_worker(new InferenceWorker) {
        registerEngineTypes();
        m_worker->moveToThread(&m_thread);
        m_thread.start();
        QObject::connect(m_worker, &InferenceWorker::modelLoaded, &m_here, [this] { ++loaded; },
                         Qt::QueuedConnection);
        QObject::connect(m_worker, &InferenceWorker::loadFailed, &m_here,
                         [this](const QString&, const QString& e) { loadErrors.append(e); }, Qt::QueuedConnection);
        QObject::connect(m_worker, &InferenceWorker::tokenGenerated, &m_here, [this] { ++tokens; },
                         Qt::QueuedConnection);
        QObject::connect(m_worker, &InferenceWorker::fileHashReady, &m_here, [this] { ++hashes; },
                         Qt::QueuedConnection);
        QObject::connect(m_worker, &InferenceWorker::generationFinished, &m_here,
                         [this](const GenerationSummary& s) {
                             finished.append(s);
                             ++finishedCount;
                         }, Qt::QueuedConnection);
    }
    ~WorkerOnThread() {
        // As the app ends: every request stopped, the worker deleted on its own thread, the thread ended.
        m_worker->requestStop(~quint64(0));
        QMetaObject::invokeMethod(m_worker, [w = m_worker] { delete w; });
        m_thread.quit();
        m_thread.wait();
    }
    WorkerOnThread(const WorkerOnThread&) = delete;
    WorkerOnThread& operator=(const WorkerOnThread&) = delete;

    InferenceWorker* worker() { return m_worker; }

    void load(const QString& path, int threads = 2, int contextSize = 2048) {
        QMetaObject::invokeMethod(m_worker, [w = m_worker, path, threads, contextSize] {
            w->loadModel(path, "cpu", contextSize, threads);
        });
    }
    void generate(quint64 requestId, const ChatMessages& messages) {
        QMetaObject::invokeMethod(m_worker, [w = m_worker, requestId, messages] { w->generateChat(requestId, messages); });
    }
    void newChat() {
        QMetaObject::invokeMethod(m_worker, [w = m_worker] { w->resetSession(); });
    }

    // Runs this thread's event loop until `done` or the timeout; false on the timeout.
    static bool waitFor(const std::function<bool()>& done, int timeoutMs) {
        QDeadlineTimer deadline(timeoutMs);
        while (!done()) {
            if (deadline.hasExpired()) return false;
            QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 20);
        }
        return true;
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
    QObject m_here;  // context of the queued connections: their slots run on this thread
    InferenceWorker* m_worker;
};
