#pragma once
// Sampling settings. The GUI may change them while a reply is generated: the session reads a fresh
// copy before every token.
#include <cstdint>
#include <string>
#include <vector>

namespace wb {

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

    static constexpr uint64_t kRandomSeed = 0xFFFFFFFFu;
    bool is_greedy() const { return temperature <= 0.0f; }
};

}  // namespace wb
