// The random Gemma 3 model of tests/tools (RandomLlamaSpec::gemma3_tiny, the small sibling of the
// gemma3-270m shape the GPU tests and gpu-check.sh use) on the CPU backend, no GPU and no download:
//   - it loads: gemma3 hyperparameters, the layer pattern, both rope bases, the tied embedding, the
//     Q4_K_M type mix by layer, the extra norms, a SentencePiece vocabulary with Gemma's specials;
//   - a Session prefills and decodes past the window: finite, spread-out logits at every step; the
//     local layers' KV cache holds only the window (KvCache stats), the global layers everything;
//   - teacher forcing in batches (window masking inside a batch) agrees with token-by-token decode
//     (window over the block table with released blocks): mean KL <= 0.02 nats. Not 0: the two take
//     other dot-product orders (llama.cpp's batch and single-token kernels), and one last-bit
//     difference flips an 8-bit activation rounding somewhere (measured 7e-4);
//   - the window matters: the same model with a window wider than the sequence gives bit-identical
//     logits before position `window` and different ones after (measured mean KL 4.3, so a wrong
//     window in either path above would be far over its limit).
// Plain executable (also built without Qt): PASS/FAIL lines, exit status 1 on any failure.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/backend_cpu.h"
#include "engine/model.h"
#include "engine/session.h"
#include "logit_kl.h"
#include "random_llama.h"

using namespace wb;

namespace {

int g_failures = 0;

void report(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
    std::fflush(stdout);
    if (!ok) ++g_failures;
}

std::string temp_path(const std::string& tag) {
    return (std::filesystem::temp_directory_path() / ("wb-random-gemma3-" + tag + "-" + std::to_string(getpid()) + ".gguf"))
        .string();
}

// Mean KL(ref || got) in nats over the positions of two [n][n_vocab] logit arrays.
double mean_kl(const float* ref, const float* got, size_t n_pos, int32_t n_vocab) {
    double total = 0.0;
    for (size_t p = 0; p < n_pos; ++p) total += wb_test::kl_nats(ref + p * size_t(n_vocab), got + p * size_t(n_vocab), n_vocab);
    return n_pos ? total / double(n_pos) : 0.0;
}

// Finite, and spread over a few logits (a random model's logits, not a constant or collapsed row).
bool sane_logits(const float* l, int32_t n_vocab, double* sd_out) {
    double sum = 0.0, sq = 0.0;
    for (int32_t i = 0; i < n_vocab; ++i) {
        if (!std::isfinite(l[i])) return false;
        sum += l[i];
        sq += double(l[i]) * l[i];
    }
    const double mean = sum / n_vocab, sd = std::sqrt(std::max(0.0, sq / n_vocab - mean * mean));
    if (sd_out) *sd_out = sd;
    return sd > 0.3 && sd < 30.0;
}

void check_config(const Model& m, const RandomLlamaSpec& spec) {
    const ModelConfig& c = m.config();
    const std::vector<bool> expected_swa = {true, true, false, true, true, false};  // period 3
    report(c.arch == "gemma3" && c.n_layer == 6 && c.n_embd == 320 && c.n_head == 2 && c.n_head_kv == 1 && c.head_dim == 256 &&
               c.n_ff == 512 && c.n_vocab == 1024,
           "config: gemma3, 6 layers, 320 wide, 2/1 heads of 256 (key_length), FFN 512, 1024 tokens");
    report(c.layer_is_swa == expected_swa && c.sliding_window == 64,
           "config: window 64 on layers 0 1 3 4, global layers 2 and 5 (sliding_window_pattern 3)");
    report(c.rope_base == 1e6f && c.rope_base_swa == 1e4f && c.rope_mode == RopeMode::NEOX && c.n_rot == 256,
           "config: NEOX rope over all 256 dims, bases 1e6 (global) and 1e4 (local)");
    report(c.ffn_act == Activation::GELU_TANH && c.norm_eps == 1e-6f && c.attn_scale == 1.0f / 16.0f &&
               c.embd_scale == std::sqrt(320.0f) && c.tied_output,
           "config: GELU-tanh, eps 1e-6, attention scale 1/16, embedding scale sqrt(320), tied output");

    const ModelWeights& w = m.weights();
    bool types_ok = w.token_embd.type == GgmlType::Q8_0 && w.output.src == w.token_embd.src && w.output_norm.type == GgmlType::F32;
    std::string per_layer;
    for (int32_t il = 0; il < c.n_layer; ++il) {
        const LayerWeights& l = w.layers[size_t(il)];
        const bool more = spec.more_bits(il);
        types_ok = types_ok && l.attn_q.type == GgmlType::Q5_0 && l.attn_k.type == GgmlType::Q5_0 &&
                   l.ffn_gate.type == GgmlType::Q5_0 && l.ffn_up.type == GgmlType::Q5_0 &&
                   l.attn_output.type == GgmlType::Q4_K &&
                   l.attn_v.type == (more ? GgmlType::Q8_0 : GgmlType::Q5_0) &&
                   l.ffn_down.type == (more ? GgmlType::Q6_K : GgmlType::Q4_K);
        for (const Weight* n : {&l.attn_norm, &l.ffn_norm, &l.attn_q_norm, &l.attn_k_norm, &l.post_attention_norm, &l.post_ffw_norm})
            types_ok = types_ok && n->src != nullptr && n->type == GgmlType::F32;
        per_layer += std::string(il ? " " : "") + ggml_type_name(l.attn_v.type) + "/" + ggml_type_name(l.ffn_down.type);
    }
    // use_more_bits for 6 layers: layers 2 and 5.
    report(types_ok && spec.more_bits(2) && spec.more_bits(5) && !spec.more_bits(0) && !spec.more_bits(4),
           "tensor types: Q8_0 tied embedding, Q5_0 q/k/gate/up, Q4_K attn_output, attn_v/ffn_down by layer (" + per_layer +
               "), F32 norms incl. q/k and post norms");

    const Tokenizer& tok = m.tokenizer();
    const std::string text = "hello world, the quick brown fox";
    const std::vector<int32_t> ids = tok.encode(text, true, false);
    const std::string back = tok.decode(std::vector<int32_t>(ids.begin() + 1, ids.end()), false);
    report(tok.model_name() == "llama" && !ids.empty() && ids[0] == 2 && back == text && ids.size() < text.size(),
           "tokenizer: SentencePiece vocabulary, BOS <bos> = 2 added, merges used (" + std::to_string(ids.size()) +
               " tokens for " + std::to_string(text.size()) + " bytes), decodes back ('" + back + "')");
    report(m.chat_template().kind() == ChatTemplateKind::GEMMA, "chat template: Gemma (from <start_of_turn> in the vocabulary)");
}

void check_session(const Model& m, const Model& wide) {
    const int32_t n_vocab = m.config().n_vocab, window = m.config().sliding_window;
    CpuBackend cpu(0);
    SessionOptions so;
    so.n_ctx = 512;
    so.n_batch = 64;
    Session s(m, cpu, so);

    // Prefill 200 tokens (4 batches; the last ones mask keys older than the window inside the batch),
    // then 40 decode steps: positions 200 .. 239, long after the local layers released block 0.
    const std::vector<int32_t> tokens = random_tokens(240, 7, n_vocab);
    const int32_t n_prefill = 200;
    std::vector<float> stepwise;  // logits at positions n_prefill - 1 .. 238 (each predicts the next token)
    const std::vector<float>* logits = &s.append(tokens.data(), n_prefill);
    bool sane = true;
    double sd_min = 1e9, sd_max = 0.0;
    for (int32_t p = n_prefill; p <= int32_t(tokens.size()); ++p) {
        double sd = 0.0;
        sane = sane && sane_logits(logits->data(), n_vocab, &sd);
        sd_min = std::min(sd_min, sd);
        sd_max = std::max(sd_max, sd);
        stepwise.insert(stepwise.end(), logits->begin(), logits->end());
        if (p < int32_t(tokens.size())) logits = &s.append(&tokens[size_t(p)], 1);
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "session: prefill 200 + 40 decode steps, logits finite with sd %.2f .. %.2f (in 0.3 .. 30)",
                  sd_min, sd_max);
    report(sane, buf);

    // KV cache after 240 positions: the next query (240) sees 177 .. 240 on local layers, so block 0
    // (0 .. 127) is released there; global layers keep blocks 0 and 1.
    const KvStats st = s.kv_stats();
    const int32_t n = int32_t(tokens.size());
    const uint64_t per_pos = 2ull * uint64_t(m.config().kv_dim()) * 2;  // K and V, f16
    const uint64_t block = uint64_t(st.block_tokens) * per_pos;
    bool kv_ok = st.n_tokens == n && st.layers.size() == 6;
    std::string detail;
    for (size_t il = 0; il < st.layers.size() && kv_ok; ++il) {
        const KvLayerStats& l = st.layers[il];
        const bool local = m.config().layer_is_swa[il];
        if (local)
            kv_ok = l.sliding_window && l.window == window && l.tokens == window && l.first_pos == n - window &&
                    l.bytes_used == uint64_t(window) * per_pos && l.bytes_reserved == block;
        else
            kv_ok = !l.sliding_window && l.tokens == n && l.first_pos == 0 && l.bytes_used == uint64_t(n) * per_pos &&
                    l.bytes_reserved == 2 * block;
        detail += std::string(il ? ", " : "") + std::to_string(l.tokens) + " pos/" + std::to_string(l.bytes_reserved / block) + " blk";
    }
    report(kv_ok, "KV cache after 240 positions: local layers hold the window (64 positions, 1 block), global layers all (240, "
                  "2 blocks): " + detail);

    // The same positions by teacher forcing (batches of 64: the window applied inside the batch).
    const std::vector<float> forced = s.evaluate(tokens);
    const size_t first = size_t(n_prefill - 1), n_cmp = tokens.size() - first;
    const double kl = mean_kl(forced.data() + first * size_t(n_vocab), stepwise.data(), n_cmp, n_vocab);
    std::snprintf(buf, sizeof buf, "teacher forcing (batches) vs decode steps over positions 199 .. 239: mean KL %.2e <= 0.02", kl);
    report(kl <= 0.02, buf);

    // A window wider than the sequence: identical before position `window`, different after.
    CpuBackend cpu2(0);
    Session s_wide(wide, cpu2, so);
    const std::vector<float> forced_wide = s_wide.evaluate(tokens);
    const size_t head = size_t(window) * size_t(n_vocab);
    const bool same_head = std::equal(forced.begin(), forced.begin() + std::ptrdiff_t(head), forced_wide.begin());
    const size_t tail0 = size_t(window + 64);
    const double kl_tail = mean_kl(forced_wide.data() + tail0 * size_t(n_vocab), forced.data() + tail0 * size_t(n_vocab),
                                   tokens.size() - tail0, n_vocab);
    std::snprintf(buf, sizeof buf,
                  "window applied: bit-identical to a window-4096 model before position 64 (%s), mean KL %.3f >= 0.5 "
                  "from position 128 on",
                  same_head ? "yes" : "no", kl_tail);
    report(same_head && kl_tail >= 0.5, buf);
}

}  // namespace

int main() {
    const std::string path = temp_path("tiny"), path_wide = temp_path("wide");
    try {
        const RandomLlamaSpec spec = RandomLlamaSpec::gemma3_tiny();
        write_random_llama(spec, path);
        RandomLlamaSpec wide = spec;
        wide.sliding_window = 4096;
        write_random_llama(wide, path_wide);
        const auto model = Model::load(path);
        const auto model_wide = Model::load(path_wide);
        check_config(*model, spec);
        check_session(*model, *model_wide);
    } catch (const std::exception& e) {
        report(false, std::string("exception: ") + e.what());
    }
    std::filesystem::remove(path);
    std::filesystem::remove(path_wide);
    if (g_failures == 0) std::printf("test_random_gemma3: all checks passed\n");
    else std::printf("test_random_gemma3: %d check(s) FAILED\n", g_failures);
    return g_failures == 0 ? 0 : 1;
}
