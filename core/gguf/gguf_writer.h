#pragma once
// A small GGUF v3 writer: metadata and tensors in, a file our reader (and llama.cpp) accepts out.
// Used by test tools that make random-weight models; tensor data is produced by a callback at write
// time, so a multi-gigabyte model never has to sit in memory at once.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gguf/ggml_type.h"

namespace wb {

class GgufWriter {
public:
    // Fills exactly the tensor's byte size (ggml_row_bytes(type, ne[0]) * rows) at dst.
    using Fill = std::function<void(uint8_t* dst)>;

    void set_u32(const std::string& key, uint32_t v);
    void set_i32(const std::string& key, int32_t v);
    void set_f32(const std::string& key, float v);
    void set_bool(const std::string& key, bool v);
    void set_string(const std::string& key, const std::string& v);
    void set_string_array(const std::string& key, const std::vector<std::string>& v);
    void set_i32_array(const std::string& key, const std::vector<int32_t>& v);
    void set_f32_array(const std::string& key, const std::vector<float>& v);

    // ne in ggml order (ne[0] = row length); ne[0] must be a whole number of the type's blocks.
    void add_tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& ne, Fill fill);
    // Drops a tensor added before (test tools that make a file with one missing); false if none has the name.
    bool remove_tensor(const std::string& name);

    // Writes the file (tensors aligned to 32 bytes); wb::Error names the path on failure.
    void write(const std::string& path) const;

    // Bytes of a tensor of this type and shape.
    static uint64_t tensor_bytes(GgmlType type, const std::vector<int64_t>& ne);

private:
    struct Kv {
        std::string key;
        std::vector<uint8_t> encoded;  // value type + value, as stored in the file
    };
    struct TensorEntry {
        std::string name;
        GgmlType type;
        std::vector<int64_t> ne;
        uint64_t bytes;
        Fill fill;
    };
    void set(const std::string& key, std::vector<uint8_t> encoded);

    std::vector<Kv> kv_;
    std::vector<TensorEntry> tensors_;
};

}  // namespace wb
