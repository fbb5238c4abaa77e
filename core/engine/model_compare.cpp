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

}  // namespace

ModelComparison compare_models(Session& a, Session& b, const std::vector<int32_t>& prompt,
                               const std::vector<int32_t>& reply, const CompareProgress& progress) {
    const int32_t n_vocab = a.model().config().n_vocab;
    if (b.model().config().n_vocab != n_vocab)
        throw Error("compare: the models' vocabularies differ (" + std::to_string(n_vocab) + " vs " +
                    std::to_string(b.model().config().n_vocab) + " tokens); compare needs one tokenizer");
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
    const size_t total = 2 * tokens.size();
    bool stopped = false;
    const auto stage = [&](size_t before) {
        return [&, before](size_t done) {
            stopped = progress && !progress(before + done, total);
            return !stopped;
        };
    };
    std::vector<float> la, lb;
    try {
        la = a.evaluate(tokens, stage(0));
        lb = b.evaluate(tokens, stage(tokens.size()));
    } catch (const Error&) {
        if (stopped) throw Error("compare: stopped");
        throw;
    }

    ModelComparison out;
    for (size_t i = 0; i < reply.size(); ++i) {
        // The logits at the position before reply token i are the ones that predicted it.
        const size_t row = (prompt.size() - 1 + i) * size_t(n_vocab);
        const std::vector<double> pa = log_softmax(la.data() + row, n_vocab);
        const std::vector<double> pb = log_softmax(lb.data() + row, n_vocab);
        TokenComparison t;
        t.token = reply[i];
        for (int32_t v = 0; v < n_vocab; ++v) t.kl += std::exp(pa[size_t(v)]) * (pa[size_t(v)] - pb[size_t(v)]);
        t.kl = std::max(t.kl, 0.0);  // rounding can leave a hair below 0 for identical rows
        t.top_a = argmax(la.data() + row, n_vocab);
        t.top_b = argmax(lb.data() + row, n_vocab);
        out.flips += t.flip();
        out.kl_max = std::max(out.kl_max, t.kl);
        out.kl_mean += t.kl;
        out.tokens.push_back(t);
    }
    if (!reply.empty()) out.kl_mean /= double(reply.size());
    return out;
}

}  // namespace wb
