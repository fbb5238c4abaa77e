// The CPU backend's decode attention (one query row over the f16 cache) splits its work into tasks
// whose number and size depend on the thread count and the depth: runs of keys for the scores, slices
// of output dims for V^T p. The result must not depend on that split: for every shape (head dims taking
// the 32-dim and the 16-dim slices, grouped-query attention, one kv head), depth (runs crossing cache
// blocks, a key count that is no multiple of the runs) and sliding window, the output with 2 and 3
// threads is bit for bit the output with 1 thread, and every output is finite.
#include <QtTest>

#include <cstring>
#include <random>

#include "engine/backend_cpu.h"
#include "kv/kv_cache.h"
#include "util/fp16.h"

using namespace wb;

namespace {

struct Shape {
    int32_t n_head, n_head_kv, head_dim;
};

// The decode output of a query at position `depth` over positions [0, depth] of random K and V, with
// `threads` threads. Same seed, same values for every thread count.
std::vector<float> decode_output(const Shape& s, int32_t depth, int32_t window, int threads) {
    CpuBackend be(threads);
    KvCacheConfig c;
    c.n_layer = 1;
    c.n_head_kv = s.n_head_kv;
    c.head_dim = s.head_dim;
    c.n_ctx = depth + 1;
    c.block_tokens = 128;
    KvCache kv(c, be);
    kv.reserve(depth + 1);
    std::mt19937 rng(99);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<uint16_t> row(kv.k_row_bytes() / sizeof(uint16_t));
    for (int32_t pos = 0; pos <= depth; ++pos) {
        for (uint16_t& h : row) h = f32_to_fp16(nd(rng));
        std::memcpy(kv.k_row(0, pos), row.data(), kv.k_row_bytes());
        for (uint16_t& h : row) h = f32_to_fp16(nd(rng));
        std::memcpy(kv.v_row(0, pos), row.data(), kv.v_row_bytes());
    }
    kv.set_n_tokens(depth);
    const int64_t q_dim = int64_t(s.n_head) * s.head_dim;
    Tensor q = be.alloc(1, q_dim), out = be.alloc(1, q_dim);
    for (int64_t i = 0; i < q_dim; ++i) q.data[i] = nd(rng);
    AttentionParams p{s.n_head, s.n_head_kv, s.head_dim, 0.125f, window};
    be.attention(q, kv, 0, depth, p, out);
    std::vector<float> result(out.data, out.data + q_dim);
    be.free(q);
    be.free(out);
    return result;
}

}  // namespace

class TestAttentionDecode : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void outputDoesNotDependOnTheThreads_data() {
        QTest::addColumn<int>("n_head");
        QTest::addColumn<int>("n_head_kv");
        QTest::addColumn<int>("head_dim");
        QTest::addColumn<int>("depth");
        QTest::addColumn<int>("window");
        // SmolLM2's heads (32-dim slices), Gemma 3's (one kv head of 256), 16-dim slices (80, 48).
        QTest::newRow("9/3 x 64, depth 700") << 9 << 3 << 64 << 700 << 0;
        QTest::newRow("9/3 x 64, depth 4100") << 9 << 3 << 64 << 4100 << 0;
        QTest::newRow("9/3 x 64, depth 5") << 9 << 3 << 64 << 5 << 0;
        QTest::newRow("4/1 x 256, depth 1000, window 512") << 4 << 1 << 256 << 1000 << 512;
        QTest::newRow("4/1 x 256, depth 300") << 4 << 1 << 256 << 300 << 0;
        QTest::newRow("4/2 x 80, depth 333, window 100") << 4 << 2 << 80 << 333 << 100;
        QTest::newRow("2/2 x 48, depth 257") << 2 << 2 << 48 << 257 << 0;
    }
    void outputDoesNotDependOnTheThreads() {
        QFETCH(int, n_head);
        QFETCH(int, n_head_kv);
        QFETCH(int, head_dim);
        QFETCH(int, depth);
        QFETCH(int, window);
        const Shape s{n_head, n_head_kv, head_dim};
        const std::vector<float> one = decode_output(s, depth, window, 1);
        for (float x : one) QVERIFY(std::isfinite(x));
        for (int threads : {2, 3}) {
            const std::vector<float> many = decode_output(s, depth, window, threads);
            QCOMPARE(many.size(), one.size());
            QVERIFY2(std::memcmp(many.data(), one.data(), one.size() * sizeof(float)) == 0,
                     qPrintable(QString("%1 threads differ from one").arg(threads)));
        }
    }
};

QTEST_APPLESS_MAIN(TestAttentionDecode)
#include "test_attention_decode.moc"
