#include "engine/cpu_repack.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <iterator>
#include <tuple>

#if defined(__unix__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "gguf/ggml_type.h"
#include "gguf/gguf_file.h"
#include "util/error.h"

namespace wb {

namespace {

constexpr size_t kAlign = 64;
// Transparent huge pages' size on x86-64 Linux (other sizes only change how much of a copy gets them).
constexpr size_t kHugePage = size_t(2) << 20;

std::atomic<uint64_t> g_total{0};

// The copies alive of rows in a file mapping, by what they were made from: the mapping (gguf_mapping_id:
// two files mapped at one address in turn are two), the rows' address in it, their shape and the
// layout. Weak: a copy lives as long as a backend holds it.
using Key = std::tuple<uint64_t, const void*, int64_t, int64_t, void (*)(int64_t, const void*, size_t, void*)>;
std::mutex g_mutex;
std::map<Key, std::weak_ptr<const RepackedMatrix>> g_copies;

// Drops the mapping's whole pages inside [p, p + bytes) from this process: nothing reads them any
// more, and a later read (a kernel family switched in a test) would fault them in again from the file,
// so this only ever changes the memory held, never a result. Only inside a GGUF file's read-only
// mapping: on the heap (weights a test built in memory) MADV_DONTNEED would zero the data.
void give_back(const void* p, size_t bytes) {
#if defined(__unix__) && defined(MADV_DONTNEED)
    const auto page = size_t(sysconf(_SC_PAGESIZE));
    const auto begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
    const auto end = (reinterpret_cast<uintptr_t>(p) + bytes) / page * page;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
#else
    (void)p;
    (void)bytes;
#endif
}

// A copy's bytes, uninitialised, into m.data (and m.mapped). A copy of 2 MiB or more gets a mapping of
// its own that starts on a 2 MiB boundary and asks for transparent huge pages over its whole 2 MiB
// pages: a decode streams every copy once per token, and with 4 KiB pages this VM read about 25 GB/s
// where 2 MiB pages gave 32 (a page-table walk every 4 KiB). The mapping ends with the copy (rounded
// to a page), so no huge page can hold memory past it, and the advice goes with the mapping when it is
// unmapped (on the heap it would stay on ranges reused by other allocations). Where the system has no
// such pages the advice does nothing; with the kernel's default defrag setting a load may compact
// memory to find them.
void allocate_copy(RepackedMatrix& m) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (m.bytes >= kHugePage) {
        const auto page = size_t(sysconf(_SC_PAGESIZE));
        const size_t len = (m.bytes + page - 1) / page * page;
        void* raw = mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) return;
        const auto at = reinterpret_cast<uintptr_t>(raw);
        const uintptr_t start = (at + kHugePage - 1) / kHugePage * kHugePage;
        if (start > at) munmap(raw, start - at);                                      // the head before the boundary
        if (at + len + kHugePage > start + len) munmap(reinterpret_cast<void*>(start + len), at + len + kHugePage - (start + len));
        madvise(reinterpret_cast<void*>(start), m.bytes / kHugePage * kHugePage, MADV_HUGEPAGE);
        m.data = reinterpret_cast<uint8_t*>(start);
        m.mapped = len;
        return;
    }
#endif
    m.data = static_cast<uint8_t*>(std::aligned_alloc(kAlign, (m.bytes + kAlign - 1) / kAlign * kAlign));
}

}  // namespace

RepackedMatrix::~RepackedMatrix() {
    if (!data) return;  // its allocation failed: nothing held, nothing counted
#if defined(__unix__)
    if (mapped) munmap(data, mapped);
    else
#endif
        std::free(data);
    g_total -= bytes;
}

std::shared_ptr<const RepackedMatrix> repacked_matrix(const Weight& w, const DotKernels& k, ThreadPool& pool,
                                                      bool give_back_mapping) {
    if (!k.repack16 || w.n_out % kTile16Rows != 0) throw Error("repacked_matrix: no 16-row layout for this matrix");
    const size_t row_bytes = ggml_row_bytes(w.type, w.n_in);
    // Rows on the heap (weights a test built in memory) are neither shared nor given back.
    const uint64_t mapping = gguf_mapping_id(w.host, row_bytes * size_t(w.n_out));
    const Key key{mapping, w.host, w.n_in, w.n_out, k.repack16};
    std::lock_guard<std::mutex> lock(g_mutex);
    if (auto it = mapping ? g_copies.find(key) : g_copies.end(); it != g_copies.end())
        if (auto alive = it->second.lock()) return alive;
    auto m = std::make_shared<RepackedMatrix>();
    m->layout = k.repack16;
    m->type = w.type;
    m->unrepack_row = k.unrepack_row;
    m->group_bytes = k.repacked16_bytes(w.n_in);
    m->bytes = m->group_bytes * size_t(w.n_out / kTile16Rows);
    allocate_copy(*m);
    if (!m->data) throw Error("out of memory repacking a " + std::to_string(m->bytes) + "-byte weight matrix");
    g_total += m->bytes;
    const auto* rows = static_cast<const uint8_t*>(w.host);
    RepackedMatrix& out = *m;
    pool.parallel_for(w.n_out / kTile16Rows, [&](int64_t g, int) {
        k.repack16(w.n_in, rows + size_t(g * kTile16Rows) * row_bytes, row_bytes, out.data + size_t(g) * out.group_bytes);
    });
    if (!mapping) return m;
    if (give_back_mapping) give_back(w.host, row_bytes * size_t(w.n_out));
    for (auto it = g_copies.begin(); it != g_copies.end();) it = it->second.expired() ? g_copies.erase(it) : std::next(it);
    g_copies[key] = m;
    return m;
}

uint64_t repacked_bytes_total() { return g_total.load(); }

}  // namespace wb
