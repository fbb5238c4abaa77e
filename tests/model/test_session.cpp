// Session behaviour on the real default model: prompt-prefix reuse gives the same tokens as a fresh
// session while computing only the new part, truncation (regenerate/edit) likewise, stop() from another
// thread, a full context, stop strings, live parameter changes taking effect at the next token, and KV
// statistics that follow the formula after every step.
#include <QtTest>

#include <cstring>
#include <fstream>
#include <thread>

#include "engine/backend_cpu.h"
#include "engine/chat_prompt.h"
#include "engine/model.h"
#include "engine/session.h"
#include "util/error.h"
#include "test_paths.h"

using namespace wb;

namespace {

SamplingParams greedy(int max_tokens) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = max_tokens;
    return p;
}

// Records events and can act on them (stop the session or change the live parameters).
class Recorder : public Observer {
public:
    std::vector<TokenEvent> tokens;
    std::vector<KvStats> kv;
    std::function<void(const TokenEvent&)> on_each;
    void on_token(const TokenEvent& e) override {
        tokens.push_back(e);
        if (on_each) on_each(e);
    }
    void on_kv_cache(const KvStats& s) override { kv.push_back(s); }
};

// Asks for the inspector's top candidates, which makes the session read whole logits rows.
class CandidateRecorder : public Recorder {
public:
    CaptureSpec capture() const override {
        CaptureSpec spec;
        spec.top_candidates = 5;
        return spec;
    }
};

// Counts how the session reads the logits: whole rows or only the best few.
class CountingBackend : public CpuBackend {
public:
    CountingBackend() : CpuBackend(0) {}
    int rows = 0, tops = 0, column_reads = 0;
    int64_t columns = 0;  // read by all column_reads
    void read(const Tensor& x, float* host) override {
        ++rows;
        CpuBackend::read(x, host);
    }
    void read_top(const Tensor& row, int32_t k, int32_t* ids, float* values) override {
        ++tops;
        CpuBackend::read_top(row, k, ids, values);
    }
    void read_columns(const Tensor& row, const int32_t* cols, int32_t n, float* values) override {
        ++column_reads;
        columns += n;
        CpuBackend::read_columns(row, cols, n, values);
    }
};

}  // namespace

class TestSession : public QObject {
    Q_OBJECT

    std::unique_ptr<Model> model_;
    std::unique_ptr<CpuBackend> backend_;

    std::vector<int32_t> chat(const std::vector<ChatMessage>& msgs) const {
        return build_chat_prompt(*model_, msgs, true).ids;
    }

private Q_SLOTS:
    void initTestCase() {
        if (!std::ifstream(wb_test::default_model()).good()) QFAIL("default model missing: run scripts/fetch-models.sh");
        model_ = Model::load(wb_test::default_model());
        backend_ = std::make_unique<CpuBackend>(0);
    }

    void prefixReuseGivesTheSameAnswer() {
        Session reused(*model_, *backend_), fresh(*model_, *backend_);
        std::vector<ChatMessage> msgs{{"user", "Name a color."}};
        const GenerateResult first = reused.generate(chat(msgs), LiveSamplingParams(greedy(12)));
        QVERIFY2(first.reason != StopReason::ERROR, first.error.c_str());
        msgs.push_back({"assistant", first.text});
        msgs.push_back({"user", "Name another one."});
        const std::vector<int32_t> prompt2 = chat(msgs);
        const GenerateResult second = reused.generate(prompt2, LiveSamplingParams(greedy(12)));
        const GenerateResult reference = fresh.generate(prompt2, LiveSamplingParams(greedy(12)));
        QCOMPARE(second.tokens, reference.tokens);
        // The first turn's prompt is a prefix of the second's, so at least that much was reused.
        QVERIFY(second.timings.n_reused >= int32_t(chat({{"user", "Name a color."}}).size()));
        QCOMPARE(second.timings.n_reused + second.timings.n_prefill, int32_t(prompt2.size()));
    }

    void truncateThenRegenerateMatchesFresh() {
        Session s(*model_, *backend_), fresh(*model_, *backend_);
        const std::vector<int32_t> prompt = chat({{"user", "Write a haiku about rain."}});
        const GenerateResult a = s.generate(prompt, LiveSamplingParams(greedy(16)));
        s.truncate(int32_t(prompt.size()) - 3);
        QCOMPARE(s.kv_stats().n_tokens, int32_t(prompt.size()) - 3);
        const GenerateResult b = s.generate(prompt, LiveSamplingParams(greedy(16)));
        QCOMPARE(b.timings.n_reused, int32_t(prompt.size()) - 3);
        QCOMPARE(b.tokens, a.tokens);
        QCOMPARE(b.tokens, fresh.generate(prompt, LiveSamplingParams(greedy(16))).tokens);
    }

    void stopFromAnotherThread() {
        Session s(*model_, *backend_);
        Recorder rec;
        std::thread stopper;
        rec.on_each = [&](const TokenEvent& e) {
            if (e.index == 2) stopper = std::thread([&] { s.stop(); });
        };
        SamplingParams p = greedy(400);
        const GenerateResult r = s.generate(chat({{"user", "Tell me a long story."}}), LiveSamplingParams(p), &rec);
        stopper.join();
        QCOMPARE(r.reason, StopReason::STOPPED);
        QVERIFY(r.tokens.size() >= 3 && r.tokens.size() < 40);
    }

    void longPrefillReportsProgressAndCanBeStopped() {
        SessionOptions so;
        so.n_batch = 16;
        Session s(*model_, *backend_, so);
        std::string text;
        for (int i = 0; i < 12; ++i) text += "The cat sat on the mat and looked at the bird. ";
        const std::vector<int32_t> prompt = model_->tokenizer().encode(text, false, true);
        QVERIFY(prompt.size() > 64);

        struct Progress : Observer {
            std::vector<std::pair<int32_t, int32_t>> steps;
            Session* session = nullptr;
            void on_prefill_progress(int32_t done, int32_t total) override {
                steps.emplace_back(done, total);
                if (steps.size() == 2) session->stop();  // the user presses Stop during the prefill
            }
        } progress;
        progress.session = &s;
        const GenerateResult r = s.generate(prompt, LiveSamplingParams(greedy(5)), &progress);
        QCOMPARE(r.reason, StopReason::STOPPED);
        QVERIFY(r.tokens.empty());
        QCOMPARE(progress.steps.size(), size_t(2));
        QCOMPARE(progress.steps[0], std::make_pair(16, int32_t(prompt.size())));
        QCOMPARE(progress.steps[1].first, 32);
        QCOMPARE(int32_t(s.context_tokens().size()), 32);  // the cache holds what was computed

        // Without a stop the progress reaches the total, and the next turn reuses what is cached.
        progress.steps.clear();
        progress.session = nullptr;
        struct Counter : Observer {
            int32_t last = 0;
            void on_prefill_progress(int32_t done, int32_t) override { last = done; }
        } counter;
        const GenerateResult full = s.generate(prompt, LiveSamplingParams(greedy(2)), &counter);
        QCOMPARE(full.timings.n_reused, 32);
        QCOMPARE(counter.last, int32_t(prompt.size()) - 32);
    }

    // A stop the observer reports before generate() starts (the GUI's Stop pressed while its request
    // waited) ends the reply before the prefill; one reported later ends it after that batch.
    void observerStopEndsThePrefillEvenBeforeItStarts() {
        SessionOptions so;
        so.n_batch = 16;
        Session s(*model_, *backend_, so);
        std::string text;
        for (int i = 0; i < 8; ++i) text += "The cat sat on the mat and looked at the bird. ";
        const std::vector<int32_t> prompt = model_->tokenizer().encode(text, false, true);
        QVERIFY(prompt.size() > 48);
        struct StopAfter : Observer {
            int32_t batches_before_stop = 0;
            int32_t batches = 0;
            void on_prefill_progress(int32_t, int32_t) override { ++batches; }
            bool stop_requested() const override { return batches >= batches_before_stop; }
        } early;
        const GenerateResult r = s.generate(prompt, LiveSamplingParams(greedy(5)), &early);
        QCOMPARE(r.reason, StopReason::STOPPED);
        QVERIFY(r.tokens.empty());
        QCOMPARE(early.batches, 0);
        QCOMPARE(r.timings.n_prefill, 0);
        QVERIFY(s.context_tokens().empty());

        StopAfter later;
        later.batches_before_stop = 2;
        const GenerateResult r2 = s.generate(prompt, LiveSamplingParams(greedy(5)), &later);
        QCOMPARE(r2.reason, StopReason::STOPPED);
        QVERIFY(r2.tokens.empty());
        QCOMPARE(later.batches, 2);
        QCOMPARE(int32_t(s.context_tokens().size()), 32);
    }

    void contextFullEndsTheReply() {
        SessionOptions so;
        so.n_ctx = 48;
        Session s(*model_, *backend_, so);
        const std::vector<int32_t> prompt = chat({{"user", "Count to one hundred."}});
        QVERIFY(prompt.size() < 48);
        const GenerateResult r = s.generate(prompt, LiveSamplingParams(greedy(200)));
        QCOMPARE(r.reason, StopReason::CONTEXT_FULL);
        QCOMPARE(int32_t(s.context_tokens().size()), 48);
    }

    void ignoreEosKeepsGoingToMaxTokens() {
        Session s(*model_, *backend_);
        const std::vector<int32_t> prompt = chat({{"user", "Say hi."}});
        const GenerateResult normal = s.generate(prompt, LiveSamplingParams(greedy(200)));
        QCOMPARE(normal.reason, StopReason::EOS);  // a short answer ends by itself
        SamplingParams p = greedy(int32_t(normal.tokens.size()) + 10);
        p.ignore_eos = true;
        const GenerateResult forced = s.generate(prompt, LiveSamplingParams(p));
        QCOMPARE(forced.reason, StopReason::MAX_TOKENS);
        for (int32_t id : forced.tokens) QVERIFY(!model_->tokenizer().is_eog(id));
    }

    void overLongPromptIsAnError() {
        SessionOptions so;
        so.n_ctx = 16;
        Session s(*model_, *backend_, so);
        const GenerateResult r = s.generate(std::vector<int32_t>(40, 100), LiveSamplingParams(greedy(4)));
        QCOMPARE(r.reason, StopReason::ERROR);
        QVERIFY(r.error.find("context") != std::string::npos);
    }

    // A token id outside the vocabulary is refused before any backend work, single steps included
    // (a GPU backend replays those from a recording, where nothing else would check the id).
    void tokenOutsideTheVocabularyIsAnError() {
        Session s(*model_, *backend_);
        const int32_t ok = 100, bad = model_->config().n_vocab;
        s.append(&ok, 1);
        for (int32_t id : {bad, -1}) {
            bool threw = false;
            try {
                s.append(&id, 1);
            } catch (const Error& e) {
                threw = std::string(e.what()).find("outside the vocabulary") != std::string::npos;
            }
            QVERIFY(threw);
            QCOMPARE(s.context_tokens().size(), size_t(1));  // nothing of the bad step was kept
        }
        const GenerateResult r = s.generate({ok, bad}, LiveSamplingParams(greedy(4)));
        QCOMPARE(r.reason, StopReason::ERROR);
        QVERIFY(r.error.find("outside the vocabulary") != std::string::npos);

        // A bad id in a later prompt batch: refused before the first batch changes the cache.
        SessionOptions so;
        so.n_batch = 2;
        Session small(*model_, *backend_, so);
        small.append(&ok, 1);
        const GenerateResult late = small.generate({ok, 200, 300, 400, bad}, LiveSamplingParams(greedy(4)));
        QCOMPARE(late.reason, StopReason::ERROR);
        QCOMPARE(small.context_tokens(), std::vector<int32_t>{ok});
    }

    // A prompt's logits come from a pass that drops every other row after the last layer's attention
    // (keep_output_rows); teacher forcing keeps them all. SmolLM2's weight types take the same kernels
    // at any batch size, so the two must agree bit for bit.
    void prefillLogitsEqualTeacherForcingsLastRow() {
        Session s(*model_, *backend_);
        const std::vector<int32_t> prompt = chat({{"user", "Name three colours of the sea at dusk."}});
        const std::vector<float> last = s.append(prompt.data(), int32_t(prompt.size()));
        const std::vector<float> all = s.evaluate(prompt);
        const size_t n_vocab = size_t(model_->config().n_vocab);
        QCOMPARE(all.size(), prompt.size() * n_vocab);
        QVERIFY(std::memcmp(last.data(), all.data() + (prompt.size() - 1) * n_vocab, n_vocab * sizeof(float)) == 0);
    }

    void stopStringEndsTheReplyWithoutIt() {
        Session s(*model_, *backend_);
        const std::vector<int32_t> prompt = chat({{"user", "List three fruits, one per line."}});
        const GenerateResult plain = s.generate(prompt, LiveSamplingParams(greedy(40)));
        QVERIFY(plain.text.size() > 4);
        // Use a piece of the unconstrained answer as the stop string: generation must end right before it.
        const std::string stop = plain.text.substr(plain.text.size() / 2, 3);
        SamplingParams p = greedy(40);
        p.stop = {stop};
        const GenerateResult r = s.generate(prompt, LiveSamplingParams(p));
        QCOMPARE(r.reason, StopReason::STOP_STRING);
        QCOMPARE(r.text, plain.text.substr(0, plain.text.find(stop)));
    }

    void liveParametersApplyToTheNextToken() {
        Session s(*model_, *backend_);
        LiveSamplingParams live(greedy(100));
        Recorder rec;
        rec.on_each = [&](const TokenEvent& e) {
            if (e.index == 4) live.set(greedy(7));  // the GUI lowers "max tokens" mid-reply
        };
        const GenerateResult r = s.generate(chat({{"user", "Tell me a long story."}}), live, &rec);
        QCOMPARE(r.reason, StopReason::MAX_TOKENS);
        QCOMPARE(r.tokens.size(), size_t(7));
    }

    void kvStatisticsFollowTheFormulaAfterEveryStep() {
        Session s(*model_, *backend_);
        Recorder rec;
        const std::vector<int32_t> prompt = chat({{"user", "Hello!"}});
        const GenerateResult r = s.generate(prompt, LiveSamplingParams(greedy(10)), &rec);
        QVERIFY(!rec.kv.empty());
        const ModelConfig& c = model_->config();
        const uint64_t per_token = 2ull * uint64_t(c.n_head_kv) * uint64_t(c.head_dim) * 2;  // K+V, f16
        int32_t expected_tokens = int32_t(prompt.size());
        for (const KvStats& k : rec.kv) {
            QCOMPARE(k.n_tokens, expected_tokens);
            QCOMPARE(k.layers.size(), size_t(c.n_layer));
            for (const KvLayerStats& l : k.layers) {
                QCOMPARE(l.bytes_used, per_token * uint64_t(expected_tokens));
                QCOMPARE(l.bytes_reserved, per_token * uint64_t((expected_tokens + k.block_tokens - 1) / k.block_tokens * k.block_tokens));
            }
            ++expected_tokens;
        }
        s.truncate(3);
        QCOMPARE(s.kv_stats().bytes_used, uint64_t(c.n_layer) * per_token * 3);
    }

    void tokenEventsCarryTextAndProbability() {
        Session s(*model_, *backend_);
        Recorder rec;
        SamplingParams p;
        p.seed = 7;
        p.max_tokens = 12;
        const GenerateResult r = s.generate(chat({{"user", "Say something."}}), LiveSamplingParams(p), &rec);
        QCOMPARE(rec.tokens.size(), r.tokens.size());
        std::string joined;
        for (const TokenEvent& e : rec.tokens) {
            joined += e.piece;
            QVERIFY(e.p > 0.0f && e.p <= 1.0f);
        }
        QCOMPARE(joined, r.text.substr(0, joined.size()));
        QCOMPARE(r.seed, uint64_t(7));

        // Greedy decoding reports the chosen token's softmax probability too.
        Recorder greedy_rec;
        s.generate(chat({{"user", "Say something."}}), LiveSamplingParams(greedy(4)), &greedy_rec);
        QVERIFY(!greedy_rec.tokens.empty());
        for (const TokenEvent& e : greedy_rec.tokens) QVERIFY2(e.p > 0.0f && e.p <= 1.0f, qPrintable(QString::number(e.p)));
    }

    // Without the inspector the session reads only the best few logits (SamplerChain::top_needed);
    // the replies and the probabilities of the drawn tokens must be those of whole rows.
    void readingOnlyTheBestLogitsChangesNothing_data() {
        QTest::addColumn<float>("temperature");
        QTest::addColumn<float>("repeat_penalty");
        QTest::newRow("sampled") << 0.8f << 1.0f;
        QTest::newRow("sampled, penalties, eos ignored") << 1.2f << 1.3f;
        QTest::newRow("greedy, penalties, eos ignored") << 0.0f << 1.3f;
    }
    void readingOnlyTheBestLogitsChangesNothing() {
        QFETCH(float, temperature);
        QFETCH(float, repeat_penalty);
        SamplingParams p;
        p.seed = 99;
        p.max_tokens = 24;
        p.temperature = temperature;
        p.repeat_penalty = repeat_penalty;
        p.ignore_eos = repeat_penalty != 1.0f;
        const std::vector<int32_t> prompt = chat({{"user", "Write a line about the sea."}});

        CountingBackend whole_backend, top_backend;
        Session whole(*model_, whole_backend), top(*model_, top_backend);
        CandidateRecorder with_candidates;  // whole rows
        const GenerateResult a = whole.generate(prompt, LiveSamplingParams(p), &with_candidates);
        const GenerateResult b = top.generate(prompt, LiveSamplingParams(p));  // no observer: best few
        QCOMPARE(b.tokens, a.tokens);
        QCOMPARE(whole_backend.tops, 0);
        QCOMPARE(top_backend.rows, 0);
        QCOMPARE(top_backend.tops, int(b.tokens.size()) + (b.reason == StopReason::EOS ? 1 : 0));

        // Observed without candidates: sampled tokens still take the best few, with the same p;
        // greedy reads whole rows (its p is a softmax over the whole vocabulary).
        top.reset();
        top_backend.rows = top_backend.tops = 0;
        Recorder plain;
        const GenerateResult c = top.generate(prompt, LiveSamplingParams(p), &plain);
        QCOMPARE(c.tokens, a.tokens);
        QCOMPARE(plain.tokens.size(), with_candidates.tokens.size());
        for (size_t i = 0; i < plain.tokens.size(); ++i) QCOMPARE(plain.tokens[i].p, with_candidates.tokens[i].p);
        QCOMPARE(top_backend.tops > 0, temperature > 0.0f);
    }

    // With a grammar the best few serve the first draw and, where they hold enough tokens the grammar
    // allows, the second; only for the rest are more logits read, and then only the allowed tokens'
    // (never the whole row). The replies and the probabilities of the drawn tokens are those of whole
    // rows. "No e" refuses many of the model's draws and allows most tokens (second draws from the
    // best few); digits allow few of the best (second draws that read the few allowed columns).
    void aGrammarReadsOnlyTheAllowedLogitsWhereTheBestFewFallShort_data() {
        QTest::addColumn<QString>("grammar");
        QTest::addColumn<bool>("rows");  // whether some draws must read the allowed tokens' columns
        QTest::newRow("no e") << "root ::= [^e]*" << false;
        QTest::newRow("digits") << "root ::= [0-9] [0-9 ,]*" << true;
    }
    void aGrammarReadsOnlyTheAllowedLogitsWhereTheBestFewFallShort() {
        QFETCH(QString, grammar);
        QFETCH(bool, rows);
        SamplingParams p;
        p.seed = 5;
        p.max_tokens = 24;
        p.grammar = grammar.toStdString();
        const std::vector<int32_t> prompt = chat({{"user", "Write a line about the sea."}});
        CountingBackend whole_backend, top_backend;
        Session whole(*model_, whole_backend), top(*model_, top_backend);
        CandidateRecorder with_candidates;  // whole rows
        const GenerateResult a = whole.generate(prompt, LiveSamplingParams(p), &with_candidates);
        const GenerateResult b = top.generate(prompt, LiveSamplingParams(p));
        QCOMPARE(b.tokens, a.tokens);
        QVERIFY2(a.reason != StopReason::ERROR, a.error.c_str());
        QCOMPARE(whole_backend.tops, 0);
        QCOMPARE(top_backend.tops, int(b.tokens.size()) + (b.reason == StopReason::EOS ? 1 : 0));
        QCOMPARE(top_backend.rows, 0);
        const int reads = top_backend.column_reads;
        QVERIFY2(rows ? reads > 0 : reads < top_backend.tops / 2,
                 qPrintable(QString("%1 column reads for %2 draws").arg(reads).arg(top_backend.tops)));
        // Digits and the few other pieces that fit, not the vocabulary: a small part of a row each.
        if (rows) QVERIFY2(top_backend.columns < int64_t(reads) * model_->config().n_vocab / 20,
                           qPrintable(QString("%1 columns in %2 reads").arg(top_backend.columns).arg(reads)));
        if (!rows) QVERIFY2(b.text.find('e') == std::string::npos && !b.text.empty(), b.text.c_str());
        // Observed (the p of each drawn token shown), still from the best few: the same p.
        top.reset();
        Recorder plain;
        const GenerateResult c = top.generate(prompt, LiveSamplingParams(p), &plain);
        QCOMPARE(c.tokens, a.tokens);
        QCOMPARE(plain.tokens.size(), with_candidates.tokens.size());
        for (size_t i = 0; i < plain.tokens.size(); ++i) QCOMPARE(plain.tokens[i].p, with_candidates.tokens[i].p);
    }

    // Observed greedy without the inspector's candidates takes the raw row's argmax and p
    // (SamplerChain::sample_greedy_row) instead of running the chain over every candidate; the
    // tokens and the bits of every p are those of the whole-row draw the candidate view runs.
    void observedGreedyFromTheRawRowHasTheSameBits_data() {
        QTest::addColumn<bool>("ignore_eos");
        QTest::addColumn<float>("repeat_penalty");
        QTest::addColumn<QString>("grammar");  // checks the argmax; filters the row where it refuses it
        QTest::newRow("greedy") << false << 1.0f << QString();
        QTest::newRow("greedy, eos ignored") << true << 1.0f << QString();
        QTest::newRow("greedy, penalties (the whole chain on both sides)") << false << 1.3f << QString();
        QTest::newRow("greedy, grammar") << false << 1.0f << QString("root ::= [^e]*");
    }
    void observedGreedyFromTheRawRowHasTheSameBits() {
        QFETCH(bool, ignore_eos);
        QFETCH(float, repeat_penalty);
        QFETCH(QString, grammar);
        SamplingParams p = greedy(24);
        p.ignore_eos = ignore_eos;
        p.repeat_penalty = repeat_penalty;
        p.grammar = grammar.toStdString();
        const std::vector<int32_t> prompt = chat({{"user", "Write a line about the sea."}});
        CountingBackend raw_backend;
        Session raw(*model_, raw_backend), whole(*model_, *backend_);
        Recorder plain;
        CandidateRecorder with_candidates;
        const GenerateResult a = whole.generate(prompt, LiveSamplingParams(p), &with_candidates);
        const GenerateResult b = raw.generate(prompt, LiveSamplingParams(p), &plain);
        QCOMPARE(b.tokens, a.tokens);
        QCOMPARE(plain.tokens.size(), with_candidates.tokens.size());
        QVERIFY(!plain.tokens.empty());
        for (size_t i = 0; i < plain.tokens.size(); ++i) {
            const float fast_p = plain.tokens[i].p, chain_p = with_candidates.tokens[i].p;
            QVERIFY2(std::memcmp(&fast_p, &chain_p, sizeof fast_p) == 0,
                     qPrintable(QString("token %1: p %2 vs %3").arg(i).arg(double(fast_p), 0, 'g', 9).arg(double(chain_p), 0, 'g', 9)));
            QVERIFY(fast_p > 0.0f && fast_p <= 1.0f);
        }
        QCOMPARE(raw_backend.tops, 0);  // the p is over the whole vocabulary: whole rows
        QVERIFY(raw_backend.rows >= int(b.tokens.size()));
    }
};

QTEST_GUILESS_MAIN(TestSession)
#include "test_session.moc"
