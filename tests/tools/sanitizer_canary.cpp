// The sanitizer passes' self-check (scripts/test-sanitizers.sh): a program with one deliberate bug of
// each kind a pass must catch, committed so that the failure path is proven, not assumed. Without
// WB_SANITIZER_CANARY it does nothing wrong and exits 0 (ctest runs it so in the sanitizer trees: no
// report on a clean program). With WB_SANITIZER_CANARY=KIND it commits that bug; the sanitizer must
// report it and end the process with a non-zero status, and the pass must then fail and name the tree
// and the test. If the program instead exits 0, the tree is not instrumented or the run-time options
// let the report through, and the self-check fails.
//   heap-overflow    ASan: a read one element past a heap array
//   use-after-free   ASan: a read of freed memory
//   leak             LeakSanitizer: a block nothing points to at exit
//   signed-overflow  UBSan: INT_MAX + 1
//   data-race        TSan: two threads write one int without a lock
// (qthread-race, the same between a QThread and a Qt Test function, is tests/tools/sanitizer_canary_qt.cpp's.)
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace {

// Values the optimiser cannot see through, so every bug below happens at run time. Each function
// returns 0 when the bug goes unnoticed, so that only a sanitizer can make the exit status non-zero.
volatile int g_one = 1;
volatile int g_index = 4;
volatile int g_sink = 0;
int* volatile g_keep = nullptr;
int g_shared = 0;

int heap_overflow() {
    int* a = new int[4]();
    g_sink = a[g_index];
    delete[] a;
    return 0;
}

int use_after_free() {
    int* a = new int[4]();
    delete[] a;
    g_sink = a[g_one];
    return 0;
}

int leak() {
    g_keep = static_cast<int*>(std::malloc(64 * sizeof(int)));
    g_keep[0] = g_one;
    g_keep = nullptr;  // the only pointer to the block is gone: a leak at exit
    return 0;
}

int signed_overflow() {
    int v = INT_MAX;
    v += g_one;
    g_sink = v;
    return 0;
}

int data_race() {
    auto bump = [] {
        for (int i = 0; i < 100000; ++i) g_shared = g_shared + g_one;
    };
    std::thread a(bump), b(bump);
    a.join();
    b.join();
    g_sink = g_shared;
    return 0;
}

}  // namespace

int main() {
    const char* kind = std::getenv("WB_SANITIZER_CANARY");
    // qthread-race is sanitizer_canary_qt's: a whole pass run with it turns red there, not here.
    if (!kind || !*kind || !std::strcmp(kind, "qthread-race")) return 0;
    std::printf("sanitizer_canary: committing a %s on purpose\n", kind);
    std::fflush(stdout);
    if (!std::strcmp(kind, "heap-overflow")) return heap_overflow();
    if (!std::strcmp(kind, "use-after-free")) return use_after_free();
    if (!std::strcmp(kind, "leak")) return leak();
    if (!std::strcmp(kind, "signed-overflow")) return signed_overflow();
    if (!std::strcmp(kind, "data-race")) return data_race();
    std::fprintf(stderr, "sanitizer_canary: unknown WB_SANITIZER_CANARY '%s' (heap-overflow, use-after-free, leak, "
                         "signed-overflow, data-race)\n", kind);
    return 2;
}
