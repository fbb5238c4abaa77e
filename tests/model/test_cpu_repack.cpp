// The CPU backend's load-time repacking (engine/cpu_repack.h) on a real file, Gemma 3 270M Q4_K_M
// (Q4_K, Q6_K and Q5_0 layers, a tied Q8_0 embedding table; the other repacked types' layouts are checked
// by test_quant_tiles and the parity suites): which matrices it repacks and what it reports for the
// memory ledger, one copy shared by two
// backends and freed after the last, the file mapping's pages of them given back, and logits bit for
// bit those of the same session reading the file's layout.
#include <QtTest>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include "engine/backend_cpu.h"
#include "engine/cpu_repack.h"
#include "engine/model.h"
#include "engine/session.h"
#include "gguf/gguf_file.h"
#include "quant/quant.h"
#include "quant/quant_internal.h"
#include "test_paths.h"
#include "util/error.h"

using namespace wb;

namespace {

std::string gemma_path() { return models_dir() + "/gemma-3-270m-Q4_K_M.gguf"; }

// Resident bytes of this process's mappings of the file whose path ends with `name` (/proc/self/smaps:
// a mapping's line "start-end perms offset dev inode path", then "Key: value" lines, Rss among them).
uint64_t mapped_rss(const std::string& name) {
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool ours = false;
    uint64_t kb = 0;
    while (std::getline(smaps, line)) {
        const std::string first = line.substr(0, line.find(' '));
        if (!first.empty() && first.find_first_not_of("0123456789abcdef-") == std::string::npos && first.find('-') != std::string::npos)
            ours = line.size() >= name.size() && line.compare(line.size() - name.size(), name.size(), name) == 0;
        else if (ours && first == "Rss:")
            kb += std::stoull(line.substr(4));
    }
    return kb * 1024;
}

// The matrices the backend should repack and their file bytes, by type: every Q4_K, Q5_K, Q6_K, Q8_0, Q5_0, Q4_0, IQ4_NL and Q4_1 layer
// matrix and output head with whole runs of 16 rows (a tied head once, as the table it is); not the
// embedding table on its own, which is only looked up.
std::map<GgmlType, uint64_t> repackable_bytes(const Model& m) {
    std::map<GgmlType, uint64_t> total;
    ModelWeights w = m.weights();
    for (const Weight* x : w.all())
        if (*x && x != &w.token_embd &&
            (x->type == GgmlType::Q4_K || x->type == GgmlType::Q5_K || x->type == GgmlType::Q6_K || x->type == GgmlType::Q8_0 ||
             x->type == GgmlType::Q5_0 || x->type == GgmlType::Q4_0 || x->type == GgmlType::IQ4_NL ||
             x->type == GgmlType::Q4_1) &&
            x->n_out % kTile16Rows == 0)
            total[x->type] += x->src->n_bytes;
    return total;
}

// Their repacked bytes: Q4_K 2368 bytes per block of 16 rows against 16 x 144 (37/36); Q5_K 2880
// against 16 x 176 (45/44); Q6_K 3392 against 16 x 210 (106/105); Q8_0, Q5_0, Q4_0, IQ4_NL and Q4_1 the
// same bytes as the file's (16 rows of a block take 544, 352, 288, 288 and 320 bytes, so the 20 blocks of Gemma 3's
// 640 columns fill whole 64-byte lines).
uint64_t repacked_size(GgmlType t, uint64_t file_bytes) {
    if (t == GgmlType::Q4_K) return file_bytes / 36 * 37;
    if (t == GgmlType::Q5_K) return file_bytes / 44 * 45;
    if (t == GgmlType::Q6_K) return file_bytes / 105 * 106;
    return file_bytes;
}

// The VmFlags line of the /proc/self/smaps mapping that holds p ("" where the system has none).
std::string vm_flags(const void* p) {
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool ours = false;
    const auto at = reinterpret_cast<uintptr_t>(p);
    while (std::getline(smaps, line)) {
        unsigned long lo = 0, hi = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' '))
            ours = at >= lo && at < hi;  // a mapping's header line (its fields start "Name:")
        else if (ours && line.rfind("VmFlags:", 0) == 0)
            return line.substr(8) + " ";
    }
    return "";
}

bool avx512_family() { return std::string(quant_kernel_name()) == "avx512"; }

// The logits of a prompt (one batch) and of three more tokens one at a time.
std::vector<float> logits_of(Session& s) {
    const std::vector<int32_t> prompt = {2, 818, 5279, 529, 7001, 563, 9405, 236761, 1030, 7001};
    std::vector<float> out = s.append(prompt.data(), int32_t(prompt.size()));
    for (int32_t t : {506, 11819, 236764}) {
        const std::vector<float>& l = s.append(&t, 1);
        out.insert(out.end(), l.begin(), l.end());
    }
    return out;
}

}  // namespace

class TestCpuRepack : public QObject {
    Q_OBJECT

private slots:
    void initTestCase() {
        if (!avx512_family())
            QSKIP(qPrintable(QString("the %1 kernel family repacks nothing (AVX-512 VNNI only)").arg(quant_kernel_name())));
        QVERIFY2(std::ifstream(gemma_path()).good(), "run scripts/fetch-models.sh");
    }

    // Every eligible Q4_K, Q6_K, Q8_0 and Q5_0 matrix is repacked (Gemma 3's tied Q8_0 head among them), and the
    // backend reports the bytes by type; two backends share one copy, and the last one to release it
    // frees it.
    void repacksOnceForTheProcess() {
        const std::unique_ptr<Model> m = Model::load(gemma_path());
        const std::map<GgmlType, uint64_t> file = repackable_bytes(*m);
        QVERIFY(file.count(GgmlType::Q4_K) && file.count(GgmlType::Q6_K) && file.count(GgmlType::Q8_0) && file.count(GgmlType::Q5_0));
        QVERIFY(m->weights().output.src == m->weights().token_embd.src);  // the tied head this test is about
        uint64_t want_total = 0;
        for (const auto& [t, bytes] : file) want_total += repacked_size(t, bytes);
        QCOMPARE(repacked_bytes_total(), uint64_t(0));
        CpuBackend a(2), b(2);
        {
            Session sa(*m, a), sb(*m, b);
            for (const CpuBackend* be : {&a, &b}) {
                const auto r = be->repacked_weights();
                QCOMPARE(r.size(), file.size());
                for (const auto& [t, bytes] : r) {
                    QVERIFY(file.count(t));
                    QCOMPARE(bytes, repacked_size(t, file.at(t)));
                }
            }
            QCOMPARE(repacked_bytes_total(), want_total);  // one copy, not two
        }
        QVERIFY(a.repacked_weights().empty() && b.repacked_weights().empty());
        QCOMPARE(repacked_bytes_total(), uint64_t(0));
    }

    // A comparison puts a second session of the model on the chat's backend: the two share the
    // backend's copies, and the second one's end leaves the first one's in place (its decode keeps
    // reading them, and the ledger keeps counting them).
    void aSecondSessionOnTheBackendLeavesTheFirstOnesCopies() {
        const std::unique_ptr<Model> m = Model::load(gemma_path());
        CpuBackend backend(2);
        Session first(*m, backend);
        const auto held = backend.repacked_weights();
        QVERIFY(!held.empty());
        const uint64_t total = repacked_bytes_total();
        { Session second(*m, backend); }
        QCOMPARE(backend.repacked_weights(), held);
        QCOMPARE(repacked_bytes_total(), total);
    }

    // A session whose construction fails after prepare_weights (here the backend refuses the KV types)
    // gives its copies back: no destructor runs for it.
    void aFailedSessionStartGivesItsCopiesBack() {
        struct Refusing : CpuBackend {
            Refusing() : CpuBackend(2) {}
            void check_kv_types(KvType, KvType) const override { throw Error("refused for the test"); }
        };
        const std::unique_ptr<Model> m = Model::load(gemma_path());
        Refusing backend;
        QVERIFY_THROWS_EXCEPTION(Error, Session(*m, backend));
        QVERIFY(backend.repacked_weights().empty());
        QCOMPARE(repacked_bytes_total(), uint64_t(0));
    }

    // Once repacked, the mapping's pages of those matrices (the tied embedding table's too: its
    // lookups read the copy) are not held: the file's resident share drops by at least their bytes
    // less a page at each end of each matrix.
    void givesTheMappingsPagesBack() {
        const std::unique_ptr<Model> m = Model::load(gemma_path());
        const std::string name = "/gemma-3-270m-Q4_K_M.gguf";
        // Touch the whole file, as a prefill would without the repacking.
        uint64_t sum = 0;
        for (const GgufTensor& t : m->file().tensors())
            for (uint64_t i = 0; i < t.n_bytes; i += 4096) sum += t.data[i];
        QVERIFY(sum > 0);
        const uint64_t before = mapped_rss(name);
        CpuBackend backend(2);
        Session s(*m, backend);
        const uint64_t after = mapped_rss(name);
        uint64_t repacked = 0;
        for (const auto& [t, bytes] : repackable_bytes(*m)) repacked += bytes;
        const uint64_t dropped_at_least = repacked - 2 * 4096 * 7 * uint64_t(m->config().n_layer + 1);
        QVERIFY2(before >= after + dropped_at_least,
                 qPrintable(QString("resident %1 -> %2 bytes, expected a drop of at least %3").arg(before).arg(after).arg(dropped_at_least)));
    }

    // A copy of 2 MiB or more starts on a 2 MiB boundary and its mapping is advised to take transparent
    // huge pages (the decode streams it every token; cpu_repack.cpp says why): the mapping's "hg" flag,
    // which the advice sets whatever the system's huge page mode.
    void largeCopiesAskForHugePages() {
        const std::unique_ptr<Model> m = Model::load(gemma_path());
        const ModelWeights w = m->weights();
        ThreadPool pool(2);
        const std::shared_ptr<const RepackedMatrix> head =
            repacked_matrix(w.output, dot_kernels(w.output.type, w.output.n_in, DotOrder::kRow), pool, false);
        QVERIFY(head->bytes >= (size_t(2) << 20));
        QCOMPARE(reinterpret_cast<uintptr_t>(head->data) % (uintptr_t(2) << 20), uintptr_t(0));
        const std::string flags = vm_flags(head->data);
        if (flags.empty()) QSKIP("/proc/self/smaps has no VmFlags here: only the alignment was checked");
        QVERIFY2(flags.find(" hg ") != std::string::npos, qPrintable(QString::fromStdString("VmFlags:" + flags)));
    }

    // The repacked layout changes how the weights are read, not one bit of the logits: the same
    // prompt and tokens through a session whose backend reads the file's layout (the plain AVX2
    // family, which repacks nothing, prepared and run while it is forced). The embedding lookups read
    // the tied table from the copy in the first session and from the file in the second.
    void logitsAreTheFilesLayoutsBitForBit() {
        const std::unique_ptr<Model> m = Model::load(gemma_path());
        CpuBackend repacking(2);
        std::vector<float> repacked;
        {
            Session s(*m, repacking);
            QVERIFY(!repacking.repacked_weights().empty());
            repacked = logits_of(s);
        }
        std::vector<float> in_place;
        {
            struct ForcePlainAvx2 {  // off again however the block ends
                ForcePlainAvx2() { quant_force_avx2(true); }
                ~ForcePlainAvx2() { quant_force_avx2(false); }
            } plain_avx2;
            CpuBackend plain(2);
            Session s(*m, plain);
            QVERIFY(plain.repacked_weights().empty());
            in_place = logits_of(s);
        }
        QCOMPARE(repacked.size(), in_place.size());
        QVERIFY(std::memcmp(repacked.data(), in_place.data(), repacked.size() * sizeof(float)) == 0);
    }
};

QTEST_GUILESS_MAIN(TestCpuRepack)
#include "test_cpu_repack.moc"
