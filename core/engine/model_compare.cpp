#include "engine/model_compare.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/model.h"
#include "engine/session.h"
#include "util/error.h"

namespace wb {
namespace {

// log-softmax of one logits row in double.
std::vector<double> log_softmax(const float* row, int32_t n) {
    const float mx = *std::max_element(row, row + n);
    double sum = 0.0;
    for (int32_t i = 0; i < n; ++i) sum += std::exp(double(row[i]) - double(mx));
    const double log_sum = std::log(sum) + double(mx);
    std::vector<double> out(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) out[size_t(i)] = double(row[i]) - log_sum;
    return out;
}

int32_t argmax(const float* row, int32_t n) { return int32_t(std::max_element(row, row + n) - row); }

// What two rows that predicted `token` say: the KL of b from a and each one's most likely token.
TokenComparison compare_row(const float* ra, const float* rb, int32_t n_vocab, int32_t token) {
    const std::vector<double> pa = log_softmax(ra, n_vocab);
    const std::vector<double> pb = log_softmax(rb, n_vocab);
    TokenComparison t;
    t.token = token;
    for (int32_t v = 0; v < n_vocab; ++v) t.kl += std::exp(pa[size_t(v)]) * (pa[size_t(v)] - pb[size_t(v)]);
    t.kl = std::max(t.kl, 0.0);  // rounding can leave a hair below 0 for identical rows
    t.top_a = argmax(ra, n_vocab);
    t.top_b = argmax(rb, n_vocab);
    return t;
}

}  // namespace

ModelComparison compare_models(Session& a, Session& b, const std::vector<int32_t>& prompt,
                               const std::vector<int32_t>& reply, const CompareProgress& progress) {
    const int32_t n_vocab = a.model().config().n_vocab;
    if (b.model().config().n_vocab != n_vocab)
        throw Error("compare: the models' vocabularies differ (" + std::to_string(n_vocab) + " vs " +
                    std::to_string(b.model().config().n_vocab) + " tokens); compare needs one tokenizer");
    // Equal sizes are not one tokenizer: the same ids must be the same texts, or the KL compares
    // distributions over different tokens.
    const Tokenizer& ta = a.model().tokenizer();
    const Tokenizer& tb = b.model().tokenizer();
    for (int32_t id = 0; id < n_vocab && id < ta.n_vocab() && id < tb.n_vocab(); ++id)
        if (ta.token_text(id) != tb.token_text(id))
            throw Error("compare: the models' vocabularies differ at token " + std::to_string(id) +
                        "; compare needs one tokenizer");
    if (prompt.empty()) throw Error("compare: the prompt is empty");
    std::vector<int32_t> tokens = prompt;
    tokens.insert(tokens.end(), reply.begin(), reply.end());
    // Said here with both sizes: evaluate's own message names neither the model nor the remedy.
    for (Session* s : {&a, &b})
        if (int64_t(tokens.size()) > int64_t(s->n_ctx()))
            throw Error("compare: the prompt and reply (" + std::to_string(tokens.size()) +
                        " tokens) do not fit the context of " + std::to_string(s->n_ctx()) + " of " +
                        (s == &a ? "the first" : "the second") + " model; a larger context (-c) holds them");
    a.reset();
    b.reset();
    // Both sessions step through the tokens a batch at a time and each batch's rows are compared as
    // they come: all rows of both (Gemma 3, 2,048 tokens: 2 x 2 GB) are never held.
    const size_t total = 2 * tokens.size();
    const size_t step = size_t(std::min(a.n_batch(), b.n_batch()));
    const size_t first = prompt.size() - 1;  // the position that predicted reply token 0
    ModelComparison out;
    for (size_t done = 0; done < tokens.size();) {
        const int32_t nb = int32_t(std::min(step, tokens.size() - done));
        const std::vector<float>& la = a.append_rows(tokens.data() + done, nb);
        const std::vector<float>& lb = b.append_rows(tokens.data() + done, nb);
        for (size_t p = std::max(done, first); p < done + size_t(nb) && p - first < reply.size(); ++p) {
            const size_t row = (p - done) * size_t(n_vocab);
            out.tokens.push_back(compare_row(la.data() + row, lb.data() + row, n_vocab, reply[p - first]));
        }
        done += size_t(nb);
        if (progress && !progress(2 * done, total)) throw Error("compare: stopped");
    }
    for (const TokenComparison& t : out.tokens) {
        out.flips += t.flip();
        out.kl_max = std::max(out.kl_max, t.kl);
        out.kl_mean += t.kl;
    }
    if (!reply.empty()) out.kl_mean /= double(reply.size());
    return out;
}

}  // namespace wb
