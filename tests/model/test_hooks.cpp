// The inspector's hooks on the real default model: attention events for every layer of the prompt and
// of each generated token (rows are distributions, causal, with the grouped-query head mapping), a
// decode row matching the prefill row of the same text, token events whose candidates and chosen
// probability are consistent with the sampler, per-layer timing, and an observer that asks for
// nothing receiving no attention at all.
#include <QtTest>

#include <cmath>
#include <fstream>

#include "engine/backend_cpu.h"
#include "engine/model.h"
#include "engine/session.h"
#include "test_paths.h"

using namespace wb;

namespace {

class Capture : public Observer {
public:
    CaptureSpec spec;
    std::vector<AttentionEvent> attention;
    std::vector<TokenEvent> tokens;
    Timings last_timing;
    CaptureSpec capture() const override { return spec; }
    void on_attention(const AttentionEvent& e) override { attention.push_back(e); }
    void on_token(const TokenEvent& e) override { tokens.push_back(e); }
    void on_timing(const Timings& t) override { last_timing = t; }
};

}  // namespace

class TestHooks : public QObject {
    Q_OBJECT

    std::unique_ptr<Model> model_;
    std::unique_ptr<CpuBackend> backend_;
    std::vector<int32_t> prompt_;

private Q_SLOTS:
    void initTestCase() {
        if (!std::ifstream(wb_test::default_model()).good()) QFAIL("default model missing: run scripts/fetch-models.sh");
        model_ = Model::load(wb_test::default_model());
        backend_ = std::make_unique<CpuBackend>(0);
        prompt_ = model_->tokenizer().encode("The quick brown fox jumps over the lazy dog because", false, true);
    }

    void attentionEventsForPrefillAndDecode() {
        Session s(*model_, *backend_);
        Capture cap;
        cap.spec.prefill_attention = cap.spec.decode_attention = true;
        SamplingParams p;
        p.temperature = 0.0f;
        p.max_tokens = 4;
        const GenerateResult r = s.generate(prompt_, LiveSamplingParams(p), &cap);
        QCOMPARE(r.reason, StopReason::MAX_TOKENS);
        const ModelConfig& c = model_->config();
        const int32_t n = int32_t(prompt_.size());
        // one prefill batch + 3 decode steps (the 4th token is never fed back), each over all layers
        QCOMPARE(cap.attention.size(), size_t(c.n_layer) * 4);
        for (size_t i = 0; i < cap.attention.size(); ++i) {
            const AttentionEvent& e = cap.attention[i];
            QCOMPARE(e.layer, int32_t(i % size_t(c.n_layer)));
            QCOMPARE(e.prefill, i < size_t(c.n_layer));
            QCOMPARE(e.heads.size(), size_t(c.n_head));
            for (size_t hi = 0; hi < e.heads.size(); ++hi) QCOMPARE(e.kv_head_of[hi], e.heads[hi] / c.n_gqa());
            QCOMPARE(e.n_queries, e.prefill ? n : 1);
            QCOMPARE(e.n_keys, e.query_pos0 + e.n_queries);
            for (size_t hi = 0; hi < e.heads.size(); ++hi)
                for (int32_t qr = 0; qr < e.n_queries; ++qr) {
                    double sum = 0.0;
                    for (int32_t k = 0; k < e.n_keys; ++k) {
                        const float v = e.at(hi, qr, k);
                        if (k > e.query_pos0 + qr) QCOMPARE(v, 0.0f);
                        QVERIFY(v >= 0.0f && v <= 1.0f);
                        sum += v;
                    }
                    QVERIFY2(std::fabs(sum - 1.0) < 1e-5, qPrintable(QString::number(sum, 'g', 10)));
                }
        }
    }

    // Generate one token with decode capture, then prefill the same text: the last prefill row is the
    // decode row (same keys, same query), up to the accumulation order of batched vs single kernels.
    void decodeRowMatchesPrefillRow() {
        SamplingParams p;
        p.temperature = 0.0f;
        p.max_tokens = 2;
        Session a(*model_, *backend_);
        Capture dec;
        dec.spec.decode_attention = true;
        dec.spec.layers = {0, 15, 29};
        const GenerateResult r = a.generate(prompt_, LiveSamplingParams(p), &dec);
        QCOMPARE(dec.attention.size(), size_t(3));  // one decode step x 3 layers

        std::vector<int32_t> text = prompt_;
        text.push_back(r.tokens[0]);
        Session b(*model_, *backend_);
        Capture pre;
        pre.spec.prefill_attention = true;
        pre.spec.layers = {0, 15, 29};
        p.max_tokens = 1;
        b.generate(text, LiveSamplingParams(p), &pre);
        QCOMPARE(pre.attention.size(), size_t(3));
        double worst = 0.0;
        for (size_t li = 0; li < 3; ++li) {
            const AttentionEvent& d = dec.attention[li];
            const AttentionEvent& f = pre.attention[li];
            QCOMPARE(d.layer, f.layer);
            QCOMPARE(d.n_keys, f.n_keys);
            for (size_t hi = 0; hi < d.heads.size(); ++hi)
                for (int32_t k = 0; k < d.n_keys; ++k)
                    worst = std::max(worst, double(std::fabs(d.at(hi, 0, k) - f.at(hi, f.n_queries - 1, k))));
        }
        qInfo("largest decode/prefill difference: %.3g", worst);
        QVERIFY2(worst < 1e-5, qPrintable(QString::number(worst)));
    }

    void tokenEventsAreConsistentWithTheSampler() {
        Session s(*model_, *backend_);
        Capture cap;
        cap.spec.top_candidates = 40;
        cap.spec.sampler_trace = true;
        SamplingParams p;
        p.seed = 11;
        p.max_tokens = 8;
        p.top_k = 20;
        p.top_p = 0.9f;
        s.generate(prompt_, LiveSamplingParams(p), &cap);
        QVERIFY(!cap.tokens.empty());
        for (const TokenEvent& e : cap.tokens) {
            QCOMPARE(e.candidates.size(), size_t(40));
            double final_sum = 0.0, raw_prev = 1.0;
            bool chosen_seen = false;
            for (const TokenCandidate& c : e.candidates) {
                final_sum += c.p_final;
                QVERIFY(c.p_raw <= raw_prev + 1e-7);  // sorted by raw probability
                raw_prev = c.p_raw;
                if (c.id == e.id) {
                    chosen_seen = true;
                    QCOMPARE(c.p_final, e.p);  // drawn from exactly this distribution
                }
            }
            QVERIFY(final_sum <= 1.0 + 1e-5);
            QVERIFY(chosen_seen);  // top-k 20 keeps only tokens inside the top 40
            QVERIFY(e.entropy > 0.0f);
            QVERIFY(!e.trace.empty());
            QCOMPARE(QString::fromStdString(e.trace.back().stage), QString("dist"));
        }
    }

    void layerTimingCoversEveryLayer() {
        Session s(*model_, *backend_);
        Capture cap;
        cap.spec.layer_timing = true;
        SamplingParams p;
        p.temperature = 0.0f;
        p.max_tokens = 3;
        s.generate(prompt_, LiveSamplingParams(p), &cap);
        QCOMPARE(cap.last_timing.layer_ms.size(), size_t(model_->config().n_layer));
        for (double ms : cap.last_timing.layer_ms) QVERIFY(ms > 0.0);
    }

    void observerThatAsksForNothingGetsNoAttention() {
        Session s(*model_, *backend_);
        Capture cap;  // default spec
        SamplingParams p;
        p.temperature = 0.0f;
        p.max_tokens = 3;
        s.generate(prompt_, LiveSamplingParams(p), &cap);
        QVERIFY(cap.attention.empty());
        QVERIFY(!cap.tokens.empty());
        QVERIFY(cap.tokens[0].candidates.empty());
    }
};

QTEST_GUILESS_MAIN(TestHooks)
#include "test_hooks.moc"
