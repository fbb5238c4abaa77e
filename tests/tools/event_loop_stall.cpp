// GUI responsiveness benchmark (issue #18 item 5): the full main window (offscreen), every panel
// following the engine, and a probe timer on the GUI thread that should fire every 2 ms; the longest
// gap between two of its ticks beyond those 2 ms is the longest stall of the event loop. Measured
// separately during a model load, a prefill (a long message, up to its first token), the generation
// that follows, and a switch to another model. Prints one line per phase (docs/benchmarks.md).
// With --profile it also names what the GUI thread spent the time on: per phase, the event dispatches
// (receiver class and event type, outermost ones only) that took longest, with their count and total.
//   QT_QPA_PLATFORM=offscreen event_loop_stall [--runs N] [--profile]   (N rounds, default 3; the worst is printed)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include <QApplication>
#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QMetaEnum>
#include <QThread>
#include <QTimer>

#include "chat_controller.h"
#include "engine_types.h"
#include "gui_test_support.h"
#include "main_window.h"
#include "model/model_paths.h"

namespace {

constexpr int kIntervalMs = 2;
constexpr int kTimeoutMs = 600000;
constexpr size_t kProfileRows = 6;

// The probe: the longest gap between ticks, minus the interval, since the last reset.
class StallProbe {
public:
    StallProbe() {
        m_timer.setTimerType(Qt::PreciseTimer);
        QObject::connect(&m_timer, &QTimer::timeout, &m_timer, [this] {
            const qint64 now = m_clock.nsecsElapsed();
            m_worst = std::max(m_worst, now - m_last);
            m_last = now;
        });
        m_clock.start();
        m_timer.start(kIntervalMs);
    }
    void reset() {
        m_last = m_clock.nsecsElapsed();
        m_worst = 0;
    }
    double worstMs() const {
        const qint64 open = m_clock.nsecsElapsed() - m_last;  // a stall still going on counts too
        return std::max<double>(0.0, std::max(m_worst, open) / 1e6 - kIntervalMs);
    }

private:
    QTimer m_timer;
    QElapsedTimer m_clock;
    qint64 m_last = 0;
    qint64 m_worst = 0;
};

// Times every outermost event dispatch on the GUI thread, by receiver class and event type: a stall
// is one long dispatch (a slot behind a queued signal, a timer, a repaint of the window).
class ProfiledApplication : public QApplication {
public:
    ProfiledApplication(int& argc, char** argv) : QApplication(argc, argv) {}
    void setProfiling(bool on) { m_on = on; }
    void resetProfile() { m_costs.clear(); }

    bool notify(QObject* receiver, QEvent* event) override {
        // The worker's thread dispatches through here too: only the GUI thread's events are timed.
        if (QThread::currentThread() != thread()) return QApplication::notify(receiver, event);
        if (!m_on || m_depth > 0) return nested(receiver, event);
        QElapsedTimer clock;
        clock.start();
        const QByteArray what = name(receiver, event);  // before: the dispatch may delete the receiver
        const bool handled = nested(receiver, event);
        Cost& c = m_costs[what];
        const double ms = double(clock.nsecsElapsed()) / 1e6;
        ++c.count;
        c.totalMs += ms;
        c.maxMs = std::max(c.maxMs, ms);
        return handled;
    }

    // The `n` dispatch kinds with the longest single dispatch.
    void print(const char* phase, size_t n) const {
        if (!m_on) return;
        std::vector<std::pair<QByteArray, Cost>> v(m_costs.begin(), m_costs.end());
        std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.maxMs > b.second.maxMs; });
        std::printf("  %s, longest dispatches:\n", phase);
        for (size_t i = 0; i < std::min(n, v.size()); ++i)
            std::printf("    %-60s max %7.1f ms, %6d x, total %8.1f ms\n", v[i].first.constData(), v[i].second.maxMs,
                        v[i].second.count, v[i].second.totalMs);
    }

private:
    struct Cost {
        int count = 0;
        double totalMs = 0, maxMs = 0;
    };
    bool nested(QObject* receiver, QEvent* event) {
        ++m_depth;
        const bool handled = QApplication::notify(receiver, event);
        --m_depth;
        return handled;
    }
    static QByteArray name(QObject* receiver, QEvent* event) {
        QByteArray n = receiver->metaObject()->className();
        // A timer or a window says little; whose it is says more.
        if (receiver->parent() && (n == "QTimer" || n == "QWidgetWindow")) n += QByteArray("<-") + receiver->parent()->metaObject()->className();
        const char* type = QMetaEnum::fromType<QEvent::Type>().valueToKey(event->type());
        return n + " / " + (type ? QByteArray(type) : QByteArray::number(int(event->type())));
    }
    bool m_on = false;
    int m_depth = 0;
    std::map<QByteArray, Cost> m_costs;
};

bool waitFor(const std::function<bool()>& done) {
    QDeadlineTimer deadline(kTimeoutMs);
    while (!done()) {
        if (deadline.hasExpired()) return false;
        QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents, 5);
    }
    return true;
}

struct Phases {
    double load = 0, prefill = 0, generation = 0, modelSwitch = 0;
    void worstOf(const Phases& o) {
        load = std::max(load, o.load);
        prefill = std::max(prefill, o.prefill);
        generation = std::max(generation, o.generation);
        modelSwitch = std::max(modelSwitch, o.modelSwitch);
    }
};

// One round in a fresh window: load A, a long message (prefill, then 64 tokens), switch to B.
bool round(ProfiledApplication& app, const QString& a, const QString& b, const QString& message, Phases* out) {
    MainWindow window;
    window.resize(1366, 768);
    window.show();
    ChatController* c = window.controller();
    int loaded = 0, tokens = 0, finished = 0;
    QObject::connect(c, &ChatController::modelLoaded, c, [&] { ++loaded; });
    QObject::connect(c, &ChatController::loadFailed, c, [&](const QString& path, const QString& error) {
        std::fprintf(stderr, "event_loop_stall: %s: %s\n", qPrintable(path), qPrintable(error));
        loaded = -1000;
    });
    QObject::connect(c, &ChatController::tokenAppended, c, [&] { ++tokens; });
    QObject::connect(c, &ChatController::generationFinished, c, [&] { ++finished; });
    StallProbe probe;
    probe.reset();
    app.resetProfile();
    c->loadModel(a);
    if (!waitFor([&] { return loaded != 0; }) || loaded < 0) return false;
    out->load = probe.worstMs();
    app.print("load", kProfileRows);
    wb::SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = 64;
    c->setSamplingParams(p);
    probe.reset();
    app.resetProfile();
    if (!c->sendMessage(message)) return false;
    if (!waitFor([&] { return tokens > 0 || finished > 0; })) return false;
    out->prefill = probe.worstMs();
    app.print("prefill", kProfileRows);
    probe.reset();
    app.resetProfile();
    if (!waitFor([&] { return finished > 0; })) return false;
    out->generation = probe.worstMs();
    app.print("generation", kProfileRows);
    probe.reset();
    app.resetProfile();
    c->loadModel(b);
    if (!waitFor([&] { return loaded != 1; }) || loaded < 0) return false;
    out->modelSwitch = probe.worstMs();
    app.print("switch", kProfileRows);
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    ProfiledApplication app(argc, argv);
    wb_gui_test::isolateSettings("event_loop_stall");  // never the user's settings or conversations
    int runs = 3;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = std::max(1, std::atoi(argv[++i]));
        } else if (std::strcmp(argv[i], "--profile") == 0) {
            app.setProfiling(true);
        } else {
            std::fprintf(stderr, "usage: event_loop_stall [--runs N] [--profile]\n");
            return 2;
        }
    }
    const QString a = QString::fromStdString(wb::default_model_path());
    const QString b = QString::fromStdString(wb::models_dir() + "/gemma-3-270m-Q4_K_M.gguf");
    for (const QString& m : {a, b}) {
        if (!QFileInfo::exists(m)) {
            std::fprintf(stderr, "event_loop_stall: model missing at %s: run scripts/fetch-models.sh --all\n",
                         qPrintable(m));
            return 1;
        }
    }
    // About 1,000 prompt tokens: several prefill batches.
    QString message;
    for (int i = 0; i < 120; ++i) message += QString("Sentence %1 of a long message to prefill. ").arg(i);
    Phases worst;
    for (int r = 0; r < runs; ++r) {
        Phases one;
        if (!round(app, a, b, message, &one)) {
            std::fprintf(stderr, "event_loop_stall: round %d failed\n", r + 1);
            return 1;
        }
        std::printf("event_loop_stall: round %d: load %.1f ms, prefill %.1f ms, generation %.1f ms, switch %.1f ms\n",
                    r + 1, one.load, one.prefill, one.generation, one.modelSwitch);
        worst.worstOf(one);
    }
    std::printf("event_loop_stall: longest stall of %d rounds: load %.1f ms, prefill %.1f ms, generation %.1f ms, "
                "switch %.1f ms\n", runs, worst.load, worst.prefill, worst.generation, worst.modelSwitch);
    return 0;
}
