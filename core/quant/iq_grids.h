#pragma once
// The lattices ("grids") of the IQ1/IQ2/IQ3 weight types. They are part of the GGUF format: a block
// stores indices into them, so they must be exactly llama.cpp's tables (ggml-common.h). Each entry
// packs the magnitudes of 8 (IQ1/IQ2) or 4 (IQ3) consecutive values, one byte per value, element 0 in
// the lowest byte. The tables themselves are in iq_grids.cpp; tests check their SHA-256.
#include <cstdint>

namespace wb {

extern const uint64_t kIq2xxsGrid[256];   // IQ2_XXS: bytes in {8, 25, 43}
extern const uint64_t kIq2xsGrid[512];    // IQ2_XS:  bytes in {8, 25, 43}
extern const uint64_t kIq2sGrid[1024];    // IQ2_S:   bytes in {8, 25, 43}
extern const uint32_t kIq3xxsGrid[256];   // IQ3_XXS: bytes in {4, 12, 20, 28, 36, 44, 52, 62}
extern const uint32_t kIq3sGrid[512];     // IQ3_S:   bytes in {1, 3, 5, ..., 15}
extern const uint64_t kIq1sGrid[2048];    // IQ1_S, IQ1_M: bytes are int8 in {-1, 0, 1}

// The sign byte of a 7-bit sign code (ksigns_iq2xs): IQ2_XXS, IQ2_XS and IQ3_XXS store 7 of every 8
// signs and make the eighth even the parity, so bit 7 is the parity of the other seven. Bit j set
// means value j of the 8 is negative.
constexpr uint8_t iq_sign_byte(uint32_t code7) {
    const uint32_t c = code7 & 127;
    return uint8_t(c | uint32_t(__builtin_parity(c)) << 7);
}

}  // namespace wb
