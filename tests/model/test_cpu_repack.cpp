// The CPU backend's load-time repacking (engine/cpu_repack.h) on a real file, Gemma 3 270M Q4_K_M:
// which matrices it repacks and what it reports for the memory ledger, one copy shared by two
// backends and freed after the last, the file mapping's pages of them given back, and logits bit for
// bit those of the same session reading the file's layout.
#include <QtTest>

#include <cstring>
#include <fstream>
#include <string>

#include "engine/backend_cpu.h"
#include "engine/cpu_repack.h"
#include "engine/model.h"
#include "engine/session.h"
#include "gguf/gguf_file.h"
#include "quant/quant.h"
#include "quant/quant_internal.h"
#include "test_paths.h"

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

// The Q4_K matrices the backend should repack: every Q4_K layer matrix and output head (not the
// embedding table, which is only looked up) with whole runs of 16 rows; their bytes in the file.
uint64_t q4_k_matrix_bytes(const Model& m) {
    uint64_t total = 0;
    ModelWeights w = m.weights();
    for (const Weight* x : w.all())
        if (*x && x != &w.token_embd && x->type == GgmlType::Q4_K && x->n_out % kTile16Rows == 0)
            total += x->src->n_bytes;
    return total;
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

    // Every eligible Q4_K matrix is repacked, at 37/36 of its file bytes (2368 bytes per block of 16
    // rows against 16 x 144), and the backend says so by type; two backends share one copy, and the
    // last one to release it frees it.
    void repacksTheQ4KMatricesOnceForTheProcess() {
        const std::unique_ptr<Model> m = Model::load(gemma_path());
        const uint64_t want = q4_k_matrix_bytes(*m) / 36 * 37;
        QVERIFY(want > 0);
        QCOMPARE(repacked_bytes_total(), uint64_t(0));
        CpuBackend a(2), b(2);
        {
            Session sa(*m, a), sb(*m, b);
            for (const CpuBackend* be : {&a, &b}) {
                const auto r = be->repacked_weights();
                QCOMPARE(int(r.size()), 1);
                QCOMPARE(r[0].first, GgmlType::Q4_K);
                QCOMPARE(r[0].second, want);
            }
            QCOMPARE(repacked_bytes_total(), want);  // one copy, not two
        }
        QVERIFY(a.repacked_weights().empty() && b.repacked_weights().empty());
        QCOMPARE(repacked_bytes_total(), uint64_t(0));
    }

    // Once repacked, the mapping's pages of those matrices are not held: the file's resident share
    // drops by at least their bytes less a page at each end of each matrix.
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
        const uint64_t dropped_at_least = q4_k_matrix_bytes(*m) - 2 * 4096 * 7 * uint64_t(m->config().n_layer + 1);
        QVERIFY2(before >= after + dropped_at_least,
                 qPrintable(QString("resident %1 -> %2 bytes, expected a drop of at least %3").arg(before).arg(after).arg(dropped_at_least)));
    }

    // The repacked layout changes how the weights are read, not one bit of the logits: the same
    // prompt and tokens through a session whose backend reads the file's layout (the plain AVX2
    // family, which repacks nothing, prepared and run while it is forced).
    void logitsAreTheFilesLayoutsBitForBit() {
        const std::unique_ptr<Model> m = Model::load(gemma_path());
        CpuBackend repacking(2);
        std::vector<float> repacked;
        {
            Session s(*m, repacking);
            QVERIFY(!repacking.repacked_weights().empty());
            repacked = logits_of(s);
        }
        quant_force_avx2(true);
        std::vector<float> in_place;
        {
            CpuBackend plain(2);
            Session s(*m, plain);
            const bool none = plain.repacked_weights().empty();
            in_place = logits_of(s);
            quant_force_avx2(false);
            QVERIFY(none);
        }
        QCOMPARE(repacked.size(), in_place.size());
        QVERIFY(std::memcmp(repacked.data(), in_place.data(), repacked.size() * sizeof(float)) == 0);
    }
};

QTEST_GUILESS_MAIN(TestCpuRepack)
#include "test_cpu_repack.moc"
