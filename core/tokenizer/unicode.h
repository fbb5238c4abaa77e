#pragma once
// Code-point level helpers for the tokenizers: UTF-8 decoding with llama.cpp's leniency, the
// character classes the pre-tokenizer regexes need, and GPT-2's byte <-> code point map.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace wb::unicode {

enum CptClass : uint8_t {
    CPT_LETTER = 1,      // \p{L}
    CPT_NUMBER = 2,      // \p{N}
    CPT_WHITESPACE = 4,  // \s (Unicode White_Space)
};

// CptClass bits of one code point (0 for everything else).
uint8_t cpt_flags(uint32_t cpt);

inline constexpr uint32_t REPLACEMENT_CHAR = 0xFFFD;

// Decodes the code point at pos and advances pos. Mirrors llama.cpp: only the lead byte pattern and
// the continuation bytes are checked (no overlong/surrogate checks); an invalid sequence yields
// U+FFFD and advances by one byte.
uint32_t decode_lenient(std::string_view s, size_t& pos);

void append_utf8(std::string& out, uint32_t cpt);

// Re-encodes text code point by code point through decode_lenient, so that invalid bytes become
// U+FFFD exactly where llama.cpp's BPE path puts them.
std::string sanitize_utf8(std::string_view text);

// Length of the UTF-8 sequence a lead byte announces, as llama.cpp's unicode_len_utf8 (1 for
// continuation bytes, 4 for 0xF0..0xFF).
size_t utf8_len_from_lead(uint8_t lead);

// Length of the strictly valid UTF-8 sequence starting at pos (1..4), or 0 if it is invalid, or
// -1 if it is a valid but truncated start (more bytes could complete it).
int utf8_sequence_len(std::string_view s, size_t pos);

// GPT-2 byte-level map: each byte to a printable code point (UTF-8 encoded), and back.
const std::string& byte_to_utf8(uint8_t byte);
// The byte a mapped code point stands for, or -1 if cpt is not in the map.
int utf8_cpt_to_byte(uint32_t cpt);

}  // namespace wb::unicode
