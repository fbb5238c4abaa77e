// The CPU backend's decode attention (one query row over the f16 cache) splits its work into tasks
// whose number and size depend on the thread count and the depth: runs of keys for the scores, slices
// of output dims for V^T p. For every shape (head dims taking the 32-dim and the 16-dim slices,
// grouped-query attention, one kv head, more than 4 heads a kv head), depth (runs crossing cache blocks,
// a key count that is no multiple of the runs) and sliding window, the output with 1, 2 and 3 threads is
// bit for bit the arithmetic the backend documents, computed here one key and one head at a time from
// the primitives that define it (quant/quant.h, tested against their definitions in test_quant):
// q rounded to f16; s_j = dot_f16_f16 (kStep32, ggml_vec_dot_f16's order) times the scale; the softmax
// with exp_poly and the sum over runs of 8 keys counted from key 0 (each run in the kLanes8 tree, the
// runs in double); p_j rounded to f16; V^T p with key j in lane j % 32 of each dim (fma_f16_row, keys
// in ascending order), each dim's 32 lanes summed in the kStep32 tree.
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "engine/backend_cpu.h"
#include "quant/quant.h"
#include "util/exp_poly.h"
#include "util/fp16.h"

using namespace wb;

namespace {

struct Shape {
    int32_t n_head, n_head_kv, head_dim;
};

constexpr float kScale = 0.125f;

// A query at position `depth` over positions [0, depth] of random f16 K and V (same seed, same values
// for every call).
struct Case {
    Shape s;
    int32_t depth, window;
    std::vector<uint16_t> k, v;  // [position][n_head_kv][head_dim]
    std::vector<float> q;        // [n_head][head_dim]

    Case(const Shape& shape, int32_t d, int32_t w) : s(shape), depth(d), window(w) {
        std::mt19937 rng(99);
        std::normal_distribution<float> nd(0.0f, 1.0f);
        const size_t row = size_t(s.n_head_kv) * size_t(s.head_dim);
        k.resize(row * size_t(depth + 1));
        v.resize(k.size());
        for (size_t pos = 0; pos <= size_t(depth); ++pos) {
            for (size_t i = 0; i < row; ++i) k[pos * row + i] = f32_to_fp16(nd(rng));
            for (size_t i = 0; i < row; ++i) v[pos * row + i] = f32_to_fp16(nd(rng));
        }
        q.resize(size_t(s.n_head) * size_t(s.head_dim));
        for (float& x : q) x = nd(rng);
    }
    const uint16_t* k_of(int32_t pos, int32_t kvh) const { return &k[(size_t(pos) * s.n_head_kv + kvh) * s.head_dim]; }
    const uint16_t* v_of(int32_t pos, int32_t kvh) const { return &v[(size_t(pos) * s.n_head_kv + kvh) * s.head_dim]; }
    int32_t first() const { return window > 0 ? std::max(0, depth - window + 1) : 0; }
};

// The backend's output with `threads` threads.
std::vector<float> backend_output(const Case& c, int threads) {
    CpuBackend be(threads);
    KvCacheConfig config;
    config.n_layer = 1;
    config.n_head_kv = c.s.n_head_kv;
    config.head_dim = c.s.head_dim;
    config.n_ctx = c.depth + 1;
    config.block_tokens = 128;
    KvCache kv(config, be);
    kv.reserve(c.depth + 1);
    for (int32_t pos = 0; pos <= c.depth; ++pos) {
        std::memcpy(kv.k_row(0, pos), c.k_of(pos, 0), kv.k_row_bytes());
        std::memcpy(kv.v_row(0, pos), c.v_of(pos, 0), kv.v_row_bytes());
    }
    kv.set_n_tokens(c.depth);
    Tensor q = be.alloc(1, int64_t(c.q.size())), out = be.alloc(1, int64_t(c.q.size()));
    std::copy(c.q.begin(), c.q.end(), q.data);
    const AttentionParams p{c.s.n_head, c.s.n_head_kv, c.s.head_dim, kScale, c.window};
    be.attention(q, kv, 0, c.depth, p, out);
    std::vector<float> result(out.data, out.data + c.q.size());
    be.free(q);
    be.free(out);
    return result;
}

// Query head h's output, one key at a time (see the file comment).
void reference_head(const Case& c, int32_t h, float* out) {
    const int32_t hd = c.s.head_dim, kvh = h / (c.s.n_head / c.s.n_head_kv), first = c.first(), pos = c.depth;
    std::vector<uint16_t> q16(static_cast<size_t>(hd));
    for (int32_t i = 0; i < hd; ++i) q16[size_t(i)] = f32_to_fp16(c.q[size_t(h * hd + i)]);
    std::vector<float> e(size_t(pos - first + 1));
    float max_s = -INFINITY;
    for (int32_t j = first; j <= pos; ++j) {
        e[size_t(j - first)] = dot_f16_f16(F16DotOrder::kStep32, hd, c.k_of(j, kvh), q16.data()) * kScale;
        max_s = std::max(max_s, e[size_t(j - first)]);
    }
    for (float& x : e) x = exp_poly(x - max_s);
    double sum = 0.0;
    for (int32_t run = first / 8 * 8; run <= pos; run += 8) {
        float lanes8[8];
        for (int32_t l = 0; l < 8; ++l) lanes8[l] = run + l >= first && run + l <= pos ? e[size_t(run + l - first)] : 0.0f;
        sum += sum_f16_dot_lanes(F16DotOrder::kLanes8, lanes8);
    }
    const float inv = float(1.0 / sum);
    std::vector<float> lanes(size_t(32 * hd), 0.0f);  // [lane][dim]
    for (int32_t j = first; j <= pos; ++j)
        fma_f16_row(fp16_to_f32(f32_to_fp16(e[size_t(j - first)] * inv)), c.v_of(j, kvh), &lanes[size_t(j % 32) * hd], hd);
    for (int32_t d = 0; d < hd; ++d) {
        float dim_lanes[32];
        for (int l = 0; l < 32; ++l) dim_lanes[l] = lanes[size_t(l * hd + d)];
        out[d] = sum_f16_dot_lanes(F16DotOrder::kStep32, dim_lanes);
    }
}

}  // namespace

class TestAttentionDecode : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void outputIsTheDocumentedArithmetic_data() {
        QTest::addColumn<int>("n_head");
        QTest::addColumn<int>("n_head_kv");
        QTest::addColumn<int>("head_dim");
        QTest::addColumn<int>("depth");
        QTest::addColumn<int>("window");
        // SmolLM2's heads (32-dim slices), Gemma 3's (one kv head of 256), 16-dim slices (80, 48), a
        // head dim of 128 with 4 heads a kv head, 7 heads a kv head (Qwen 2 0.5B's; the scores' loop form).
        QTest::newRow("9/3 x 64, depth 700") << 9 << 3 << 64 << 700 << 0;
        QTest::newRow("9/3 x 64, depth 4100") << 9 << 3 << 64 << 4100 << 0;
        QTest::newRow("9/3 x 64, depth 5") << 9 << 3 << 64 << 5 << 0;
        QTest::newRow("4/1 x 256, depth 1000, window 512") << 4 << 1 << 256 << 1000 << 512;
        QTest::newRow("4/1 x 256, depth 300") << 4 << 1 << 256 << 300 << 0;
        QTest::newRow("8/2 x 128, depth 515, window 77") << 8 << 2 << 128 << 515 << 77;
        QTest::newRow("14/2 x 64, depth 260") << 14 << 2 << 64 << 260 << 0;
        QTest::newRow("4/2 x 80, depth 333, window 100") << 4 << 2 << 80 << 333 << 100;
        QTest::newRow("2/2 x 48, depth 257") << 2 << 2 << 48 << 257 << 0;
    }
    void outputIsTheDocumentedArithmetic() {
        QFETCH(int, n_head);
        QFETCH(int, n_head_kv);
        QFETCH(int, head_dim);
        QFETCH(int, depth);
        QFETCH(int, window);
        const Case c({n_head, n_head_kv, head_dim}, depth, window);
        std::vector<float> want(c.q.size());
        for (int32_t h = 0; h < n_head; ++h) reference_head(c, h, &want[size_t(h * head_dim)]);
        for (float x : want) QVERIFY(std::isfinite(x));
        for (int threads : {1, 2, 3}) {
            const std::vector<float> got = backend_output(c, threads);
            QCOMPARE(got.size(), want.size());
            for (size_t i = 0; i < want.size(); ++i)
                QVERIFY2(std::memcmp(&got[i], &want[i], sizeof(float)) == 0,
                         qPrintable(QString("%1 threads, output %2: %3, the reference %4")
                                        .arg(threads).arg(i).arg(double(got[i]), 0, 'g', 9).arg(double(want[i]), 0, 'g', 9)));
        }
    }
};

QTEST_APPLESS_MAIN(TestAttentionDecode)
#include "test_attention_decode.moc"
