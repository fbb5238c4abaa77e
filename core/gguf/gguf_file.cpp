#include "gguf/gguf_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <vector>

#include "util/error.h"

namespace wb {

namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint32_t kDefaultAlignment = 32;
constexpr uint64_t kMaxTensorNameBytes = 63;  // ggml keeps names in a char[64] with a NUL
constexpr uint32_t kMaxDims = 4;
constexpr uint64_t kInt64Max = uint64_t(std::numeric_limits<int64_t>::max());

// Smallest possible encodings, used to reject impossible counts before anything is allocated:
// a metadata entry is a key length (8), a value type (4) and at least one payload byte; a tensor info
// is a name length (8), n_dims (4), one dimension (8), a type (4) and an offset (8).
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool checked_add(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }

constexpr char kHexDigits[] = "0123456789abcdef";

// Keys and tensor names come from the file, so a hostile one could be megabytes of control bytes;
// messages show them shortened and with control bytes escaped.
std::string quoted(std::string_view s) {
    constexpr size_t kMaxShown = 96;
    std::string out = "'";
    for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c != 0x7f) {
            out += char(c);
            continue;
        }
        out += "\\x";
        out += kHexDigits[c >> 4];
        out += kHexDigits[c & 0xf];
    }
    if (s.size() > kMaxShown) out += "...";
    return out + "'";
}

std::string hex_bytes(const uint8_t* p, size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        if (i) s += ' ';
        s += kHexDigits[p[i] >> 4];
        s += kHexDigits[p[i] & 0xf];
    }
    return s;
}

std::string hex_u32(uint32_t v) {
    std::string s = "0x";
    for (int shift = 28; shift >= 0; shift -= 4) s += kHexDigits[(v >> shift) & 0xf];
    return s;
}

bool is_known_value_type(uint32_t t) { return t <= uint32_t(GgufValueType::FLOAT64); }

bool is_integer_type(GgufValueType t) {
    switch (t) {
    case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::UINT16:
    case GgufValueType::INT16: case GgufValueType::UINT32: case GgufValueType::INT32:
    case GgufValueType::UINT64: case GgufValueType::INT64:
        return true;
    default:
        return false;
    }
}

bool is_float_type(GgufValueType t) { return t == GgufValueType::FLOAT32 || t == GgufValueType::FLOAT64; }

// Payload size of a fixed-size value; 0 for STRING and ARRAY, whose size depends on their content.
uint64_t fixed_value_bytes(GgufValueType t) {
    switch (t) {
    case GgufValueType::UINT8: case GgufValueType::INT8: case GgufValueType::BOOL: return 1;
    case GgufValueType::UINT16: case GgufValueType::INT16: return 2;
    case GgufValueType::UINT32: case GgufValueType::INT32: case GgufValueType::FLOAT32: return 4;
    case GgufValueType::UINT64: case GgufValueType::INT64: case GgufValueType::FLOAT64: return 8;
    default: return 0;
    }
}

std::string describe_type(const GgufValue& v) {
    if (v.type != GgufValueType::ARRAY) return gguf_value_type_name(v.type);
    return std::string("ARRAY of ") + gguf_value_type_name(v.elem_type);
}

}  // namespace

// A bounds-checked cursor over the mapped file. Every read first proves that the bytes exist, so the
// parser can never step outside the mapping however the counts and lengths in the file lie.

class GgufReader {
public:
    GgufReader(const uint8_t* base, uint64_t size) : base_(base), size_(size) {}

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return size_ - pos_; }

    void need(uint64_t n, const std::string& what) const {
        if (n <= remaining()) return;
        uint64_t end = 0;
        if (checked_add(pos_, n, &end))
            throw Error("truncated: " + what + " needs bytes " + std::to_string(pos_) + ".." + std::to_string(end) +
                        " but the file has " + std::to_string(size_));
        throw Error("truncated: " + what + " needs " + std::to_string(n) + " bytes from offset " +
                    std::to_string(pos_) + " but the file has " + std::to_string(size_));
    }

    // GGUF is little-endian; assembling the bytes keeps the reader correct on any host.
    uint64_t read_le(unsigned n_bytes, const std::string& what) {
        need(n_bytes, what);
        uint64_t v = 0;
        for (unsigned i = 0; i < n_bytes; ++i) v |= uint64_t(base_[pos_ + i]) << (8 * i);
        pos_ += n_bytes;
        return v;
    }
    uint32_t u32(const std::string& what) { return uint32_t(read_le(4, what)); }
    uint64_t u64(const std::string& what) { return read_le(8, what); }

    // `what` names the string for the error message; it is built once by callers reading many strings
    // because the vocabulary alone holds a few hundred thousand of them.
    std::string string(const std::string& what) {
        const uint64_t len = u64(what);
        need(len, what);
        std::string s(reinterpret_cast<const char*>(base_ + pos_), size_t(len));
        pos_ += len;
        return s;
    }

    // Fails fast when a count could not fit even with every entry at its smallest encoding, so a
    // hostile count never drives an allocation or a long loop.
    void check_count(uint64_t count, uint64_t min_entry_bytes, const std::string& what) const {
        if (count <= remaining() / min_entry_bytes) return;
        throw Error("truncated: " + what + " is " + std::to_string(count) + ", which needs at least " +
                    std::to_string(min_entry_bytes) + " bytes per entry, but only " + std::to_string(remaining()) +
                    " bytes remain after offset " + std::to_string(pos_));
    }

private:
    const uint8_t* base_;
    uint64_t size_;
    uint64_t pos_ = 0;
};

namespace {

void check_version(uint32_t version) {
    if (version == 2 || version == 3) return;
    if (version == 1)
        throw Error("GGUF version 1 is not supported (it used 32-bit counts); re-convert the model with a "
                    "current llama.cpp to get a version 3 file");
    const uint32_t swapped = __builtin_bswap32(version);
    if (swapped >= 1 && swapped <= 3)
        throw Error("GGUF version field reads " + hex_u32(version) +
                    " (version " + std::to_string(swapped) + " byte-swapped): this is a big-endian GGUF file, "
                    "which WhiteBox cannot read; use the little-endian build of the model");
    throw Error("unsupported GGUF version " + std::to_string(version) + " (WhiteBox reads versions 2 and 3)");
}

int64_t to_int(GgufValueType t, uint64_t raw, const std::string& key) {
    switch (t) {
    case GgufValueType::INT8: return int8_t(raw);
    case GgufValueType::INT16: return int16_t(raw);
    case GgufValueType::INT32: return int32_t(raw);
    case GgufValueType::INT64: return int64_t(raw);
    case GgufValueType::UINT64:
        if (raw > kInt64Max)
            throw Error("metadata key " + quoted(key) + " holds UINT64 value " + std::to_string(raw) +
                        ", above the largest supported value " + std::to_string(kInt64Max));
        return int64_t(raw);
    case GgufValueType::BOOL:
        if (raw > 1)
            throw Error("metadata key " + quoted(key) + " has BOOL value " + std::to_string(raw) +
                        " (must be 0 or 1)");
        return int64_t(raw);
    default: return int64_t(raw);  // the unsigned types below 64 bits always fit
    }
}

double to_float(GgufValueType t, uint64_t raw) {
    if (t == GgufValueType::FLOAT32) return std::bit_cast<float>(uint32_t(raw));
    return std::bit_cast<double>(raw);
}

// Reads one fixed-size scalar (any type but STRING and ARRAY) into v.i or v.f.
void read_fixed_scalar(GgufReader& r, GgufValueType t, const std::string& key, GgufValue& v) {
    const uint64_t raw = r.read_le(unsigned(fixed_value_bytes(t)), "value of metadata key " + quoted(key));
    if (is_float_type(t))
        v.f = to_float(t, raw);
    else
        v.i = to_int(t, raw, key);
}

void read_array(GgufReader& r, const std::string& key, GgufValue& v) {
    const std::string what = "array in metadata key " + quoted(key);
    const uint32_t elem = r.u32("element type of " + what);
    if (elem == uint32_t(GgufValueType::ARRAY))
        throw Error("metadata key " + quoted(key) + " is an array of arrays, which GGUF readers do not support");
    if (!is_known_value_type(elem))
        throw Error("metadata key " + quoted(key) + " is an array of unknown value type " + std::to_string(elem));
    v.elem_type = GgufValueType(elem);
    v.array_len = r.u64("length of " + what);

    if (v.elem_type == GgufValueType::STRING) {
        r.check_count(v.array_len, 8, "length of STRING " + what);
        // No reserve: each string's storage is only committed once its bytes have been proven present.
        const std::string elem_what = "string element of " + what;
        for (uint64_t k = 0; k < v.array_len; ++k) v.strings.push_back(r.string(elem_what));
        return;
    }
    const uint64_t elem_bytes = fixed_value_bytes(v.elem_type);
    r.check_count(v.array_len, elem_bytes, std::string("length of ") + gguf_value_type_name(v.elem_type) + " " + what);
    const bool floats = is_float_type(v.elem_type);
    if (floats)
        v.floats.reserve(size_t(v.array_len));
    else
        v.ints.reserve(size_t(v.array_len));
    for (uint64_t k = 0; k < v.array_len; ++k) {
        const uint64_t raw = r.read_le(unsigned(elem_bytes), what);
        if (floats)
            v.floats.push_back(to_float(v.elem_type, raw));
        else
            v.ints.push_back(to_int(v.elem_type, raw, key));
    }
}

GgufValue read_value(GgufReader& r, const std::string& key) {
    GgufValue v;
    const uint32_t type = r.u32("value type of metadata key " + quoted(key));
    if (!is_known_value_type(type))
        throw Error("metadata key " + quoted(key) + " has unknown value type " + std::to_string(type));
    v.type = GgufValueType(type);
    if (v.type == GgufValueType::STRING)
        v.s = r.string("value of metadata key " + quoted(key));
    else if (v.type == GgufValueType::ARRAY)
        read_array(r, key, v);
    else
        read_fixed_scalar(r, v.type, key, v);
    return v;
}

std::string shape_string(const GgufTensor& t) {
    std::string s = "[";
    for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "]";
}

// Reads n_dims and the dimensions, rejecting zero, negative-as-int64 and overflowing shapes.
void read_shape(GgufReader& r, GgufTensor& t) {
    const std::string what = "tensor " + quoted(t.name);
    t.n_dims = r.u32("dimension count of " + what);
    if (t.n_dims < 1 || t.n_dims > kMaxDims)
        throw Error(what + " has " + std::to_string(t.n_dims) + " dimensions; GGUF allows 1 to " +
                    std::to_string(kMaxDims));
    uint64_t n_elements = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
        const uint64_t ne = r.u64("dimension " + std::to_string(d) + " of " + what);
        if (ne == 0 || ne > kInt64Max)
            throw Error(what + " has dimension " + std::to_string(d) + " of size " + std::to_string(ne) +
                        "; sizes must be between 1 and " + std::to_string(kInt64Max));
        t.ne[d] = int64_t(ne);
        if (!checked_mul(n_elements, ne, &n_elements) || n_elements > kInt64Max)
            throw Error(what + " has shape " + shape_string(t) + " whose element count overflows 64 bits");
    }
}

// Checks the type against the shape and computes the tensor's size in bytes.
void check_type_and_size(GgufTensor& t, uint32_t raw_type) {
    const std::string what = "tensor " + quoted(t.name);
    const GgmlTypeTraits tr = ggml_type_traits(raw_type);
    if (!tr.known) throw Error("unknown tensor type " + std::to_string(raw_type) + " in " + quoted(t.name));
    t.type = GgmlType(raw_type);
    if (t.ne[0] % tr.block_elems != 0)
        throw Error(what + " of type " + tr.name + " has row length " + std::to_string(t.ne[0]) +
                    ", not a multiple of " + std::to_string(tr.block_elems));
    uint64_t n_bytes = 0;
    bool ok = checked_mul(uint64_t(t.ne[0] / tr.block_elems), tr.block_bytes, &n_bytes);
    for (int d = 1; d < 4 && ok; ++d) ok = checked_mul(n_bytes, uint64_t(t.ne[d]), &n_bytes);
    if (!ok)
        throw Error(what + " of type " + tr.name + " and shape " + shape_string(t) + " overflows 64 bits of bytes");
    t.n_bytes = n_bytes;
}

}  // namespace

const char* gguf_value_type_name(GgufValueType t) {
    static constexpr const char* kNames[] = {"UINT8", "INT8",   "UINT16", "INT16",  "UINT32", "INT32",  "FLOAT32",
                                             "BOOL",  "STRING", "ARRAY",  "UINT64", "INT64",  "FLOAT64"};
    const uint32_t i = uint32_t(t);
    return i < std::size(kNames) ? kNames[i] : "unknown";
}

bool GgufValue::is_integer() const { return is_integer_type(type); }
bool GgufValue::is_float() const { return is_float_type(type); }

size_t GgufTensor::row_bytes() const { return ggml_row_bytes(type, ne[0]); }

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path, GgufTensorData tensor_data) {
    std::unique_ptr<GgufFile> f(new GgufFile());
    f->path_ = path;
    try {
        f->map();
        f->parse(tensor_data);
    } catch (const Error& e) {
        throw Error(path + ": " + e.what());
    } catch (const std::bad_alloc&) {
        // Counts are bounded by the file size, but a huge valid-looking metadata array can still
        // exceed memory once decoded; that must reach the user as an error, not end the program.
        throw Error(path + ": out of memory while decoding the metadata");
    }
    return f;
}

namespace {

// The mappings of the GgufFiles alive (gguf_mapping_id).
struct Mapping {
    uintptr_t begin, end;
    uint64_t id;
};
std::mutex g_mappings_mutex;
std::vector<Mapping> g_mappings;
uint64_t g_last_mapping_id = 0;

}  // namespace

uint64_t gguf_mapping_id(const void* p, size_t bytes) {
    const auto begin = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lock(g_mappings_mutex);
    for (const Mapping& m : g_mappings)
        if (begin >= m.begin && begin <= m.end && bytes <= m.end - begin) return m.id;
    return 0;
}

GgufFile::~GgufFile() {
    if (base_) {
        std::lock_guard<std::mutex> lock(g_mappings_mutex);
        std::erase_if(g_mappings, [&](const Mapping& m) { return m.begin == reinterpret_cast<uintptr_t>(base_); });
    }
    if (base_) munmap(const_cast<uint8_t*>(base_), size_t(size_));
    if (fd_ >= 0) ::close(fd_);
}

void GgufFile::map() {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw Error(std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (fstat(fd_, &st) != 0) throw Error(std::string("cannot stat: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) throw Error("not a regular file");
    size_ = uint64_t(st.st_size);
    // An empty file cannot be mapped; the parser reports it as truncated without touching base_.
    if (size_ == 0) return;
    void* p = mmap(nullptr, size_t(size_), PROT_READ, MAP_PRIVATE, fd_, 0);
    if (p == MAP_FAILED) throw Error(std::string("cannot map into memory: ") + std::strerror(errno));
    base_ = static_cast<const uint8_t*>(p);
    std::lock_guard<std::mutex> lock(g_mappings_mutex);
    g_mappings.push_back({reinterpret_cast<uintptr_t>(base_), reinterpret_cast<uintptr_t>(base_) + uintptr_t(size_), ++g_last_mapping_id});
}

void GgufFile::parse(GgufTensorData tensor_data) {
    GgufReader r(base_, size_);
    const uint32_t magic = r.u32("GGUF magic");
    if (magic != kGgufMagic)
        throw Error("not a GGUF file: it starts with bytes " + hex_bytes(base_, 4) +
                    ", expected 47 47 55 46 (\"GGUF\")");
    version_ = r.u32("GGUF version");
    check_version(version_);
    const uint64_t n_tensors = r.u64("tensor count");
    const uint64_t n_kv = r.u64("metadata count");
    r.check_count(n_kv, kMinKvBytes, "metadata count");
    r.check_count(n_tensors, kMinTensorInfoBytes, "tensor count");

    parse_metadata(r, n_kv);
    read_alignment();
    parse_tensor_infos(r, n_tensors);

    // The data section starts at the next multiple of the alignment after the tensor infos.
    const uint64_t pad = (alignment_ - r.pos() % alignment_) % alignment_;
    if (!checked_add(r.pos(), pad, &data_offset_))
        throw Error("data section offset overflows 64 bits");
    for (GgufTensor& t : tensors_) locate_tensor(t, tensor_data);
}

void GgufFile::parse_metadata(GgufReader& r, uint64_t n_kv) {
    for (uint64_t k = 0; k < n_kv; ++k) {
        std::string key = r.string("key of metadata entry " + std::to_string(k));
        if (kv_index_.count(key)) throw Error("duplicate metadata key " + quoted(key));
        GgufValue v = read_value(r, key);
        kv_index_.emplace(key, kv_.size());
        kv_.emplace_back(std::move(key), std::move(v));
    }
}

void GgufFile::read_alignment() {
    const GgufValue* v = find("general.alignment");
    if (!v) {
        alignment_ = kDefaultAlignment;
        return;
    }
    if (v->type != GgufValueType::UINT32)
        throw Error("metadata key 'general.alignment' has type " + describe_type(*v) + ", expected UINT32");
    if (v->i == 0 || !std::has_single_bit(uint64_t(v->i)))
        throw Error("metadata key 'general.alignment' is " + std::to_string(v->i) +
                    "; it must be a nonzero power of two");
    alignment_ = uint32_t(v->i);
}

void GgufFile::parse_tensor_infos(GgufReader& r, uint64_t n_tensors) {
    // No reserve: the count was bounded by the file size, but a tensor info costs far more memory than
    // its smallest encoding, so storage only grows as infos are actually read.
    for (uint64_t k = 0; k < n_tensors; ++k) {
        GgufTensor t;
        t.name = r.string("name of tensor info " + std::to_string(k));
        if (t.name.size() > kMaxTensorNameBytes)
            throw Error("tensor name " + quoted(t.name) + " is " + std::to_string(t.name.size()) +
                        " bytes long; GGUF allows at most " + std::to_string(kMaxTensorNameBytes));
        if (tensor_index_.count(t.name)) throw Error("duplicate tensor name " + quoted(t.name));
        read_shape(r, t);
        const uint32_t raw_type = r.u32("type of tensor " + quoted(t.name));
        check_type_and_size(t, raw_type);
        t.offset = r.u64("data offset of tensor " + quoted(t.name));
        if (t.offset % alignment_ != 0)
            throw Error("tensor " + quoted(t.name) + " has data offset " + std::to_string(t.offset) +
                        ", not a multiple of the alignment " + std::to_string(alignment_));
        tensor_index_.emplace(t.name, tensors_.size());
        tensors_.push_back(std::move(t));
    }
}

void GgufFile::locate_tensor(GgufTensor& t, GgufTensorData tensor_data) {
    uint64_t begin = 0;
    uint64_t end = 0;
    if (!checked_add(data_offset_, t.offset, &begin) || !checked_add(begin, t.n_bytes, &end))
        throw Error("tensor " + quoted(t.name) + " has data offset " + std::to_string(t.offset) + " and size " +
                    std::to_string(t.n_bytes) + " that overflow 64 bits");
    if (end > size_ && tensor_data == GgufTensorData::MAY_BE_TRUNCATED) {
        ++n_truncated_;  // t.data stays nullptr: nothing may read it
        return;
    }
    if (end > size_)
        throw Error("truncated: tensor " + quoted(t.name) + " needs bytes " + std::to_string(begin) + ".." +
                    std::to_string(end) + " but the file has " + std::to_string(size_));
    t.data = base_ + begin;
}

const GgufValue* GgufFile::find(std::string_view key) const {
    const auto it = kv_index_.find(std::string(key));
    return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
    const auto it = tensor_index_.find(std::string(name));
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

void GgufFile::throw_type_error(std::string_view key, const GgufValue& v, const char* expected) const {
    throw Error(path_ + ": metadata key " + quoted(key) + " has type " + describe_type(v) + ", expected " +
                 expected);
}

std::optional<uint64_t> GgufFile::get_uint(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_integer()) throw_type_error(key, *v, "an integer");
    if (v->i < 0)
        throw Error(path_ + ": metadata key " + quoted(key) + " is " + std::to_string(v->i) +
                    ", expected a non-negative integer");
    return uint64_t(v->i);
}

std::optional<int64_t> GgufFile::get_int(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (!v->is_integer()) throw_type_error(key, *v, "an integer");
    return v->i;
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->is_float()) return v->f;
    if (v->is_integer()) return double(v->i);
    throw_type_error(key, *v, "a number");
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != GgufValueType::BOOL) throw_type_error(key, *v, "BOOL");
    return v->i != 0;
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != GgufValueType::STRING) throw_type_error(key, *v, "STRING");
    return v->s;
}

const std::vector<std::string>* GgufFile::get_string_array(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return nullptr;
    if (v->type != GgufValueType::ARRAY || v->elem_type != GgufValueType::STRING)
        throw_type_error(key, *v, "an array of STRING");
    return &v->strings;
}

const std::vector<double>* GgufFile::get_float_array(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return nullptr;
    if (v->type != GgufValueType::ARRAY || !is_float_type(v->elem_type))
        throw_type_error(key, *v, "an array of FLOAT32 or FLOAT64");
    return &v->floats;
}

const std::vector<int64_t>* GgufFile::get_int_array(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return nullptr;
    if (v->type != GgufValueType::ARRAY || !(is_integer_type(v->elem_type) || v->elem_type == GgufValueType::BOOL))
        throw_type_error(key, *v, "an array of integers");
    return &v->ints;
}

}  // namespace wb
