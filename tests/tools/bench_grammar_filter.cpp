// The grammar stage's full filter, alone: every token of a model's vocabulary checked against a
// grammar at a given point of a text (the step the chain takes when the model's own draw does not fit
// and the best few logits hold too few allowed tokens: GrammarConstraint::allowed_tokens and a read of
// those logits). Prints, per case, the first run (it builds the vocabulary trie), then the min /
// median / max of --runs more, the tokens kept and the trie nodes visited. Issue 17 asks for this in
// ms/token on Gemma 3's 262,144-token vocabulary; run it on an idle machine (docs/benchmarks.md), e.g.
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

// The step as the chain's second draw takes it: allowed_tokens() (the trie walk) and a read of just
// those logits from the row.
void run_case(const Case& c, const wb::Tokenizer& tok, const std::shared_ptr<const wb::SamplerVocab>& vocab, int runs) {
    wb::GrammarConstraint g(c.gbnf, vocab);
    accept_text(g, tok, c.text);
    const std::vector<float> row(size_t(vocab->n_vocab), 0.0f);
    std::vector<float> logits;
    std::vector<double> ms;
    double first = 0.0;
    for (int r = 0; r <= runs; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        const std::vector<int32_t>& ids = g.allowed_tokens(vocab->n_vocab);
        logits.resize(ids.size());
        for (size_t i = 0; i < ids.size(); ++i) logits[i] = row[size_t(ids[i])];
        const double t = ms_since(t0);
        if (r == 0) first = t;
        else ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%-22s first %8.3f ms | min %8.3f  median %8.3f  max %8.3f ms | %s\n", c.name.c_str(), first,
                ms.front(), ms[ms.size() / 2], ms.back(), g.last_filter().c_str());
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
