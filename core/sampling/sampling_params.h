#pragma once
// Sampling settings. The GUI may change them while a reply is generated: the session reads a fresh
// copy before every token.
#include <cstdint>
#include <string>
#include <vector>

namespace wb {

// One --logit-bias entry: logit += bias for the token (-inf bans it).
struct LogitBias {
    int32_t token;
    float bias;
};

// How the reply's grammar was written: GBNF text, or a JSON Schema compiled to GBNF.
enum class GrammarMode : uint8_t { NONE, GBNF, JSON_SCHEMA };

// llama.cpp's --samplers names of the stages the chain runs in order (aliases such as "top-k",
// "typical", "temp" are accepted by parse_sampler_sequence and stored in this canonical form).
std::vector<std::string> default_sampler_sequence();

struct SamplingParams {
    float temperature = 0.8f;        // <= 0 means greedy (argmax)
    int32_t top_k = 40;              // keep the k most likely; <= 0 disables
    float top_p = 0.95f;             // nucleus: smallest set with cumulative p >= top_p; 1 disables
    float min_p = 0.05f;             // drop tokens with p < min_p * p_max; 0 disables
    float typical_p = 1.0f;          // locally typical sampling mass; 1 disables
    float repeat_penalty = 1.0f;     // divide positive / multiply negative logits of recent tokens; 1 = off
    int32_t repeat_last_n = 64;      // window (tokens) the three penalties look at; 0 disables, -1 = all
    float frequency_penalty = 0.0f;  // logit -= count * frequency_penalty
    float presence_penalty = 0.0f;   // logit -= presence_penalty if the token occurred
    uint64_t seed = 0xFFFFFFFFu;     // 0xFFFFFFFF (default) = random seed chosen per generation
    int32_t max_tokens = 256;        // generated tokens per reply
    std::vector<std::string> stop;   // stop strings (generation ends before them)
    bool ignore_eos = false;         // end-of-generation tokens get probability 0 (benchmarks, long runs)

    // The samplers below follow llama.cpp (same names, defaults and arithmetic) so settings carry over.
    std::vector<std::string> samplers = default_sampler_sequence();  // order of the filtering stages
    std::vector<LogitBias> logit_bias;  // applied first, before the sequence
    float xtc_probability = 0.0f;    // XTC: chance per token of removing the top choices; 0 = off
    float xtc_threshold = 0.1f;      // XTC: tokens with p >= threshold are "top choices"; > 0.5 = off
    float top_n_sigma = -1.0f;       // keep logits >= max - n * stddev; <= 0 = off
    int32_t mirostat = 0;            // 0 = off, 1 = Mirostat, 2 = Mirostat 2.0 (replace the sequence)
    float mirostat_tau = 5.0f;       // target surprise (bits)
    float mirostat_eta = 0.1f;       // learning rate
    float dry_multiplier = 0.0f;     // DRY: penalty = multiplier * base^(repeat - allowed); 0 = off
    float dry_base = 1.75f;
    int32_t dry_allowed_length = 2;  // repeats up to this length are not penalised
    int32_t dry_penalty_last_n = 64;  // tokens DRY scans; 0 = off, -1 = the whole context
    std::vector<std::string> dry_sequence_breakers = {"\n", ":", "\"", "*"};  // restart the repeat count
    // GBNF grammar (llama.cpp's format, matching starts at `root`) the reply must follow; "" = off.
    // A JSON Schema is turned into one by json_schema_to_gbnf.
    std::string grammar;
    // What the user wrote, as written, so settings, presets and conversations give the editor back
    // its text: the mode and the GBNF or JSON Schema text (kept even when it does not compile, or
    // while the mode is NONE). The engine reads only `grammar`, which is the last text that compiled.
    GrammarMode grammar_mode = GrammarMode::NONE;
    std::string grammar_source;

    static constexpr uint64_t kRandomSeed = 0xFFFFFFFFu;
    bool is_greedy() const { return temperature <= 0.0f; }
};

}  // namespace wb
