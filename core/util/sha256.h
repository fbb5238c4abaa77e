#pragma once
// SHA-256 (FIPS 180-4), for naming a model file in a trace file: which file made a trace, so that a
// replay on another file says so instead of reporting a difference in the numbers.
#include <cstddef>
#include <cstdint>
#include <string>

namespace wb {

class Sha256 {
public:
    Sha256();
    void update(const void* data, size_t n);
    std::string hex_digest();  // lower-case hex; ends the hash (update after it is not allowed)

private:
    void block(const uint8_t* p);
    uint32_t h_[8];
    uint8_t buf_[64];
    size_t buf_len_ = 0;
    uint64_t total_ = 0;
};

// The hex SHA-256 of a whole file; wb::Error naming the path when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace wb
