// GGUF reader: a valid file built here reads back exactly; every malformed file gives a specific
// wb::Error (never a crash, an out-of-bounds read or a huge allocation).
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cpu_cost.h"
#include "gguf/gguf_file.h"
#include "util/error.h"
#include "util/fp16.h"

using wb::GgmlType;
using wb::GgufFile;
using wb::GgufTensorData;
using wb::GgufValueType;

namespace {

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// Little-endian serialisation, written independently of the reader under test.
class Bytes {
public:
    Bytes& u8(uint8_t v) { return put(v, 1); }
    Bytes& u16(uint16_t v) { return put(v, 2); }
    Bytes& u32(uint32_t v) { return put(v, 4); }
    Bytes& u64(uint64_t v) { return put(v, 8); }
    Bytes& f32(float v) { return u32(wb::f32_to_bits(v)); }
    Bytes& f64(double v) {
        uint64_t bits;
        std::memcpy(&bits, &v, 8);
        return u64(bits);
    }
    Bytes& str(const std::string& s) {
        u64(s.size());
        data.append(s.data(), qsizetype(s.size()));
        return *this;
    }
    Bytes& raw(const QByteArray& b) {
        data.append(b);
        return *this;
    }

    QByteArray data;

private:
    Bytes& put(uint64_t v, int n) {
        for (int i = 0; i < n; ++i) data.append(char((v >> (8 * i)) & 0xff));
        return *this;
    }
};

struct TensorSpec {
    std::string name;
    std::vector<uint64_t> ne;         // n_dims = ne.size()
    uint32_t type = 0;                // raw ggml type value
    QByteArray data;                  // written to the data section when the offset is automatic
    std::optional<uint64_t> offset;   // set: written as-is and no data is placed
};

// Builds a GGUF file the way llama.cpp's writer lays it out: header, metadata, tensor infos, zero
// padding to the alignment, then each tensor's data at an aligned offset. No padding follows the last
// tensor, so every proper prefix of a built file is missing some required byte.
class GgufBuilder {
public:
    QByteArray magic = "GGUF";
    uint32_t version = 3;
    uint32_t alignment = 32;                 // layout only; add a general.alignment key to announce it
    std::optional<uint64_t> tensor_count;    // header counts, when a test needs them to lie
    std::optional<uint64_t> kv_count;
    uint64_t data_start = 0;                 // set by build()

    GgufBuilder& kv(const std::string& key, GgufValueType type, const Bytes& payload) {
        kvs_.push_back({key, uint32_t(type), payload.data});
        return *this;
    }
    GgufBuilder& kv_raw_type(const std::string& key, uint32_t type, const Bytes& payload) {
        kvs_.push_back({key, type, payload.data});
        return *this;
    }
    GgufBuilder& kv_u32(const std::string& key, uint32_t v) { return kv(key, GgufValueType::UINT32, Bytes().u32(v)); }
    GgufBuilder& kv_string(const std::string& key, const std::string& v) {
        return kv(key, GgufValueType::STRING, Bytes().str(v));
    }
    GgufBuilder& tensor(TensorSpec t) {
        tensors_.push_back(std::move(t));
        return *this;
    }

    QByteArray build() {
        Bytes b;
        b.raw(magic).u32(version).u64(tensor_count.value_or(tensors_.size())).u64(kv_count.value_or(kvs_.size()));
        for (const Kv& kv : kvs_) b.str(kv.key).u32(kv.type).raw(kv.payload);
        std::vector<uint64_t> offsets;
        uint64_t cursor = 0;
        for (const TensorSpec& t : tensors_) {
            const uint64_t off = t.offset ? *t.offset : align(cursor);
            if (!t.offset) cursor = off + uint64_t(t.data.size());
            offsets.push_back(off);
            b.str(t.name).u32(uint32_t(t.ne.size()));
            for (uint64_t n : t.ne) b.u64(n);
            b.u32(t.type).u64(off);
        }
        data_start = align(uint64_t(b.data.size()));
        for (size_t k = 0; k < tensors_.size(); ++k) {
            if (tensors_[k].offset) continue;
            b.data.append(QByteArray(qsizetype(data_start + offsets[k]) - b.data.size(), '\0'));
            b.raw(tensors_[k].data);
        }
        return b.data;
    }

private:
    struct Kv {
        std::string key;
        uint32_t type;
        QByteArray payload;
    };
    uint64_t align(uint64_t x) const { return x + (alignment - x % alignment) % alignment; }

    std::vector<Kv> kvs_;
    std::vector<TensorSpec> tensors_;
};

QByteArray f32_data(int n) {
    Bytes b;
    for (int i = 0; i < n; ++i) b.f32(float(i) * 0.25f - 1.0f);
    return b.data;
}

QByteArray f16_data(int n) {
    Bytes b;
    for (int i = 0; i < n; ++i) b.u16(wb::f32_to_fp16(float(i) - 3.5f));
    return b.data;
}

// Q8_0 blocks: fp16 scale followed by 32 int8 quants; the content only has to round-trip.
QByteArray q8_0_data(int n_blocks) {
    Bytes b;
    for (int k = 0; k < n_blocks; ++k) {
        b.u16(wb::f32_to_fp16(0.125f * float(k + 1)));
        for (int j = 0; j < 32; ++j) b.u8(uint8_t(j * 7 + k));
    }
    return b.data;
}

std::vector<TensorSpec> sample_tensors() {
    return {
        {"token_embd.weight", {4, 3}, uint32_t(GgmlType::F32), f32_data(12), std::nullopt},
        {"output_norm.weight", {8}, uint32_t(GgmlType::F16), f16_data(8), std::nullopt},
        {"blk.0.attn_q.weight", {64, 2}, uint32_t(GgmlType::Q8_0), q8_0_data(4), std::nullopt},
    };
}

// Metadata of every value type, including arrays of strings and numbers.
GgufBuilder sample_builder() {
    GgufBuilder g;
    g.kv_string("general.architecture", "llama")
        .kv("test.u8", GgufValueType::UINT8, Bytes().u8(200))
        .kv("test.i8", GgufValueType::INT8, Bytes().u8(uint8_t(-100)))
        .kv("test.u16", GgufValueType::UINT16, Bytes().u16(60000))
        .kv("test.i16", GgufValueType::INT16, Bytes().u16(uint16_t(-30000)))
        .kv_u32("test.u32", 4000000000u)
        .kv("test.i32", GgufValueType::INT32, Bytes().u32(uint32_t(-2000000000)))
        .kv("test.f32", GgufValueType::FLOAT32, Bytes().f32(0.5f))
        .kv("test.bool", GgufValueType::BOOL, Bytes().u8(1))
        .kv("test.bool_false", GgufValueType::BOOL, Bytes().u8(0))
        .kv_string("test.utf8", "h\xc3\xa9llo \xe2\x9c\x93")
        .kv_string("test.empty", "")
        .kv("test.u64", GgufValueType::UINT64, Bytes().u64((uint64_t(1) << 40) + 3))
        .kv("test.i64", GgufValueType::INT64, Bytes().u64(uint64_t(-(int64_t(1) << 40))))
        .kv("test.f64", GgufValueType::FLOAT64, Bytes().f64(3.141592653589793))
        .kv("tokenizer.ggml.tokens", GgufValueType::ARRAY,
            Bytes().u32(uint32_t(GgufValueType::STRING)).u64(4).str("<s>").str("</s>").str("hello").str(""))
        .kv("tokenizer.ggml.scores", GgufValueType::ARRAY,
            Bytes().u32(uint32_t(GgufValueType::FLOAT32)).u64(3).f32(0.0f).f32(-1.5f).f32(2.25f))
        .kv("tokenizer.ggml.token_type", GgufValueType::ARRAY,
            Bytes().u32(uint32_t(GgufValueType::INT32)).u64(3).u32(1).u32(3).u32(uint32_t(-7)))
        .kv("test.bools", GgufValueType::ARRAY, Bytes().u32(uint32_t(GgufValueType::BOOL)).u64(3).u8(1).u8(0).u8(1))
        .kv("test.u8s", GgufValueType::ARRAY, Bytes().u32(uint32_t(GgufValueType::UINT8)).u64(2).u8(0).u8(255))
        .kv("test.u64s", GgufValueType::ARRAY, Bytes().u32(uint32_t(GgufValueType::UINT64)).u64(1).u64(1ull << 62))
        .kv("test.f64s", GgufValueType::ARRAY, Bytes().u32(uint32_t(GgufValueType::FLOAT64)).u64(1).f64(1e300))
        .kv("test.empty_array", GgufValueType::ARRAY, Bytes().u32(uint32_t(GgufValueType::UINT32)).u64(0));
    for (TensorSpec& t : sample_tensors()) g.tensor(std::move(t));
    return g;
}

// A builder holding one tensor info and whatever data it gets.
GgufBuilder one_tensor(TensorSpec t) {
    GgufBuilder g;
    g.tensor(std::move(t));
    return g;
}

// The header of a version 3 file with the given counts, ready for hand-written entries.
Bytes header(uint64_t n_tensors, uint64_t n_kv) {
    Bytes b;
    b.raw("GGUF").u32(3).u64(n_tensors).u64(n_kv);
    return b;
}

}  // namespace

class TestGguf : public QObject {
    Q_OBJECT

private:
    QTemporaryDir dir_;

    std::string write(const QByteArray& bytes, const QString& name = "model.gguf") {
        const QString path = dir_.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(bytes) != bytes.size())
            qFatal("cannot write %s", qPrintable(path));
        return path.toStdString();
    }

    // The message of the wb::Error that opening these bytes must throw; any other exception fails the
    // test, and so does a successful open.
    std::optional<std::string> open_error(const QByteArray& bytes) {
        const std::string path = write(bytes);
        try {
            GgufFile::open(path);
        } catch (const wb::Error& e) {
            const std::string msg = e.what();
            if (msg.rfind(path + ": ", 0) != 0) qWarning("message does not start with the path: %s", msg.c_str());
            return msg.rfind(path + ": ", 0) == 0 ? std::optional(msg) : std::nullopt;
        }
        qWarning("opening %lld bytes succeeded", qlonglong(bytes.size()));
        return std::nullopt;
    }

private Q_SLOTS:
    void initTestCase() { QVERIFY(dir_.isValid()); }

    void valid_file_reads_back_every_value_and_tensor_data();
    void valid_file_reads_back_every_value_and_tensor_data_data();
    void every_proper_prefix_of_a_file_is_rejected();
    void malformed_file_is_rejected_with_specific_message();
    void malformed_file_is_rejected_with_specific_message_data();
    void typed_getter_rejects_wrong_type_naming_both();
    void typed_getter_rejects_wrong_type_naming_both_data();
    void absent_key_and_tensor_give_empty_results();
    void missing_file_error_names_the_path();
    void cut_off_tensor_data_opens_for_metadata_only_use();
};

void TestGguf::valid_file_reads_back_every_value_and_tensor_data_data() {
    QTest::addColumn<uint32_t>("version");
    QTest::addColumn<uint32_t>("alignment");
    QTest::addColumn<bool>("alignment_key");
    QTest::addRow("v3, default alignment") << 3u << 32u << false;
    QTest::addRow("v2, default alignment") << 2u << 32u << false;
    QTest::addRow("v3, general.alignment 64") << 3u << 64u << true;
    QTest::addRow("v3, general.alignment 8") << 3u << 8u << true;
}

void TestGguf::valid_file_reads_back_every_value_and_tensor_data() {
    QFETCH(uint32_t, version);
    QFETCH(uint32_t, alignment);
    QFETCH(bool, alignment_key);
    GgufBuilder g = sample_builder();
    g.version = version;
    g.alignment = alignment;
    if (alignment_key) g.kv_u32("general.alignment", alignment);
    const QByteArray bytes = g.build();
    const auto f = GgufFile::open(write(bytes));

    QCOMPARE(f->version(), version);
    QCOMPARE(f->alignment(), alignment);
    QCOMPARE(f->file_size(), uint64_t(bytes.size()));
    QCOMPARE(f->data_offset(), g.data_start);
    QCOMPARE(f->metadata().size(), size_t(alignment_key ? 23 : 22));
    QCOMPARE(f->metadata().front().first, std::string("general.architecture"));

    QCOMPARE(f->get_string("general.architecture"), std::optional<std::string>("llama"));
    QCOMPARE(f->get_uint("test.u8"), std::optional<uint64_t>(200));
    QCOMPARE(f->get_int("test.i8"), std::optional<int64_t>(-100));
    QCOMPARE(f->get_uint("test.u16"), std::optional<uint64_t>(60000));
    QCOMPARE(f->get_int("test.i16"), std::optional<int64_t>(-30000));
    QCOMPARE(f->get_uint("test.u32"), std::optional<uint64_t>(4000000000u));
    QCOMPARE(f->get_int("test.i32"), std::optional<int64_t>(-2000000000));
    QCOMPARE(f->get_float("test.f32"), std::optional<double>(0.5));
    QCOMPARE(f->get_bool("test.bool"), std::optional<bool>(true));
    QCOMPARE(f->get_bool("test.bool_false"), std::optional<bool>(false));
    QCOMPARE(f->get_string("test.utf8"), std::optional<std::string>("h\xc3\xa9llo \xe2\x9c\x93"));
    QCOMPARE(f->get_string("test.empty"), std::optional<std::string>(""));
    QCOMPARE(f->get_uint("test.u64"), std::optional<uint64_t>((uint64_t(1) << 40) + 3));
    QCOMPARE(f->get_int("test.i64"), std::optional<int64_t>(-(int64_t(1) << 40)));
    QCOMPARE(f->get_float("test.f64"), std::optional<double>(3.141592653589793));
    // llama.cpp writes most hyperparameters as u32, and some readers want them as floats.
    QCOMPARE(f->get_float("test.u32"), std::optional<double>(4000000000.0));
    QCOMPARE(f->get_int("test.u32"), std::optional<int64_t>(4000000000));

    QCOMPARE(*f->get_string_array("tokenizer.ggml.tokens"), (std::vector<std::string>{"<s>", "</s>", "hello", ""}));
    QCOMPARE(*f->get_float_array("tokenizer.ggml.scores"), (std::vector<double>{0.0, -1.5, 2.25}));
    QCOMPARE(*f->get_int_array("tokenizer.ggml.token_type"), (std::vector<int64_t>{1, 3, -7}));
    QCOMPARE(*f->get_int_array("test.bools"), (std::vector<int64_t>{1, 0, 1}));
    QCOMPARE(*f->get_int_array("test.u8s"), (std::vector<int64_t>{0, 255}));
    QCOMPARE(*f->get_int_array("test.u64s"), (std::vector<int64_t>{int64_t(1) << 62}));
    QCOMPARE(*f->get_float_array("test.f64s"), (std::vector<double>{1e300}));
    QVERIFY(f->get_int_array("test.empty_array")->empty());
    const wb::GgufValue* arr = f->find("tokenizer.ggml.scores");
    QVERIFY(arr);
    QCOMPARE(arr->type, GgufValueType::ARRAY);
    QCOMPARE(arr->elem_type, GgufValueType::FLOAT32);
    QCOMPARE(arr->array_len, uint64_t(3));

    const std::vector<TensorSpec> specs = sample_tensors();
    QCOMPARE(f->tensors().size(), specs.size());
    const size_t expected_row_bytes[] = {16, 16, 68};
    for (size_t k = 0; k < specs.size(); ++k) {
        const wb::GgufTensor* t = f->find_tensor(specs[k].name);
        QVERIFY(t);
        QCOMPARE(t, &f->tensors()[k]);
        QCOMPARE(t->n_dims, uint32_t(specs[k].ne.size()));
        for (size_t d = 0; d < 4; ++d)
            QCOMPARE(t->ne[d], d < specs[k].ne.size() ? int64_t(specs[k].ne[d]) : int64_t(1));
        QCOMPARE(uint32_t(t->type), specs[k].type);
        QCOMPARE(t->n_bytes, uint64_t(specs[k].data.size()));
        QCOMPARE(t->row_bytes(), expected_row_bytes[k]);
        QCOMPARE(t->offset % alignment, uint64_t(0));
        // Data pointers are laid out in the mapping exactly as the offsets say.
        QCOMPARE(uint64_t(t->data - f->tensors()[0].data), t->offset - f->tensors()[0].offset);
        QCOMPARE(QByteArray(reinterpret_cast<const char*>(t->data), qsizetype(t->n_bytes)), specs[k].data);
    }
    QCOMPARE(f->tensors()[0].offset, uint64_t(0));
    QCOMPARE(f->tensors()[2].n_rows(), int64_t(2));
    QCOMPARE(f->tensors()[2].n_elements(), int64_t(128));
}

void TestGguf::every_proper_prefix_of_a_file_is_rejected() {
    GgufBuilder g = sample_builder();
    const QByteArray bytes = g.build();
    QVERIFY(GgufFile::open(write(bytes)));
    // Every byte of the header, metadata, tensor infos and padding, the start of the data section, then
    // a sample through the data up to the last byte.
    std::vector<qsizetype> lengths;
    for (qsizetype n = 0; n < qsizetype(g.data_start) + 40; ++n) lengths.push_back(n);
    for (qsizetype n = qsizetype(g.data_start) + 40; n < bytes.size(); n += 11) lengths.push_back(n);
    lengths.push_back(bytes.size() - 1);
    for (qsizetype n : lengths) {
        const std::optional<std::string> msg = open_error(bytes.left(n));
        if (!msg) QFAIL(qPrintable(QString("prefix of %1 bytes was not rejected properly").arg(n)));
        QVERIFY2(msg->find("truncated") != std::string::npos, msg->c_str());
    }
}

void TestGguf::malformed_file_is_rejected_with_specific_message_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QStringList>("phrases");
    const auto row = [](const char* name, const QByteArray& bytes, const QStringList& phrases) {
        QTest::newRow(name) << bytes << phrases;
    };
    const auto build = [](GgufBuilder g) { return g.build(); };
    const auto with_magic = [&](const char* magic) {
        GgufBuilder g = sample_builder();
        g.magic = magic;
        return g.build();
    };
    const auto with_version = [&](uint32_t v) {
        GgufBuilder g = sample_builder();
        g.version = v;
        return g.build();
    };
    const auto kv_file = [&](const char* key, GgufValueType type, const Bytes& payload) {
        return build(GgufBuilder().kv(key, type, payload));
    };
    const auto array_of = [](GgufValueType elem, uint64_t n) { return Bytes().u32(uint32_t(elem)).u64(n); };
    const uint32_t f32 = uint32_t(GgmlType::F32);

    row("empty file", QByteArray(), {"truncated", "GGUF magic"});
    row("bad magic", with_magic("GGUX"), {"not a GGUF file", "47 47 55 58"});
    row("version 1", with_version(1), {"version 1 is not supported"});
    row("byte-swapped version 3", with_version(0x03000000), {"big-endian"});
    row("version 4", with_version(4), {"unsupported GGUF version 4"});
    {
        GgufBuilder g = sample_builder();
        g.tensor_count = uint64_t(1) << 63;
        row("tensor count 2^63", g.build(), {"tensor count", "9223372036854775808"});
    }
    {
        GgufBuilder g = sample_builder();
        g.kv_count = kU64Max;
        row("metadata count 2^64-1", g.build(), {"metadata count", "18446744073709551615"});
    }
    row("key length 2^63", header(0, 1).u64(uint64_t(1) << 63).raw(QByteArray(16, 'k')).data,
        {"truncated", "key of metadata entry 0"});
    row("string value length 2^64-1", kv_file("test.s", GgufValueType::STRING, Bytes().u64(kU64Max)),
        {"truncated", "value of metadata key 'test.s'"});
    row("u32 array length 2^62", kv_file("test.a", GgufValueType::ARRAY, array_of(GgufValueType::UINT32, 1ull << 62)),
        {"truncated", "array in metadata key 'test.a'"});
    row("string array length 2^64-1",
        kv_file("test.a", GgufValueType::ARRAY, array_of(GgufValueType::STRING, kU64Max)),
        {"truncated", "array in metadata key 'test.a'"});
    row("string in array longer than the file",
        kv_file("test.a", GgufValueType::ARRAY, array_of(GgufValueType::STRING, 2).str("ok").u64(1000).u64(0)),
        {"truncated", "string element of array in metadata key 'test.a'"});
    row("nested array", kv_file("test.a", GgufValueType::ARRAY, array_of(GgufValueType::ARRAY, 1)),
        {"'test.a'", "array of arrays"});
    row("array of unknown type", kv_file("test.a", GgufValueType::ARRAY, Bytes().u32(13).u64(0)),
        {"'test.a'", "unknown value type 13"});
    row("unknown value type", build(GgufBuilder().kv_raw_type("test.x", 13, Bytes().u32(0))),
        {"'test.x'", "unknown value type 13"});
    row("bool value 2", kv_file("test.b", GgufValueType::BOOL, Bytes().u8(2)), {"'test.b'", "BOOL value 2"});
    row("bool array element 2", kv_file("test.b", GgufValueType::ARRAY, array_of(GgufValueType::BOOL, 2).u8(1).u8(2)),
        {"'test.b'", "BOOL value 2"});
    row("uint64 above int64 max", kv_file("test.u", GgufValueType::UINT64, Bytes().u64(kU64Max)),
        {"'test.u'", "UINT64 value 18446744073709551615"});
    row("duplicate key", build(GgufBuilder().kv_u32("test.a", 1).kv_u32("test.b", 2).kv_u32("test.a", 3)),
        {"duplicate metadata key 'test.a'"});
    row("alignment 0", build(GgufBuilder().kv_u32("general.alignment", 0)),
        {"'general.alignment'", "is 0", "power of two"});
    row("alignment 48", build(GgufBuilder().kv_u32("general.alignment", 48)),
        {"'general.alignment'", "is 48", "power of two"});
    row("alignment as u64", build(GgufBuilder().kv("general.alignment", GgufValueType::UINT64, Bytes().u64(32))),
        {"'general.alignment'", "type UINT64, expected UINT32"});

    row("5 dimensions", build(one_tensor({"t5", {1, 1, 1, 1, 1}, f32, f32_data(1), {}})),
        {"'t5'", "5 dimensions"});
    row("0 dimensions", build(one_tensor({"t0", {}, f32, f32_data(1), {}})), {"'t0'", "0 dimensions"});
    row("dimension of size 0", build(one_tensor({"z", {4, 0}, f32, {}, {}})), {"'z'", "dimension 1 of size 0"});
    row("dimension above int64 max", build(one_tensor({"big", {uint64_t(1) << 63}, f32, {}, {}})),
        {"'big'", "dimension 0 of size 9223372036854775808"});
    row("element count overflow", build(one_tensor({"ov", {1ull << 32, 1ull << 32}, f32, {}, {}})),
        {"'ov'", "element count overflows"});
    row("byte size overflow", build(one_tensor({"ovb", {1ull << 31, 1ull << 31}, f32, {}, {}})),
        {"'ovb'", "overflows 64 bits of bytes"});
    row("unknown type 99", build(one_tensor({"blk.0.ffn_up.weight", {32}, 99, {}, {}})),
        {"unknown tensor type 99", "'blk.0.ffn_up.weight'"});
    row("removed type 4", build(one_tensor({"old", {32}, 4, {}, {}})), {"unknown tensor type 4", "'old'"});
    row("row length not a multiple of the block",
        build(one_tensor({"blk.0.ffn_down.weight", {576, 2}, uint32_t(GgmlType::Q4_K), {}, {}})),
        {"tensor 'blk.0.ffn_down.weight' of type Q4_K has row length 576, not a multiple of 256"});
    row("Q8_0 row length 40", build(one_tensor({"q", {40}, uint32_t(GgmlType::Q8_0), {}, {}})),
        {"'q'", "row length 40, not a multiple of 32"});
    row("name of 64 bytes", build(one_tensor({std::string(64, 'n'), {1}, f32, f32_data(1), {}})),
        {"64 bytes long", "at most 63"});
    row("name of 1000 bytes is shown shortened", build(one_tensor({std::string(1000, 'n'), {1}, f32, {}, {}})),
        {"1000 bytes long", "nnn...'"});
    row("control bytes in a key are escaped", build(GgufBuilder().kv_u32("bad\nkey", 1).kv_u32("bad\nkey", 2)),
        {"duplicate metadata key 'bad\\x0akey'"});
    row("misaligned offset", build(one_tensor({"mis", {1}, f32, {}, 16})),
        {"'mis'", "offset 16, not a multiple of the alignment 32"});
    row("offset beyond the file", build(one_tensor({"blk.3.attn_q.weight", {8}, f32, {}, 4096})),
        {"truncated: tensor 'blk.3.attn_q.weight' needs bytes", "but the file has"});
    row("offset near 2^64", build(one_tensor({"far", {8}, f32, {}, kU64Max - 31})), {"'far'", "overflow"});
    {
        GgufBuilder g;
        g.tensor({"a", {4}, f32, f32_data(4), {}}).tensor({"a", {4}, f32, f32_data(4), {}});
        row("duplicate tensor name", g.build(), {"duplicate tensor name 'a'"});
    }
}

void TestGguf::malformed_file_is_rejected_with_specific_message() {
    QFETCH(QByteArray, bytes);
    QFETCH(QStringList, phrases);
    std::optional<std::string> msg;
    const double cpu_s = wb_test::cpu_seconds_of([&] { msg = open_error(bytes); });
    QVERIFY(msg);
    for (const QString& p : phrases)
        QVERIFY2(msg->find(p.toStdString()) != std::string::npos, msg->c_str());
    // Hostile counts must be refused up front, not after looping or allocating towards them: a refusal
    // takes microseconds, a loop towards 2^64 forever. The thread's CPU time (a generous bound, so that
    // sanitizer and valgrind runs pass too; waiting for a core on a loaded machine does not count).
    QVERIFY2(cpu_s < 2.0, qPrintable(QString("took %1 ms of CPU").arg(cpu_s * 1e3, 0, 'f', 1)));
}

void TestGguf::typed_getter_rejects_wrong_type_naming_both_data() {
    QTest::addColumn<QString>("getter");
    QTest::addColumn<QString>("key");
    QTest::addColumn<QString>("phrase");
    QTest::newRow("uint of string") << "uint" << "general.architecture" << "has type STRING, expected an integer";
    QTest::newRow("uint of negative") << "uint" << "test.i8" << "is -100, expected a non-negative integer";
    QTest::newRow("uint of bool") << "uint" << "test.bool" << "has type BOOL, expected an integer";
    QTest::newRow("int of float") << "int" << "test.f32" << "has type FLOAT32, expected an integer";
    QTest::newRow("int of array") << "int" << "tokenizer.ggml.tokens"
                                  << "has type ARRAY of STRING, expected an integer";
    QTest::newRow("float of string") << "float" << "general.architecture" << "has type STRING, expected a number";
    QTest::newRow("bool of u8") << "bool" << "test.u8" << "has type UINT8, expected BOOL";
    QTest::newRow("string of u32") << "string" << "test.u32" << "has type UINT32, expected STRING";
    QTest::newRow("string array of floats") << "string_array" << "tokenizer.ggml.scores"
                                            << "has type ARRAY of FLOAT32, expected an array of STRING";
    QTest::newRow("float array of ints") << "float_array" << "tokenizer.ggml.token_type"
                                         << "has type ARRAY of INT32, expected an array of FLOAT32 or FLOAT64";
    QTest::newRow("int array of strings") << "int_array" << "tokenizer.ggml.tokens"
                                          << "has type ARRAY of STRING, expected an array of integers";
    QTest::newRow("int array of scalar") << "int_array" << "test.i32" << "has type INT32, expected an array";
}

void TestGguf::typed_getter_rejects_wrong_type_naming_both() {
    QFETCH(QString, getter);
    QFETCH(QString, key);
    QFETCH(QString, phrase);
    GgufBuilder g = sample_builder();
    const std::string path = write(g.build());
    const auto f = GgufFile::open(path);
    const std::string k = key.toStdString();
    try {
        if (getter == "uint") f->get_uint(k);
        if (getter == "int") f->get_int(k);
        if (getter == "float") f->get_float(k);
        if (getter == "bool") f->get_bool(k);
        if (getter == "string") f->get_string(k);
        if (getter == "string_array") f->get_string_array(k);
        if (getter == "float_array") f->get_float_array(k);
        if (getter == "int_array") f->get_int_array(k);
        QFAIL("no error");
    } catch (const wb::Error& e) {
        const std::string msg = e.what();
        QVERIFY2(msg.rfind(path + ": metadata key '" + k + "'", 0) == 0, e.what());
        QVERIFY2(msg.find(phrase.toStdString()) != std::string::npos, e.what());
    }
}

void TestGguf::absent_key_and_tensor_give_empty_results() {
    GgufBuilder g = sample_builder();
    const auto f = GgufFile::open(write(g.build()));
    QVERIFY(!f->find("absent"));
    QVERIFY(!f->get_uint("absent"));
    QVERIFY(!f->get_int("absent"));
    QVERIFY(!f->get_float("absent"));
    QVERIFY(!f->get_bool("absent"));
    QVERIFY(!f->get_string("absent"));
    QVERIFY(!f->get_string_array("absent"));
    QVERIFY(!f->get_float_array("absent"));
    QVERIFY(!f->get_int_array("absent"));
    QVERIFY(!f->find_tensor("absent.weight"));
}

void TestGguf::missing_file_error_names_the_path() {
    const std::string path = dir_.filePath("does-not-exist.gguf").toStdString();
    try {
        GgufFile::open(path);
        QFAIL("no error");
    } catch (const wb::Error& e) {
        QVERIFY2(std::string(e.what()).rfind(path + ": cannot open", 0) == 0, e.what());
    }
}

// The first part of a split model: every prefix that keeps the whole header opens with
// MAY_BE_TRUNCATED (metadata intact, cut-off tensors without data), is still refused by default, and a
// prefix that cuts into the header is refused either way.
void TestGguf::cut_off_tensor_data_opens_for_metadata_only_use() {
    GgufBuilder g = sample_builder();
    const QByteArray bytes = g.build();
    const std::vector<TensorSpec> specs = sample_tensors();
    for (qsizetype n = qsizetype(g.data_start); n < bytes.size(); ++n) {
        const std::string path = write(bytes.left(n));
        const auto f = GgufFile::open(path, GgufTensorData::MAY_BE_TRUNCATED);
        QCOMPARE(f->get_string("general.architecture"), std::optional<std::string>("llama"));
        QCOMPARE(*f->get_string_array("tokenizer.ggml.tokens"), (std::vector<std::string>{"<s>", "</s>", "hello", ""}));
        QCOMPARE(f->tensors().size(), specs.size());
        size_t cut = 0;
        for (const wb::GgufTensor& t : f->tensors()) {
            const bool inside = f->data_offset() + t.offset + t.n_bytes <= uint64_t(n);
            QCOMPARE(t.data != nullptr, inside);
            if (!inside) ++cut;
        }
        QVERIFY(cut > 0);
        QCOMPARE(f->n_truncated_tensors(), cut);
        QVERIFY2(open_error(bytes.left(n)).has_value(), "a model with cut-off tensor data must still be refused");
    }
    // Below data_start - 32 the cut is inside the tensor infos, not in the padding after them.
    for (qsizetype n = 0; n < qsizetype(g.data_start) - 32; n += 7) {
        try {
            GgufFile::open(write(bytes.left(n)), GgufTensorData::MAY_BE_TRUNCATED);
            QFAIL(qPrintable(QString("a header cut at %1 bytes was accepted").arg(n)));
        } catch (const wb::Error& e) {
            QVERIFY2(std::string(e.what()).find("truncated") != std::string::npos, e.what());
        }
    }
    QCOMPARE(GgufFile::open(write(bytes), GgufTensorData::MAY_BE_TRUNCATED)->n_truncated_tensors(), size_t(0));
}

QTEST_GUILESS_MAIN(TestGguf)
#include "test_gguf.moc"
