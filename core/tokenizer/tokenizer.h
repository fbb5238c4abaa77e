#pragma once
// Tokenizer interface and the factory that builds the right one from a GGUF vocabulary.
//
// Two families: byte-level BPE (tokenizer.ggml.model = "gpt2": SmolLM2, Llama 3, Qwen) and
// SentencePiece-style vocabularies (tokenizer.ggml.model = "llama": Llama 2, Mistral, Gemma), the
// latter run by libsentencepiece from a model built out of the GGUF vocabulary.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "token_index.h"

namespace wb {

class GgufFile;

// Same numbering as GGUF tokenizer.ggml.token_type and sentencepiece's piece types.
enum class TokenType : int32_t {
    UNDEFINED = 0, NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER_DEFINED = 4, UNUSED = 5, BYTE = 6,
};

// Everything a tokenizer is built from. from_gguf reads it out of the file; tests write it by hand,
// so tokenizer behaviour can be checked on tiny vocabularies without a GGUF file.
struct VocabSpec {
    std::string model;                // tokenizer.ggml.model: "gpt2" or "llama"
    std::string pre;                  // tokenizer.ggml.pre; "" when absent
    std::vector<std::string> tokens;  // id -> text as stored
    std::vector<float> scores;        // SPM merge priorities; empty = all 0
    std::vector<TokenType> types;     // empty = all NORMAL
    std::vector<std::string> merges;  // BPE "left right"; rank = index
    // Absent values take llama.cpp's defaults for the model (section 3.1 of the facts sheet).
    std::optional<int32_t> bos_id, eos_id, unk_id, eot_id, pad_id;
    std::optional<bool> add_bos, add_space_prefix;
    std::string name;  // general.name: llama.cpp chooses Phi-3's whitespace stripping by it
};

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // Builds the tokenizer the file names; wb::Error for an unsupported or inconsistent vocabulary.
    static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& file);
    // The same from an already extracted vocabulary (from_gguf reads the file into a VocabSpec).
    static std::unique_ptr<Tokenizer> from_vocab(VocabSpec spec);
    // The vocabulary a file describes, as from_gguf reads it (tests change a field and build it).
    static VocabSpec read_vocab(const GgufFile& file);

    // Text -> ids. add_bos follows the vocabulary's add_bos_token when true; parse_special cuts
    // special-token texts (CONTROL / USER_DEFINED, e.g. "<|im_start|>") out of the text as their ids,
    // as llama.cpp does for chat prompts. Like llama.cpp (and HF), USER_DEFINED texts are cut out
    // even without parse_special.
    std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special) const;

    // A text in pieces, each with its own parse_special: a chat prompt whose template text may hold
    // special tokens and whose user text must not. Special texts are cut only out of pieces with
    // parse_special, each piece on its own (a special text split across two pieces is not one);
    // the raw text left over is then joined across piece boundaries before the BPE / SentencePiece
    // step, so the ids equal encode() of the whole text wherever the plain pieces hold no special
    // text (the merges do not stop at a boundary; llama.cpp, which tokenizes the whole rendered
    // prompt, gives the same ids for such prompts).
    struct Piece {
        std::string_view text;
        bool parse_special = false;
    };
    std::vector<int32_t> encode_pieces(const std::vector<Piece>& pieces, bool add_bos) const;

    // The bytes a token stands for (may be an incomplete UTF-8 sequence). CONTROL tokens give their
    // text only when render_special is true, otherwise "".
    virtual std::string token_to_piece(int32_t id, bool render_special) const = 0;

    // Whole-sequence decode (concatenated pieces, then the vocabulary's clean-up rules).
    virtual std::string decode(const std::vector<int32_t>& ids, bool render_special) const;

    int32_t n_vocab() const { return int32_t(tokens_.size()); }
    const std::string& token_text(int32_t id) const { return tokens_.at(size_t(id)); }  // as stored
    // The type as used: like llama.cpp, end-of-turn texts (and Gemma's "<start_of_turn>") count as
    // CONTROL even where a file types them NORMAL.
    TokenType token_type(int32_t id) const;
    std::optional<int32_t> find_token(std::string_view text) const;

    int32_t bos_id() const { return bos_id_; }   // -1 when the vocabulary has none
    int32_t eos_id() const { return eos_id_; }
    bool add_bos() const { return add_bos_; }
    // End-of-generation: eos, eot and the texts llama.cpp treats as end of turn.
    bool is_eog(int32_t id) const;
    const std::vector<int32_t>& eog_ids() const { return eog_ids_; }
    const std::string& model_name() const { return model_; }  // "gpt2" / "llama"
    const std::string& pre_name() const { return pre_; }      // pre-tokenizer, e.g. "smollm"
    // Non-empty when the vocabulary loaded with a compromise the user should know about (e.g. merges
    // naming texts that are not tokens); shown by the app next to the model info.
    const std::string& warning() const { return warning_; }

protected:
    // A piece of the input: raw text for the model-specific algorithm, or a special token (id >= 0)
    // that was cut out of the text. Either way `text` views the input's bytes.
    struct Fragment {
        int32_t id = -1;
        std::string_view text;
    };

    // The model-specific algorithm over a partitioned text (BOS first when add_bos and the vocabulary
    // asks for one).
    virtual std::vector<int32_t> encode_fragments(const std::vector<Fragment>& fragments, bool add_bos) const = 0;

    // Takes the shared tables out of spec (tokens, types, special ids, flags); called first by each
    // subclass constructor. add_bos_default is the model's default when the key is absent.
    void init_common(VocabSpec& spec, bool add_bos_default);
    // eog_ids_ as llama.cpp builds its end-of-generation set (also forcing those tokens to CONTROL).
    void build_eog_set(const std::optional<int32_t>& eot_id);
    // llama.cpp's special-token partition: each special text, longest first, is cut out of every
    // remaining raw fragment. CONTROL/UNKNOWN texts only when parse_special; USER_DEFINED always.
    // A special token with LSTRIP / RSTRIP eats the ASCII whitespace before / after it.
    std::vector<Fragment> split_special(std::string_view text, bool parse_special) const;
    // llama.cpp's strip attributes: Phi-3 (by general.name) strips whitespace after its special tokens
    // (tokenizer_config's rstrip), except after <unk>, <s> and <|endoftext|>.
    void set_strip_attributes(const std::string& name);
    enum : uint8_t { LSTRIP = 1, RSTRIP = 2 };
    uint8_t strip_of(int32_t id) const { return strip_.empty() ? 0 : strip_[size_t(id)]; }
    void append_warning(const std::string& text);

    TokenIndex token_ids_;              // over tokens_; a duplicated text finds its last id
    std::vector<int32_t> special_ids_;  // CONTROL / USER_DEFINED / UNKNOWN, longest text first
    std::vector<uint8_t> strip_;        // id -> LSTRIP | RSTRIP; empty when no token strips
    std::string warning_;
    int32_t unk_id_ = -1;
    std::vector<std::string> tokens_;
    std::vector<TokenType> types_;
    std::vector<int32_t> eog_ids_;
    int32_t bos_id_ = -1;
    int32_t eos_id_ = -1;
    bool add_bos_ = false;
    std::string model_;
    std::string pre_;
};

// Incremental, UTF-8-safe detokenization for streaming: push() returns only complete UTF-8 text and
// holds back a partial multi-byte character until the token that completes it arrives.
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tok, bool render_special = false)
        : tok_(tok), render_special_(render_special) {}
    std::string push(int32_t id);
    // Whatever is still held back (an invalid or truncated sequence, emitted as U+FFFD).
    std::string flush();
    void reset() { pending_.clear(); }

private:
    const Tokenizer& tok_;
    bool render_special_;
    std::string pending_;
};

}  // namespace wb
