#pragma once
// The two tokenizer families behind Tokenizer (private to core/tokenizer).
#include <memory>
#include <mutex>
#include <unordered_map>

#include "pre_tokenizer.h"
#include "tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace wb {

// Byte-level BPE (tokenizer.ggml.model = "gpt2"), llama.cpp's llm_tokenizer_bpe behaviour.
class BpeTokenizer final : public Tokenizer {
public:
    explicit BpeTokenizer(VocabSpec spec);
    std::vector<int32_t> encode_fragments(const std::vector<Fragment>& fragments, bool add_bos) const override;
    std::string token_to_piece(int32_t id, bool render_special) const override;
    std::string decode(const std::vector<int32_t>& ids, bool render_special) const override;

private:
    struct Merge {
        int32_t rank;
        int32_t result;  // id of the merged text, -1 if the vocabulary lacks it
    };
    // (left id, right id) -> merge, open addressing for the same reason as TokenIndex.
    class MergeTable {
    public:
        void init(size_t n_merges);
        void insert_first(int32_t left, int32_t right, Merge merge);  // an existing pair keeps its rank
        const Merge* find(int32_t left, int32_t right) const;

    private:
        static constexpr uint64_t EMPTY = ~uint64_t(0);  // ids are non-negative int32, never all ones
        struct Slot {
            uint64_t key = EMPTY;
            Merge merge{};
        };
        size_t slot_of(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_); }
        std::vector<Slot> slots_;
        int shift_ = 64;
    };

    void load_merges(const std::vector<std::string>& merges);
    void encode_raw(std::string_view text, std::vector<int32_t>& out) const;
    void encode_word(std::string_view word, std::vector<int32_t>& out) const;
    std::vector<int32_t> bpe_word(std::string_view word) const;

    PreTokenizerKind pre_kind_ = PreTokenizerKind::GPT2;
    bool ignore_merges_ = false;  // Llama 3: a word that is a whole token skips the merges
    bool clean_spaces_ = true;    // HF clean_up_tokenization_spaces on decode
    int32_t byte_ids_[256];       // token of each byte's mapped character, -1 if missing
    MergeTable merges_;

    // Words repeat a lot in real text; caching their ids skips the merge loop. Bounded by clearing.
    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<int32_t>> word_cache_;
};

// SentencePiece-style vocabulary (tokenizer.ggml.model = "llama") run by libsentencepiece from a
// ModelProto built out of the vocabulary.
class SpmTokenizer final : public Tokenizer {
public:
    explicit SpmTokenizer(VocabSpec spec);
    ~SpmTokenizer() override;
    std::vector<int32_t> encode_fragments(const std::vector<Fragment>& fragments, bool add_bos) const override;
    std::string token_to_piece(int32_t id, bool render_special) const override;
    std::string decode(const std::vector<int32_t>& ids, bool render_special) const override;

private:
    void encode_raw(std::string_view text, std::vector<int32_t>& out) const;
    void push_bytes(std::string_view bytes, std::vector<int32_t>& out) const;

    bool add_space_prefix_ = true;
    int32_t byte_ids_[256];  // <0xNN> tokens, -1 if missing
    std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
};

// Serializes a sentencepiece ModelProto (protobuf wire format) that makes libsentencepiece's BPE
// model behave like llama.cpp's SPM tokenizer on this vocabulary (spm_model_proto.cpp).
// ids is the text -> id map of the tokens (duplicates resolved to the last id).
std::string build_spm_model_proto(const std::vector<std::string>& tokens,
                                  const TokenIndex& ids,
                                  const std::vector<float>& scores, const std::vector<TokenType>& types,
                                  int32_t unk_id, int32_t bos_id, int32_t eos_id, int32_t pad_id, bool byte_fallback);

}  // namespace wb
