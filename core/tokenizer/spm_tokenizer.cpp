#include <sentencepiece_processor.h>

#include <algorithm>

#include "tokenizer_impl.h"
#include "unicode.h"
#include "util/error.h"

namespace wb {
namespace {

constexpr std::string_view k_escaped_space = "\xE2\x96\x81";  // U+2581, sentencepiece's space
constexpr std::string_view k_unknown_piece = "\xE2\x96\x85";  // U+2585, llama.cpp's rendering of UNKNOWN

std::string byte_token_text(int byte) {
    static constexpr char hex[] = "0123456789ABCDEF";
    return std::string("<0x") + hex[byte >> 4] + hex[byte & 15] + ">";
}

}  // namespace

SpmTokenizer::SpmTokenizer(VocabSpec spec) {
    const std::vector<float> scores = std::move(spec.scores);
    add_space_prefix_ = spec.add_space_prefix.value_or(true);
    const int32_t pad_id = spec.pad_id.value_or(-1);
    init_common(spec, true);
    if (unk_id_ < 0) {
        // sentencepiece cannot load without an unknown piece; take the one the types name, else 0.
        const auto it = std::find(types_.begin(), types_.end(), TokenType::UNKNOWN);
        unk_id_ = it != types_.end() ? int32_t(it - types_.begin()) : 0;
    }
    bool all_bytes = true;
    for (int b = 0; b < 256; ++b) {
        const auto id = find_token(byte_token_text(b));
        byte_ids_[b] = id && types_[size_t(*id)] == TokenType::BYTE ? *id : -1;
        all_bytes = all_bytes && byte_ids_[b] >= 0;
    }
    const std::string proto = build_spm_model_proto(tokens_, token_ids_, scores, types_, unk_id_, bos_id_, eos_id_,
                                                    pad_id < n_vocab() ? pad_id : -1, all_bytes);
    sp_ = std::make_unique<sentencepiece::SentencePieceProcessor>();
    const auto status = sp_->LoadFromSerializedProto(proto);
    if (!status.ok()) throw Error("SentencePiece rejected the vocabulary built from the GGUF file: " + status.ToString());
}

SpmTokenizer::~SpmTokenizer() = default;

std::vector<int32_t> SpmTokenizer::encode_fragments(const std::vector<Fragment>& fragments, bool add_bos) const {
    std::vector<int32_t> out;
    if (add_bos && add_bos_ && bos_id_ >= 0) out.push_back(bos_id_);
    // llama.cpp puts the dummy-prefix space in front of every raw fragment that starts the text or
    // follows a special token, not just once per call.
    bool after_special = true;
    std::string fragment;
    for (const Fragment& f : fragments) {
        if (f.id >= 0) {
            out.push_back(f.id);
            after_special = true;
            continue;
        }
        fragment.clear();
        if (add_space_prefix_ && after_special) fragment += ' ';
        fragment += f.text;
        encode_raw(fragment, out);
        after_special = false;
    }
    return out;
}

// llama.cpp splits the text into characters by their lead byte; a character that is not valid
// UTF-8 can never be part of a token and comes out as byte tokens. sentencepiece would replace it
// with U+FFFD instead, so those characters are handled here and the valid runs go to sentencepiece.
void SpmTokenizer::encode_raw(std::string_view text, std::vector<int32_t>& out) const {
    std::vector<int> ids;
    const auto flush = [&](std::string_view run) {
        if (run.empty()) return;
        const auto status = sp_->Encode(run, &ids);
        if (!status.ok()) throw Error("SentencePiece failed to encode text: " + status.ToString());
        out.insert(out.end(), ids.begin(), ids.end());
    };
    size_t run_begin = 0;
    for (size_t pos = 0; pos < text.size();) {
        const size_t len = std::min(unicode::utf8_len_from_lead(uint8_t(text[pos])), text.size() - pos);
        if (unicode::utf8_sequence_len(text, pos) == int(len)) {
            pos += len;
            continue;
        }
        flush(text.substr(run_begin, pos - run_begin));
        push_bytes(text.substr(pos, len), out);
        pos += len;
        run_begin = pos;
    }
    flush(text.substr(run_begin));
}

void SpmTokenizer::push_bytes(std::string_view bytes, std::vector<int32_t>& out) const {
    for (const char c : bytes) {
        const int32_t id = byte_ids_[uint8_t(c)];
        // Without byte tokens llama.cpp fails here; the unknown token is the closest we can do.
        if (id >= 0) out.push_back(id);
        else if (unk_id_ >= 0) out.push_back(unk_id_);
    }
}

std::string SpmTokenizer::token_to_piece(int32_t id, bool render_special) const {
    if (id < 0 || id >= n_vocab()) return {};
    const std::string& text = tokens_[size_t(id)];
    switch (types_[size_t(id)]) {
        case TokenType::NORMAL:
        case TokenType::USER_DEFINED: {
            std::string out;
            out.reserve(text.size());
            for (size_t pos = 0; pos < text.size();) {
                if (std::string_view(text).substr(pos).starts_with(k_escaped_space)) {
                    out += ' ';
                    pos += k_escaped_space.size();
                } else {
                    out += text[pos++];
                }
            }
            return out;
        }
        case TokenType::BYTE: {
            const auto it = std::find(std::begin(byte_ids_), std::end(byte_ids_), id);
            return it != std::end(byte_ids_) ? std::string(1, char(it - std::begin(byte_ids_))) : std::string();
        }
        case TokenType::CONTROL: return render_special ? text : std::string();
        case TokenType::UNKNOWN: return std::string(k_unknown_piece);
        default: return {};
    }
}

std::string SpmTokenizer::decode(const std::vector<int32_t>& ids, bool render_special) const {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        const std::string piece = token_to_piece(ids[i], render_special);
        // The dummy prefix of the first word is not part of the text (llama_detokenize's lstrip).
        const bool strip = i == 0 && add_space_prefix_ && !piece.empty() && piece[0] == ' ';
        out.append(piece, strip ? 1 : 0);
    }
    return out;
}

}  // namespace wb
