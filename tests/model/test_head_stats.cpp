// Head statistics (core/engine/head_stats.*) on real attention rows of SmolLM2 (9 query heads over 3
// KV heads) and Gemma 3 270M (4 over 1, local layers with a sliding window): each number equals a
// recomputation from the captured probabilities, kv_head follows the grouped-query mapping, and on a
// context longer than Gemma's window the local layers keep all their mass inside it while the global
// layers put some outside.
#include <QtTest>

#include <cmath>
#include <fstream>

#include "engine/backend_cpu.h"
#include "engine/head_stats.h"
#include "engine/model.h"
#include "engine/session.h"
#include "test_paths.h"

using namespace wb;

namespace {

class DecodeRows : public Observer {
public:
    std::vector<AttentionEvent> events;
    CaptureSpec capture() const override {
        CaptureSpec spec;
        spec.decode_attention = true;
        return spec;
    }
    void on_attention(const AttentionEvent& e) override { events.push_back(e); }
};

std::string gemma_path() { return models_dir() + "/gemma-3-270m-Q4_K_M.gguf"; }

// The statistics of one head's row, written out plainly (the definitions of head_stats.h).
struct Expected {
    double entropy = 0, sink = 0, prev = 0, distance = 0, inside = 0, total = 0;
};
Expected expected(const AttentionEvent& e, size_t hi, int32_t row, int32_t window) {
    Expected x;
    const int32_t q = e.query_pos0 + row;
    for (int32_t k = 0; k < e.n_keys; ++k) {
        const double p = e.at(hi, row, k);
        if (p > 0) x.entropy -= p * std::log(p);
        x.distance += p * (q - k);
        x.total += p;
        if (window <= 0 || k > q - window) x.inside += p;
    }
    x.sink = e.at(hi, row, 0);
    x.prev = q > 0 ? e.at(hi, row, q - 1) : 0.0;
    return x;
}

}  // namespace

class TestHeadStats : public QObject {
    Q_OBJECT

    CpuBackend backend_{0};

    std::vector<AttentionEvent> decode_events(const Model& m, const std::vector<int32_t>& prompt, int32_t n) {
        SessionOptions opt;
        opt.n_ctx = int32_t(prompt.size()) + n + 8;
        Session s(m, backend_, opt);
        DecodeRows rows;
        SamplingParams p;
        p.temperature = 0.0f;
        p.max_tokens = n;
        const GenerateResult r = s.generate(prompt, LiveSamplingParams(p), &rows);
        if (r.reason == StopReason::ERROR) qFatal("%s", r.error.c_str());
        return rows.events;
    }

    void check_against_recomputation(const std::vector<AttentionEvent>& events, int32_t model_window) {
        QVERIFY(!events.empty());
        for (const AttentionEvent& e : events) {
            const std::vector<HeadStats> st = head_stats(e, e.n_queries - 1, model_window);
            QCOMPARE(st.size(), e.heads.size());
            for (size_t hi = 0; hi < st.size(); ++hi) {
                const int32_t window = e.window > 0 ? e.window : model_window;
                const Expected x = expected(e, hi, e.n_queries - 1, window);
                QCOMPARE(st[hi].layer, e.layer);
                QCOMPARE(st[hi].head, e.heads[hi]);
                QCOMPARE(st[hi].window, window);
                QVERIFY(std::fabs(st[hi].entropy - x.entropy) < 1e-5);
                QVERIFY(std::fabs(st[hi].sink - x.sink) < 1e-7);
                QVERIFY(std::fabs(st[hi].prev - x.prev) < 1e-7);
                QVERIFY(std::fabs(st[hi].distance - x.distance) < 1e-3);
                QVERIFY(std::fabs(st[hi].in_window - x.inside / x.total) < 1e-6);
            }
        }
    }

private Q_SLOTS:
    void smollm2StatsAndGroupedQueryHeads() {
        const auto m = Model::load(wb_test::default_model());
        QCOMPARE(m->config().n_head, 9);
        QCOMPARE(m->config().n_head_kv, 3);
        const auto events = decode_events(*m, m->tokenizer().encode("The quick brown fox jumps over", true, true), 3);
        QCOMPARE(events.size(), size_t(2 * m->config().n_layer));  // 2 fed-back tokens
        check_against_recomputation(events, 0);
        const std::vector<HeadStats> st = head_stats(events[0], 0, 0);
        const int32_t kv[9] = {0, 0, 0, 1, 1, 1, 2, 2, 2};
        for (int32_t h = 0; h < 9; ++h) {
            QCOMPARE(st[size_t(h)].kv_head, kv[h]);
            QCOMPARE(st[size_t(h)].in_window, 1.0f);  // no sliding window: everything is inside
        }
    }

    void gemma3WindowAndGroupedQueryHeads() {
        if (!std::ifstream(gemma_path()).good()) QSKIP("Gemma 3 270M not fetched (scripts/fetch-models.sh gemma3)");
        const auto m = Model::load(gemma_path());
        const ModelConfig& c = m->config();
        QCOMPARE(c.n_head, 4);
        QCOMPARE(c.n_head_kv, 1);
        QVERIFY(c.sliding_window > 0);
        // A context longer than the window: words repeated past sliding_window tokens.
        std::string text;
        while (int32_t(m->tokenizer().encode(text, true, true).size()) < c.sliding_window + 16)
            text += "Rivers carry water from the hills down to the sea, and the sea gives it back as rain. ";
        const std::vector<int32_t> prompt = m->tokenizer().encode(text, true, true);
        const auto events = decode_events(*m, prompt, 2);
        QCOMPARE(events.size(), size_t(c.n_layer));
        check_against_recomputation(events, c.sliding_window);
        int local = 0, global_outside = 0;
        for (const AttentionEvent& e : events) {
            QVERIFY(e.n_keys > c.sliding_window);
            for (const HeadStats& h : head_stats(e, 0, c.sliding_window)) {
                QCOMPARE(h.kv_head, 0);
                if (c.layer_is_swa[size_t(e.layer)]) {
                    QCOMPARE(e.window, c.sliding_window);
                    QCOMPARE(h.in_window, 1.0f);  // the window masks every older key
                    ++local;
                } else {
                    QCOMPARE(e.window, 0);
                    if (h.in_window < 1.0f) ++global_outside;
                }
            }
        }
        QVERIFY(local > 0);
        // Global heads attend to the first token (the sink) at least: some mass outside the window.
        QVERIFY2(global_outside > 0, "no global head put any mass outside the window");
    }
};

QTEST_GUILESS_MAIN(TestHeadStats)
#include "test_head_stats.moc"
