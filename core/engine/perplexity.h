#pragma once
// Perplexity over a text, as llama.cpp's llama-perplexity measures it, and the KL divergence between
// two models' distributions over the same tokens (its --kl-divergence mode): the instrument that tells
// how much a quantization (or an engine change) moves a model.
//
// The text's tokens are cut into chunks of n_ctx (only whole chunks); each chunk is evaluated from an
// empty cache, with its first token replaced by BOS when the vocabulary adds one, and only the second
// half of each chunk is scored (every scored token has at least n_ctx / 2 tokens of context): the
// logits at chunk position j, for j in [n_ctx / 2, n_ctx - 1), predict the token at j + 1.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace wb {

class Session;

struct ScoredPosition {
    int32_t pos = 0;       // index in the text's tokens of the last context token
    int32_t next = 0;      // the token that follows it (the one scored)
    double logprob = 0.0;  // log p(next), log-softmax in double over the whole vocabulary
    std::vector<std::pair<int32_t, double>> top;  // the k most likely tokens and their log p
};

struct PerplexityResult {
    std::vector<int32_t> tokens;  // the whole text's tokens (BOS first when the vocabulary adds one)
    int32_t n_ctx = 0;
    int32_t n_chunks = 0;
    std::vector<ScoredPosition> positions;
    double ppl = 0.0;             // exp(-mean logprob)
};

// Called with each scored position's full log-softmax row (n_vocab doubles), in order.
using LogprobRowFn = std::function<void(const ScoredPosition& p, const std::vector<double>& logprobs)>;

class Tokenizer;

// The text's tokens as llama-perplexity makes them: BOS first when the vocabulary adds one, special
// token strings left as text.
std::vector<int32_t> perplexity_tokens(const Tokenizer& tokenizer, const std::string& text);
// How many positions compute_perplexity scores for n_tokens tokens and a context of n_ctx.
int32_t perplexity_rows(size_t n_tokens, int32_t n_ctx);

// wb::Error when there are fewer than 2 * n_ctx tokens (one whole chunk is n_ctx; llama.cpp asks for
// two) or n_ctx exceeds the session's context.
PerplexityResult compute_perplexity(Session& session, std::vector<int32_t> tokens, int32_t n_ctx, int32_t top_k,
                                    const LogprobRowFn& on_row = {});

// A file of scored rows (--save-logits), read back as the base of a KL comparison (--kl-base). Our own
// format: magic "WBLOGPR1", then u32 n_vocab, n_ctx, n_tokens, n_rows, the tokens (i32), and per
// row its position (i32) and its log-probabilities in a 16-bit linear code (the idea of
// llama-perplexity's file, not its format): the row's minimum and a step (f32 each) and one u16 per
// token, log p = min + step * q.
class LogprobFile {
public:
    // Writes the header now and rows as they come; wb::Error naming the path on I/O failure.
    LogprobFile(const std::string& path, int32_t n_vocab, int32_t n_ctx, const std::vector<int32_t>& tokens,
                int32_t n_rows);
    ~LogprobFile();
    LogprobFile(const LogprobFile&) = delete;
    LogprobFile& operator=(const LogprobFile&) = delete;
    void write_row(int32_t pos, const std::vector<double>& logprobs);
    void finish();  // checks that every row was written and flushes; wb::Error otherwise

private:
    std::string path_;
    void* file_ = nullptr;
    int32_t n_vocab_ = 0, n_rows_ = 0, written_ = 0;
};

struct LogprobBase {
    int32_t n_vocab = 0, n_ctx = 0;
    std::vector<int32_t> tokens;
    std::vector<int32_t> positions;
    std::vector<float> mins, steps;
    std::vector<uint16_t> q;  // [row][n_vocab]

    // Reads a file written by LogprobFile; wb::Error naming the path and what is wrong.
    static LogprobBase read(const std::string& path);
    double logprob(size_t row, int32_t token) const {
        return double(mins[row]) + double(steps[row]) * double(q[row * size_t(n_vocab) + size_t(token)]);
    }
};

// KL(base || current) per position, and how often the two agree on the most likely token.
struct KlStats {
    int64_t n = 0, same_top = 0;
    double kl_sum = 0.0, kl_max = 0.0;
    double base_logprob_sum = 0.0;  // for the base's perplexity over the same positions
    void add(const LogprobBase& base, size_t row, const std::vector<double>& logprobs);
    double kl_mean() const { return n ? kl_sum / double(n) : 0.0; }
    double top1() const { return n ? double(same_top) / double(n) : 0.0; }
};

}  // namespace wb
