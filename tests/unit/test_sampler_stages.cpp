// The samplers added after the original six (logit bias, DRY, top-nσ, XTC, mirostat 1 and 2) on
// hand-computed distributions, the editable order (--samplers), and the trace entry of every stage.
#include <QtTest>

#include <cmath>
#include <limits>
#include <random>

#include "sampling/sampler.h"
#include "sampling/samplers.h"
#include "util/error.h"

using namespace wb;

namespace {

CandidateSet make_set(const std::vector<float>& logits) {
    CandidateSet cands;
    cands.assign(logits.data(), static_cast<int32_t>(logits.size()));
    return cands;
}

std::vector<float> log_probs(const std::vector<double>& probs) {
    std::vector<float> out;
    for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
    return out;
}

std::vector<int32_t> ids_of(const CandidateSet& cands) {
    std::vector<int32_t> out;
    for (const Candidate& c : cands.data) out.push_back(c.id);
    return out;
}

SamplingParams plain(uint64_t seed) {
    SamplingParams p;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = seed;
    return p;
}

}  // namespace

class TestSamplerStages : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void xtc_removes_all_top_choices_but_the_last() {
        std::mt19937_64 rng(5);
        const auto logits = log_probs({0.4, 0.3, 0.2, 0.1});
        CandidateSet cands = make_set(logits);
        XtcSampler(1.0f, 0.15f, rng).apply(cands);  // 0.4, 0.3, 0.2 are top choices; 0.2 stays
        QCOMPARE(ids_of(cands), (std::vector<int32_t>{2, 3}));
        cands = make_set(logits);
        XtcSampler(1.0f, 0.35f, rng).apply(cands);  // only 0.4 is above: nothing to remove
        QCOMPARE(cands.data.size(), size_t{4});
        cands = make_set(logits);
        XtcSampler(0.0f, 0.15f, rng).apply(cands);  // probability 0: off
        QCOMPARE(cands.data.size(), size_t{4});
    }

    // llama.cpp runs the whole sequence at temperature 0 and keeps the best of what is left: XTC and
    // typical sampling, which can remove the best token, change the greedy pick; the row is needed.
    void greedy_picks_the_best_that_xtc_and_typical_leave() {
        SamplingParams p = plain(3);
        p.temperature = 0.0f;
        const auto logits = log_probs({0.4, 0.3, 0.2, 0.1});
        SamplerChain chain(p);
        QCOMPARE(chain.sample(logits.data(), 4), 0);
        QCOMPARE(chain.top_needed(4, 0, false), 1);
        p.xtc_probability = 1.0f;
        p.xtc_threshold = 0.15f;  // removes 0.4 and 0.3; 0.2 is the best left
        chain.set_params(p);
        QCOMPARE(chain.sample(logits.data(), 4), 2);
        QCOMPARE(chain.top_needed(4, 0, false), 0);
        p.xtc_probability = 0.0f;
        p.typical_p = 0.2f;  // keeps the token nearest the entropy first: 0.3 (surprise 1.20 vs H 1.28)
        chain.set_params(p);
        QCOMPARE(chain.sample(logits.data(), 4), 1);
        QCOMPARE(chain.top_needed(4, 0, false), 0);
    }

    void top_n_sigma_cuts_at_max_minus_n_stddev() {
        // mean 3.2, stddev sqrt(12.56) = 3.544: n = 1 cuts at 6.456, n = 2 at 2.912, n = 3 at -0.632.
        const std::vector<float> logits{0.0f, 1.0f, 2.0f, 3.0f, 10.0f};
        CandidateSet cands = make_set(logits);
        TopNSigmaSampler(1.0f).apply(cands);
        QCOMPARE(ids_of(cands), (std::vector<int32_t>{4}));
        cands = make_set(logits);
        TopNSigmaSampler(2.0f).apply(cands);
        QCOMPARE(ids_of(cands), (std::vector<int32_t>{3, 4}));
        cands = make_set(logits);
        TopNSigmaSampler(3.0f).apply(cands);
        QCOMPARE(cands.data.size(), size_t{5});
    }

    void mirostat_v2_keeps_surprise_below_mu_and_moves_mu() {
        std::mt19937_64 rng(1);
        const auto logits = log_probs({0.5, 0.25, 0.125, 0.125});  // surprise 1, 2, 3, 3 bits
        float mu = 2.5f;
        MirostatV2Sampler v2(3.0f, 0.5f, mu, rng);
        CandidateSet cands = make_set(logits);
        v2.truncate(cands);
        QCOMPARE(ids_of(cands), (std::vector<int32_t>{0, 1}));
        QVERIFY(std::fabs(cands.data[0].p - 2.0f / 3.0f) < 1e-6f);
        mu = 0.5f;  // below every surprise: the best token alone
        cands = make_set(logits);
        v2.truncate(cands);
        QCOMPARE(cands.data.size(), size_t{1});
        // mu -= eta * (surprise - tau): 4 - 0.5 * (2 - 3) = 4.5
        QCOMPARE(mirostat_next_mu(4.0f, 0.5f, 3.0f, 0.25f), 4.5f);
        // apply() draws and moves mu by the drawn token's surprise.
        mu = 2.5f;
        cands = make_set(logits);
        v2.apply(cands);
        const float surprise = -std::log2(cands.data[size_t(cands.selected)].p);
        QVERIFY(std::fabs(mu - (2.5f - 0.5f * (surprise - 3.0f))) < 1e-6f);
    }

    void mirostat_v1_keeps_k_from_the_zipf_fit() {
        // p_i ~ 1 / (i + 1)^2 over 100 tokens: s_hat = 2, so k = sqrt(2^mu / (1 - 100^-1)).
        std::vector<float> logits;
        for (int i = 0; i < 100; ++i) logits.push_back(-2.0f * std::log(float(i + 1)));
        std::mt19937_64 rng(1);
        for (auto [mu_value, k] : {std::pair{6.0f, 8}, std::pair{4.0f, 4}, std::pair{10.0f, 32}}) {
            float mu = mu_value;
            MirostatSampler v1(5.0f, 0.1f, 100, mu, rng);
            CandidateSet cands = make_set(logits);
            QCOMPARE(v1.truncate(cands, 100), k);
            QCOMPARE(cands.data.size(), size_t(k));
            QCOMPARE(cands.data.back().id, k - 1);
        }
    }

    void dry_penalises_the_token_that_extends_a_repeat() {
        // History 1 2 3 1 2: "1 2" repeats, and 3 followed it last time.
        const std::vector<int32_t> history{1, 2, 3, 1, 2};
        const std::vector<float> logits(6, 0.0f);
        const DryBreakers none;
        CandidateSet cands = make_set(logits);
        DrySampler(history, none, 1.5f, 2.0f, 2, -1).apply(cands);  // 1.5 * 2^(2 - 2)
        QCOMPARE(cands.data[3].logit, -1.5f);
        for (int id : {0, 1, 2, 4, 5}) QCOMPARE(cands.data[size_t(id)].logit, 0.0f);
        cands = make_set(logits);
        DrySampler(history, none, 1.5f, 2.0f, 1, -1).apply(cands);  // 1.5 * 2^(2 - 1)
        QCOMPARE(cands.data[3].logit, -3.0f);
        cands = make_set(logits);
        DrySampler(history, none, 1.5f, 2.0f, 3, -1).apply(cands);  // a repeat of 2 is allowed
        QCOMPARE(cands.data[3].logit, 0.0f);
        cands = make_set(logits);
        DrySampler(history, none, 1.5f, 2.0f, 2, 2).apply(cands);  // the window is too short to see it
        QCOMPARE(cands.data[3].logit, 0.0f);
        // Token 1 as a breaker: the repeat cannot reach back across it, so nothing is penalised.
        DryBreakers breaker{{1, {}}};
        cands = make_set(logits);
        DrySampler(history, breaker, 1.5f, 2.0f, 2, -1).apply(cands);
        QCOMPARE(cands.data[3].logit, 0.0f);
    }

    void dry_breakers_come_from_token_text() {
        const std::vector<std::string> pieces{"a", "b:", ":c", "x", "ab", "b"};
        SamplerVocab vocab;
        vocab.n_vocab = int32_t(pieces.size());
        vocab.piece = [&](int32_t id) { return pieces[size_t(id)]; };
        vocab.tokenize = [&](const std::string& text) {
            std::vector<int32_t> ids;
            for (char ch : text)
                for (size_t i = 0; i < pieces.size(); ++i)
                    if (pieces[i] == std::string(1, ch)) ids.push_back(int32_t(i));
            return ids;
        };
        const DryBreakers b = process_dry_breakers(vocab, {":", "ab"});
        // ":" is inside tokens 1 and 2; "ab" is token 4, and token 0 ("a") starts it when "b" (5) follows.
        QCOMPARE(b.count(1), size_t{1});
        QCOMPARE(b.count(2), size_t{1});
        QCOMPARE(b.count(4), size_t{1});
        QVERIFY(b.find(1)->second.empty());
        QCOMPARE(b.find(0)->second, (std::vector<int32_t>{5}));
        QCOMPARE(b.count(3), size_t{0});
        // The chain refuses breakers it cannot tokenize instead of silently ignoring them.
        SamplingParams p = plain(1);
        p.dry_multiplier = 0.8f;
        QVERIFY_THROWS_EXCEPTION(Error, SamplerChain{p});
        SamplerChain chain(p, std::make_shared<SamplerVocab>(vocab));
    }

    void logit_bias_bans_the_best_token() {
        SamplingParams p = plain(1);
        p.temperature = 0.0f;  // greedy
        const auto logits = log_probs({0.1, 0.6, 0.3});
        SamplerChain chain(p);
        QCOMPARE(chain.sample(logits.data(), 3), 1);
        p.logit_bias = {{1, -std::numeric_limits<float>::infinity()}};
        chain.set_params(p);
        QCOMPARE(chain.sample(logits.data(), 3), 2);
        p.temperature = 1.0f;  // and no draw of a sampling chain ever picks it
        chain.set_params(p);
        for (int i = 0; i < 200; ++i) QVERIFY(chain.sample(logits.data(), 3) != 1);
    }

    void order_is_honoured() {
        // min_p 0.3 then temperature 3 keeps {0.6, 0.3}; temperature first flattens the distribution
        // (0.43, 0.34, 0.23) so min_p keeps all three.
        const auto logits = log_probs({0.6, 0.3, 0.1});
        SamplingParams p = plain(1);
        p.min_p = 0.3f;
        p.temperature = 3.0f;
        std::vector<SamplerStageTrace> trace;
        auto min_p_kept = [&](const std::string& order) {
            p.samplers = parse_sampler_sequence(order);
            SamplerChain chain(p);
            chain.sample(logits.data(), 3, &trace, 3);
            for (const auto& t : trace)
                if (t.stage == "min_p") return t.n_after;
            return size_t{0};
        };
        QCOMPARE(min_p_kept("min_p;temperature"), size_t{2});
        QCOMPARE(min_p_kept("temperature;min_p"), size_t{3});
        // The trace follows the order too.
        p.samplers = parse_sampler_sequence("temp;min-p;top_k");
        SamplerChain chain(p);
        chain.sample(logits.data(), 3, &trace, 1);
        QStringList names;
        for (const auto& t : trace) names << QString::fromStdString(t.stage);
        QCOMPARE(names, (QStringList{"temperature", "min_p", "top_k", "dist"}));
    }

    void sampler_names_follow_llama_cpp() {
        QCOMPARE(parse_sampler_sequence("penalties;dry;top-k;typical;nucleus;minp;xtc;temp"),
                 (std::vector<std::string>{"penalties", "dry", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"}));
        QCOMPARE(join_sampler_sequence(default_sampler_sequence()),
                 std::string("penalties;dry;top_n_sigma;top_k;typ_p;top_p;min_p;xtc;temperature"));
        try {
            parse_sampler_sequence("top_k;bogus");
            QFAIL("an unknown sampler name was accepted");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("'bogus'"), e.what());
        }
        SamplingParams p;
        p.samplers = {"top-k"};  // aliases must be resolved before they reach the chain
        QVERIFY_THROWS_EXCEPTION(Error, SamplerChain{p});
    }

    void trace_records_every_new_stage() {
        SamplingParams p = plain(3);
        p.logit_bias = {{0, -1.0f}};
        p.dry_multiplier = 0.8f;
        p.dry_sequence_breakers.clear();
        p.top_n_sigma = 3.0f;
        p.xtc_probability = 1.0f;
        p.xtc_threshold = 0.1f;
        SamplerChain chain(p);
        for (int32_t t : {1, 2, 1, 2}) chain.accept(t);
        const auto logits = log_probs({0.05, 0.3, 0.25, 0.2, 0.2});
        std::vector<SamplerStageTrace> trace;
        chain.sample(logits.data(), 5, &trace, 2);
        QStringList names;
        for (const auto& t : trace) names << QString::fromStdString(t.stage);
        QCOMPARE(names, (QStringList{"logit_bias", "penalties", "dry", "top_n_sigma", "top_k", "typical_p", "top_p",
                                     "min_p", "xtc", "temperature", "dist"}));
        auto detail = [&](const char* stage) {
            for (const auto& t : trace)
                if (t.stage == stage) return QString::fromStdString(t.detail);
            return QString();
        };
        QVERIFY2(detail("dry").contains("multiplier 0.8") && detail("dry").contains("penalised 1"), qPrintable(detail("dry")));
        QVERIFY2(detail("xtc").contains("threshold 0.1") && detail("xtc").contains("removed"), qPrintable(detail("xtc")));
        QVERIFY2(detail("top_n_sigma").contains("3 sigma"), qPrintable(detail("top_n_sigma")));
        QVERIFY2(detail("logit_bias").contains("0-1"), qPrintable(detail("logit_bias")));
        QVERIFY2(detail("min_p").contains("x p_max"), qPrintable(detail("min_p")));

        p = plain(3);
        p.mirostat = 2;
        chain.set_params(p);
        chain.sample(logits.data(), 5, &trace, 2);
        QCOMPARE(trace.size(), size_t{2});
        QCOMPARE(QString::fromStdString(trace[1].stage), QString("mirostat_v2"));
        QVERIFY2(QString::fromStdString(trace[1].detail).contains("<= mu 10,"), trace[1].detail.c_str());  // 2 * tau
        // mu is kept across tokens and restarts with reset().
        chain.sample(logits.data(), 5, &trace, 2);
        QVERIFY2(!QString::fromStdString(trace[1].detail).contains("<= mu 10,"), trace[1].detail.c_str());
        chain.reset();
        chain.sample(logits.data(), 5, &trace, 2);
        QVERIFY2(QString::fromStdString(trace[1].detail).contains("<= mu 10,"), trace[1].detail.c_str());
    }

    // The trace records the cut-off each stage applied in the distribution it saw, after a logit bias
    // or a penalty changed the logits: not min_p x the best raw p, not top-p over the raw p.
    void trace_records_cut_offs_where_the_logits_changed_data() {
        QTest::addColumn<QString>("change");
        QTest::addColumn<QString>("stage");
        QTest::addColumn<double>("threshold");  // SamplerStageTrace::threshold
        QTest::addColumn<double>("p_cutoff");   // NaN: none
        QTest::addColumn<int>("n_after");
        const double none = std::numeric_limits<double>::quiet_NaN();
        // Raw {.4 .3 .2 .1}; bias log 4 on token 3 -> {.4 .3 .2 .4} / 1.3. min_p 0.6 cuts at 0.6 x 4/13
        // (raw: 0.6 x 0.4 = 0.24); the logit cut-off is log(0.4 x 0.6). Token 2 (2/13) goes.
        QTest::newRow("bias, min_p") << "bias" << "min_p" << std::log(0.24) << 0.6 * 4.0 / 13.0 << 3;
        // Token 0 banned -> {.3 .2 .1} / .6 = {.5 .333 .167}: top_p 0.8 keeps two with mass 5/6 (raw:
        // three, 0.4 + 0.3 + 0.2).
        QTest::newRow("ban, top_p") << "ban" << "top_p" << 5.0 / 6.0 << none << 2;
        // Raw {.5 .3 .15 .05}; presence log 2 on token 0 -> {.25 .3 .15 .05} / .75; top_p 0.7 keeps
        // tokens 1 and 0 with mass .55 / .75 = 11/15; min_p 0.5 then sees {.3 .25} / .55 and cuts at
        // 0.5 x 3/5.5 (raw: 0.5 x 0.5 = 0.25).
        QTest::newRow("presence, top_p") << "presence" << "top_p" << 11.0 / 15.0 << none << 2;
        QTest::newRow("presence, min_p") << "presence" << "min_p" << std::log(0.15) << 0.5 * 3.0 / 5.5 << 2;
    }

    void trace_records_cut_offs_where_the_logits_changed() {
        QFETCH(QString, change);
        QFETCH(QString, stage);
        QFETCH(double, threshold);
        QFETCH(double, p_cutoff);
        QFETCH(int, n_after);
        SamplingParams p = plain(1);
        std::vector<float> logits = log_probs({0.4, 0.3, 0.2, 0.1});
        if (change == "bias") {
            p.logit_bias = {{3, std::log(4.0f)}};
            p.min_p = 0.6f;
            p.samplers = {"min_p"};
        } else if (change == "ban") {
            p.logit_bias = {{0, -std::numeric_limits<float>::infinity()}};
            p.top_p = 0.8f;
            p.samplers = {"top_p"};
        } else {
            logits = log_probs({0.5, 0.3, 0.15, 0.05});
            p.presence_penalty = std::log(2.0f);
            p.top_p = 0.7f;
            p.min_p = 0.5f;
            p.samplers = {"penalties", "top_p", "min_p"};
        }
        SamplerChain chain(p);
        chain.accept(0);
        std::vector<SamplerStageTrace> trace;
        chain.sample(logits.data(), 4, &trace, 4);
        const SamplerStageTrace* entry = nullptr;
        for (const SamplerStageTrace& t : trace)
            if (QString::fromStdString(t.stage) == stage) entry = &t;
        QVERIFY(entry);
        QCOMPARE(int(entry->n_after), n_after);
        QVERIFY2(std::fabs(entry->threshold - threshold) < 1e-6, qPrintable(QString::number(entry->threshold, 'g', 9)));
        if (std::isnan(p_cutoff)) {
            QVERIFY(std::isnan(entry->p_cutoff));
        } else {
            QVERIFY2(std::fabs(entry->p_cutoff - p_cutoff) < 1e-6, qPrintable(QString::number(entry->p_cutoff, 'g', 9)));
        }
    }

    // Every stage with a threshold records the one it applied; an off stage records none. Typical-p
    // by hand: top-k leaves p = 0.4, 1/3, 4/15 (entropy 1.0852 nats); by |-ln p - H| the order is 1/3,
    // 0.4, 4/15, cumulative 1/3, 11/15, 1, so 0.99 needs all three and the mass reached is 1.
    void trace_records_each_stages_threshold() {
        SamplingParams p = plain(3);
        p.top_k = 3;
        p.typical_p = 0.99f;
        p.top_n_sigma = 3.0f;
        p.xtc_probability = 1.0f;
        p.xtc_threshold = 0.1f;
        SamplerChain chain(p);
        const auto logits = log_probs({0.05, 0.3, 0.25, 0.2, 0.2});
        std::vector<SamplerStageTrace> trace;
        chain.sample(logits.data(), 5, &trace, 5);
        auto entry = [&](const char* stage) {
            for (const auto& t : trace)
                if (t.stage == stage) return t;
            return SamplerStageTrace{};
        };
        QCOMPARE(entry("top_k").threshold, 3.0);
        QVERIFY2(std::fabs(entry("typical_p").threshold - 1.0) < 1e-6, qPrintable(QString::number(entry("typical_p").threshold, 'g', 9)));
        QCOMPARE(int(entry("typical_p").n_after), 3);
        QVERIFY2(entry("typical_p").detail.find(": reached ") != std::string::npos, entry("typical_p").detail.c_str());
        QCOMPARE(float(entry("xtc").threshold), 0.1f);
        // mean and stddev of the logits; the cut-off's p in the (raw) distribution top-nσ saw.
        const SamplerStageTrace sigma = entry("top_n_sigma");
        QVERIFY(std::isfinite(sigma.threshold) && sigma.threshold < std::log(0.05));
        QVERIFY2(std::fabs(sigma.p_cutoff - std::exp(sigma.threshold)) < 1e-6, qPrintable(QString::number(sigma.p_cutoff)));
        QVERIFY(std::isnan(entry("top_p").threshold));  // off
        QCOMPARE(entry("top_p").detail, std::string("cumulative p >= 1 (off)"));
        QVERIFY(std::isnan(entry("min_p").threshold));  // off
        QVERIFY(std::isnan(entry("min_p").p_cutoff));
        QVERIFY(std::isnan(entry("temperature").threshold));  // has none
    }

    // The "temperature 2.0 changes nothing": min-p ahead of it left one candidate, and the
    // trace's temperature entry says that it had no effect; with two left it says nothing of the kind.
    void trace_says_when_temperature_has_no_effect() {
        SamplingParams p = plain(4);
        p.temperature = 2.0f;
        p.min_p = 0.5f;
        p.samplers = {"min_p", "temperature"};
        SamplerChain chain(p);
        std::vector<SamplerStageTrace> trace;
        const auto peaked = log_probs({0.7, 0.2, 0.1});  // min-p 0.5 keeps p >= 0.35: one token
        chain.sample(peaked.data(), 3, &trace, 3);
        QCOMPARE(trace[0].n_after, size_t(1));
        QCOMPARE(QString::fromStdString(trace[1].stage), QString("temperature"));
        QVERIFY2(QString::fromStdString(trace[1].detail).contains("no effect: an earlier stage left only one candidate"),
                 trace[1].detail.c_str());
        const auto flat = log_probs({0.4, 0.35, 0.25});  // keeps p >= 0.2: all three
        chain.sample(flat.data(), 3, &trace, 3);
        QCOMPARE(trace[0].n_after, size_t(3));
        QCOMPARE(trace[1].detail, std::string("logit / 2"));
    }

    // Live between tokens: set_params switches the new stages on and reorders the chain for the very
    // next draw, keeping the history DRY reads (as the GUI's changes mid-reply do).
    void new_stages_and_order_change_between_tokens() {
        SamplingParams p = plain(5);
        SamplerChain chain(p);
        for (int32_t t : {1, 2, 1, 2}) chain.accept(t);
        const auto logits = log_probs({0.05, 0.3, 0.25, 0.2, 0.2});
        std::vector<SamplerStageTrace> trace;
        auto names = [&] {
            QStringList out;
            for (const auto& t : trace) out << QString::fromStdString(t.stage);
            return out;
        };
        chain.sample(logits.data(), 5, &trace, 2);
        QCOMPARE(names(), (QStringList{"penalties", "top_k", "typical_p", "top_p", "min_p", "temperature", "dist"}));
        p.xtc_probability = 1.0f;
        p.top_n_sigma = 3.0f;
        p.dry_multiplier = 0.8f;
        p.dry_sequence_breakers.clear();
        p.samplers = {"dry", "xtc", "temperature", "top_n_sigma"};
        chain.set_params(p);
        chain.sample(logits.data(), 5, &trace, 2);
        QCOMPARE(names(), (QStringList{"dry", "xtc", "temperature", "top_n_sigma", "dist"}));
        QVERIFY2(trace[0].detail.find("penalised 1") != std::string::npos, trace[0].detail.c_str());  // the history stayed
        p.xtc_probability = 0.0f;
        p.samplers = {"top_n_sigma", "dry"};
        chain.set_params(p);
        chain.sample(logits.data(), 5, &trace, 2);
        QCOMPARE(names(), (QStringList{"top_n_sigma", "dry", "dist"}));
    }

    // Mirostat's mu lives across tokens and across live changes: a new eta only changes the next
    // update (mu goes on as in a chain left alone), a new tau or version restarts it at 2 * tau.
    void mirostat_mu_survives_a_live_change_unless_tau_or_version_changes() {
        SamplingParams p = plain(9);
        p.mirostat = 2;
        p.mirostat_tau = 5.0f;
        SamplerChain changed(p), alone(p);
        const auto logits = log_probs({0.4, 0.2, 0.15, 0.1, 0.08, 0.04, 0.02, 0.01});
        std::vector<SamplerStageTrace> a, b;
        const auto mu = [](const std::vector<SamplerStageTrace>& trace) { return trace.back().threshold; };
        for (int step = 0; step < 3; ++step) {
            changed.sample(logits.data(), 8, &a, 1);
            alone.sample(logits.data(), 8, &b, 1);
        }
        QVERIFY(mu(a) != 10.0);  // it moved from 2 * tau
        p.mirostat_eta = 0.3f;
        changed.set_params(p);
        changed.sample(logits.data(), 8, &a, 1);
        alone.sample(logits.data(), 8, &b, 1);
        QCOMPARE(mu(a), mu(b));
        p.mirostat_tau = 4.0f;
        changed.set_params(p);
        changed.sample(logits.data(), 8, &a, 1);
        QCOMPARE(mu(a), 8.0);
        changed.sample(logits.data(), 8, &a, 1);
        QVERIFY(mu(a) != 8.0);
        p.mirostat = 1;
        changed.set_params(p);
        changed.sample(logits.data(), 8, &a, 1);
        p.mirostat = 2;
        changed.set_params(p);
        changed.sample(logits.data(), 8, &a, 1);
        QCOMPARE(mu(a), 8.0);
    }

    void new_stages_are_validated() {
        auto rejects = [](auto edit, const char* name) {
            SamplingParams p;
            edit(p);
            try {
                SamplerChain chain(p);
                QFAIL(qPrintable(QString("accepted a bad %1").arg(name)));
            } catch (const Error& e) {
                QVERIFY2(QString(e.what()).contains(name), e.what());
            }
        };
        rejects([](SamplingParams& p) { p.mirostat = 3; }, "mirostat");
        rejects([](SamplingParams& p) { p.dry_allowed_length = -1; }, "dry_allowed_length");
        rejects([](SamplingParams& p) { p.dry_penalty_last_n = -2; }, "dry_penalty_last_n");
        rejects([](SamplingParams& p) { p.xtc_threshold = NAN; }, "xtc_threshold");
        rejects([](SamplingParams& p) { p.logit_bias = {{2, INFINITY}}; }, "logit_bias");
        rejects([](SamplingParams& p) { p.logit_bias = {{-1, 1.0f}}; }, "logit_bias");
    }

    void top_needed_accounts_for_the_new_stages() {
        SamplingParams p;  // top_k 40
        SamplerChain chain(p);
        QCOMPARE(chain.top_needed(50000, 0, false), 40);
        p.logit_bias = {{7, -5.0f}};
        chain.set_params(p);
        QCOMPARE(chain.top_needed(50000, 0, false), 41);  // a lowered token may leave the best 40
        p.logit_bias = {{7, 5.0f}};
        chain.set_params(p);
        QCOMPARE(chain.top_needed(50000, 0, false), 0);  // a raised one can come from anywhere
        p.logit_bias.clear();
        p.top_n_sigma = 1.0f;  // before top_k, over the whole row
        chain.set_params(p);
        QCOMPARE(chain.top_needed(50000, 0, false), 0);
        p.top_n_sigma = -1.0f;
        p.mirostat = 2;
        chain.set_params(p);
        QCOMPARE(chain.top_needed(50000, 0, false), 0);
        p.mirostat = 0;
        p.samplers = {"min_p", "top_k", "temperature"};
        chain.set_params(p);
        QCOMPARE(chain.top_needed(50000, 0, false), 0);  // min_p ahead of top_k sees the whole row
    }
};

QTEST_GUILESS_MAIN(TestSamplerStages)
#include "test_sampler_stages.moc"
