#include "engine/perplexity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "engine/model.h"
#include "engine/session.h"
#include "util/error.h"

namespace wb {

namespace {

constexpr char kMagic[8] = {'W', 'B', 'L', 'O', 'G', 'P', 'R', '1'};

// log-softmax of one logits row in double (what the scores and the KL are computed from).
void log_softmax(const float* logits, int32_t n, std::vector<double>& out) {
    out.resize(size_t(n));
    double mx = -INFINITY;
    for (int32_t i = 0; i < n; ++i) mx = std::max(mx, double(logits[i]));
    double sum = 0.0;
    for (int32_t i = 0; i < n; ++i) sum += std::exp(double(logits[i]) - mx);
    const double lse = mx + std::log(sum);
    for (int32_t i = 0; i < n; ++i) out[size_t(i)] = double(logits[i]) - lse;
}

std::vector<std::pair<int32_t, double>> top_of(const std::vector<double>& lp, int32_t k) {
    std::vector<int32_t> ids(lp.size());
    std::iota(ids.begin(), ids.end(), 0);
    k = std::min<int32_t>(k, int32_t(ids.size()));
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
        return lp[size_t(a)] > lp[size_t(b)] || (lp[size_t(a)] == lp[size_t(b)] && a < b);
    });
    std::vector<std::pair<int32_t, double>> out;
    for (int32_t i = 0; i < k; ++i) out.emplace_back(ids[size_t(i)], lp[size_t(ids[size_t(i)])]);
    return out;
}

void write_all(std::FILE* f, const void* p, size_t n, const std::string& path) {
    if (n && std::fwrite(p, 1, n, f) != n) throw Error("cannot write " + path);
}

void read_all(std::FILE* f, void* p, size_t n, const std::string& path) {
    if (n && std::fread(p, 1, n, f) != n) throw Error(path + ": truncated logprob file");
}

}  // namespace

std::vector<int32_t> perplexity_tokens(const Tokenizer& tok, const std::string& text) {
    return tok.encode(text, tok.add_bos(), false);
}

int32_t perplexity_rows(size_t n_tokens, int32_t n_ctx) {
    return n_ctx < 4 ? 0 : int32_t(n_tokens / size_t(n_ctx)) * (n_ctx - 1 - n_ctx / 2);
}

PerplexityResult compute_perplexity(Session& session, std::vector<int32_t> tokens, int32_t n_ctx, int32_t top_k,
                                    const LogprobRowFn& on_row) {
    const Tokenizer& tok = session.model().tokenizer();
    const int32_t n_vocab = session.model().config().n_vocab;
    if (n_ctx < 4) throw Error("perplexity: the context must be at least 4 tokens");
    if (n_ctx > session.n_ctx())
        throw Error("perplexity: a context of " + std::to_string(n_ctx) + " exceeds the session's " +
                    std::to_string(session.n_ctx()));
    PerplexityResult r;
    r.n_ctx = n_ctx;
    r.tokens = std::move(tokens);
    if (int64_t(r.tokens.size()) < 2 * int64_t(n_ctx))
        throw Error("perplexity: the text has " + std::to_string(r.tokens.size()) + " tokens; a context of " +
                    std::to_string(n_ctx) + " needs at least " + std::to_string(2 * n_ctx) +
                    " (use a longer text or a smaller --ctx)");
    r.n_chunks = int32_t(r.tokens.size() / size_t(n_ctx));
    const int32_t first = n_ctx / 2;
    double nll = 0.0;
    std::vector<double> lp;
    for (int32_t c = 0; c < r.n_chunks; ++c) {
        const size_t start = size_t(c) * size_t(n_ctx);
        std::vector<int32_t> chunk(r.tokens.begin() + ptrdiff_t(start), r.tokens.begin() + ptrdiff_t(start + size_t(n_ctx)));
        if (tok.add_bos() && tok.bos_id() >= 0) chunk[0] = tok.bos_id();
        const std::vector<float> logits = session.evaluate(chunk);
        for (int32_t j = first; j < n_ctx - 1; ++j) {
            log_softmax(logits.data() + size_t(j) * size_t(n_vocab), n_vocab, lp);
            ScoredPosition p;
            p.pos = int32_t(start) + j;
            p.next = r.tokens[start + size_t(j) + 1];
            p.logprob = lp[size_t(p.next)];
            if (top_k > 0) p.top = top_of(lp, top_k);
            nll -= p.logprob;
            if (on_row) on_row(p, lp);
            r.positions.push_back(std::move(p));
        }
    }
    r.ppl = std::exp(nll / double(r.positions.size()));
    return r;
}

LogprobFile::LogprobFile(const std::string& path, int32_t n_vocab, int32_t n_ctx, const std::vector<int32_t>& tokens,
                         int32_t n_rows)
    : path_(path), n_vocab_(n_vocab), n_rows_(n_rows) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) throw Error("cannot create " + path + ": " + std::strerror(errno));
    file_ = f;
    const uint32_t head[4] = {uint32_t(n_vocab), uint32_t(n_ctx), uint32_t(tokens.size()), uint32_t(n_rows)};
    write_all(f, kMagic, sizeof kMagic, path_);
    write_all(f, head, sizeof head, path_);
    write_all(f, tokens.data(), tokens.size() * sizeof(int32_t), path_);
}

LogprobFile::~LogprobFile() {
    if (file_) std::fclose(static_cast<std::FILE*>(file_));
}

void LogprobFile::write_row(int32_t pos, const std::vector<double>& lp) {
    if (written_ >= n_rows_ || int32_t(lp.size()) != n_vocab_) throw Error(path_ + ": unexpected logprob row");
    // A linear 16-bit code between the row's minimum and maximum (the maximum is <= 0): about 5e-4
    // nats a step for a range of 30 nats, far below the differences a KL comparison looks for.
    const double mn = *std::min_element(lp.begin(), lp.end()), mx = *std::max_element(lp.begin(), lp.end());
    const float lo = float(mn), step = float(mx > mn ? (mx - mn) / 65535.0 : 1.0);
    std::vector<uint16_t> q(lp.size());
    for (size_t i = 0; i < lp.size(); ++i)
        q[i] = uint16_t(std::clamp(std::lround((lp[i] - double(lo)) / double(step)), 0L, 65535L));
    auto* f = static_cast<std::FILE*>(file_);
    write_all(f, &pos, sizeof pos, path_);
    write_all(f, &lo, sizeof lo, path_);
    write_all(f, &step, sizeof step, path_);
    write_all(f, q.data(), q.size() * sizeof(uint16_t), path_);
    ++written_;
}

void LogprobFile::finish() {
    if (written_ != n_rows_)
        throw Error(path_ + ": " + std::to_string(written_) + " of " + std::to_string(n_rows_) + " rows written");
    auto* f = static_cast<std::FILE*>(file_);
    file_ = nullptr;
    if (std::fclose(f) != 0) throw Error("cannot write " + path_);
}

LogprobBase LogprobBase::read(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw Error("cannot open " + path + ": " + std::strerror(errno));
    struct Closer {
        std::FILE* f;
        ~Closer() { std::fclose(f); }
    } closer{f};
    char magic[8];
    uint32_t head[4];
    read_all(f, magic, sizeof magic, path);
    if (std::memcmp(magic, kMagic, sizeof magic) != 0) throw Error(path + ": not a whitebox-cli --save-logits file");
    read_all(f, head, sizeof head, path);
    // Bounds that keep a hostile header from asking for absurd allocations.
    if (head[0] == 0 || head[0] > (1u << 22) || head[2] > (1u << 26) || head[3] > head[2] ||
        uint64_t(head[3]) * head[0] > (uint64_t(1) << 34))
        throw Error(path + ": implausible logprob file header");
    // The header must describe exactly the file's bytes before anything is allocated for it.
    std::fseek(f, 0, SEEK_END);
    const long end = std::ftell(f);
    const uint64_t expected = sizeof magic + sizeof head + uint64_t(head[2]) * 4 + uint64_t(head[3]) * (12 + 2 * uint64_t(head[0]));
    if (end < 0 || uint64_t(end) != expected)
        throw Error(path + ": the file's size does not match its header (truncated or not a logprob file)");
    std::fseek(f, long(sizeof magic + sizeof head), SEEK_SET);
    LogprobBase b;
    b.n_vocab = int32_t(head[0]);
    b.n_ctx = int32_t(head[1]);
    b.tokens.resize(head[2]);
    read_all(f, b.tokens.data(), b.tokens.size() * sizeof(int32_t), path);
    for (int32_t t : b.tokens)
        if (t < 0 || t >= b.n_vocab) throw Error(path + ": a token id outside the vocabulary");
    const size_t rows = head[3];
    b.positions.resize(rows);
    b.mins.resize(rows);
    b.steps.resize(rows);
    b.q.resize(rows * size_t(b.n_vocab));
    for (size_t r = 0; r < rows; ++r) {
        read_all(f, &b.positions[r], sizeof(int32_t), path);
        read_all(f, &b.mins[r], sizeof(float), path);
        read_all(f, &b.steps[r], sizeof(float), path);
        read_all(f, b.q.data() + r * size_t(b.n_vocab), size_t(b.n_vocab) * sizeof(uint16_t), path);
        if (b.positions[r] < 0 || size_t(b.positions[r]) + 1 >= b.tokens.size() || !std::isfinite(b.mins[r]) ||
            !std::isfinite(b.steps[r]))
            throw Error(path + ": row " + std::to_string(r) + " is malformed");
    }
    return b;
}

void KlStats::add(const LogprobBase& base, size_t row, const std::vector<double>& lp) {
    // The base's probabilities as stored, renormalised (the 16-bit code moves their sum by ~1e-4).
    double z = 0.0;
    for (int32_t t = 0; t < base.n_vocab; ++t) z += std::exp(base.logprob(row, t));
    const double log_z = std::log(z);
    double kl = 0.0;
    int32_t base_top = 0, top = 0;
    for (int32_t t = 0; t < base.n_vocab; ++t) {
        const double lb = base.logprob(row, t) - log_z;
        kl += std::exp(lb) * (lb - lp[size_t(t)]);
        if (base.logprob(row, t) > base.logprob(row, base_top)) base_top = t;
        if (lp[size_t(t)] > lp[size_t(top)]) top = t;
    }
    kl = std::max(0.0, kl);
    ++n;
    // The same top token: this run's best is one of the base's best (the 16-bit code can make two
    // near-equal tokens equal in the base; either then counts).
    same_top += base.logprob(row, top) == base.logprob(row, base_top) ? 1 : 0;
    kl_sum += kl;
    kl_max = std::max(kl_max, kl);
    const int32_t next = base.tokens[size_t(base.positions[row]) + 1];
    base_logprob_sum += base.logprob(row, next) - log_z;
}

}  // namespace wb
