// GUI responsiveness benchmark (issue #18 item 5): the full main window (offscreen), every panel
// following the engine, and a probe timer on the GUI thread that should fire every 2 ms; the longest
// gap between two of its ticks beyond those 2 ms is the longest stall of the event loop. Measured
// separately during a model load, a prefill (a long message, up to its first token), the generation
// that follows, and a switch to another model. Prints one line per phase (docs/benchmarks.md).
//   QT_QPA_PLATFORM=offscreen event_loop_stall [--runs N]   (N rounds, default 3; the worst is printed)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>

#include <QApplication>
#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QTimer>

#include "chat_controller.h"
#include "engine_types.h"
#include "gui_test_support.h"
#include "main_window.h"
#include "model/model_paths.h"

namespace {

constexpr int kIntervalMs = 2;
constexpr int kTimeoutMs = 600000;

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
bool round(const QString& a, const QString& b, const QString& message, Phases* out) {
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
    c->loadModel(a);
    if (!waitFor([&] { return loaded != 0; }) || loaded < 0) return false;
    out->load = probe.worstMs();
    wb::SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = 64;
    c->setSamplingParams(p);
    probe.reset();
    if (!c->sendMessage(message)) return false;
    if (!waitFor([&] { return tokens > 0 || finished > 0; })) return false;
    out->prefill = probe.worstMs();
    probe.reset();
    if (!waitFor([&] { return finished > 0; })) return false;
    out->generation = probe.worstMs();
    probe.reset();
    c->loadModel(b);
    if (!waitFor([&] { return loaded != 1; }) || loaded < 0) return false;
    out->modelSwitch = probe.worstMs();
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    wb_gui_test::isolateSettings("event_loop_stall");  // never the user's settings or conversations
    int runs = 3;
    if (argc == 3 && std::strcmp(argv[1], "--runs") == 0) runs = std::max(1, std::atoi(argv[2]));
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
        if (!round(a, b, message, &one)) {
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
