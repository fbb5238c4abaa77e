#include "gguf/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "gguf/gguf_file.h"
#include "util/error.h"

namespace wb {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint32_t kVersion = 3;
constexpr uint64_t kAlignment = 32;      // the format's default (no general.alignment key needed)

// Little-endian append helpers (every supported host is little-endian, as GGUF is).
template <typename T>
void put(std::vector<uint8_t>& out, T v) {
    const size_t at = out.size();
    out.resize(at + sizeof v);
    std::memcpy(out.data() + at, &v, sizeof v);
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
    put<uint64_t>(out, s.size());
    out.insert(out.end(), s.begin(), s.end());
}

void put_type(std::vector<uint8_t>& out, GgufValueType t) { put<uint32_t>(out, uint32_t(t)); }

}  // namespace

void GgufWriter::set(const std::string& key, std::vector<uint8_t> encoded) {
    for (Kv& kv : kv_)
        if (kv.key == key) {
            kv.encoded = std::move(encoded);
            return;
        }
    kv_.push_back({key, std::move(encoded)});
}

void GgufWriter::set_u32(const std::string& key, uint32_t v) {
    std::vector<uint8_t> e;
    put_type(e, GgufValueType::UINT32);
    put(e, v);
    set(key, std::move(e));
}

void GgufWriter::set_i32(const std::string& key, int32_t v) {
    std::vector<uint8_t> e;
    put_type(e, GgufValueType::INT32);
    put(e, v);
    set(key, std::move(e));
}

void GgufWriter::set_f32(const std::string& key, float v) {
    std::vector<uint8_t> e;
    put_type(e, GgufValueType::FLOAT32);
    put(e, v);
    set(key, std::move(e));
}

void GgufWriter::set_bool(const std::string& key, bool v) {
    std::vector<uint8_t> e;
    put_type(e, GgufValueType::BOOL);
    put<uint8_t>(e, v ? 1 : 0);
    set(key, std::move(e));
}

void GgufWriter::set_string(const std::string& key, const std::string& v) {
    std::vector<uint8_t> e;
    put_type(e, GgufValueType::STRING);
    put_string(e, v);
    set(key, std::move(e));
}

void GgufWriter::set_string_array(const std::string& key, const std::vector<std::string>& v) {
    std::vector<uint8_t> e;
    put_type(e, GgufValueType::ARRAY);
    put_type(e, GgufValueType::STRING);
    put<uint64_t>(e, v.size());
    for (const std::string& s : v) put_string(e, s);
    set(key, std::move(e));
}

void GgufWriter::set_i32_array(const std::string& key, const std::vector<int32_t>& v) {
    std::vector<uint8_t> e;
    put_type(e, GgufValueType::ARRAY);
    put_type(e, GgufValueType::INT32);
    put<uint64_t>(e, v.size());
    for (int32_t x : v) put(e, x);
    set(key, std::move(e));
}

void GgufWriter::set_f32_array(const std::string& key, const std::vector<float>& v) {
    std::vector<uint8_t> e;
    put_type(e, GgufValueType::ARRAY);
    put_type(e, GgufValueType::FLOAT32);
    put<uint64_t>(e, v.size());
    for (float x : v) put(e, x);
    set(key, std::move(e));
}

uint64_t GgufWriter::tensor_bytes(GgmlType type, const std::vector<int64_t>& ne) {
    uint64_t rows = 1;
    for (size_t i = 1; i < ne.size(); ++i) rows *= uint64_t(ne[i]);
    return uint64_t(ggml_row_bytes(type, ne[0])) * rows;
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, const std::vector<int64_t>& ne, Fill fill) {
    const GgmlTypeTraits tr = ggml_type_traits(type);
    if (!tr.known || tr.block_bytes == 0) throw Error("GGUF writer: tensor '" + name + "' has an unknown type");
    if (ne.empty() || ne.size() > 4) throw Error("GGUF writer: tensor '" + name + "' needs 1 to 4 dimensions");
    for (int64_t n : ne)
        if (n <= 0) throw Error("GGUF writer: tensor '" + name + "' has a non-positive dimension");
    if (ne[0] % tr.block_elems != 0)
        throw Error("GGUF writer: tensor '" + name + "' has rows of " + std::to_string(ne[0]) + " elements, not a multiple of " +
                    std::to_string(tr.block_elems) + " (" + tr.name + " blocks)");
    tensors_.push_back({name, type, ne, tensor_bytes(type, ne), std::move(fill)});
}

bool GgufWriter::remove_tensor(const std::string& name) {
    for (auto it = tensors_.begin(); it != tensors_.end(); ++it)
        if (it->name == name) {
            tensors_.erase(it);
            return true;
        }
    return false;
}

void GgufWriter::write(const std::string& path) const {
    std::vector<uint8_t> head;
    put<uint32_t>(head, kMagic);
    put<uint32_t>(head, kVersion);
    put<uint64_t>(head, tensors_.size());
    put<uint64_t>(head, kv_.size());
    for (const Kv& kv : kv_) {
        put_string(head, kv.key);
        head.insert(head.end(), kv.encoded.begin(), kv.encoded.end());
    }
    uint64_t offset = 0;
    for (const TensorEntry& t : tensors_) {
        put_string(head, t.name);
        put<uint32_t>(head, uint32_t(t.ne.size()));
        for (int64_t n : t.ne) put<uint64_t>(head, uint64_t(n));
        put<uint32_t>(head, uint32_t(t.type));
        put<uint64_t>(head, offset);
        offset += (t.bytes + kAlignment - 1) / kAlignment * kAlignment;
    }
    head.resize((head.size() + kAlignment - 1) / kAlignment * kAlignment, 0);

    std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
    if (!f) throw Error("cannot create '" + path + "': " + std::strerror(errno));
    auto write_all = [&](const void* p, size_t n) {
        if (n && std::fwrite(p, 1, n, f.get()) != n) throw Error("writing '" + path + "' failed: " + std::strerror(errno));
    };
    write_all(head.data(), head.size());
    std::vector<uint8_t> buf;
    for (const TensorEntry& t : tensors_) {
        const size_t padded = size_t((t.bytes + kAlignment - 1) / kAlignment * kAlignment);
        buf.assign(padded, 0);
        t.fill(buf.data());
        write_all(buf.data(), padded);
    }
    if (std::fflush(f.get()) != 0) throw Error("writing '" + path + "' failed: " + std::strerror(errno));
}

}  // namespace wb
