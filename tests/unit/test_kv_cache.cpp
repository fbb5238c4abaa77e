// KV cache bookkeeping: blocks grow with the sequence (not preallocated), statistics follow the
// formula 2 * kv_heads * head_dim * bytes * tokens per layer, truncation frees blocks, the context
// limit is enforced, and rows of different positions never overlap.
#include <QtTest>

#include <set>

#include "kv/kv_cache.h"
#include "util/error.h"

using namespace wb;

namespace {

// Counts live allocations so the test can see exactly what the cache holds.
class CountingAllocator : public KvAllocator {
public:
    void* kv_alloc(size_t bytes) override {
        ++live;
        total += bytes;
        return ::operator new(bytes);
    }
    void kv_free(void* p) override {
        --live;
        ::operator delete(p);
    }
    int live = 0;
    size_t total = 0;
};

KvCacheConfig small_config() {
    KvCacheConfig c;
    c.n_layer = 3;
    c.n_head_kv = 2;
    c.head_dim = 8;
    c.n_ctx = 100;
    c.block_tokens = 16;
    c.layer_is_swa = {false, true, false};
    return c;
}

}  // namespace

class TestKvCache : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void growsOneBlockAtATime() {
        CountingAllocator alloc;
        KvCache kv(small_config(), alloc);
        QCOMPARE(alloc.live, 0);
        kv.reserve(1);
        QCOMPARE(alloc.live, 3);  // one block per layer
        kv.reserve(16);
        QCOMPARE(alloc.live, 3);
        kv.reserve(17);
        QCOMPARE(alloc.live, 6);
    }

    void statisticsFollowTheFormula_data() {
        QTest::addColumn<int>("tokens");
        QTest::newRow("1") << 1;
        QTest::newRow("16") << 16;
        QTest::newRow("17") << 17;
        QTest::newRow("100") << 100;
    }
    void statisticsFollowTheFormula() {
        QFETCH(int, tokens);
        CountingAllocator alloc;
        KvCache kv(small_config(), alloc);
        kv.reserve(tokens);
        kv.set_n_tokens(tokens);
        const KvStats s = kv.stats();
        const uint64_t per_token = 2ull * 2 * 8 * 2;  // K and V, 2 kv heads, head_dim 8, f16
        const uint64_t blocks = uint64_t((tokens + 15) / 16);
        QCOMPARE(s.layers.size(), size_t(3));
        for (const auto& l : s.layers) {
            QCOMPARE(l.tokens, tokens);
            QCOMPARE(l.bytes_used, per_token * uint64_t(tokens));
            QCOMPARE(l.bytes_reserved, blocks * 16 * per_token);
        }
        QVERIFY(s.layers[1].sliding_window && !s.layers[0].sliding_window);
        QCOMPARE(s.bytes_used, 3 * per_token * uint64_t(tokens));
        QCOMPARE(s.capacity, 100);
    }

    void truncateFreesBlocksAndDropsStatistics() {
        CountingAllocator alloc;
        KvCache kv(small_config(), alloc);
        kv.reserve(40);
        kv.set_n_tokens(40);
        QCOMPARE(alloc.live, 9);
        kv.truncate(17);
        QCOMPARE(kv.n_tokens(), 17);
        QCOMPARE(alloc.live, 6);
        QCOMPARE(kv.stats().layers[0].bytes_used, uint64_t(17) * 64);
        kv.truncate(0);
        QCOMPARE(alloc.live, 0);
        QCOMPARE(kv.stats().bytes_reserved, uint64_t(0));
    }

    void contextLimitIsAnError() {
        CountingAllocator alloc;
        KvCache kv(small_config(), alloc);
        kv.reserve(100);
        try {
            kv.reserve(101);
            QFAIL("reserve past the context did not throw");
        } catch (const Error& e) {
            QVERIFY(QString(e.what()).contains("context full"));
        }
    }

    void rowsOfDifferentPositionsDoNotOverlap() {
        CountingAllocator alloc;
        KvCache kv(small_config(), alloc);
        kv.reserve(50);
        std::set<uintptr_t> starts;
        for (int32_t il = 0; il < 3; ++il)
            for (int32_t p = 0; p < 50; ++p) {
                starts.insert(reinterpret_cast<uintptr_t>(kv.k_row(il, p)));
                starts.insert(reinterpret_cast<uintptr_t>(kv.v_row(il, p)));
            }
        QCOMPARE(starts.size(), size_t(3 * 50 * 2));
        // Consecutive positions inside a block are one row apart.
        QCOMPARE(static_cast<uint8_t*>(kv.k_row(0, 1)) - static_cast<uint8_t*>(kv.k_row(0, 0)), ptrdiff_t(kv.row_bytes()));
    }
};

QTEST_GUILESS_MAIN(TestKvCache)
#include "test_kv_cache.moc"
