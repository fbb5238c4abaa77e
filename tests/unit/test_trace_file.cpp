// Sampler-trace files (issue 16 item 7): export -> import keeps every recorded number bit for bit, a
// replay from the file's settings and seed draws the same tokens, and compare names the first step and
// stage where two traces part ways.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "sampling/sampler.h"
#include "engine/head_stats.h"
#include "engine/inspection_replay.h"
#include "engine/pass_rows.h"
#include "engine/trace_inspection.h"
#include "sampling/trace_file.h"
#include "util/error.h"

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

// Every setting away from its default (and inside the CLI's ranges), so a field the reader drops shows.
SamplingParams every_field_params() {
    SamplingParams p;
    p.temperature = 0.7f;
    p.top_k = 12;
    p.top_p = 0.8f;
    p.min_p = 0.1f;
    p.typical_p = 0.9f;
    p.repeat_penalty = 1.2f;
    p.repeat_last_n = 32;
    p.frequency_penalty = 0.25f;
    p.presence_penalty = -0.5f;
    p.seed = (uint64_t(1) << 60) | 3;  // above 2^53: a double would round it
    p.max_tokens = 77;
    p.stop = {"END", "\n\n"};
    p.ignore_eos = true;
    p.samplers = {"top_k", "temperature"};
    p.logit_bias = {{3, -std::numeric_limits<float>::infinity()}, {9, 0.5f}};
    p.xtc_probability = 0.3f;
    p.xtc_threshold = 0.2f;
    p.top_n_sigma = 1.5f;
    p.mirostat = 2;
    p.mirostat_tau = 4.0f;
    p.mirostat_eta = 0.2f;
    p.dry_multiplier = 0.8f;
    p.dry_base = 2.0f;
    p.dry_allowed_length = 3;
    p.dry_penalty_last_n = -1;
    p.dry_sequence_breakers = {"\n", "x"};
    p.grammar = "root ::= \"a\"";
    return p;
}

template <class T>
bool bits_equal(T a, T b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

// A lens of `layers` layers with `k` tokens each and head statistics of `heads` heads, every number a
// different unusual float (and a NaN and an infinity among the head statistics) so that a field read
// into the wrong place or rounded through text shows.
TraceStepInspection inspection_of(int layers, int k, int heads, float salt) {
    TraceStepInspection s;
    for (int l = 0; l < layers; ++l) {
        LensLayer x;
        x.layer = l;
        for (int i = 0; i < k; ++i) {
            x.top_ids.push_back(1000 * l + 7 * i + 3);
            x.top_p.push_back(salt / float(3 + i + l));
        }
        x.p_drawn = salt / float(11 + l);
        x.entropy = salt * float(l + 1) / 7.0f;
        s.lens.push_back(x);
    }
    for (int h = 0; h < heads; ++h)
        s.heads.push_back({h / 3, h % 3, (h % 3) / 2, salt / 3.0f + float(h), salt / 13.0f, salt / 17.0f,
                           salt * float(h) / 19.0f, h == 1 ? std::numeric_limits<float>::quiet_NaN() : salt / 23.0f,
                           h == 2 ? 0 : 512});
    if (heads > 0) s.heads[0].distance = std::numeric_limits<float>::infinity();
    return s;
}

bool same_float(float a, float b) { return bits_equal(a, b) || (std::isnan(a) && std::isnan(b)); }

void compare_inspection(const TraceStepInspection& a, const TraceStepInspection& b) {
    QCOMPARE(b.lens.size(), a.lens.size());
    for (size_t l = 0; l < a.lens.size(); ++l) {
        QCOMPARE(b.lens[l].layer, a.lens[l].layer);
        QCOMPARE(b.lens[l].top_ids, a.lens[l].top_ids);
        QCOMPARE(b.lens[l].top_p.size(), a.lens[l].top_p.size());
        for (size_t i = 0; i < a.lens[l].top_p.size(); ++i) QVERIFY(bits_equal(b.lens[l].top_p[i], a.lens[l].top_p[i]));
        QVERIFY(bits_equal(b.lens[l].p_drawn, a.lens[l].p_drawn));
        QVERIFY(bits_equal(b.lens[l].entropy, a.lens[l].entropy));
    }
    QCOMPARE(b.heads.size(), a.heads.size());
    for (size_t h = 0; h < a.heads.size(); ++h) {
        const HeadStats& x = a.heads[h];
        const HeadStats& y = b.heads[h];
        QCOMPARE(y.layer, x.layer);
        QCOMPARE(y.head, x.head);
        QCOMPARE(y.kv_head, x.kv_head);
        QCOMPARE(y.window, x.window);
        for (auto f : {&HeadStats::entropy, &HeadStats::sink, &HeadStats::prev, &HeadStats::distance, &HeadStats::in_window})
            QVERIFY(same_float(y.*f, x.*f));
    }
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
    void every_field_survives_the_round_trip();
    void files_without_engine_or_candidate_count_still_read();
    void replay_asks_for_the_longest_record();
    void invalid_utf8_text_is_refused_by_name();
    void seeds_above_2_pow_53_survive_a_double_based_tool();
    void lens_and_head_records_round_trip_bit_exact();
    void files_without_lens_or_heads_read_as_none();
    void bad_lens_or_head_records_get_specific_errors();
    void replay_comparison_names_the_step_and_layer_of_an_altered_record();
    void replay_comparison_ignores_steps_after_the_limit_and_extra_records();
    void replay_spec_asks_for_what_the_file_recorded();
    void attention_rows_round_trip_bit_exact();
    void bad_attention_rows_get_specific_errors();
    void a_nan_read_back_equals_the_engines_nan();
    void a_lens_top_longer_than_the_limit_is_refused();
    void a_text_above_the_size_limit_is_refused();
    void the_latest_pass_is_told_by_its_layers_not_its_key_count();
};

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

void TestTraceFile::every_field_survives_the_round_trip() {
    GenerationTrace t = generate(busy_params(1234), random_rows(6, 60, 2));
    t.params = every_field_params();
    t.engine = {true, 2048, "q8_0", "q4_0", "shift", 5};
    t.trace_candidates = 17;
    const std::string s = write_trace_json(t);
    QCOMPARE(write_trace_json(read_trace_json(s)), s);

    // The test is only as strong as its settings are unusual: each written value differs from the
    // default's, so a value the reader left at its default would have changed the rewritten text.
    const nlohmann::json written = nlohmann::json::parse(s);
    GenerationTrace defaults;
    defaults.engine.recorded = true;
    const nlohmann::json plain = nlohmann::json::parse(write_trace_json(defaults));
    QCOMPARE(written["params"].size(), size_t(28));  // 27 settings and the seed as a decimal string
    for (const char* part : {"params", "engine"})
        for (auto it = plain[part].begin(); it != plain[part].end(); ++it)
            QVERIFY2(written[part][it.key()] != it.value(), it.key().c_str());
    QVERIFY(written["trace_candidates"] != plain["trace_candidates"]);
    QCOMPARE(read_trace_json(s).params.seed, t.params.seed);
}

void TestTraceFile::files_without_engine_or_candidate_count_still_read() {
    GenerationTrace t = generate(busy_params(3), random_rows(2, 40, 2));
    t.engine = {true, 512, "f16", "f16", "stop", 1};
    t.trace_candidates = 20;
    nlohmann::json j = nlohmann::json::parse(write_trace_json(t));
    j.erase("engine");
    j.erase("trace_candidates");
    const GenerationTrace old = read_trace_json(j.dump());
    QVERIFY(!old.engine.recorded);
    QCOMPARE(old.trace_candidates, kDefaultTraceCandidates);
    QCOMPARE(old.steps.size(), t.steps.size());
}

void TestTraceFile::replay_asks_for_the_longest_record() {
    // A file that says 10 (or nothing) but whose stages kept 25 candidates (the chat's export before it
    // wrote the count): a replay recording 10 would differ at the first stage.
    GenerationTrace t = generate(busy_params(3), random_rows(2, 40, 2));
    QCOMPARE(replay_trace_candidates(t), kDefaultTraceCandidates);
    t.steps[1].stages[0].top_after.resize(25, Candidate{1, 0.5f, 0.1f});
    QCOMPARE(replay_trace_candidates(t), 25);
    t.trace_candidates = 40;  // what the file says, when more
    QCOMPARE(replay_trace_candidates(t), 40);
}

void TestTraceFile::invalid_utf8_text_is_refused_by_name() {
    GenerationTrace t = generate(busy_params(3), random_rows(2, 40, 2));
    auto error_of = [](const GenerationTrace& x) -> std::string {
        try {
            write_trace_json(x);
        } catch (const Error& e) {
            return e.what();
        }
        return "(no error)";
    };
    t.params.stop = {"ok", "\xff\xfe"};
    QCOMPARE(error_of(t), std::string("trace file: params.stop[1] is not valid UTF-8, which a JSON file cannot hold"));
    t.params.stop = {"ok"};
    t.params.grammar = "root ::= \"\xc3\"";
    QCOMPARE(error_of(t), std::string("trace file: params.grammar is not valid UTF-8, which a JSON file cannot hold"));
    t.params.grammar.clear();
    t.params.dry_sequence_breakers = {"\xe2\x82"};
    QCOMPARE(error_of(t),
             std::string("trace file: params.dry_sequence_breakers[0] is not valid UTF-8, which a JSON file cannot hold"));
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
             std::string("trace file: steps[2].token must be an integer in [-2147483648, 2147483647], got string \"x\""));
    QCOMPARE(error_of(edited([](auto& j) { j["steps"][1]["stages"][0]["threshold"] = true; })),
             std::string("trace file: steps[1].stages[0].threshold must be a number (or \"nan\", \"inf\", \"-inf\"), got boolean true"));
    QCOMPARE(error_of(edited([](auto& j) { j["steps"][0]["stages"][0]["top_after"] = {{1, 2}}; })),
             std::string("trace file: steps[0].stages[0].top_after entries must be [id, logit, p], got array of 2"));
    // Integers must be integers (nlohmann's get<int>() would take 2.5 as 2 and true as 1) and in range
    // (a negative count would wrap to a huge unsigned one).
    QCOMPARE(error_of(edited([](auto& j) { j["params"]["top_k"] = 2.5; })),
             std::string("trace file: params.top_k must be an integer in [-2147483648, 2147483647], got number 2.5"));
    QCOMPARE(error_of(edited([](auto& j) { j["params"]["ignore_eos"] = 0; })),
             std::string("trace file: params.ignore_eos must be true or false, got number 0"));
    QCOMPARE(error_of(edited([](auto& j) { j["steps"][0]["stages"][1]["n_before"] = -3; })),
             std::string("trace file: steps[0].stages[1].n_before must be an integer in [0, 18446744073709551615], "
                         "got number -3"));
    QCOMPARE(error_of(edited([](auto& j) { j["prompt"][1] = -1; })),
             std::string("trace file: prompt[1] must be an integer in [0, 2147483647], got number -1"));
    // The settings get the CLI's ranges: no NaN, no infinity but a logit bias's -inf.
    QCOMPARE(error_of(edited([](auto& j) { j["params"]["temperature"] = "nan"; })),
             std::string("trace file: params.temperature must be in [0, 100], got nan"));
    QCOMPARE(error_of(edited([](auto& j) { j["params"]["top_p"] = "inf"; })),
             std::string("trace file: params.top_p must be in [0, 1], got inf"));
    QCOMPARE(error_of(edited([](auto& j) { j["params"]["repeat_last_n"] = -2; })),
             std::string("trace file: params.repeat_last_n must be in [-1, 16777216], got -2"));
    QCOMPARE(error_of(edited([](auto& j) { j["params"]["logit_bias"][1]["bias"] = "inf"; })),
             std::string("trace file: params.logit_bias bias must be a number or -inf, got inf"));
    // A message shows the type and a short piece of a bad value, never all of it.
    const std::string long_error = error_of(edited([](auto& j) { j["steps"][0]["token"] = std::string(1 << 20, 'x'); }));
    QVERIFY2(long_error.size() < 200, long_error.c_str());
    QVERIFY2(long_error.find("got string \"" + std::string(60, 'x') + "\"...") != std::string::npos, long_error.c_str());
    QCOMPARE(error_of(edited([](auto& j) { j["params"]["stop"] = {{{1}}}; })),
             std::string("trace file: params.stop[0] must be a string, got array"));
    // Deep nesting is refused before parsing (nlohmann's destructor recursion would overflow the stack).
    const std::string deep = std::string(200000, '[') + std::string(200000, ']');
    QCOMPARE(error_of(deep), std::string("trace file: nested deeper than 32 levels; not a trace"));
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
        QCOMPARE(std::string(e.what()), std::string("trace file: seed_in_use_text must be a decimal 64-bit seed, got string \"12x\""));
    }
}

// The inspector's records of a reply (issue 16 item 7) travel in the file beside the sampler trace: a
// step that had them gets them back bit for bit, a step that had none gets none, and the sampler
// trace's own reader (an older build's replay) still reads the file.
void TestTraceFile::lens_and_head_records_round_trip_bit_exact() {
    const GenerationTrace t = generate(busy_params(11), random_rows(3, 50, 5));
    const std::vector<TraceStepInspection> in = {inspection_of(4, 3, 6, 0.7f), {}, inspection_of(2, 5, 0, 0.3f)};
    const std::string text = write_inspected_trace_json(t, in);
    const nlohmann::json j = nlohmann::json::parse(text);
    QCOMPARE(j["steps"][0]["lens"].size(), size_t(4));
    QCOMPARE(j["steps"][0]["heads"].size(), size_t(6));
    QVERIFY(!j["steps"][1].contains("lens") && !j["steps"][1].contains("heads"));
    QVERIFY(!j["steps"][2].contains("heads"));
    QCOMPARE(j["steps"][0]["heads"][1]["in_window"], nlohmann::json("nan"));  // NaN travels as a string

    const InspectedTrace back = read_inspected_trace_json(text);
    QVERIFY(compare_traces(t, back.trace).same);
    QCOMPARE(back.inspection.size(), t.steps.size());
    for (size_t i = 0; i < in.size(); ++i) compare_inspection(in[i], back.inspection[i]);
    QVERIFY(back.inspection[1].empty());
    QVERIFY(compare_traces(t, read_trace_json(text)).same);
    QCOMPARE(write_inspected_trace_json(back.trace, back.inspection), text);
}

void TestTraceFile::files_without_lens_or_heads_read_as_none() {
    const GenerationTrace t = generate(busy_params(12), random_rows(3, 50, 6));
    // Nothing captured: the file is the sampler trace's, byte for byte (an inspection of empty steps too).
    QCOMPARE(write_inspected_trace_json(t, {}), write_trace_json(t));
    QCOMPARE(write_inspected_trace_json(t, std::vector<TraceStepInspection>(3)), write_trace_json(t));
    const InspectedTrace back = read_inspected_trace_json(write_trace_json(t));
    QCOMPARE(back.inspection.size(), t.steps.size());
    for (const TraceStepInspection& s : back.inspection) QVERIFY(s.empty());
    // Records for more steps than the trace has would be attached to no token.
    QVERIFY_THROWS_EXCEPTION(Error, write_inspected_trace_json(t, std::vector<TraceStepInspection>(4)));
}

void TestTraceFile::bad_lens_or_head_records_get_specific_errors() {
    const GenerationTrace t = generate(busy_params(13), random_rows(2, 50, 7));
    const std::string good = write_inspected_trace_json(t, {inspection_of(2, 2, 2, 0.5f), inspection_of(2, 2, 2, 0.25f)});
    auto error_of = [&good](const std::function<void(nlohmann::json&)>& edit) -> std::string {
        nlohmann::json j = nlohmann::json::parse(good);
        edit(j);
        try {
            read_inspected_trace_json(j.dump());
        } catch (const Error& e) {
            return e.what();
        }
        return "(no error)";
    };
    QCOMPARE(error_of([](auto&) {}), std::string("(no error)"));
    QCOMPARE(error_of([](auto& j) { j["steps"][1]["lens"] = 3; }),
             std::string("trace file: steps[1].lens must be an array, got number 3"));
    QCOMPARE(error_of([](auto& j) { j["steps"][0]["lens"][1]["layer"] = -1; }),
             std::string("trace file: steps[0].lens[1].layer must be a non-negative integer, got number -1"));
    QCOMPARE(error_of([](auto& j) { j["steps"][0]["lens"][0]["top"][1] = {5}; }),
             std::string("trace file: steps[0].lens[0].top[1] must be [id, p], got array"));
    QCOMPARE(error_of([](auto& j) { j["steps"][0]["lens"][0]["top"][0][0] = 2.5; }),
             std::string("trace file: steps[0].lens[0].top[0] id must be a non-negative integer, got number 2.5"));
    QCOMPARE(error_of([](auto& j) { j["steps"][1]["lens"][0].erase("entropy"); }),
             std::string("trace file: steps[1].lens[0] has no \"entropy\""));
    QCOMPARE(error_of([](auto& j) { j["steps"][1]["heads"][1]["sink"] = true; }),
             std::string("trace file: steps[1].heads[1].sink must be a number (or \"nan\", \"inf\", \"-inf\"), got boolean true"));
    QCOMPARE(error_of([](auto& j) { j["steps"][0]["heads"][0].erase("kv_head"); }),
             std::string("trace file: steps[0].heads[0] has no \"kv_head\""));
    QCOMPARE(error_of([](auto& j) { j["steps"][0]["heads"] = nlohmann::json::object(); }),
             std::string("trace file: steps[0].heads must be an array, got object"));
}

// A replay's lens and heads against the file's (inspection_replay.h): the same records compare the
// same; one altered number, wherever it is, is named at exactly its step, layer (and head) with both
// values; a record the rerun lacks is "not recomputed".
void TestTraceFile::replay_comparison_names_the_step_and_layer_of_an_altered_record() {
    const std::vector<TraceStepInspection> file = {inspection_of(4, 3, 6, 0.7f), {}, inspection_of(4, 3, 6, 0.3f)};
    QVERIFY(wb::compare_inspection(file, file, 3).same);
    QCOMPARE(describe_inspection_records(file), std::string("logit lens (8 layer records) and head statistics (12 head records)"));

    std::vector<TraceStepInspection> now = file;
    now[2].lens[3].top_p[1] = std::nextafter(now[2].lens[3].top_p[1], 1.0f);  // one ulp
    InspectionDivergence d = wb::compare_inspection(file, now, 3);
    QVERIFY(!d.same);
    QCOMPARE(d.step, size_t(2));
    QCOMPARE(d.record, std::string("lens"));
    QCOMPARE(d.layer, 3);
    QCOMPARE(d.head, -1);
    QCOMPARE(describe_inspection_divergence(d), std::string("the logit lens differs at token 2, layer 3: top[1] p 0.042857144 vs 0.0428571478"));

    now = file;
    now[0].lens[1].top_ids[0] = 5;
    QCOMPARE(describe_inspection_divergence(wb::compare_inspection(file, now, 3)),
             std::string("the logit lens differs at token 0, layer 1: top[0] id 1003 vs 5"));
    now = file;
    now[2].lens[0].entropy = 0.5f;
    QCOMPARE(describe_inspection_divergence(wb::compare_inspection(file, now, 3)),
             std::string("the logit lens differs at token 2, layer 0: entropy 0.042857144 vs 0.5"));
    now = file;
    now[2].heads[4].sink = 0.0f;  // layer 1, head 1
    d = wb::compare_inspection(file, now, 3);
    QCOMPARE(d.record, std::string("heads"));
    QCOMPARE(describe_inspection_divergence(d), std::string("the head statistics differ at token 2, layer 1, head 1: sink 0.0230769236 vs 0"));
    now = file;
    now[0].heads[1].in_window = 0.25f;  // the file's is NaN: a NaN equals only a NaN
    QCOMPARE(describe_inspection_divergence(wb::compare_inspection(file, now, 3)),
             std::string("the head statistics differ at token 0, layer 0, head 1: in_window nan vs 0.25"));
    now = file;
    now[2].lens.erase(now[2].lens.begin() + 2);
    QCOMPARE(describe_inspection_divergence(wb::compare_inspection(file, now, 3)),
             std::string("the logit lens differs at token 2, layer 2: not recomputed"));
    now = file;
    now.resize(1);  // the rerun ended early: its missing steps recomputed nothing
    QCOMPARE(describe_inspection_divergence(wb::compare_inspection(file, now, 3)),
             std::string("the logit lens differs at token 2, layer 0: not recomputed"));
}

void TestTraceFile::replay_comparison_ignores_steps_after_the_limit_and_extra_records() {
    const std::vector<TraceStepInspection> file = {inspection_of(2, 3, 3, 0.7f), inspection_of(2, 3, 3, 0.3f)};
    std::vector<TraceStepInspection> now = file;
    now[1].heads[0].entropy = 9.0f;
    QVERIFY(wb::compare_inspection(file, now, 1).same);  // step 1 is past the first different token
    QVERIFY(!wb::compare_inspection(file, now, 2).same);
    // The rerun may record more (a longer top, more layers and heads) than the file kept.
    now = {inspection_of(3, 5, 6, 0.7f), inspection_of(3, 5, 6, 0.3f)};
    QVERIFY(wb::compare_inspection(file, now, 2).same);
    // ... but not fewer top tokens than the file has.
    const std::vector<TraceStepInspection> shorter = {inspection_of(2, 2, 3, 0.7f), inspection_of(2, 2, 3, 0.3f)};
    QCOMPARE(describe_inspection_divergence(wb::compare_inspection(file, shorter, 2)),
             std::string("the logit lens differs at token 0, layer 0: top has 2 tokens, the file 3"));
    QCOMPARE(describe_inspection_records({{}, {}}), std::string());
}

void TestTraceFile::replay_spec_asks_for_what_the_file_recorded() {
    TraceStepInspection a = inspection_of(2, 3, 0, 0.7f), b = inspection_of(0, 0, 0, 0.7f);
    b.heads = {{5, 2}, {1, 7}, {5, 0}};
    const InspectionReplaySpec spec = inspection_replay_spec({a, {}, b, inspection_of(1, 6, 0, 0.1f)});
    QCOMPARE(spec.logit_lens, 6);
    QVERIFY(spec.head_stats);
    QCOMPARE(spec.layers, (std::vector<int32_t>{1, 5}));
    QCOMPARE(spec.heads, (std::vector<int32_t>{0, 2, 7}));
    const InspectionReplaySpec none = inspection_replay_spec({{}, {}});
    QCOMPARE(none.logit_lens, 0);
    QVERIFY(!none.head_stats && none.layers.empty() && none.heads.empty());
}

namespace {

// Rows of layers {0, 3} and heads {1, 4} at steps 0 and 2 (none at step 1): random probabilities with
// a zero (a masked key), a subnormal and a one among them, so that rounding through text would show.
std::vector<TraceStepInspection> attention_records() {
    std::vector<TraceStepInspection> in(3);
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (int step : {0, 2})
        for (int layer : {0, 3})
            for (int head : {1, 4}) {
                AttentionRow r{layer, head, {}};
                // As long as a row can be: the prompt's 4 tokens and the tokens drawn before this one.
                for (int k = 0; k < 4 + step; ++k) r.probs.push_back(u(rng));
                r.probs[0] = 0.0f;
                r.probs[1] = 1e-40f;
                r.probs.back() = 1.0f;
                in[size_t(step)].attention.push_back(r);
            }
    return in;
}

}  // namespace

// The opt-in raw attention rows (--trace-attention): a step that had them gets the same rows back,
// every probability bit for bit; a step without them gets none.
void TestTraceFile::attention_rows_round_trip_bit_exact() {
    const GenerationTrace t = generate(busy_params(14), random_rows(3, 50, 8));
    const std::vector<TraceStepInspection> in = attention_records();
    const std::string text = write_inspected_trace_json(t, in);
    const nlohmann::json j = nlohmann::json::parse(text);
    QCOMPARE(j["steps"][0]["attention"].size(), size_t(4));
    QVERIFY(!j["steps"][1].contains("attention"));
    QVERIFY(!j["steps"][0].contains("lens") && !j["steps"][0].contains("heads"));

    const InspectedTrace back = read_inspected_trace_json(text);
    QVERIFY(compare_traces(t, back.trace).same);
    QCOMPARE(back.inspection.size(), in.size());
    for (size_t s = 0; s < in.size(); ++s) {
        QCOMPARE(back.inspection[s].attention.size(), in[s].attention.size());
        for (size_t r = 0; r < in[s].attention.size(); ++r) {
            const AttentionRow& a = in[s].attention[r];
            const AttentionRow& b = back.inspection[s].attention[r];
            QCOMPARE(b.layer, a.layer);
            QCOMPARE(b.head, a.head);
            QCOMPARE(b.probs.size(), a.probs.size());
            QVERIFY(std::memcmp(b.probs.data(), a.probs.data(), a.probs.size() * sizeof(float)) == 0);
        }
    }
    QVERIFY(back.inspection[1].empty());
    QCOMPARE(write_inspected_trace_json(back.trace, back.inspection), text);
}

void TestTraceFile::bad_attention_rows_get_specific_errors() {
    const GenerationTrace t = generate(busy_params(15), random_rows(3, 50, 9));
    const std::string good = write_inspected_trace_json(t, attention_records());
    auto error_of = [&good](const std::function<void(nlohmann::json&)>& edit) -> std::string {
        nlohmann::json j = nlohmann::json::parse(good);
        edit(j);
        try {
            read_inspected_trace_json(j.dump());
        } catch (const Error& e) {
            return e.what();
        }
        return "(no error)";
    };
    QCOMPARE(error_of([](auto&) {}), std::string("(no error)"));
    QCOMPARE(error_of([](auto& j) { j["steps"][2]["attention"] = "rows"; }),
             std::string("trace file: steps[2].attention must be an array, got string \"rows\""));
    QCOMPARE(error_of([](auto& j) { j["steps"][0]["attention"][1]["probs"] = nlohmann::json::array(); }),
             std::string("trace file: steps[0].attention[1].probs must be a non-empty array, got array"));
    QCOMPARE(error_of([](auto& j) { j["steps"][2]["attention"][0]["probs"][3] = "x"; }),
             std::string("trace file: steps[2].attention[0].probs[3] must be a number (or \"nan\", \"inf\", \"-inf\"), got string \"x\""));
    QCOMPARE(error_of([](auto& j) { j["steps"][0]["attention"][0].erase("head"); }),
             std::string("trace file: steps[0].attention[0] has no \"head\""));
    QCOMPARE(error_of([](auto& j) { j["steps"][0]["attention"][2]["layer"] = -3; }),
             std::string("trace file: steps[0].attention[2].layer must be a non-negative integer, got number -3"));
    // A row longer than the keys the token saw (a 4-token prompt, step 2: 6 keys).
    QCOMPARE(error_of([](auto& j) { j["steps"][2]["attention"][1]["probs"].push_back(0.0); }),
             std::string("trace file: steps[2].attention[1].probs has 7 keys; the token it drew saw at most 6 (the "
                         "prompt and the tokens before it)"));
    QCOMPARE(error_of([](auto& j) { j["steps"][0]["attention"][3]["layer"] = 0, j["steps"][0]["attention"][3]["head"] = 1; }),
             std::string("trace file: steps[0].attention[3] repeats layer 0, head 1 of an earlier row of the step"));
    QCOMPARE(error_of([](auto& j) { j["steps"][0]["attention"][0]["probs"][2] = 1.5; }),
             std::string("trace file: steps[0].attention[0].probs[2] must be a probability in [0, 1] or \"nan\", got number 1.5"));
    QCOMPARE(error_of([](auto& j) { j["steps"][2]["attention"][2]["probs"][1] = -0.25; }),
             std::string("trace file: steps[2].attention[2].probs[1] must be a probability in [0, 1] or \"nan\", got number -0.25"));
    QCOMPARE(error_of([](auto& j) { j["steps"][0]["attention"][0]["probs"][2] = "inf"; }),
             std::string("trace file: steps[0].attention[0].probs[2] must be a probability in [0, 1] or \"nan\", got string \"inf\""));
    QCOMPARE(error_of([](auto& j) { j["steps"][0]["attention"][0]["probs"][2] = "nan"; }), std::string("(no error)"));
}

// A file writes every NaN as "nan" and reads back the canonical quiet NaN 0x7FC00000; x86 arithmetic
// makes 0xFFC00000. A replay that computes the same NaN must not report a difference, in the lens,
// the head statistics or the sampler trace; a NaN against a number still differs.
void TestTraceFile::a_nan_read_back_equals_the_engines_nan() {
    const float x86_nan = std::bit_cast<float>(uint32_t(0xFFC00000u));
    QVERIFY(std::isnan(x86_nan));
    const GenerationTrace t = generate(busy_params(21), random_rows(2, 30, 4));
    std::vector<TraceStepInspection> in = {inspection_of(2, 3, 2, 0.5f), inspection_of(2, 3, 2, 0.5f)};
    in[1].lens[1].entropy = x86_nan;
    in[1].heads[1].distance = x86_nan;
    const InspectedTrace back = read_inspected_trace_json(write_inspected_trace_json(t, in));
    QCOMPARE(std::bit_cast<uint32_t>(back.inspection[1].lens[1].entropy), uint32_t(0x7FC00000u));  // what the file gives
    QVERIFY(wb::compare_inspection(back.inspection, in, 2).same);
    QVERIFY(wb::compare_inspection(in, back.inspection, 2).same);
    std::vector<TraceStepInspection> now = in;
    now[1].heads[1].distance = 3.0f;
    QCOMPARE(describe_inspection_divergence(wb::compare_inspection(back.inspection, now, 2)),
             std::string("the head statistics differ at token 1, layer 0, head 1: distance nan vs 3"));

    // The sampler trace: a NaN threshold read back equals the engine's NaN.
    GenerationTrace engine = t;
    size_t nans = 0;
    for (TraceStep& s : engine.steps)
        for (SamplerStageTrace& st : s.stages)
            if (std::isnan(st.threshold)) st.threshold = x86_nan, ++nans;
    QVERIFY(nans > 0);
    QVERIFY(compare_traces(read_trace_json(write_trace_json(t)), engine).same);
}

// A lens `top` is at most --logit-lens's 1000 tokens: a small file with a longer one would make a
// replay compute and hold that many at every layer of every step.
void TestTraceFile::a_lens_top_longer_than_the_limit_is_refused() {
    const GenerationTrace t = generate(busy_params(22), random_rows(2, 30, 6));
    nlohmann::json j = nlohmann::json::parse(write_inspected_trace_json(t, {inspection_of(3, 2, 0, 0.5f)}));
    nlohmann::json& top = j["steps"][0]["lens"][2]["top"];
    top = nlohmann::json::array();
    for (int k = 0; k < kMaxLensTop; ++k) top.push_back({k, 0.0});
    QCOMPARE(read_inspected_trace_json(j.dump()).inspection[0].lens[2].top_ids.size(), size_t(kMaxLensTop));
    top.push_back({7, 0.0});
    try {
        read_inspected_trace_json(j.dump());
        QFAIL("a top of 1001 tokens was read");
    } catch (const Error& e) {
        QCOMPARE(std::string(e.what()), std::string("trace file: steps[0].lens[2] (layer 2) has a top of 1001 tokens; at "
                                                     "most 1000 are allowed (the --logit-lens limit)"));
    }
    // A spec built from records (not a file) asks for no more either.
    TraceStepInspection big;
    big.lens.push_back({0, std::vector<int32_t>(5000, 1), std::vector<float>(5000, 0.f), 0.f, 0.f});
    QCOMPARE(inspection_replay_spec({big}).logit_lens, kMaxLensTop);
}

void TestTraceFile::a_text_above_the_size_limit_is_refused() {
    const std::string good = write_trace_json(generate(busy_params(23), random_rows(1, 30, 2)));
    std::string text = good;
    text.resize(size_t(kMaxTraceFileBytes), ' ');  // JSON allows trailing white space: at the limit, still read
    QCOMPARE(read_inspected_trace_json(text).trace.steps.size(), size_t(1));
    text.push_back(' ');
    for (auto read : {+[](const std::string& s) { (void)read_trace_json(s); },
                      +[](const std::string& s) { (void)read_inspected_trace_json(s); }}) {
        try {
            read(text);
            QFAIL("a text above the limit was read");
        } catch (const Error& e) {
            QCOMPARE(std::string(e.what()), std::string("trace file: 268435457 bytes, more than the 256 MiB a trace may have"));
        }
    }
}

// The replay's and the CLI's "rows and head statistics of the latest pass": after a context shift a
// decode pass can end at the same n_keys as the pass before it, and must still replace it; with one
// captured layer every event is a pass of its own.
void TestTraceFile::the_latest_pass_is_told_by_its_layers_not_its_key_count() {
    const auto event = [](int32_t layer, float salt) {
        AttentionEvent e;
        e.layer = layer;
        e.n_head = e.n_head_kv = 2;
        e.heads = {0, 1};
        e.kv_head_of = {0, 1};
        e.query_pos0 = 9;
        e.n_queries = 1;
        e.n_keys = 10;
        for (int h = 0; h < 2; ++h)
            for (int k = 0; k < 10; ++k) e.probs.push_back(k == 9 ? salt : (1.0f - salt) / 9.0f);
        return e;
    };
    PassAttentionRows rows;
    PassHeadStats heads;
    for (float salt : {0.25f, 0.75f})  // two passes of layers 1 and 3, both over 10 keys
        for (int32_t layer : {1, 3}) {
            rows.add(event(layer, salt));
            heads.add(event(layer, salt));
        }
    QCOMPARE(rows.last_pass().size(), size_t(4));
    QCOMPARE(heads.last_pass().size(), size_t(4));
    for (const AttentionRow& r : rows.last_pass()) QCOMPARE(r.probs[9], 0.75f);
    QCOMPARE(rows.last_pass()[0].layer, 1);
    QCOMPARE(rows.last_pass()[3].layer, 3);
    PassAttentionRows one;
    one.add(event(2, 0.25f));
    one.add(event(2, 0.75f));
    QCOMPARE(one.last_pass().size(), size_t(2));
    QCOMPARE(one.last_pass()[0].probs[9], 0.75f);
}

QTEST_GUILESS_MAIN(TestTraceFile)
#include "test_trace_file.moc"
