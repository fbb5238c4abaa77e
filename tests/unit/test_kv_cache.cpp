// KV cache bookkeeping: blocks grow with the sequence (not preallocated), statistics follow the
// formula 2 * kv_heads * head_dim * bytes * tokens per layer, truncation frees blocks, the context
// limit is enforced, rows of different positions never overlap, and sliding-window layers keep only
// the blocks a future query can see (truncating into released history gives up the whole prefix).
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

// Layer 1 is a sliding-window layer with a window of 20 positions (blocks of 16).
KvCacheConfig windowed_config() {
    KvCacheConfig c = small_config();
    c.sliding_window = 20;
    return c;
}

// Allocated (non-null) blocks of one layer.
int live_blocks(const KvCache& kv, int32_t il) {
    int n = 0;
    for (const void* b : kv.blocks(il)) n += b != nullptr;
    return n;
}

// Appends positions one batch at a time the way Session does: reserve, write, mark written.
void append(KvCache& kv, int32_t n) {
    kv.reserve(kv.n_tokens() + n);
    kv.set_n_tokens(kv.n_tokens() + n);
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

    void slidingWindowLayerReleasesBlocksNoFutureQuerySees() {
        CountingAllocator alloc;
        KvCache kv(windowed_config(), alloc);
        append(kv, 36);  // the next query (position 36) sees 17..36: block 0 (0..15) is dead
        QCOMPARE(kv.blocks(1).size(), size_t(3));
        QVERIFY(kv.blocks(1)[0] == nullptr);
        QCOMPARE(live_blocks(kv, 1), 2);
        QCOMPARE(live_blocks(kv, 0), 3);  // full-attention layers keep everything
        QCOMPARE(live_blocks(kv, 2), 3);
        // Still readable: every position the next query sees.
        for (int32_t p = 36 - 20 + 1; p < 36; ++p) QVERIFY(kv.k_row(1, p) != nullptr);
        append(kv, 64);  // n = 100: the next query sees 81..100, so blocks 0..4 (0..79) are dead
        QCOMPARE(live_blocks(kv, 1), 2);
        QCOMPARE(live_blocks(kv, 0), 7);
        QCOMPARE(alloc.live, 7 + 2 + 7);
    }

    // A context shift keeps its prefix: pinned blocks of a sliding-window layer are never released.
    void pinnedPrefixSurvivesTheWindow() {
        CountingAllocator alloc;
        KvCache kv(windowed_config(), alloc);
        kv.pin_prefix(4);
        append(kv, 60);  // the window (41..60) is far past block 0, which holds the pinned 0..3
        QVERIFY(kv.blocks(1)[0] != nullptr);
        QVERIFY(kv.blocks(1)[1] == nullptr);
        QVERIFY(kv.has_rows(1, 0, 4));
        QVERIFY(!kv.has_rows(1, 16, 20));
        KvCache unpinned(windowed_config(), alloc);
        append(unpinned, 60);
        QVERIFY(!unpinned.has_rows(1, 0, 4));
    }

    // The block side of a shift: released blocks the moved rows land in come back, the tail goes, the
    // rows no window sees again are a gap that a truncation cannot continue from, and stats record it.
    void shiftBookkeeping() {
        CountingAllocator alloc;
        KvCache kv(windowed_config(), alloc);
        kv.pin_prefix(4);
        append(kv, 100);  // full
        // Keep 4, drop 48: 52..99 move to 4..51; layer 1 moves only what its next window (33..51) sees.
        for (int32_t il = 0; il < 3; ++il) {
            const bool local = il == 1;
            const int32_t dst = local ? 100 - 20 + 1 - 48 : 4;
            kv.ensure_rows(il, dst, 52);
            kv.set_gap(il, 4, dst);
            QVERIFY(kv.has_rows(il, dst, 52) == true);
        }
        QVERIFY(!kv.has_rows(1, 10, 20));  // the gap
        kv.finish_shift(4, 48);
        QCOMPARE(kv.n_tokens(), 52);
        const KvStats s = kv.stats();
        QCOMPARE(s.n_shifts, 1);
        QCOMPARE(s.shift_keep, 4);
        QCOMPARE(s.shift_dropped, 48);
        QCOMPARE(s.dropped_total, int64_t(48));
        QCOMPARE(kv.blocks(0).size(), size_t(4));  // 52 positions in blocks of 16
        QVERIFY(kv.has_rows(1, 33, 52));
        // A truncation whose next window reaches into the gap cannot keep its prefix.
        QCOMPARE(kv.truncate(40), 0);
        QCOMPARE(kv.stats().n_shifts, 0);  // nothing shifted is left
        QVERIFY_THROWS_EXCEPTION(wb::Error, kv.finish_shift(0, 1));
    }

    // Memory of a sliding-window layer stays bounded however long the sequence grows.
    void slidingWindowMemoryIsBounded() {
        CountingAllocator alloc;
        KvCacheConfig c = windowed_config();
        c.n_ctx = 10000;
        KvCache kv(c, alloc);
        for (int i = 0; i < 1000; ++i) {
            append(kv, 7);
            // window (20) + one batch (7) rounded out to blocks of 16: at most 3 blocks
            QVERIFY(live_blocks(kv, 1) <= 3);
        }
        QCOMPARE(live_blocks(kv, 0), (7000 + 15) / 16);
    }

    void statisticsShowTheWindow() {
        CountingAllocator alloc;
        KvCache kv(windowed_config(), alloc);
        const uint64_t per_token = 2ull * 2 * 8 * 2;
        append(kv, 12);  // shorter than the window: the local layer holds everything
        KvStats s = kv.stats();
        QCOMPARE(s.layers[1].tokens, 12);
        QCOMPARE(s.layers[1].window, 20);
        QCOMPARE(s.layers[0].window, 0);
        QVERIFY(s.layers[1].sliding_window && !s.layers[0].sliding_window);
        append(kv, 88);  // n = 100
        s = kv.stats();
        QCOMPARE(s.layers[0].tokens, 100);
        QCOMPARE(s.layers[0].first_pos, 0);
        QCOMPARE(s.layers[1].tokens, 20);
        QCOMPARE(s.layers[1].first_pos, 80);
        QCOMPARE(s.layers[1].bytes_used, 20 * per_token);
        QCOMPARE(s.layers[1].bytes_reserved, 2 * 16 * per_token);  // blocks 80..95 and 96..111
        QCOMPARE(s.layers[0].bytes_reserved, 7 * 16 * per_token);
        QCOMPARE(s.bytes_used, (100 + 20 + 100) * per_token);
        QCOMPARE(s.bytes_reserved, (7 + 2 + 7) * 16 * per_token);
    }

    void truncateWithinTheWindowKeepsThePrefix() {
        CountingAllocator alloc;
        KvCache kv(windowed_config(), alloc);
        append(kv, 40);  // next query 40 sees 21..40: block 0 released
        // A query at 38 needs 19..37: all still held.
        QCOMPARE(kv.truncate(38), 38);
        QCOMPARE(kv.n_tokens(), 38);
        QCOMPARE(live_blocks(kv, 1), 2);
        append(kv, 10);
        QCOMPARE(kv.n_tokens(), 48);
    }

    void truncateIntoReleasedHistoryDropsEverything() {
        CountingAllocator alloc;
        KvCache kv(windowed_config(), alloc);
        append(kv, 100);  // blocks 0..4 of layer 1 released
        // A query at 60 would need 41..59 of layer 1: gone, so no prefix but the empty one survives.
        QCOMPARE(kv.truncate(60), 0);
        QCOMPARE(kv.n_tokens(), 0);
        QCOMPARE(alloc.live, 0);
        QCOMPARE(kv.stats().bytes_reserved, uint64_t(0));
        // The cache works again from the start.
        append(kv, 30);
        QCOMPARE(live_blocks(kv, 1), 2);
        QCOMPARE(kv.stats().layers[1].tokens, 20);
    }

    void truncateWithoutAWindowAlwaysKeeps() {
        CountingAllocator alloc;
        KvCache kv(small_config(), alloc);  // layer 1 is labelled local but has no window size
        append(kv, 100);
        QCOMPARE(kv.truncate(5), 5);
        QCOMPARE(live_blocks(kv, 1), 1);
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
        QCOMPARE(static_cast<uint8_t*>(kv.k_row(0, 1)) - static_cast<uint8_t*>(kv.k_row(0, 0)), ptrdiff_t(kv.k_row_bytes()));
    }
};

QTEST_GUILESS_MAIN(TestKvCache)
#include "test_kv_cache.moc"
