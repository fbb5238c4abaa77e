// A sentencepiece ModelProto written field by field in protobuf wire format: Debian ships neither
// sentencepiece_model.pb.h nor protoc, and the message needs only a handful of fields.
#include <bit>

#include "tokenizer_impl.h"

namespace wb {
namespace {

enum WireType : uint32_t { WIRE_VARINT = 0, WIRE_LEN = 2, WIRE_FIXED32 = 5 };

// Field numbers from sentencepiece_model.proto.
enum : uint32_t {
    MODEL_PIECES = 1, MODEL_TRAINER_SPEC = 2, MODEL_NORMALIZER_SPEC = 3,
    PIECE_TEXT = 1, PIECE_SCORE = 2, PIECE_TYPE = 3,
    TRAINER_MODEL_TYPE = 3, TRAINER_VOCAB_SIZE = 4, TRAINER_BYTE_FALLBACK = 35,
    TRAINER_UNK_ID = 40, TRAINER_BOS_ID = 41, TRAINER_EOS_ID = 42, TRAINER_PAD_ID = 43,
    TRAINER_UNK_PIECE = 45, TRAINER_BOS_PIECE = 46, TRAINER_EOS_PIECE = 47, TRAINER_PAD_PIECE = 48,
    NORM_NAME = 1, NORM_ADD_DUMMY_PREFIX = 3, NORM_REMOVE_EXTRA_WHITESPACES = 4, NORM_ESCAPE_WHITESPACES = 5,
};
constexpr uint64_t MODEL_TYPE_BPE = 2;

void put_varint(std::string& out, uint64_t v) {
    while (v >= 0x80) {
        out += char(0x80 | (v & 0x7F));
        v >>= 7;
    }
    out += char(v);
}

void put_tag(std::string& out, uint32_t field, WireType wire) { put_varint(out, (uint64_t(field) << 3) | wire); }

// int32 fields encode negative values as 64-bit two's complement (ten bytes).
void put_int(std::string& out, uint32_t field, int64_t v) {
    put_tag(out, field, WIRE_VARINT);
    put_varint(out, uint64_t(v));
}

void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
    put_tag(out, field, WIRE_LEN);
    put_varint(out, bytes.size());
    out += bytes;
}

void put_float(std::string& out, uint32_t field, float f) {
    put_tag(out, field, WIRE_FIXED32);
    const uint32_t bits = std::bit_cast<uint32_t>(f);
    for (int i = 0; i < 4; ++i) out += char((bits >> (8 * i)) & 0xFF);
}

// The type a piece gets inside libsentencepiece. Everything we do not cut out ourselves must be
// mergeable as in llama.cpp, whose SPM merges into any token text: sentencepiece never merges into
// CONTROL pieces and matches USER_DEFINED ones greedily instead of by score, so both become NORMAL
// (special tokens are cut out of the text before it reaches sentencepiece anyway).
TokenType proto_type(TokenType t, int32_t id, int32_t unk_id, bool byte_fallback) {
    if (id == unk_id) return TokenType::UNKNOWN;  // sentencepiece refuses a model without one
    if (t == TokenType::BYTE && byte_fallback) return TokenType::BYTE;
    return TokenType::NORMAL;
}

// sentencepiece requires unique pieces without NUL bytes. A duplicated text keeps its last id (the
// one llama.cpp's text -> id map finds); the other copies, and texts with NUL, get placeholder names
// that no input can produce, which keeps every id in place.
std::string piece_text(const std::vector<std::string>& tokens, const TokenIndex& ids,
                       size_t i) {
    const std::string& text = tokens[i];
    if (ids.find(text) != int32_t(i)) return "[DUP_" + std::to_string(i) + "]";
    if (text.find('\0') != std::string::npos) return "[NUL_" + std::to_string(i) + "]";
    return text;
}

std::string trainer_spec(const std::vector<std::string>& tokens, const TokenIndex& ids,
                         int32_t unk_id, int32_t bos_id, int32_t eos_id,
                         int32_t pad_id, bool byte_fallback) {
    std::string spec;
    put_int(spec, TRAINER_MODEL_TYPE, MODEL_TYPE_BPE);
    put_int(spec, TRAINER_VOCAB_SIZE, int64_t(tokens.size()));
    put_int(spec, TRAINER_BYTE_FALLBACK, byte_fallback ? 1 : 0);
    // sentencepiece resolves its special ids from these names, so they must match the vocabulary.
    const auto put_special = [&](uint32_t id_field, uint32_t piece_field, int32_t id) {
        put_int(spec, id_field, id);
        if (id >= 0) put_bytes(spec, piece_field, piece_text(tokens, ids, size_t(id)));
    };
    put_special(TRAINER_UNK_ID, TRAINER_UNK_PIECE, unk_id);
    put_special(TRAINER_BOS_ID, TRAINER_BOS_PIECE, bos_id);
    put_special(TRAINER_EOS_ID, TRAINER_EOS_PIECE, eos_id);
    put_special(TRAINER_PAD_ID, TRAINER_PAD_PIECE, pad_id);
    return spec;
}

}  // namespace

std::string build_spm_model_proto(const std::vector<std::string>& tokens, const TokenIndex& ids,
                                  const std::vector<float>& scores, const std::vector<TokenType>& types,
                                  int32_t unk_id, int32_t bos_id, int32_t eos_id, int32_t pad_id, bool byte_fallback) {
    std::string model;
    model.reserve(tokens.size() * 24);
    std::string piece;
    for (size_t i = 0; i < tokens.size(); ++i) {
        piece.clear();
        put_bytes(piece, PIECE_TEXT, piece_text(tokens, ids, i));
        put_float(piece, PIECE_SCORE, scores.empty() ? 0.0f : scores[i]);
        put_int(piece, PIECE_TYPE, int64_t(proto_type(types[i], int32_t(i), unk_id, byte_fallback)));
        put_bytes(model, MODEL_PIECES, piece);
    }
    put_bytes(model, MODEL_TRAINER_SPEC, trainer_spec(tokens, ids, unk_id, bos_id, eos_id, pad_id, byte_fallback));
    // Identity normalization, spaces escaped to U+2581, nothing collapsed; the dummy prefix is added
    // by SpmTokenizer itself because llama.cpp adds it per fragment, not once per call.
    std::string norm;
    put_bytes(norm, NORM_NAME, "identity");
    put_int(norm, NORM_ADD_DUMMY_PREFIX, 0);
    put_int(norm, NORM_REMOVE_EXTRA_WHITESPACES, 0);
    put_int(norm, NORM_ESCAPE_WHITESPACES, 1);
    put_bytes(model, MODEL_NORMALIZER_SPEC, norm);
    return model;
}

}  // namespace wb
