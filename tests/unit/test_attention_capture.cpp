// Attention capture on the CPU backend: the captured probabilities are the softmax the attention used.
// Rows sum to 1, are zero above the causal diagonal and outside a sliding window, equal an independent
// softmax(q.k * scale) over the same (f16) q and K, and only the requested heads are written; and they
// are the weights the output was made with: P.V recomputed from the capture equals the attention output.
// And a batch's rows do not depend on how the batch is cut into blocks (bit for bit).
#include <QtTest>

#include <cmath>
#include <cstring>
#include <random>

#include "engine/backend_cpu.h"
#include "util/fp16.h"

using namespace wb;

namespace {

struct Fixture {
    static constexpr int32_t kHeads = 4, kKvHeads = 2, kDim = 16, kLayers = 1;
    CpuBackend be{2};
    KvCache kv;
    std::mt19937 rng{1234};

    explicit Fixture(int32_t n_ctx) : kv(make_config(n_ctx), be) {}
    static KvCacheConfig make_config(int32_t n_ctx) {
        KvCacheConfig c;
        c.n_layer = kLayers;
        c.n_head_kv = kKvHeads;
        c.head_dim = kDim;
        c.n_ctx = n_ctx;
        c.block_tokens = 8;  // several blocks even for short sequences
        return c;
    }
    Tensor random(int64_t rows, int64_t cols) {
        Tensor t = be.alloc(rows, cols);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        for (int64_t i = 0; i < rows * cols; ++i) t.data[i] = nd(rng);
        return t;
    }
};

float f16_round(float x) { return fp16_to_f32(f32_to_fp16(x)); }

}  // namespace

class TestAttentionCapture : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void capturedRowsAreTheSoftmaxUsed_data() {
        QTest::addColumn<int>("n_tokens");
        QTest::addColumn<int>("window");
        QTest::newRow("prefill 20, full") << 20 << 0;
        QTest::newRow("prefill 20, window 5") << 20 << 5;
        QTest::newRow("prefill 1") << 1 << 0;
    }
    void capturedRowsAreTheSoftmaxUsed() {
        QFETCH(int, n_tokens);
        QFETCH(int, window);
        Fixture f(64);
        const int32_t n = n_tokens;
        Tensor q = f.random(n, Fixture::kHeads * Fixture::kDim);
        Tensor k = f.random(n, Fixture::kKvHeads * Fixture::kDim);
        Tensor v = f.random(n, Fixture::kKvHeads * Fixture::kDim);
        Tensor out = f.be.alloc(n, Fixture::kHeads * Fixture::kDim);
        f.kv.reserve(n);
        f.be.kv_store(f.kv, 0, k, v, 0);
        f.kv.set_n_tokens(n);

        const std::vector<int32_t> heads{3, 0};  // a subset, out of order
        std::vector<float> probs(heads.size() * size_t(n) * size_t(n), -1.0f);
        AttentionParams p{Fixture::kHeads, Fixture::kKvHeads, Fixture::kDim, 0.25f, window};
        p.capture_probs = probs.data();
        p.capture_heads = heads.data();
        p.n_capture_heads = int32_t(heads.size());
        f.be.attention(q, f.kv, 0, 0, p, out);

        for (size_t hi = 0; hi < heads.size(); ++hi) {
            const int32_t h = heads[hi], kvh = h / (Fixture::kHeads / Fixture::kKvHeads);
            for (int32_t r = 0; r < n; ++r) {
                const float* row = probs.data() + (hi * size_t(n) + size_t(r)) * size_t(n);
                // independent softmax(scale * q.k) in double over the visible keys
                const int32_t first = window > 0 ? std::max(0, r - window + 1) : 0;
                std::vector<double> s(static_cast<size_t>(n), 0.0);
                double mx = -1e300, z = 0.0, total = 0.0;
                for (int32_t j = first; j <= r; ++j) {
                    double dot = 0.0;
                    for (int32_t d = 0; d < Fixture::kDim; ++d)
                        dot += double(f16_round(q.data[r * q.n_cols + h * Fixture::kDim + d])) *
                               double(f16_round(k.data[j * k.n_cols + kvh * Fixture::kDim + d]));
                    s[size_t(j)] = 0.25 * dot;
                    mx = std::max(mx, s[size_t(j)]);
                }
                for (int32_t j = first; j <= r; ++j) z += std::exp(s[size_t(j)] - mx);
                for (int32_t j = 0; j < n; ++j) {
                    total += row[j];
                    if (j > r || j < first) {
                        QCOMPARE(row[j], 0.0f);  // causal / window mask
                    } else {
                        const double expected = std::exp(s[size_t(j)] - mx) / z;
                        QVERIFY2(std::fabs(row[j] - expected) < 1e-4,
                                 qPrintable(QString("h%1 r%2 k%3: %4 vs %5").arg(h).arg(r).arg(j).arg(row[j]).arg(expected)));
                    }
                }
                QVERIFY(std::fabs(total - 1.0) < 1e-5);
            }
        }
        for (Tensor* t : {&q, &k, &v, &out}) f.be.free(*t);
    }

    // The captured probabilities are the ones that weighted V: out[r, h] = sum_j p[h][r][j] v_j, with
    // p rounded to f16 as the backend rounds it before the product (the f16 cache holds v already),
    // for every head, in a batch (attention_rows) and in a decode step (attention_decode). A capture
    // taken anywhere else than the softmax that feeds V (before a scale, of another head) fails here.
    void capturedProbabilitiesWeightedV_data() {
        QTest::addColumn<int>("n_tokens");
        QTest::addColumn<int>("window");
        QTest::newRow("prefill 20, full") << 20 << 0;
        QTest::newRow("prefill 20, window 5") << 20 << 5;
        QTest::newRow("prefill 9, then a decode step") << 9 << 0;
    }
    void capturedProbabilitiesWeightedV() {
        QFETCH(int, n_tokens);
        QFETCH(int, window);
        Fixture f(64);
        const int32_t n = n_tokens + 1, hd = Fixture::kDim;
        Tensor q = f.random(n, Fixture::kHeads * hd);
        Tensor k = f.random(n, Fixture::kKvHeads * hd);
        Tensor v = f.random(n, Fixture::kKvHeads * hd);
        Tensor out = f.be.alloc(n, Fixture::kHeads * hd);
        f.kv.reserve(n);
        f.be.kv_store(f.kv, 0, k, v, 0);
        f.kv.set_n_tokens(n);
        const std::vector<int32_t> heads{0, 1, 2, 3};
        AttentionParams p{Fixture::kHeads, Fixture::kKvHeads, hd, 0.25f, window};
        p.capture_heads = heads.data();
        p.n_capture_heads = int32_t(heads.size());
        // Rows 0..n-2 as one batch, then row n-1 alone (a decode step over all n keys).
        std::vector<float> batch(heads.size() * size_t(n - 1) * size_t(n - 1)), step(heads.size() * size_t(n));
        p.capture_probs = batch.data();
        Tensor first_q = q.rows(0, n - 1), first_out = out.rows(0, n - 1);
        f.be.attention(first_q, f.kv, 0, 0, p, first_out);
        p.capture_probs = step.data();
        Tensor last_q = q.rows(n - 1, 1), last_out = out.rows(n - 1, 1);
        f.be.attention(last_q, f.kv, 0, n - 1, p, last_out);

        double worst = 0.0;
        for (int32_t h = 0; h < Fixture::kHeads; ++h) {
            const int32_t kvh = h / (Fixture::kHeads / Fixture::kKvHeads);
            for (int32_t r = 0; r < n; ++r) {
                const float* row = r < n - 1 ? batch.data() + (size_t(h) * size_t(n - 1) + size_t(r)) * size_t(n - 1)
                                             : step.data() + size_t(h) * size_t(n);
                for (int32_t d = 0; d < hd; ++d) {
                    double expected = 0.0;
                    for (int32_t j = 0; j <= r; ++j)
                        expected += double(f16_round(row[j])) * double(f16_round(v.data[j * v.n_cols + kvh * hd + d]));
                    const double got = out.data[r * out.n_cols + h * hd + d];
                    worst = std::max(worst, std::fabs(got - expected));
                    QVERIFY2(std::fabs(got - expected) < 1e-5,
                             qPrintable(QString("h%1 r%2 d%3: out %4, P.V of the capture %5").arg(h).arg(r).arg(d).arg(got).arg(expected)));
                }
            }
        }
        qInfo("largest |out - P.V| %.2e", worst);
        for (Tensor* t : {&q, &k, &v, &out}) f.be.free(*t);
    }

    // A batch's rows are computed in blocks that share each K and V row (a key one row of the block does
    // not see weighs 0 there): every row's output and captured probabilities must be bit-identical
    // however the batch is cut (one batch of 23 rows, or batches of 2 and 3 rows at rising positions),
    // with and without a sliding window.
    // inf_key >= 0: one V value of that key is infinite (an f16 overflow). A row that does not see
    // the key must not get it as 0 * inf = NaN from a block that holds both.
    void batchedRowsDoNotDependOnTheirBlock_data() {
        QTest::addColumn<int>("window");
        QTest::addColumn<int>("inf_key");
        QTest::newRow("full") << 0 << -1;
        QTest::newRow("window 5") << 5 << -1;
        QTest::newRow("full, inf V at key 10") << 0 << 10;     // rows 8, 9 share key 10's block, not its view
        QTest::newRow("window 5, inf V at key 10") << 5 << 10;  // row 15 too (its window starts at 11)
    }
    void batchedRowsDoNotDependOnTheirBlock() {
        QFETCH(int, window);
        QFETCH(int, inf_key);
        Fixture f(64);
        const int32_t n = 23, width = Fixture::kHeads * Fixture::kDim;
        Tensor q = f.random(n, width);
        Tensor k = f.random(n, Fixture::kKvHeads * Fixture::kDim);
        Tensor v = f.random(n, Fixture::kKvHeads * Fixture::kDim);
        constexpr int32_t kInfDim = 3;  // of kv head 0, which query heads 0 and 1 read
        if (inf_key >= 0) v.data[int64_t(inf_key) * v.n_cols + kInfDim] = INFINITY;
        Tensor whole = f.be.alloc(n, width), parts = f.be.alloc(n, width);
        f.kv.reserve(n);
        f.be.kv_store(f.kv, 0, k, v, 0);
        f.kv.set_n_tokens(n);
        const std::vector<int32_t> heads{2};
        AttentionParams p{Fixture::kHeads, Fixture::kKvHeads, Fixture::kDim, 0.25f, window};
        p.capture_heads = heads.data();
        p.n_capture_heads = 1;
        std::vector<float> whole_probs(size_t(n) * size_t(n));
        p.capture_probs = whole_probs.data();
        f.be.attention(q, f.kv, 0, 0, p, whole);
        int32_t pos0 = 0;
        for (int32_t m : {2, 3, 2, 3, 2, 3, 2, 3, 3}) {  // 23 rows; never 1 (a single row takes the decode schedule)
            std::vector<float> probs(size_t(m) * size_t(pos0 + m));
            p.capture_probs = probs.data();
            Tensor part_q = q.rows(pos0, m), part_out = parts.rows(pos0, m);
            f.be.attention(part_q, f.kv, 0, pos0, p, part_out);
            for (int32_t r = 0; r < m; ++r)
                QVERIFY2(std::memcmp(probs.data() + size_t(r) * size_t(pos0 + m), whole_probs.data() + size_t(pos0 + r) * size_t(n),
                                     sizeof(float) * size_t(pos0 + m)) == 0,
                         qPrintable(QString("captured row %1").arg(pos0 + r)));
            pos0 += m;
        }
        QCOMPARE(pos0, n);
        for (int32_t r = 0; r < n; ++r)
            QVERIFY2(std::memcmp(whole.data + r * width, parts.data + r * width, sizeof(float) * size_t(width)) == 0,
                     qPrintable(QString("output row %1").arg(r)));
        // The infinite value reached exactly the rows that see its key.
        for (int32_t r = 0; inf_key >= 0 && r < n; ++r) {
            const bool sees = r >= inf_key && (window == 0 || r - window < inf_key);
            bool finite = true;
            for (int32_t c = 0; c < width; ++c) finite = finite && std::isfinite(whole.data[r * width + c]);
            QVERIFY2(finite != sees, qPrintable(QString("row %1 %2 key %3").arg(r).arg(sees ? "sees" : "does not see").arg(inf_key)));
        }
        for (Tensor* t : {&q, &k, &v, &whole, &parts}) f.be.free(*t);
    }

    // A decode step (one query row at the end) captures the same row as a prefill of the whole text.
    void decodeRowEqualsPrefillRow() {
        Fixture f(64);
        const int32_t n = 13;
        Tensor q = f.random(n, Fixture::kHeads * Fixture::kDim);
        Tensor k = f.random(n, Fixture::kKvHeads * Fixture::kDim);
        Tensor v = f.random(n, Fixture::kKvHeads * Fixture::kDim);
        Tensor out = f.be.alloc(n, Fixture::kHeads * Fixture::kDim);
        f.kv.reserve(n);
        f.be.kv_store(f.kv, 0, k, v, 0);
        f.kv.set_n_tokens(n);
        const std::vector<int32_t> heads{1};
        std::vector<float> prefill(size_t(n) * size_t(n)), decode(static_cast<size_t>(n));
        AttentionParams p{Fixture::kHeads, Fixture::kKvHeads, Fixture::kDim, 0.25f, 0};
        p.capture_heads = heads.data();
        p.n_capture_heads = 1;
        p.capture_probs = prefill.data();
        f.be.attention(q, f.kv, 0, 0, p, out);
        p.capture_probs = decode.data();
        Tensor last_q = q.rows(n - 1, 1), last_out = out.rows(n - 1, 1);
        f.be.attention(last_q, f.kv, 0, n - 1, p, last_out);
        for (int32_t j = 0; j < n; ++j) QVERIFY(std::fabs(decode[size_t(j)] - prefill[size_t((n - 1) * n + j)]) < 1e-6);
        for (Tensor* t : {&q, &k, &v, &out}) f.be.free(*t);
    }
};

QTEST_GUILESS_MAIN(TestAttentionCapture)
#include "test_attention_capture.moc"
