#include "cli/generate_observer.h"

#include <cerrno>
#include <cstring>

#include "cli/cli_json.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace wb::cli {

CaptureSpec GenerateObserver::capture() const {
    CaptureSpec spec;
    spec.top_candidates = what_.top_candidates;
    // Head statistics need the attention of every pass (only the last prompt batch's last row is kept).
    spec.prefill_attention = spec.decode_attention = what_.attention || what_.head_stats || what_.trace_attention;
    spec.logit_lens = what_.logit_lens;
    spec.sampler_trace = what_.sampler_trace;
    spec.trace_candidates = what_.trace_candidates;
    spec.layers = what_.layers;
    spec.heads = what_.heads;
    return spec;
}

void GenerateObserver::on_token(const TokenEvent& e) {
    if (what_.stream_text) {
        std::fputs(e.piece.c_str(), stdout);
        std::fflush(stdout);
    }
    steps_.push_back(e);
    if (what_.head_stats) step_heads_.push_back(pass_heads_.last_pass());
    if (what_.trace_attention) step_rows_.push_back(pass_rows_.last_pass());
}

void GenerateObserver::on_attention(const AttentionEvent& e) {
    if (what_.attention) attention_.push_back(e);
    if (what_.trace_attention) pass_rows_.add(e);
    if (what_.head_stats) pass_heads_.add(e);
}

void GenerateObserver::write_attention(const std::string& path, const std::vector<int32_t>& context,
                                       const Tokenizer& tok) const {
    Json pieces = Json::array();
    for (int32_t id : context) pieces.push_back(tok.token_to_piece(id, true));
    Json events = Json::array();
    for (const AttentionEvent& e : attention_) {
        Json probs = Json::array();
        for (size_t h = 0; h < e.heads.size(); ++h) {
            Json rows = Json::array();
            for (int32_t q = 0; q < e.n_queries; ++q) {
                Json row = Json::array();
                for (int32_t k = 0; k < e.n_keys; ++k) row.push_back(json_number(e.at(h, q, k)));
                rows.push_back(std::move(row));
            }
            probs.push_back(std::move(rows));
        }
        events.push_back({{"layer", e.layer}, {"prefill", e.prefill}, {"heads", e.heads}, {"kv_head_of", e.kv_head_of},
                          {"window", e.window}, {"query_pos0", e.query_pos0}, {"n_queries", e.n_queries},
                          {"n_keys", e.n_keys}, {"probs", std::move(probs)}});
    }
    const Json doc = {{"format", "whitebox-attention-1"}, {"tokens", context}, {"pieces", std::move(pieces)},
                      {"events", std::move(events)}};
    const std::string text = json_dump(doc);

    const std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw Error("cannot write " + tmp + ": " + std::strerror(errno));
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fputc('\n', f) != EOF;
    if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw Error("cannot write " + path + ": " + std::strerror(errno));
    }
}

}  // namespace wb::cli
