#pragma once
// The tests' own hand-overs between threads, in a form ThreadSanitizer can follow. Qt hands a queued
// call, or a queued signal's copied arguments, to the receiving thread under its own locks inside
// libQt6Core; Qt is not built with TSan, so TSan cannot see those locks and reports the hand-over
// itself as a race (the call's captures written on one thread, read on the other). tests/tsan.supp
// cannot suppress that without hiding every race whose stacks pass through Qt
// (tests/tools/sanitizer_canary_qt.cpp), so the tests hand data over under a std::mutex, which TSan
// sees:
//   postQueued(target, f)  runs f on target's thread from its event loop, ordered after everything
//                          the calling thread did before the call;
//   Mailbox                one thread posts closures, another runs them (drain), each ordered after
//                          everything its poster did before posting it.
// postQueued's mutex is one for all calls: a call that runs late is also ordered after later calls,
// which can hide a race with what the poster did between the two (it never reports a false one).
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include <QMetaObject>
#include <QObject>

namespace cross_thread {

inline std::mutex g_queued;

template <class F>
void postQueued(QObject* target, F f) {
    // Held until the call is queued; the receiver takes it before it reads f's captures (a global,
    // not a capture: reading a capture first would itself race).
    std::lock_guard<std::mutex> queued(g_queued);
    QMetaObject::invokeMethod(target, [f = std::move(f)]() mutable {
        { std::lock_guard<std::mutex> taken(g_queued); }
        f();
    }, Qt::QueuedConnection);
}

class Mailbox {
public:
    void post(std::function<void()> f) {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_mail.push_back(std::move(f));
    }
    // Runs what was posted so far, on the calling thread, in the order it was posted.
    void drain() {
        std::vector<std::function<void()>> mail;
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            mail.swap(m_mail);
        }
        for (auto& f : mail) f();
    }

private:
    std::mutex m_mutex;
    std::vector<std::function<void()>> m_mail;
};

}  // namespace cross_thread
