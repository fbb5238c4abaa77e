// The logit lens (CaptureSpec::logit_lens) on the real SmolLM2 and Gemma 3 models, CPU backend:
//  - the last layer's lens is the distribution the sampler saw, bit for bit (the same operations run
//    on the same row: the model's head on the final residual stream);
//  - an intermediate layer's lens equals the logits of the model cut after that layer (the same
//    weights with n_layer = layer + 1, run by the architecture's own forward pass): bit for bit on
//    decode steps, where every operation sees the same rows;
//  - with nothing asked, no backend buffer is allocated and no extra operation runs; with the lens,
//    one row copy per layer for each pass that draws a token (not for earlier prompt batches).
#include <QtTest>

#include <cstring>
#include <fstream>

#include "engine/backend_cpu.h"
#include "engine/model.h"
#include "engine/session.h"
#include "engine/token_inspection.h"
#include "model/forward.h"
#include "test_paths.h"

using namespace wb;

namespace {

constexpr int32_t kTop = 8;

class Capture : public Observer {
public:
    CaptureSpec spec;
    std::vector<TokenEvent> tokens;
    CaptureSpec capture() const override { return spec; }
    void on_token(const TokenEvent& e) override { tokens.push_back(e); }
};

// The CPU backend, counting what the lens would add: allocations and row copies.
class CountingBackend : public CpuBackend {
public:
    CountingBackend() : CpuBackend(0) {}
    int allocs = 0, copies = 0, matmuls = 0;
    Tensor alloc(int64_t r, int64_t c) override { ++allocs; return CpuBackend::alloc(r, c); }
    void copy(const Tensor& s, Tensor& d) override { ++copies; CpuBackend::copy(s, d); }
    void matmul(const Weight& w, const Tensor& x, Tensor& out) override { ++matmuls; CpuBackend::matmul(w, x, out); }
};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::string gemma_path() { return models_dir() + "/gemma-3-270m-Q4_K_M.gguf"; }

}  // namespace

class TestLogitLens : public QObject {
    Q_OBJECT

    CountingBackend backend_;
    std::unique_ptr<Model> smollm_, gemma_;

    Model& model(const QString& name) { return name == "gemma3" ? *gemma_ : *smollm_; }

    std::vector<int32_t> prompt_of(const Model& m) {
        return m.tokenizer().encode("The quick brown fox jumps over the lazy dog because", m.tokenizer().add_bos(), true);
    }

    // Greedy generation of n tokens with the lens (and the candidates, for the sampler's distribution).
    std::vector<TokenEvent> generate_with_lens(Model& m, const std::vector<int32_t>& prompt, int32_t n) {
        Session s(m, backend_);
        Capture cap;
        cap.spec.logit_lens = kTop;
        cap.spec.top_candidates = kTop;
        SamplingParams p;
        p.temperature = 0.0f;
        p.max_tokens = n;
        const GenerateResult r = s.generate(prompt, LiveSamplingParams(p), &cap);
        if (r.reason != StopReason::MAX_TOKENS) qWarning("stopped: %s %s", stop_reason_name(r.reason), r.error.c_str());
        return cap.tokens;
    }

    // The logits of the model cut after `layer`, for the prompt (one batch) and then each of `fed`
    // one token at a time: rows[i] is the row that drew step i's token.
    std::vector<std::vector<float>> truncated_logits(const Model& m, int32_t layer, const std::vector<int32_t>& prompt,
                                                     const std::vector<int32_t>& fed) {
        ModelConfig c = m.config();
        c.n_layer = layer + 1;
        c.layer_is_swa.resize(size_t(c.n_layer));
        ModelWeights weights = m.weights();
        backend_.prepare_weights(weights);
        KvCacheConfig kc;
        kc.n_layer = c.n_layer;
        kc.n_head_kv = c.n_head_kv;
        kc.head_dim = c.head_dim;
        kc.n_ctx = int32_t(prompt.size() + fed.size());
        kc.layer_is_swa = c.layer_is_swa;
        kc.sliding_window = c.sliding_window;
        KvCache kv(kc, backend_);
        ForwardBuffers buffers;
        buffers.allocate(backend_, c, int32_t(prompt.size()));
        const ForwardFn forward = forward_function(c.arch);
        std::vector<std::vector<float>> rows;
        int32_t pos = 0;
        auto pass = [&](const int32_t* tokens, int32_t n) {
            kv.reserve(pos + n);
            forward(backend_, c, weights, kv, buffers, {tokens, n, pos, false});
            pos += n;
            kv.set_n_tokens(pos);
            rows.emplace_back(size_t(c.n_vocab));
            backend_.read(buffers.logits.rows(0, 1), rows.back().data());
        };
        pass(prompt.data(), int32_t(prompt.size()));
        for (int32_t t : fed) pass(&t, 1);
        buffers.release(backend_);
        backend_.release_weights(weights);
        return rows;
    }

private Q_SLOTS:
    void initTestCase() {
        if (!std::ifstream(wb_test::default_model()).good()) QFAIL("default model missing: run scripts/fetch-models.sh");
        smollm_ = Model::load(wb_test::default_model());
        if (std::ifstream(gemma_path()).good()) gemma_ = Model::load(gemma_path());
    }

    void lastLayerIsTheSamplersDistribution_data() {
        QTest::addColumn<QString>("name");
        QTest::newRow("smollm2") << "smollm2";
        QTest::newRow("gemma3") << "gemma3";
    }
    void lastLayerIsTheSamplersDistribution() {
        QFETCH(QString, name);
        if (name == "gemma3" && !gemma_) QSKIP("Gemma 3 270M not fetched (scripts/fetch-models.sh gemma3)");
        Model& m = model(name);
        const std::vector<TokenEvent> steps = generate_with_lens(m, prompt_of(m), 4);
        QCOMPARE(steps.size(), size_t(4));
        for (const TokenEvent& e : steps) {
            QCOMPARE(e.lens.size(), size_t(m.config().n_layer));
            for (size_t l = 0; l < e.lens.size(); ++l) {
                QCOMPARE(e.lens[l].layer, int32_t(l));
                QCOMPARE(e.lens[l].top_ids.size(), size_t(kTop));
                QVERIFY(e.lens[l].entropy >= 0.0f);
            }
            const LensLayer& last = e.lens.back();
            QCOMPARE(e.candidates.size(), size_t(kTop));
            for (int32_t i = 0; i < kTop; ++i) {
                QCOMPARE(last.top_ids[size_t(i)], e.candidates[size_t(i)].id);
                QVERIFY2(same_bits(last.top_p[size_t(i)], e.candidates[size_t(i)].p_raw),
                         qPrintable(QString("rank %1: %2 vs %3").arg(i).arg(last.top_p[size_t(i)], 0, 'g', 9)
                                        .arg(e.candidates[size_t(i)].p_raw, 0, 'g', 9)));
            }
            QVERIFY(same_bits(last.entropy, e.entropy));
            QCOMPARE(last.top_ids[0], e.id);  // greedy: the drawn token is the last layer's best
            QVERIFY(same_bits(last.p_drawn, e.candidates[0].p_raw));
        }
        // The lens is not the same at every layer (it would be if the wrong row were read).
        QVERIFY(!same_bits(steps[0].lens.front().entropy, steps[0].lens.back().entropy));
    }

    void intermediateLayerIsTheTruncatedModel_data() {
        QTest::addColumn<QString>("name");
        QTest::newRow("smollm2") << "smollm2";
        QTest::newRow("gemma3") << "gemma3";
    }
    void intermediateLayerIsTheTruncatedModel() {
        QFETCH(QString, name);
        if (name == "gemma3" && !gemma_) QSKIP("Gemma 3 270M not fetched (scripts/fetch-models.sh gemma3)");
        Model& m = model(name);
        const std::vector<int32_t> prompt = prompt_of(m);
        const std::vector<TokenEvent> steps = generate_with_lens(m, prompt, 4);
        QCOMPARE(steps.size(), size_t(4));
        std::vector<int32_t> fed;
        for (size_t i = 0; i + 1 < steps.size(); ++i) fed.push_back(steps[i].id);
        const int32_t n_vocab = m.config().n_vocab;
        for (const int32_t layer : {0, m.config().n_layer / 2}) {
            const auto rows = truncated_logits(m, layer, prompt, fed);
            QCOMPARE(rows.size(), steps.size());
            for (size_t i = 0; i < steps.size(); ++i) {
                const LensLayer want = lens_layer(layer, rows[i].data(), n_vocab, kTop, steps[i].id);
                const LensLayer& got = steps[i].lens[size_t(layer)];
                QCOMPARE(got.top_ids, want.top_ids);
                for (int32_t r = 0; r < kTop; ++r) {
                    const float a = got.top_p[size_t(r)], b = want.top_p[size_t(r)];
                    // Step 0 comes from a prompt batch, where the cut model's last layer runs its
                    // feed-forward network on one row and the whole model's on every row (another
                    // kernel for some types, so another rounding); decode steps are one row in both.
                    if (i == 0) QVERIFY2(std::fabs(a - b) <= 1e-4f, qPrintable(QString("%1 vs %2").arg(a).arg(b)));
                    else QVERIFY2(same_bits(a, b), qPrintable(QString("layer %1 step %2 rank %3: %4 vs %5")
                                                                  .arg(layer).arg(i).arg(r).arg(a, 0, 'g', 9).arg(b, 0, 'g', 9)));
                }
                if (i > 0) {
                    QVERIFY(same_bits(got.entropy, want.entropy));
                    QVERIFY(same_bits(got.p_drawn, want.p_drawn));
                }
            }
        }
    }

    void costsNothingWhenOff() {
        Model& m = *smollm_;
        const std::vector<int32_t> prompt = prompt_of(m);  // 11 tokens: batches of 4, 4 and 3
        SamplingParams p;
        p.temperature = 0.0f;
        p.max_tokens = 3;
        SessionOptions opt;
        opt.n_batch = 4;
        auto count = [&](Capture* cap, int* allocs, int* matmuls) {
            Session s(m, backend_, opt);
            backend_.allocs = backend_.copies = backend_.matmuls = 0;
            s.generate(prompt, LiveSamplingParams(p), cap);
            *allocs = backend_.allocs;
            *matmuls = backend_.matmuls;
            return backend_.copies;
        };
        int a0 = 0, m0 = 0, a1 = 0, m1 = 0, a2 = 0, m2 = 0;
        QCOMPARE(count(nullptr, &a0, &m0), 0);
        Capture nothing;
        QCOMPARE(count(&nothing, &a1, &m1), 0);
        QCOMPARE(a1, a0);
        QCOMPARE(m1, m0);
        QVERIFY(nothing.tokens.size() == 3 && nothing.tokens[0].lens.empty());
        Capture lens;
        lens.spec.logit_lens = 5;
        // One copy and one output product per layer, for the last prompt batch and the 2 decode steps.
        const int32_t n_layer = m.config().n_layer;
        QCOMPARE(count(&lens, &a2, &m2), 3 * n_layer);
        QCOMPARE(m2, m0 + 3 * n_layer);
        QCOMPARE(a2, a0 + 3);  // its row, norm and logits
        QCOMPARE(lens.tokens[0].lens.size(), size_t(n_layer));
    }
};

int main(int argc, char** argv) {
    // Gemma 3's 262k-token head, once per layer and step, takes a while on a few cores.
    if (!qEnvironmentVariableIsSet("QTEST_FUNCTION_TIMEOUT")) qputenv("QTEST_FUNCTION_TIMEOUT", "1800000");
    QCoreApplication app(argc, argv);
    TestLogitLens t;
    return QTest::qExec(&t, argc, argv);
}

#include "test_logit_lens.moc"
