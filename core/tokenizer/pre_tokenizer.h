#pragma once
// Pre-tokenizers of byte-level BPE vocabularies: the regexes named by tokenizer.ggml.pre, written by
// hand over code points (std::regex has no \p{..} classes and is far too slow). They follow
// llama.cpp's hand-written splitters, which are the reference the tokenizer is tested against.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wb {

enum class PreTokenizerKind {
    GPT2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    SMOLLM,  // \p{N} split alone first, then GPT2 on every piece
    LLAMA3,  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
    QWEN2,   // as LLAMA3 but \p{N} (single digits)
    TEKKEN,  // Mistral's (Mistral Nemo, Ministral): letter runs split at a lower-to-upper change,
             // single digits; llama.cpp's std::regex reading of it (pre_tokenizer.cpp)
};

// The kind a tokenizer.ggml.pre name selects; nullopt for names this engine does not know.
std::optional<PreTokenizerKind> pre_tokenizer_from_name(std::string_view name);

// Every name pre_tokenizer_from_name knows, comma-separated (for the refusal of any other).
std::string pre_tokenizer_names();

// Splits valid UTF-8 text (run it through unicode::sanitize_utf8 first) into words. The words cover
// the text exactly, in order, and point into it.
std::vector<std::string_view> pre_tokenize(PreTokenizerKind kind, std::string_view text);

}  // namespace wb
