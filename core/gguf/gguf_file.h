#pragma once
// GGUF v2/v3 reader over a read-only memory map.
//
// open() validates the whole header before anything is used: every count, string length, array length,
// dimension, type and offset is checked against the file size with overflow-safe arithmetic, so a
// truncated or hostile file gives a specific wb::Error and never an out-of-bounds read.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gguf/ggml_type.h"

namespace wb {

enum class GgufValueType : uint32_t {
    UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
    STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

const char* gguf_value_type_name(GgufValueType t);

class GgufReader;  // bounds-checked cursor used while parsing (gguf_file.cpp)

// One metadata value. Scalars are widened on parse; arrays keep their element type and are stored
// decoded (strings as std::string, numbers as double/int64 vectors) because metadata is small
// except for the vocabulary, which is read once.
struct GgufValue {
    GgufValueType type = GgufValueType::UINT8;
    GgufValueType elem_type = GgufValueType::UINT8;  // for ARRAY
    int64_t i = 0;            // integer and bool scalars (UINT64 values above INT64_MAX are rejected)
    double f = 0.0;           // float scalars
    std::string s;            // STRING
    std::vector<int64_t> ints;        // ARRAY of integers / bools
    std::vector<double> floats;       // ARRAY of floats
    std::vector<std::string> strings; // ARRAY of strings
    uint64_t array_len = 0;

    bool is_integer() const;
    bool is_float() const;
};

struct GgufTensor {
    std::string name;
    uint32_t n_dims = 0;
    int64_t ne[4] = {1, 1, 1, 1};   // ne[0] is the fastest-varying (row length)
    GgmlType type = GgmlType::F32;
    uint64_t offset = 0;            // relative to the data section
    uint64_t n_bytes = 0;
    const uint8_t* data = nullptr;  // points into the mapping; valid while the GgufFile lives

    int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
    size_t row_bytes() const;
};

// Whether open() insists on every tensor's data lying inside the file.
enum class GgufTensorData {
    REQUIRED,          // a model: tensor data past the end of the file is an error ("truncated: ...")
    // Metadata-only use (tokenizer, chat template, model info) of a file whose tensor data is cut off,
    // such as the first part of a split download. The header must still be complete and valid; tensors
    // whose bytes pass the end keep their info but get data == nullptr.
    MAY_BE_TRUNCATED,
};

// The read-only file mapping of a GgufFile alive now that [p, p + bytes) lies in, as a number no other
// mapping of the process has had; 0 if none. Such memory can be dropped (madvise) and read again from
// the file, unlike the heap, and the number tells two files mapped at the same address apart
// (engine/cpu_repack.cpp).
uint64_t gguf_mapping_id(const void* p, size_t bytes);

class GgufFile {
public:
    // Maps and validates the file; throws wb::Error naming what is wrong and where.
    static std::unique_ptr<GgufFile> open(const std::string& path,
                                          GgufTensorData tensor_data = GgufTensorData::REQUIRED);

    ~GgufFile();
    GgufFile(const GgufFile&) = delete;
    GgufFile& operator=(const GgufFile&) = delete;

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint64_t file_size() const { return size_; }
    uint32_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }

    // Metadata in file order.
    const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return kv_; }
    const GgufValue* find(std::string_view key) const;

    // Typed getters: nullopt when the key is absent; wb::Error when present with an unusable type
    // (get_uint also rejects negative values).
    std::optional<uint64_t> get_uint(std::string_view key) const;
    std::optional<int64_t> get_int(std::string_view key) const;
    std::optional<double> get_float(std::string_view key) const;  // accepts integers too
    std::optional<bool> get_bool(std::string_view key) const;
    std::optional<std::string> get_string(std::string_view key) const;
    const std::vector<std::string>* get_string_array(std::string_view key) const;
    const std::vector<double>* get_float_array(std::string_view key) const;
    const std::vector<int64_t>* get_int_array(std::string_view key) const;

    const std::vector<GgufTensor>& tensors() const { return tensors_; }
    const GgufTensor* find_tensor(std::string_view name) const;
    // Tensors whose data is past the end of the file (only ever non-zero with MAY_BE_TRUNCATED).
    size_t n_truncated_tensors() const { return n_truncated_; }

private:
    GgufFile() = default;
    void map();
    void parse(GgufTensorData tensor_data);
    void parse_metadata(GgufReader& r, uint64_t n_kv);
    void read_alignment();
    void parse_tensor_infos(GgufReader& r, uint64_t n_tensors);
    void locate_tensor(GgufTensor& t, GgufTensorData tensor_data);
    [[noreturn]] void throw_type_error(std::string_view key, const GgufValue& v, const char* expected) const;

    std::string path_;
    int fd_ = -1;
    const uint8_t* base_ = nullptr;
    uint64_t size_ = 0;
    uint32_t version_ = 0;
    uint32_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::vector<std::pair<std::string, GgufValue>> kv_;
    std::unordered_map<std::string, size_t> kv_index_;
    std::vector<GgufTensor> tensors_;
    std::unordered_map<std::string, size_t> tensor_index_;
    size_t n_truncated_ = 0;
};

}  // namespace wb
