#include "tokenizer.h"

#include <algorithm>
#include <array>
#include <bitset>
#include <cctype>

#include "gguf/gguf_file.h"
#include "tokenizer_impl.h"
#include "util/error.h"

namespace wb {
namespace {

// Texts llama.cpp treats as end of generation whatever their ids (llama-vocab.cpp, "maintain a list of
// tokens that cause end-of-generation"); it also forces them to CONTROL, so they are not matched in
// plain text. "</s>" matters for Gemma 3, whose file types it USER_DEFINED (id 212), and for Qwen 2,
// whose byte-level vocabulary has it as an ordinary NORMAL token (id 128247).
constexpr std::array<std::string_view, 22> k_eog_texts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~[",
};
// Fill-in-the-middle markers llama.cpp also ends generation on (and forces to CONTROL): per group, the
// first text of the group the vocabulary has. Code models emit them where a chat reply would end.
constexpr std::array<std::array<std::string_view, 5>, 3> k_fim_eog_groups = {{
    {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"},                 // padding
    {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},     // repository name
    {"<|file_sep|>", "", "", "", ""},                                             // file separator
}};
// End-of-generation ids with one of these texts mean "</s>" is ordinary text: llama.cpp then takes it
// out of the set again and types it NORMAL.
constexpr std::array<std::string_view, 2> k_plain_s_markers = {"<|tool_response>", "<|plamo:eos|>"};
// Gemma's turn opener: some Gemma 3 files type it NORMAL, which would make chat prompts unparseable.
constexpr std::string_view k_forced_control_text = "<start_of_turn>";

// The whitespace llama.cpp's strip attributes remove: C's isspace in the "C" locale.
bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

bool all_ascii_space(std::string_view s) { return std::all_of(s.begin(), s.end(), is_ascii_space); }

std::optional<int32_t> read_id(const GgufFile& file, std::string_view key) {
    const auto v = file.get_uint(key);
    if (!v) return std::nullopt;
    if (*v > uint64_t(INT32_MAX)) throw Error("GGUF key " + std::string(key) + " = " + std::to_string(*v) + " is not a token id");
    return int32_t(*v);
}

void check_id(const VocabSpec& spec, const std::optional<int32_t>& id, const char* what) {
    if (id && (*id < -1 || *id >= int32_t(spec.tokens.size()))) {
        throw Error(std::string("tokenizer ") + what + " id " + std::to_string(*id) + " is outside the vocabulary of " +
                    std::to_string(spec.tokens.size()) + " tokens");
    }
}

}  // namespace

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& file) { return from_vocab(read_vocab(file)); }

VocabSpec Tokenizer::read_vocab(const GgufFile& file) {
    VocabSpec spec;
    spec.model = file.get_string("tokenizer.ggml.model").value_or("");
    spec.pre = file.get_string("tokenizer.ggml.pre").value_or("");
    const auto* tokens = file.get_string_array("tokenizer.ggml.tokens");
    if (!tokens) throw Error("GGUF file " + file.path() + " has no tokenizer.ggml.tokens array");
    spec.tokens = *tokens;
    if (const auto* scores = file.get_float_array("tokenizer.ggml.scores")) {
        spec.scores.assign(scores->begin(), scores->end());
    }
    if (const auto* types = file.get_int_array("tokenizer.ggml.token_type")) {
        spec.types.reserve(types->size());
        for (const int64_t t : *types) {
            spec.types.push_back(t >= 0 && t <= int64_t(TokenType::BYTE) ? TokenType(t) : TokenType::UNDEFINED);
        }
    }
    if (const auto* merges = file.get_string_array("tokenizer.ggml.merges")) spec.merges = *merges;
    spec.bos_id = read_id(file, "tokenizer.ggml.bos_token_id");
    spec.eos_id = read_id(file, "tokenizer.ggml.eos_token_id");
    spec.unk_id = read_id(file, "tokenizer.ggml.unknown_token_id");
    spec.eot_id = read_id(file, "tokenizer.ggml.eot_token_id");
    spec.pad_id = read_id(file, "tokenizer.ggml.padding_token_id");
    spec.add_bos = file.get_bool("tokenizer.ggml.add_bos_token");
    spec.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix");
    spec.name = file.get_string("general.name").value_or("");
    return spec;
}

std::unique_ptr<Tokenizer> Tokenizer::from_vocab(VocabSpec spec) {
    if (spec.tokens.empty()) throw Error("tokenizer vocabulary is empty");
    const size_t n = spec.tokens.size();
    if (!spec.scores.empty() && spec.scores.size() != n) {
        throw Error("tokenizer.ggml.scores has " + std::to_string(spec.scores.size()) + " entries for " +
                    std::to_string(n) + " tokens");
    }
    if (!spec.types.empty() && spec.types.size() != n) {
        throw Error("tokenizer.ggml.token_type has " + std::to_string(spec.types.size()) + " entries for " +
                    std::to_string(n) + " tokens");
    }
    check_id(spec, spec.bos_id, "BOS");
    check_id(spec, spec.eos_id, "EOS");
    check_id(spec, spec.unk_id, "unknown-token");
    check_id(spec, spec.eot_id, "EOT");
    check_id(spec, spec.pad_id, "padding");
    if (spec.model == "gpt2") return std::make_unique<BpeTokenizer>(std::move(spec));
    if (spec.model == "llama") return std::make_unique<SpmTokenizer>(std::move(spec));
    throw Error("unsupported tokenizer model '" + spec.model + "' (tokenizer.ggml.model); supported: gpt2, llama");
}

void Tokenizer::init_common(VocabSpec& spec, bool add_bos_default) {
    model_ = spec.model;
    pre_ = spec.pre;
    tokens_ = std::move(spec.tokens);
    types_ = std::move(spec.types);
    types_.resize(tokens_.size(), TokenType::NORMAL);
    for (size_t i = 0; i < tokens_.size(); ++i) {
        // llama.cpp's names for empty entries; they keep ids addressable and pieces unique.
        if (tokens_[i].empty()) tokens_[i] = "[EMPTY_" + std::to_string(i) + "]";
    }
    token_ids_.build(tokens_);

    const bool spm = model_ == "llama";
    const auto id_or = [](const std::optional<int32_t>& v, int32_t def) { return v ? *v : def; };
    bos_id_ = id_or(spec.bos_id, spm ? 1 : 11);
    eos_id_ = id_or(spec.eos_id, spm ? 2 : 11);
    unk_id_ = id_or(spec.unk_id, spm ? 0 : -1);
    add_bos_ = spec.add_bos.value_or(add_bos_default);
    const int32_t n = n_vocab();
    if (bos_id_ >= n) bos_id_ = -1;
    if (eos_id_ >= n) eos_id_ = -1;
    if (unk_id_ >= n) unk_id_ = -1;

    build_eog_set(spec.eot_id);
    if (const auto id = find_token(k_forced_control_text)) types_[size_t(*id)] = TokenType::CONTROL;

    for (int32_t id = 0; id < n; ++id) {
        const TokenType t = types_[size_t(id)];
        if (t == TokenType::CONTROL || t == TokenType::USER_DEFINED || t == TokenType::UNKNOWN) special_ids_.push_back(id);
    }
    std::stable_sort(special_ids_.begin(), special_ids_.end(), [&](int32_t a, int32_t b) {
        return tokens_[size_t(a)].size() > tokens_[size_t(b)].size();
    });
    set_strip_attributes(spec.name);
}

void Tokenizer::set_strip_attributes(const std::string& name) {
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (lower.find("phi-3") == std::string::npos && lower.find("phi3") == std::string::npos) return;
    strip_.assign(tokens_.size(), 0);
    for (const int32_t id : special_ids_) strip_[size_t(id)] |= RSTRIP;
    if (const auto id = find_token("</s>")) strip_[size_t(*id)] |= RSTRIP;
    for (const std::string_view text : {"<unk>", "<s>", "<|endoftext|>"})
        if (const auto id = find_token(text)) strip_[size_t(*id)] &= uint8_t(~RSTRIP);
}

// llama.cpp's order: FIM markers, the end-of-turn texts (forced CONTROL), then eos and eot; last its
// two corrections for vocabularies where "<|end|>" or "</s>" are not ends of generation.
void Tokenizer::build_eog_set(const std::optional<int32_t>& eot_id) {
    std::vector<int32_t> eog;
    const auto add_control = [&](int32_t id) {
        eog.push_back(id);
        types_[size_t(id)] = TokenType::CONTROL;
    };
    for (const auto& group : k_fim_eog_groups)
        for (const std::string_view text : group)
            if (const auto id = text.empty() ? std::nullopt : find_token(text)) {
                add_control(*id);
                break;
            }
    for (const std::string_view text : k_eog_texts)
        if (const auto id = find_token(text)) add_control(*id);
    if (eos_id_ >= 0) eog.push_back(eos_id_);
    if (eot_id && *eot_id >= 0) eog.push_back(*eot_id);
    std::sort(eog.begin(), eog.end());
    eog.erase(std::unique(eog.begin(), eog.end()), eog.end());

    const auto eog_with = [&](std::string_view text) {
        return std::find_if(eog.begin(), eog.end(), [&](int32_t id) { return tokens_[size_t(id)] == text; });
    };
    // OpenAI harmony / Solar Open: "<|end|>" ends a message, not the generation.
    const bool has_call = eog_with("<|call|>") != eog.end() || eog_with("<|calls|>") != eog.end();
    const bool harmony = has_call && (eog_with("<|return|>") != eog.end() || eog_with("<|flush|>") != eog.end());
    if (const auto end = eog_with("<|end|>"); harmony && end != eog.end()) {
        types_[size_t(*end)] = TokenType::USER_DEFINED;
        eog.erase(end);
    }
    const bool plain_s = std::any_of(k_plain_s_markers.begin(), k_plain_s_markers.end(),
                                     [&](std::string_view m) { return eog_with(m) != eog.end(); });
    if (const auto s = eog_with("</s>"); plain_s && s != eog.end()) {
        types_[size_t(*s)] = TokenType::NORMAL;
        eog.erase(s);
    }
    eog_ids_ = std::move(eog);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
    return encode_fragments(split_special(text, parse_special), add_bos);
}

std::vector<int32_t> Tokenizer::encode_pieces(const std::vector<Piece>& pieces, bool add_bos) const {
    std::string joined;
    for (const Piece& p : pieces) joined += p.text;
    std::vector<Fragment> fragments;
    std::size_t at = 0;
    // Where the whitespace an RSTRIP token eats has reached (null: no such token just before). In the
    // whole text that run may go on into the next piece: a template's "<|user|>\n" before a message
    // that starts with spaces.
    const char* eaten_until = nullptr;
    for (const Piece& p : pieces) {
        for (Fragment f : split_special(std::string_view(joined).substr(at, p.text.size()), p.parse_special)) {
            if (f.id >= 0) {
                eaten_until = (strip_of(f.id) & RSTRIP) ? f.text.data() + f.text.size() : nullptr;
                fragments.push_back(f);
                continue;
            }
            if (eaten_until) {
                if (all_ascii_space(std::string_view(eaten_until, size_t(f.text.data() - eaten_until))))
                    while (!f.text.empty() && is_ascii_space(f.text.front())) f.text.remove_prefix(1);
                eaten_until = f.text.empty() ? f.text.data() : nullptr;
                if (f.text.empty()) continue;
            }
            Fragment* last = fragments.empty() ? nullptr : &fragments.back();
            // Raw text continuing raw text of the previous piece: one run, as in the whole text.
            if (last && last->id < 0 && last->text.data() + last->text.size() == f.text.data()) {
                last->text = std::string_view(last->text.data(), last->text.size() + f.text.size());
            } else {
                fragments.push_back(f);
            }
        }
        at += p.text.size();
        // Nothing but eaten whitespace since the token: the run reaches the end of this piece.
        if (eaten_until) eaten_until = joined.data() + at;
    }
    return encode_fragments(fragments, add_bos);
}

std::vector<Tokenizer::Fragment> Tokenizer::split_special(std::string_view text, bool parse_special) const {
    std::vector<Fragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back({-1, text});
    // Which byte pairs occur in the text: a special text with a pair that does not occur cannot
    // match, which rules out nearly all of a large vocabulary's specials without a search.
    std::bitset<65536> pairs;
    std::bitset<256> bytes;
    for (size_t i = 0; i < text.size(); ++i) {
        bytes.set(uint8_t(text[i]));
        if (i + 1 < text.size()) pairs.set(size_t(uint8_t(text[i])) << 8 | uint8_t(text[i + 1]));
    }
    const auto may_occur = [&](std::string_view s) {
        if (s.size() == 1) return bytes.test(uint8_t(s[0]));
        for (size_t i = 0; i + 1 < s.size(); ++i) {
            if (!pairs.test(size_t(uint8_t(s[i])) << 8 | uint8_t(s[i + 1]))) return false;
        }
        return true;
    };
    std::vector<Fragment> next;
    for (const int32_t id : special_ids_) {
        const TokenType type = types_[size_t(id)];
        if (!parse_special && type != TokenType::USER_DEFINED) continue;
        const std::string_view special = tokens_[size_t(id)];
        if (special.size() > text.size() || !may_occur(special)) continue;
        const uint8_t strip = strip_of(id);
        next.clear();
        for (const Fragment& f : fragments) {
            if (f.id >= 0) {
                next.push_back(f);
                continue;
            }
            std::string_view rest = f.text;
            for (size_t at; (at = rest.find(special)) != std::string_view::npos;) {
                std::string_view left = rest.substr(0, at);
                if (strip & LSTRIP)
                    while (!left.empty() && is_ascii_space(left.back())) left.remove_suffix(1);
                if (!left.empty()) next.push_back({-1, left});
                // The token's own bytes in the text, not the vocabulary's copy: encode_pieces measures
                // the whitespace after it from where it ends in the text.
                next.push_back({id, rest.substr(at, special.size())});
                rest.remove_prefix(at + special.size());
                if (strip & RSTRIP)
                    while (!rest.empty() && is_ascii_space(rest.front())) rest.remove_prefix(1);
            }
            if (!rest.empty()) next.push_back({-1, rest});
        }
        fragments.swap(next);
    }
    return fragments;
}

void Tokenizer::append_warning(const std::string& text) {
    if (!warning_.empty()) warning_ += "; ";
    warning_ += text;
}

TokenType Tokenizer::token_type(int32_t id) const { return types_.at(size_t(id)); }

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
    return token_ids_.find(text);
}

bool Tokenizer::is_eog(int32_t id) const { return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id); }

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool render_special) const {
    std::string out;
    for (const int32_t id : ids) out += token_to_piece(id, render_special);
    return out;
}

}  // namespace wb
