// Soak of the inference worker (issue #18 item 4): many generations through one InferenceWorker on its
// own thread, the model kept loaded and New chat between some of them, then many model switches; the
// process's resident memory and open file descriptors must stay flat (within the tolerance) after a
// warm-up, else memory or descriptors leak per generation or per load. Prints one line per phase;
// exit 1 when a phase grew past the tolerance or a request failed.
//   worker_soak [--generations N] [--switches M] [--new-chat-every K] [--tokens T] [--tolerance F]
// Defaults: 1000 generations, 50 switches, New chat every 8, 8 tokens, 0.05 (scripts/soak.sh).
// ctest runs a short version (seconds). Models: the default model and Gemma 3 270M (the switch target).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QFileInfo>

#include "model/model_paths.h"
#include "worker_on_thread.h"

namespace {

constexpr int kTimeoutMs = 600000;

struct Options {
    int generations = 1000;
    int switches = 50;
    int newChatEvery = 8;
    int tokens = 8;
    double tolerance = 0.05;
};

// Resident set size in KiB (VmRSS of /proc/self/status).
long rssKib() {
    std::ifstream in("/proc/self/status");
    std::string key;
    long value = 0;
    while (in >> key) {
        if (key == "VmRSS:") {
            in >> value;
            return value;
        }
        in.ignore(4096, '\n');
    }
    return -1;
}

int openFds() {
    int n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
}

// The growth of RSS and descriptors from the first sample (the warm-up's end) to the last, and the
// peak between them.
struct Flatness {
    long rssWarm = -1, rssEnd = 0, rssMax = 0;
    int fdsWarm = 0, fdsEnd = 0;
    void sample() {
        const long rss = rssKib();
        const int fds = openFds();
        if (rssWarm < 0) rssWarm = rssMax = rss, fdsWarm = fds;
        rssEnd = rss;
        rssMax = std::max(rssMax, rss);
        fdsEnd = fds;
    }
    double rssGrowth() const { return double(rssEnd - rssWarm) / double(rssWarm); }
    double rssPeakGrowth() const { return double(rssMax - rssWarm) / double(rssWarm); }
    bool flat(double tolerance) const {
        return rssGrowth() <= tolerance && rssPeakGrowth() <= tolerance && fdsEnd <= fdsWarm + fdsWarm * tolerance;
    }
    void print(const char* phase, int count, double seconds, double tolerance) const {
        std::printf("soak: %s %d in %.1f s: RSS %.1f MiB after warm-up, %.1f MiB at the end (%+.2f %%), peak "
                    "%+.2f %%; open fds %d -> %d; %s\n",
                    phase, count, seconds, rssWarm / 1024.0, rssEnd / 1024.0, 100.0 * rssGrowth(),
                    100.0 * rssPeakGrowth(), fdsWarm, fdsEnd, flat(tolerance) ? "flat" : "GREW");
    }
};

bool failed(const GenerationSummary& s) { return s.reason == wb::StopReason::ERROR; }

// N generations on the loaded model; New chat every K (the conversation grows in between, so the
// prompt's prefix is reused as in the app). The first tenth (at least 10) is the warm-up.
bool soakGenerations(WorkerOnThread& w, const Options& o) {
    wb::SamplingParams p;
    p.max_tokens = o.tokens;
    p.seed = 1;
    w.worker()->setSamplingParams(p);
    const int warmup = std::max(10, o.generations / 10);
    const int base = w.finishedCount;
    Flatness f;
    QElapsedTimer clock;
    ChatMessages chat;
    for (int i = 0; i < warmup + o.generations; ++i) {
        if (i == warmup) {
            f.sample();
            clock.start();
        }
        if (i % o.newChatEvery == 0) {
            w.newChat();
            chat.clear();
        }
        chat.push_back({"user", "Tell me one fact about the number " + std::to_string(i) + "."});
        w.generate(quint64(i + 1), chat);
        if (!w.waitFinished(base + i + 1, kTimeoutMs)) {
            std::fprintf(stderr, "soak: generation %d did not finish in %d s\n", i + 1, kTimeoutMs / 1000);
            return false;
        }
        if (failed(w.finished.last())) {
            std::fprintf(stderr, "soak: generation %d failed: %s\n", i + 1, qPrintable(w.finished.last().error));
            return false;
        }
        chat.push_back({"assistant", w.finished.last().text.toStdString()});
        w.finished.clear();  // keep the soak's own bookkeeping from growing
        if (i >= warmup) f.sample();
    }
    f.sample();
    f.print("generations", o.generations, clock.elapsed() / 1000.0, o.tolerance);
    return f.flat(o.tolerance);
}

// M model switches, alternating between the two models, each followed by one short generation and
// the file hash the worker computes after a load (it holds the file open while it reads). Memory is
// compared between loads of the same model (the two differ by their size); the first four switches
// are the warm-up (both models loaded twice).
bool soakSwitches(WorkerOnThread& w, const Options& o, const QString& a, const QString& b) {
    const int warmup = 4;
    Flatness fa, fb;
    QElapsedTimer clock;
    for (int i = 0; i < warmup + o.switches; ++i) {
        if (i == warmup) clock.start();
        const int loads = w.loaded + 1, hashes = w.hashes + 1, done = w.finishedCount + 1;
        w.load(i % 2 == 0 ? b : a);
        if (!w.waitLoaded(loads, kTimeoutMs)) {
            std::fprintf(stderr, "soak: switch %d failed: %s\n", i + 1,
                         w.loadErrors.isEmpty() ? "timeout" : qPrintable(w.loadErrors.last()));
            return false;
        }
        w.generate(quint64(1000000 + i), {{"user", "Say hi."}});
        if (!w.waitFinished(done, kTimeoutMs) || failed(w.finished.last()) ||
            !w.waitFor([&] { return w.hashes >= hashes; }, kTimeoutMs)) {
            std::fprintf(stderr, "soak: the generation or the hash after switch %d failed\n", i + 1);
            return false;
        }
        w.finished.clear();
        if (i >= warmup - 2) (i % 2 == 0 ? fb : fa).sample();  // from the last warm-up load of each
    }
    const double seconds = clock.elapsed() / 1000.0;
    fa.print("model switches (the default model loaded)", o.switches, seconds, o.tolerance);
    fb.print("model switches (Gemma 3 270M loaded)", o.switches, seconds, o.tolerance);
    return fa.flat(o.tolerance) && fb.flat(o.tolerance);
}

bool parse(int argc, char** argv, Options* o) {
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string k = argv[i];
        const char* v = argv[i + 1];
        if (k == "--generations") o->generations = std::atoi(v);
        else if (k == "--switches") o->switches = std::atoi(v);
        else if (k == "--new-chat-every") o->newChatEvery = std::max(1, std::atoi(v));
        else if (k == "--tokens") o->tokens = std::max(1, std::atoi(v));
        else if (k == "--tolerance") o->tolerance = std::atof(v);
        else return false;
    }
    return argc % 2 == 1;
}

}  // namespace

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    Options o;
    if (!parse(argc, argv, &o)) {
        std::fprintf(stderr, "usage: worker_soak [--generations N] [--switches M] [--new-chat-every K] "
                             "[--tokens T] [--tolerance F]\n");
        return 2;
    }
    const QString a = QString::fromStdString(wb::default_model_path());
    const QString b = QString::fromStdString(wb::models_dir() + "/gemma-3-270m-Q4_K_M.gguf");
    for (const QString& m : {a, b}) {
        if (!QFileInfo::exists(m)) {
            std::fprintf(stderr, "soak: model missing at %s: run scripts/fetch-models.sh --all\n", qPrintable(m));
            return 1;
        }
    }
    WorkerOnThread w;
    w.load(a);
    if (!w.waitLoaded(1, kTimeoutMs)) {
        std::fprintf(stderr, "soak: the first load failed\n");
        return 1;
    }
    const bool generations = o.generations <= 0 || soakGenerations(w, o);
    const bool switches = o.switches <= 0 || soakSwitches(w, o, a, b);
    return generations && switches ? 0 : 1;
}
