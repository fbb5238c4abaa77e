// whitebox-cli perplexity: llama-perplexity's measurement over a text file, with the scored positions
// as JSON, and its KL-divergence mode (--save-logits on one file, --kl-base on another quantization of
// the same model) for comparing two models' distributions over the same tokens.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "cli/cli_json.h"
#include "engine/backend.h"
#include "engine/model.h"
#include "engine/perplexity.h"
#include "engine/session.h"
#include "util/error.h"

namespace wb::cli {

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot open text file " + path);
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw Error("cannot read text file " + path);
    return ss.str();
}

namespace {

// The base file must describe the same tokens scored at the same positions by a model with the same
// vocabulary: anything else would compare unrelated distributions.
void check_base(const LogprobBase& base, const std::vector<int32_t>& tokens, int32_t n_ctx, int32_t n_rows,
                int32_t n_vocab, const std::string& path) {
    if (base.n_vocab != n_vocab)
        throw Error(path + " was made with a vocabulary of " + std::to_string(base.n_vocab) + " tokens, this model has " +
                    std::to_string(n_vocab));
    if (base.n_ctx != n_ctx || base.tokens != tokens || base.positions.size() != size_t(n_rows))
        throw Error(path + " was made over other tokens or another --ctx (the same text, tokenizer and --ctx are needed)");
}

void print_json(const PerplexityResult& r, const KlStats* kl, int32_t top_k) {
    Json positions = Json::array();
    for (const ScoredPosition& p : r.positions) {
        Json pos = {{"pos", p.pos}, {"next", p.next}, {"logprob", json_number(p.logprob)}};
        if (top_k > 0) {
            Json top = Json::array();
            for (const auto& [id, lp] : p.top) top.push_back(Json::array({id, json_number(lp)}));
            pos["top"] = std::move(top);
        }
        positions.push_back(std::move(pos));
    }
    Json j = {{"tokens", r.tokens}, {"n_ctx", r.n_ctx}, {"n_chunks", r.n_chunks}, {"ppl", json_number(r.ppl)},
              {"positions", std::move(positions)}};
    if (kl)
        j["kl"] = {{"mean", json_number(kl->kl_mean())}, {"max", json_number(kl->kl_max)}, {"same_top", json_number(kl->top1())},
                   {"base_ppl", json_number(std::exp(-kl->base_logprob_sum / double(kl->n)))}};
    std::printf("%s\n", json_dump(j).c_str());
}

}  // namespace

int cmd_perplexity(const CliOptions& o) {
    const auto model = Model::load(resolve_model_path(o));
    const std::string text = read_text_file(o.text_file);
    const int32_t n_ctx = o.ctx > 0 ? o.ctx : 512;
    BackendChoice bc = create_backend(parse_backend_kind(o.backend), o.threads, o.cache_type_k, o.cache_type_v);
    if (!bc.note.empty()) std::fprintf(stderr, "note: %s\n", bc.note.c_str());
    SessionOptions so;
    so.n_ctx = n_ctx;
    so.n_batch = std::min(n_ctx, 512);
    so.kv_type_k = o.cache_type_k;
    so.kv_type_v = o.cache_type_v;
    Session session(*model, *bc.backend, so);
    const int32_t n_vocab = model->config().n_vocab;

    std::vector<int32_t> tokens = perplexity_tokens(model->tokenizer(), text);
    const int32_t n_rows = perplexity_rows(tokens.size(), n_ctx);
    if (int64_t(tokens.size()) < 2 * int64_t(n_ctx) || n_rows <= 0)
        throw Error("perplexity: the text has " + std::to_string(tokens.size()) + " tokens; a context of " +
                    std::to_string(n_ctx) + " needs at least " + std::to_string(2 * int64_t(n_ctx)) +
                    " (use a longer text or a smaller --ctx)");
    // A base that does not describe these tokens is refused before any work.
    std::unique_ptr<LogprobBase> base;
    if (!o.kl_base.empty()) {
        base = std::make_unique<LogprobBase>(LogprobBase::read(o.kl_base));
        check_base(*base, tokens, n_ctx, n_rows, n_vocab, o.kl_base);
    }
    std::unique_ptr<LogprobFile> save;
    if (!o.save_logits.empty()) save = std::make_unique<LogprobFile>(o.save_logits, n_vocab, n_ctx, tokens, n_rows);
    KlStats kl;
    size_t row = 0;
    const PerplexityResult r =
        compute_perplexity(session, std::move(tokens), n_ctx, o.top_k, [&](const ScoredPosition& p, const std::vector<double>& lp) {
            if (save) save->write_row(p.pos, lp);
            if (base) {
                if (base->positions[row] != p.pos) throw Error(o.kl_base + ": rows at other positions than this run's");
                kl.add(*base, row, lp);
            }
            ++row;
        });
    if (save) save->finish();

    if (o.json) {
        print_json(r, base ? &kl : nullptr, o.top_k);
        return 0;
    }
    std::printf("%zu tokens, %d chunks of %d, %zu scored positions\nperplexity: %.4f\n", r.tokens.size(), r.n_chunks,
                r.n_ctx, r.positions.size(), r.ppl);
    if (base)
        std::printf("against %s: base perplexity %.4f, mean KL %.6f nats (max %.6f), same top token %.2f %%\n",
                    o.kl_base.c_str(), std::exp(-kl.base_logprob_sum / double(kl.n)), kl.kl_mean(), kl.kl_max,
                    100.0 * kl.top1());
    return 0;
}

}  // namespace wb::cli
