// The grammar stage's full filter, alone: every token of a model's vocabulary checked against a
// grammar at a given point of a text (the step the chain takes when the model's own draw does not fit
// and the best few logits hold too few allowed tokens). Prints, per case, the tokens kept and the trie
// nodes visited, then for GrammarConstraint::filter over a row already made candidates, the whole-row
// path (copy the row, make candidates, filter) and the allowed-tokens path (allowed_tokens() and a read
// of only their logits): the first run (the first filter builds the vocabulary trie), then the
// min / median / max of --runs more. Issue 17 asks for this in ms/token on Gemma 3's 262,144-token vocabulary; run it on an idle
// machine (docs/benchmarks.md), e.g.
//   build/tests/bench_grammar_filter -m ~/.cache/whitebox/models/gemma-3-270m-Q4_K_M.gguf --runs 20
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "engine/model.h"
#include "model/model_paths.h"
#include "sampling/grammar/grammar_constraint.h"
#include "sampling/sampler.h"

namespace {

struct Case {
    std::string name;
    std::string gbnf;
    std::string text;  // accepted before the filter: where in the reply it runs
};

// Three points that bound what a reply meets: a grammar that keeps most of the vocabulary (the trie
// walk visits nearly every node, the worst case), a JSON object inside a string value (most pieces
// fit), and the same object where only a key's quote may come (a few hundred nodes).
const char* kJsonObject =
    "root ::= \"{\" ws ( pair ( \",\" ws pair )* )? ws \"}\"\n"
    "pair ::= string \":\" ws value\n"
    "value ::= string | [0-9]+ | \"true\" | \"false\" | \"null\"\n"
    "string ::= \"\\\"\" [^\"\\\\]* \"\\\"\"\n"
    "ws ::= [ \\t\\n]*\n";

std::vector<Case> default_cases() {
    return {
        {"no 'e' (most tokens)", "root ::= [^e]*", "A cat sat on a mat, and a dog"},
        {"JSON, in a string", kJsonObject, "{\"name\": \"Sm"},
        {"JSON, after '{'", kJsonObject, "{"},
    };
}

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Tokens whose pieces spell `text` (the model's own tokenization of it).
void accept_text(wb::GrammarConstraint& g, const wb::Tokenizer& tok, const std::string& text) {
    for (int32_t id : tok.encode(text, false, false)) g.accept(id);
}

struct Stats {
    double first = 0.0;
    std::vector<double> ms;
    void add(int run, double t) {
        if (run == 0) first = t;
        else ms.push_back(t);
    }
    void print(const char* what) {
        std::sort(ms.begin(), ms.end());
        std::printf("  %-34s first %8.3f ms | min %8.3f  median %8.3f  max %8.3f ms\n", what, first, ms.front(),
                    ms[ms.size() / 2], ms.back());
    }
};

// Per run, the two ways the chain's second draw can get the allowed candidates of a row: filter the
// whole row (copied from the backend and made candidates, as sample() given a row did), and
// allowed_tokens() with a read of only those logits (what sample_top's second draw does now).
void run_case(const Case& c, const wb::Tokenizer& tok, const std::shared_ptr<const wb::SamplerVocab>& vocab, int runs) {
    wb::GrammarConstraint g(c.gbnf, vocab);
    accept_text(g, tok, c.text);
    const std::vector<float> backend_row(size_t(vocab->n_vocab), 0.0f);
    std::vector<float> row(backend_row.size()), columns;
    wb::CandidateSet cands;
    Stats filter_only, whole_row, allowed;
    for (int r = 0; r <= runs; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        std::copy(backend_row.begin(), backend_row.end(), row.begin());
        cands.assign(row.data(), vocab->n_vocab);
        const auto t1 = std::chrono::steady_clock::now();
        g.filter(cands);
        filter_only.add(r, ms_since(t1));
        whole_row.add(r, ms_since(t0));
        t0 = std::chrono::steady_clock::now();
        const std::vector<int32_t>& ids = g.allowed_tokens(vocab->n_vocab);
        columns.resize(ids.size());
        for (size_t i = 0; i < ids.size(); ++i) columns[i] = backend_row[size_t(ids[i])];
        allowed.add(r, ms_since(t0));
    }
    std::printf("%s: %s\n", c.name.c_str(), g.last_filter().c_str());
    filter_only.print("filter (the row already candidates)");
    whole_row.print("copy row + candidates + filter");
    allowed.print("allowed_tokens + read their logits");
}

int usage() {
    std::fprintf(stderr, "usage: bench_grammar_filter [-m MODEL] [--runs N] [--grammar GBNF [--text PREFIX]]...\n"
                         "  MODEL: the default model when not given\n"
                         "  without --grammar: three cases (a grammar keeping most tokens, JSON in a string, JSON after '{')\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    std::string model_path;
    int runs = 10;
    std::vector<Case> cases;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "-m" && has_value) model_path = argv[++i];
        else if (a == "--runs" && has_value) runs = std::atoi(argv[++i]);
        else if (a == "--grammar" && has_value) cases.push_back({"--grammar", argv[++i], ""});
        else if (a == "--text" && has_value && !cases.empty()) cases.back().text = argv[++i];
        else return usage();
    }
    if (runs < 1) return usage();
    if (model_path.empty()) model_path = wb::default_model_path();
    if (cases.empty()) cases = default_cases();
    try {
        const std::unique_ptr<wb::Model> model = wb::Model::load(model_path);
        const wb::Tokenizer& tok = model->tokenizer();
        // The vocabulary exactly as Session::generate hands it to the chain.
        auto vocab = std::make_shared<wb::SamplerVocab>();
        vocab->n_vocab = tok.n_vocab();
        vocab->piece = [&tok](int32_t id) { return tok.token_to_piece(id, true); };
        vocab->is_eog = [&tok](int32_t id) { return tok.is_eog(id); };
        std::printf("%s: %d tokens, %d runs per case (one thread)\n", model_path.c_str(), vocab->n_vocab, runs);
        for (const Case& c : cases) run_case(c, tok, vocab, runs);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_grammar_filter: %s\n", e.what());
        return 1;
    }
    return 0;
}
