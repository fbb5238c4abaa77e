// Compare (issue 16 item 7): a model compared with itself gives KL 0 and no top-1 flips; against the
// same model with a 4-bit KV cache the KL and flips equal a direct recomputation from each session's
// own teacher-forced logits.
#include <QtTest>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <new>

#include "engine/backend_cpu.h"
#include "engine/model.h"
#include "engine/model_compare.h"
#include "engine/session.h"
#include "model/model_paths.h"
#include "test_paths.h"
#include "util/error.h"

using namespace wb;

// The largest single allocation while `g_watch` is set: compare_models must hold one batch of logits
// rows per session, never every position's (prompt + reply) x n_vocab.
namespace {
std::atomic<bool> g_watch{false};
std::atomic<size_t> g_largest{0};
}  // namespace

void* operator new(size_t n) {
    if (g_watch.load(std::memory_order_relaxed) && n > g_largest.load(std::memory_order_relaxed)) g_largest = n;
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

class TestModelCompare : public QObject {
    Q_OBJECT
    std::unique_ptr<CpuBackend> backend_;
    std::unique_ptr<Model> model_;
    std::vector<int32_t> prompt_, reply_;

    std::unique_ptr<Session> session(KvType kv, int32_t n_batch = 256) {
        SessionOptions so;
        so.n_ctx = 256;
        so.n_batch = n_batch;
        so.kv_type_k = so.kv_type_v = kv;
        return std::make_unique<Session>(*model_, *backend_, so);
    }

private Q_SLOTS:
    void initTestCase() {
        backend_ = std::make_unique<CpuBackend>(0);
        model_ = Model::load(wb_test::default_model());
        prompt_ = model_->tokenizer().encode("The capital of France is Paris. The capital of Italy is", true, true);
        reply_ = model_->tokenizer().encode(" Rome, and the capital of Spain is Madrid.", false, true);
    }

    void aModelAgainstItselfGivesKlZero() {
        auto a = session(KvType::F16), b = session(KvType::F16);
        const ModelComparison c = compare_models(*a, *b, prompt_, reply_);
        QCOMPARE(c.tokens.size(), reply_.size());
        for (size_t i = 0; i < reply_.size(); ++i) {
            QCOMPARE(c.tokens[i].token, reply_[i]);
            QCOMPARE(c.tokens[i].kl, 0.0);
            QVERIFY(!c.tokens[i].flip());
        }
        QCOMPARE(c.kl_max, 0.0);
        QCOMPARE(c.flips, 0);
    }

    void klAndFlipsMatchARecomputation_data() {
        QTest::addColumn<int>("n_batch");
        QTest::newRow("one batch") << 256;
        // The prompt's last row in the middle of a batch, the reply over several.
        QTest::newRow("batches of 5") << 5;
    }

    void klAndFlipsMatchARecomputation() {
        QFETCH(int, n_batch);
        QVERIFY(prompt_.size() % 5 != 0);
        auto a = session(KvType::F16, n_batch), b = session(KvType::Q4_0, n_batch);
        const ModelComparison c = compare_models(*a, *b, prompt_, reply_);
        std::vector<int32_t> all = prompt_;
        all.insert(all.end(), reply_.begin(), reply_.end());
        a->reset();
        b->reset();
        const std::vector<float> la = a->evaluate(all), lb = b->evaluate(all);
        const int32_t nv = model_->config().n_vocab;
        int flips = 0;
        double kl_max = 0.0;
        for (size_t i = 0; i < reply_.size(); ++i) {
            // Recomputed here as sum p_a * (log p_a - log p_b) with the softmax in long double.
            const float* ra = la.data() + (prompt_.size() - 1 + i) * size_t(nv);
            const float* rb = lb.data() + (prompt_.size() - 1 + i) * size_t(nv);
            long double za = 0, zb = 0;
            for (int32_t v = 0; v < nv; ++v) {
                za += std::exp((long double)ra[v]);
                zb += std::exp((long double)rb[v]);
            }
            long double kl = 0;
            int32_t ta = 0, tb = 0;
            for (int32_t v = 0; v < nv; ++v) {
                const long double pa = std::exp((long double)ra[v]) / za, pb = std::exp((long double)rb[v]) / zb;
                kl += pa * (std::log(pa) - std::log(pb));
                if (ra[v] > ra[ta]) ta = v;
                if (rb[v] > rb[tb]) tb = v;
            }
            QVERIFY2(std::fabs(double(kl) - c.tokens[i].kl) < 1e-9 + 1e-6 * double(kl),
                     qPrintable(QString("token %1: %2 vs %3").arg(i).arg(double(kl)).arg(c.tokens[i].kl)));
            QCOMPARE(c.tokens[i].top_a, ta);
            QCOMPARE(c.tokens[i].top_b, tb);
            flips += ta != tb;
            kl_max = std::max(kl_max, double(kl));
        }
        QCOMPARE(c.flips, flips);
        QVERIFY(c.kl_max > 0.0);  // a 4-bit cache does move the distributions
        QVERIFY(std::fabs(c.kl_max - kl_max) < 1e-9 + 1e-6 * kl_max);
    }

    void holdsOneBatchOfRowsAtATime() {
        auto a = session(KvType::F16, 4), b = session(KvType::Q4_0, 4);
        const size_t row = size_t(model_->config().n_vocab) * sizeof(float);
        const size_t positions = prompt_.size() + reply_.size();
        QVERIFY(positions > 12);
        g_largest = 0;
        g_watch = true;
        const ModelComparison c = compare_models(*a, *b, prompt_, reply_);
        g_watch = false;
        QCOMPARE(c.tokens.size(), reply_.size());
        // One batch (4 rows) is the most a session reads; all rows would be `positions` of them.
        QVERIFY2(g_largest <= 4 * row, qPrintable(QString("%1 bytes, a row is %2").arg(g_largest.load()).arg(row)));
    }

    void badInputIsRefusedByName() {
        auto a = session(KvType::F16);
        auto b = session(KvType::F16);
        auto message = [](const std::function<void()>& f) -> QString {
            try {
                f();
            } catch (const Error& e) {
                return e.what();
            }
            return "(no error)";
        };
        QCOMPARE(message([&] { compare_models(*a, *b, {}, reply_); }), QString("compare: the prompt is empty"));
        // Another tokenizer: gemma-3's vocabulary is not SmolLM2's.
        const std::string other = models_dir() + "/gemma-3-270m-Q4_K_M.gguf";
        const std::unique_ptr<Model> gemma = Model::load(other);
        Session g(*gemma, *backend_, {});
        QVERIFY(message([&] { compare_models(*a, g, prompt_, reply_); }).startsWith("compare: the models' vocabularies differ"));
    }
};

QTEST_GUILESS_MAIN(TestModelCompare)
#include "test_model_compare.moc"
