// Sampler-trace files (issue 16 item 7): export -> import keeps every recorded number bit for bit, a
// replay from the file's settings and seed draws the same tokens, and compare names the first step and
// stage where two traces part ways.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "sampling/sampler.h"
#include "sampling/trace_file.h"
#include "util/error.h"
#include "util/sha256.h"

using namespace wb;

namespace {

std::vector<std::vector<float>> random_rows(size_t steps, size_t n_vocab, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<float>> rows(steps, std::vector<float>(n_vocab));
    for (auto& row : rows)
        for (float& v : row) v = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-53 * 10.0 - 5.0);
    return rows;
}

// Every stage on that records a threshold, so the file carries NaN and finite values alike.
SamplingParams busy_params(uint64_t seed) {
    SamplingParams p;
    p.temperature = 0.9f;
    p.top_k = 30;
    p.top_p = 0.9f;
    p.min_p = 0.02f;
    p.repeat_penalty = 1.1f;
    p.xtc_probability = 0.5f;
    p.xtc_threshold = 0.05f;
    p.top_n_sigma = 2.5f;
    p.logit_bias = {{3, -std::numeric_limits<float>::infinity()}, {7, 1.5f}};
    p.stop = {"\n\n"};
    p.seed = seed;
    return p;
}

// Runs a chain over the rows as a session would (prompt accepted first) and records its trace.
GenerationTrace generate(const SamplingParams& params, const std::vector<std::vector<float>>& rows) {
    GenerationTrace t;
    t.model_sha256 = "00ff";
    t.backend = "cpu";
    t.params = params;
    t.prompt = {1, 2, 5, 9};
    SamplerChain chain(params);
    t.seed_in_use = chain.seed_in_use();
    for (int32_t id : t.prompt) chain.accept(id);
    for (const auto& row : rows) {
        TraceStep s;
        s.token = chain.sample(row.data(), static_cast<int32_t>(row.size()), &s.stages, 8);
        chain.accept(s.token);
        t.steps.push_back(std::move(s));
    }
    return t;
}

template <class T>
bool bits_equal(T a, T b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace

class TestTraceFile : public QObject {
    Q_OBJECT
private slots:
    void export_import_round_trip_is_bit_exact();
    void replay_from_file_draws_the_same_tokens();
    void compare_names_first_diverging_step_and_stage();
    void compare_reports_token_and_length_differences();
    void bad_files_get_specific_errors();
    void sha256_matches_the_standard_vectors();
    void seeds_above_2_pow_53_survive_a_double_based_tool();
};

void TestTraceFile::sha256_matches_the_standard_vectors() {
    // FIPS 180-4's examples, and a message that needs a second padding block.
    auto hex = [](const std::string& s) {
        Sha256 h;
        h.update(s.data(), s.size());
        return h.hex_digest();
    };
    QCOMPARE(hex(""), std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    QCOMPARE(hex("abc"), std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    QCOMPARE(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
             std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    // Fed in pieces of odd sizes: the same digest as in one piece.
    const std::string million(1000000, 'a');
    Sha256 h;
    for (size_t at = 0; at < million.size(); at += 777) h.update(million.data() + at, std::min<size_t>(777, million.size() - at));
    QCOMPARE(h.hex_digest(), std::string("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
}

void TestTraceFile::export_import_round_trip_is_bit_exact() {
    GenerationTrace a = generate(busy_params(1234), random_rows(40, 200, 7));
    a.prompt_cached = 3;
    const GenerationTrace b = read_trace_json(write_trace_json(a));

    QCOMPARE(b.model_sha256, a.model_sha256);
    QCOMPARE(b.backend, a.backend);
    QCOMPARE(b.seed_in_use, a.seed_in_use);
    QCOMPARE(b.prompt, a.prompt);
    QCOMPARE(b.prompt_cached, a.prompt_cached);
    QCOMPARE(b.params.stop, a.params.stop);
    QCOMPARE(b.params.samplers, a.params.samplers);
    QVERIFY(bits_equal(b.params.temperature, a.params.temperature));
    QVERIFY(bits_equal(b.params.top_n_sigma, a.params.top_n_sigma));
    QCOMPARE(b.params.logit_bias.size(), a.params.logit_bias.size());
    QVERIFY(std::isinf(b.params.logit_bias[0].bias) && b.params.logit_bias[0].bias < 0);
    QVERIFY(bits_equal(b.params.logit_bias[1].bias, a.params.logit_bias[1].bias));

    QCOMPARE(b.steps.size(), a.steps.size());
    size_t nan_thresholds = 0;
    size_t finite_thresholds = 0;
    for (size_t i = 0; i < a.steps.size(); ++i) {
        QCOMPARE(b.steps[i].token, a.steps[i].token);
        QCOMPARE(b.steps[i].stages.size(), a.steps[i].stages.size());
        for (size_t k = 0; k < a.steps[i].stages.size(); ++k) {
            const SamplerStageTrace& x = a.steps[i].stages[k];
            const SamplerStageTrace& y = b.steps[i].stages[k];
            QCOMPARE(y.stage, x.stage);
            QCOMPARE(y.detail, x.detail);
            QCOMPARE(y.n_before, x.n_before);
            QCOMPARE(y.n_after, x.n_after);
            QVERIFY(bits_equal(y.threshold, x.threshold) || (std::isnan(x.threshold) && std::isnan(y.threshold)));
            QVERIFY(bits_equal(y.p_cutoff, x.p_cutoff) || (std::isnan(x.p_cutoff) && std::isnan(y.p_cutoff)));
            (std::isnan(x.threshold) ? nan_thresholds : finite_thresholds)++;
            QCOMPARE(y.top_after.size(), x.top_after.size());
            for (size_t c = 0; c < x.top_after.size(); ++c) {
                QCOMPARE(y.top_after[c].id, x.top_after[c].id);
                QVERIFY(bits_equal(y.top_after[c].logit, x.top_after[c].logit));
                QVERIFY(bits_equal(y.top_after[c].p, x.top_after[c].p));
            }
        }
    }
    // The file must have carried both kinds, or the NaN encoding went untested.
    QVERIFY(nan_thresholds > 0);
    QVERIFY(finite_thresholds > 0);
    QVERIFY(compare_traces(a, b).same);
}

void TestTraceFile::replay_from_file_draws_the_same_tokens() {
    // A random seed: the file's seed_in_use is what makes the replay possible.
    const auto rows = random_rows(60, 150, 11);
    const GenerationTrace original = generate(busy_params(SamplingParams::kRandomSeed), rows);
    const GenerationTrace loaded = read_trace_json(write_trace_json(original));

    SamplingParams p = loaded.params;
    p.seed = loaded.seed_in_use;
    const GenerationTrace replay = generate(p, rows);
    for (size_t i = 0; i < rows.size(); ++i) QCOMPARE(replay.steps[i].token, original.steps[i].token);
    QVERIFY(compare_traces(loaded, replay).same);
}

void TestTraceFile::compare_names_first_diverging_step_and_stage() {
    const auto rows = random_rows(30, 120, 3);
    const GenerationTrace a = generate(busy_params(99), rows);

    GenerationTrace b = a;
    // Change one recorded p in top_p at step 17: compare must stop there, not at the token.
    auto& stages = b.steps[17].stages;
    auto it = std::find_if(stages.begin(), stages.end(), [](const auto& s) { return s.stage == "top_p"; });
    QVERIFY(it != stages.end() && !it->top_after.empty());
    it->top_after[0].p = std::nextafter(it->top_after[0].p, 2.0f);
    b.steps[20].token += 1;  // a later difference must not be the one reported
    TraceDivergence d = compare_traces(a, b);
    QVERIFY(!d.same);
    QCOMPARE(d.step, size_t(17));
    QCOMPARE(d.stage, std::string("top_p"));
    QVERIFY2(d.what.find("candidate 0: p") == 0, d.what.c_str());

    // A different seed on the same logits: the first difference is somewhere, and it names a stage
    // (dist draws differently) or the token, at the same step the drawn tokens first differ.
    const GenerationTrace c = generate(busy_params(100), rows);
    d = compare_traces(a, c);
    QVERIFY(!d.same);
    size_t first_token = 0;
    while (first_token < rows.size() && a.steps[first_token].token == c.steps[first_token].token) ++first_token;
    QVERIFY(d.step <= first_token);
}

void TestTraceFile::compare_reports_token_and_length_differences() {
    const GenerationTrace a = generate(busy_params(5), random_rows(10, 80, 4));
    GenerationTrace b = a;
    b.steps[4].token = 12345;
    TraceDivergence d = compare_traces(a, b);
    QCOMPARE(d.step, size_t(4));
    QCOMPARE(d.stage, std::string());
    QCOMPARE(d.what, "token " + std::to_string(a.steps[4].token) + " vs 12345");

    b = a;
    b.steps.resize(6);
    d = compare_traces(a, b);
    QCOMPARE(d.step, size_t(6));
    QCOMPARE(d.what, std::string("trace B ends after 6 steps"));

    b = a;
    b.prompt.push_back(4);
    QCOMPARE(compare_traces(a, b).what, std::string("the prompts differ"));
}

void TestTraceFile::bad_files_get_specific_errors() {
    const std::string good = write_trace_json(generate(busy_params(5), random_rows(3, 50, 4)));
    auto error_of = [](const std::string& text) -> std::string {
        try {
            read_trace_json(text);
        } catch (const Error& e) {
            return e.what();
        }
        return "(no error)";
    };
    QCOMPARE(error_of("{not json"), std::string("trace file: not valid JSON"));
    QCOMPARE(error_of("[]"), std::string("trace file: the file must be an object"));
    auto edited = [&good](const std::function<void(nlohmann::json&)>& edit) {
        nlohmann::json j = nlohmann::json::parse(good);
        edit(j);
        return j.dump();
    };
    QCOMPARE(error_of(edited([](auto& j) { j["format"] = "something-else"; })),
             std::string("trace file: \"format\" is not \"whitebox-sampler-trace\""));
    QCOMPARE(error_of(edited([](auto& j) { j["version"] = 9; })),
             std::string("trace file: version 9 is not supported (this build reads 1)"));
    QCOMPARE(error_of(edited([](auto& j) { j["steps"][0]["stages"][0].erase("n_after"); })),
             std::string("trace file: steps[0].stages[0] has no \"n_after\""));
    QCOMPARE(error_of(edited([](auto& j) { j["steps"][2]["token"] = "x"; })),
             std::string("trace file: steps[2].token has the wrong type: \"x\""));
    QCOMPARE(error_of(edited([](auto& j) { j["steps"][1]["stages"][0]["threshold"] = true; })),
             std::string("trace file: steps[1].stages[0].threshold must be a number (or \"nan\", \"inf\", \"-inf\"), got true"));
    QCOMPARE(error_of(edited([](auto& j) { j["steps"][0]["stages"][0]["top_after"] = {{1, 2}}; })),
             std::string("trace file: steps[0].stages[0].top_after entries must be [id, logit, p], got [1,2]"));
    QCOMPARE(error_of(edited([](auto& j) { j["params"].erase("top_k"); })),
             std::string("trace file: params has no \"top_k\""));
}

// A 64-bit seed also travels as a decimal string: a tool that rounds the number (as JavaScript or
// QJsonDocument would, to the nearest double) leaves the string, and the reader takes the string. A
// file written before the string was added (number only) still reads; a bad string is refused by key.
void TestTraceFile::seeds_above_2_pow_53_survive_a_double_based_tool() {
    const uint64_t seed = (uint64_t(1) << 62) + 12345;  // not a double: rounds to 2^62
    GenerationTrace t = generate(busy_params(seed), random_rows(2, 30, 9));
    t.seed_in_use = seed + 2;
    nlohmann::json j = nlohmann::json::parse(write_trace_json(t));
    QCOMPARE(j["seed_in_use_text"].get<std::string>(), std::to_string(seed + 2));
    QCOMPARE(j["params"]["seed_text"].get<std::string>(), std::to_string(seed));
    j["seed_in_use"] = double(seed + 2);  // what a double-based tool writes back
    j["params"]["seed"] = double(seed);
    QVERIFY(uint64_t(double(seed)) != seed);
    GenerationTrace back = read_trace_json(j.dump());
    QCOMPARE(back.seed_in_use, seed + 2);
    QCOMPARE(back.params.seed, seed);

    j.erase("seed_in_use_text");  // an older file: the number is all there is
    j["params"].erase("seed_text");
    j["seed_in_use"] = seed + 2;
    j["params"]["seed"] = seed;
    back = read_trace_json(j.dump());
    QCOMPARE(back.seed_in_use, seed + 2);
    QCOMPARE(back.params.seed, seed);

    j["seed_in_use_text"] = "12x";
    try {
        read_trace_json(j.dump());
        QFAIL("a bad seed string was read");
    } catch (const Error& e) {
        QCOMPARE(std::string(e.what()), std::string("trace file: the file.seed_in_use_text must be a decimal 64-bit seed, got \"12x\""));
    }
}

QTEST_GUILESS_MAIN(TestTraceFile)
#include "test_trace_file.moc"
