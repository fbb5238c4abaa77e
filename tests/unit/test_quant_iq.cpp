// The grid IQ weight types (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S): their grids are the
// format's tables (SHA-256, end entries, value sets); dequantization follows the format definition
// (FACTS-2 3.2, re-implemented here from the raw bytes); every dot kernel, in both families, is the
// exact dot product up to float rounding and reproduces llama.cpp's x86 float orders bit for bit,
// the orders recomputed here from the block format.
#include <QCryptographicHash>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "quant/iq_grids.h"
#include "quant/quant.h"
#include "quant/quant_blocks.h"
#include "quant/quant_internal.h"
#include "util/fp16.h"

using wb::GgmlType;

namespace {

const GgmlType kTypes[] = {GgmlType::IQ3_S, GgmlType::IQ3_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_XXS,
                           GgmlType::IQ2_S, GgmlType::IQ1_S,   GgmlType::IQ1_M};

bool is_iq1(GgmlType t) { return t == GgmlType::IQ1_S || t == GgmlType::IQ1_M; }

template <class T>
QByteArray sha256_prefix(const T* table, size_t n) {
    // little-endian on every machine these tests run on (x86-64, aarch64)
    const QByteArray bytes(reinterpret_cast<const char*>(table), qsizetype(n * sizeof(T)));
    return QCryptographicHash::hash(bytes, QCryptographicHash::Sha256).toHex().left(16);
}

uint32_t le16(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8; }
uint32_t le32(const uint8_t* p) { return le16(p) | le16(p + 2) << 16; }

// One element as FACTS-2 3.2 defines it, read from the raw block bytes: the signed grid value, the
// group's 4- or 3-bit scale s, the IQ1 shift sign, and d.
struct Element {
    int value;  // magnitude * sign (IQ1: -1, 0, 1)
    int s;
    int shift;  // IQ1: +1 / -1
    float d;
};

uint64_t grid_entry(GgmlType t, int idx) {
    switch (t) {
        case GgmlType::IQ2_XXS: return wb::kIq2xxsGrid[idx];
        case GgmlType::IQ2_XS: return wb::kIq2xsGrid[idx];
        case GgmlType::IQ2_S: return wb::kIq2sGrid[idx];
        default: return wb::kIq1sGrid[idx];
    }
}

Element element_iq2_iq3(GgmlType t, const uint8_t* b, int e) {
    const int g = e / 32, l = e % 32 / 8, j = e % 8;
    const float d = wb::fp16_to_f32(uint16_t(le16(b)));
    const uint8_t* qs = b + 2;
    int mag = 0, s = 0;
    uint32_t signs = 0;
    if (t == GgmlType::IQ2_XXS) {
        const uint32_t a1 = le32(qs + 8 * g + 4);
        mag = int(grid_entry(t, qs[8 * g + l]) >> (8 * j) & 0xFF), s = int(a1 >> 28), signs = wb::iq_sign_byte(a1 >> (7 * l));
    } else if (t == GgmlType::IQ2_XS) {
        const uint32_t q = le16(qs + 2 * (4 * g + l));
        const uint8_t sc = b[66 + g];
        mag = int(grid_entry(t, int(q & 511)) >> (8 * j) & 0xFF), s = l < 2 ? sc & 15 : sc >> 4, signs = wb::iq_sign_byte(q >> 9);
    } else if (t == GgmlType::IQ2_S) {
        const int idx = qs[4 * g + l] | ((b[66 + g] >> (2 * l)) & 3) << 8;
        const uint8_t sc = b[74 + g];
        mag = int(grid_entry(t, idx) >> (8 * j) & 0xFF), s = l < 2 ? sc & 15 : sc >> 4, signs = qs[32 + 4 * g + l];
    } else if (t == GgmlType::IQ3_XXS) {
        const uint32_t a = le32(qs + 64 + 4 * g);
        mag = int(wb::kIq3xxsGrid[qs[8 * g + 2 * l + j / 4]] >> (8 * (j % 4)) & 0xFF), s = int(a >> 28);
        signs = wb::iq_sign_byte(a >> (7 * l));
    } else {  // IQ3_S: qs 2..65, qh 66..73, signs 74..105, scales 106..109
        const int half = j / 4;
        const int idx = qs[8 * g + 2 * l + half] | ((b[66 + g] >> (2 * l + half)) & 1) << 8;
        mag = int(wb::kIq3sGrid[idx] >> (8 * (j % 4)) & 0xFF), s = (b[106 + g / 2] >> (4 * (g % 2))) & 15;
        signs = b[74 + 4 * g + l];
    }
    return {(signs >> j) & 1 ? -mag : mag, s, 1, d};
}

Element element_iq1(GgmlType t, const uint8_t* b, int e) {
    const int g = e / 32, l = e % 32 / 8, j = e % 8;
    if (t == GgmlType::IQ1_S) {  // d 0..1, qs 2..33, qh 34..49
        const uint32_t h = le16(b + 34 + 2 * g);
        const int idx = b[2 + 4 * g + l] | ((h >> (3 * l)) & 7) << 8;
        return {int8_t(grid_entry(t, idx) >> (8 * j)), int((h >> 12) & 7), h & 0x8000 ? -1 : 1,
                wb::fp16_to_f32(uint16_t(le16(b)))};
    }
    // IQ1_M: qs 0..31, qh 32..47, scales 48..55
    uint32_t sc[4];
    for (int k = 0; k < 4; ++k) sc[k] = le16(b + 48 + 2 * k);
    const auto dbits = uint16_t((sc[0] >> 12) | ((sc[1] >> 8) & 0xF0) | ((sc[2] >> 4) & 0xF00) | (sc[3] & 0xF000));
    const int s = int(sc[g / 2] >> (6 * (g % 2) + (e % 32 < 16 ? 0 : 3))) & 7;
    const int h = b[32 + 2 * g + l / 2];
    const int idx = b[4 * g + l] | ((l % 2 ? h >> 4 : h) & 7) << 8;
    const int shift_bit = l % 2 ? 0x80 : 0x08;
    return {int8_t(grid_entry(t, idx) >> (8 * j)), s, h & shift_bit ? -1 : 1, wb::fp16_to_f32(dbits)};
}

Element element(GgmlType t, const uint8_t* block, int e) {
    return is_iq1(t) ? element_iq1(t, block, e) : element_iq2_iq3(t, block, e);
}

// The dequantized value in llama.cpp's dequantize_row_* arithmetic.
float dequantized(GgmlType t, const Element& x) {
    if (is_iq1(t)) return x.d * float(2 * x.s + 1) * (float(x.value) + (x.shift < 0 ? -0.125f : 0.125f));
    if (t == GgmlType::IQ3_S) return x.d * float(1 + 2 * x.s) * float(x.value);
    const float db = x.d * (0.5f + float(x.s)) * (t == GgmlType::IQ3_XXS ? 0.5f : 0.25f);
    return db * float(x.value);
}

// Random blocks: every byte pattern is a valid block; d is set to a random normal fp16.
std::vector<uint8_t> random_row(std::mt19937& rng, GgmlType t, int64_t n) {
    const auto tr = wb::ggml_type_traits(t);
    std::vector<uint8_t> w(wb::ggml_row_bytes(t, n));
    for (auto& v : w) v = uint8_t(rng());
    for (int64_t b = 0; b < n / 256; ++b) {
        const uint16_t d = wb::f32_to_fp16(std::uniform_real_distribution<float>(-0.05f, 0.05f)(rng));
        uint8_t* blk = w.data() + b * tr.block_bytes;
        if (t == GgmlType::IQ1_M)
            for (int k = 0; k < 4; ++k) blk[48 + 2 * k + 1] = uint8_t((blk[49 + 2 * k] & 0x0F) | ((d >> (4 * k)) & 0xF) << 4);
        else
            std::memcpy(blk, &d, 2);
    }
    return w;
}

std::vector<uint8_t> random_activations(std::mt19937& rng, GgmlType t, int64_t n) {
    std::vector<float> x(static_cast<size_t>(n));
    for (auto& v : x) v = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng) * (rng() % 37 == 0 ? 150.0f : 1.0f);
    std::vector<uint8_t> xq(wb::activation_row_bytes(t, n));
    wb::quantize_activations(t, x.data(), xq.data(), n);
    return xq;
}

float sum_lanes8(const float* v) { return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7])); }

// llama.cpp's x86 orders (FACTS-2 3.4 and its tiled matmul), from the elements: lane k of a block
// holds elements 32g + 4k + t.
float order_reference(GgmlType t, wb::DotOrder o, const uint8_t* w, const wb::BlockQ8_K* x, int64_t n) {
    const auto tr = wb::ggml_type_traits(t);
    const float c = t == GgmlType::IQ3_S ? 1.0f : t == GgmlType::IQ3_XXS ? 0.25f : 0.125f;
    float acc[8] = {}, acc2[8] = {}, accum1 = 0.0f, tiled = 0.0f;
    for (int64_t i = 0; i < n / 256; ++i) {
        int64_t grid[8] = {}, shift[8] = {};
        float d = 0.0f;
        for (int e = 0; e < 256; ++e) {
            const Element el = element(t, w + i * tr.block_bytes, e);
            d = el.d;
            grid[e % 32 / 4] += int64_t(2 * el.s + 1) * el.value * x[i].qs[e];
            shift[e % 32 / 4] += int64_t(2 * el.s + 1) * el.shift * x[i].qs[e];
        }
        int64_t gsum = 0, ssum = 0;
        for (int k = 0; k < 8; ++k) gsum += grid[k], ssum += shift[k];
        const float dd = d * x[i].d;
        for (int k = 0; k < 8; ++k) {
            acc[k] = std::fma(dd, float(grid[k]), acc[k]);
            acc2[k] = std::fma(dd, float(shift[k]), acc2[k]);
        }
        accum1 = std::fma(dd, float(ssum), accum1);
        const float r = d * c * float(is_iq1(t) ? 8 * gsum + ssum : gsum);
        tiled = std::fma(r, x[i].d, tiled);
    }
    if (o == wb::DotOrder::kTiled) return tiled;
    if (t == GgmlType::IQ1_S) return sum_lanes8(acc) + 0.125f * accum1;
    if (t == GgmlType::IQ1_M) return sum_lanes8(acc) + 0.125f * sum_lanes8(acc2);
    return c * sum_lanes8(acc);
}

struct ScalarKernels {
    ScalarKernels() { wb::quant_force_scalar(true); }
    ~ScalarKernels() { wb::quant_force_scalar(false); }
};

// A grid as its bytes, with what FACTS-2 3.3 lists for it.
struct GridSpec {
    const char* name;
    const void* data;
    int n, entry_bytes;
    const char* sha;
    uint64_t first, last;
    std::set<int> bytes;  // the magnitudes (IQ1: int8 values) an entry's bytes take
    bool ascending;
};

std::vector<GridSpec> grid_specs() {
    const std::set<int> iq2 = {8, 25, 43};
    return {
        {"iq2xxs", wb::kIq2xxsGrid, 256, 8, "05826b5d3e472a3a", 0x0808080808080808, 0x2b2b2b1908081908, iq2, true},
        {"iq2xs", wb::kIq2xsGrid, 512, 8, "06e47aaca60b4dc1", 0x0808080808080808, 0x2b2b2b2b2b2b2b2b, iq2, true},
        {"iq2s", wb::kIq2sGrid, 1024, 8, "e1aa1473412b0552", 0x0808080808080808, 0x2b2b2b2b2b2b2b2b, iq2, true},
        {"iq3xxs", wb::kIq3xxsGrid, 256, 4, "46e35f5a997efdee", 0x04040404, 0x3e341c04, {4, 12, 20, 28, 36, 44, 52, 62}, true},
        {"iq3s", wb::kIq3sGrid, 512, 4, "bd1af4945a1717c6", 0x01010101, 0x0f0f0101, {1, 3, 5, 7, 9, 11, 13, 15}, true},
        {"iq1s", wb::kIq1sGrid, 2048, 8, "07540ffc1aeaf6ad", 0xffffffffffffffff, 0x0101010101010101, {-1, 0, 1}, false},
    };
}

uint64_t entry_of(const GridSpec& g, int i) {
    if (g.entry_bytes == 8) return static_cast<const uint64_t*>(g.data)[i];
    return static_cast<const uint32_t*>(g.data)[i];
}

void add_type_rows() {
    QTest::addColumn<uint32_t>("type");
    for (GgmlType t : kTypes) QTest::newRow(wb::ggml_type_name(t).c_str()) << uint32_t(t);
}

}  // namespace

class TestQuantIq : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void sign_tables_are_derived_as_the_format_defines();
    void grids_are_the_format_tables_data();
    void grids_are_the_format_tables();
    void dequantize_follows_the_format_definition_data();
    void dequantize_follows_the_format_definition();
    void hand_built_iq3_s_block_decodes_to_hand_computed_values();
    void vec_dot_matches_exact_double_math_data();
    void vec_dot_matches_exact_double_math();
    void dots_follow_llama_cpp_orders_bit_for_bit_data();
    void dots_follow_llama_cpp_orders_bit_for_bit();
    void tiles_follow_the_tiled_order_bit_for_bit_data();
    void tiles_follow_the_tiled_order_bit_for_bit();
    void types_are_supported_with_q8_k_activations();
};

void TestQuantIq::sign_tables_are_derived_as_the_format_defines() {
    uint8_t kmask[8], ksigns[128];
    for (int j = 0; j < 8; ++j) kmask[j] = uint8_t(1 << j);
    for (int i = 0; i < 128; ++i) ksigns[i] = wb::iq_sign_byte(uint32_t(i));
    QCOMPARE(sha256_prefix(kmask, 8), QByteArray("5ac9831b2e30eb28"));
    QCOMPARE(sha256_prefix(ksigns, 128), QByteArray("a76742a603f8beca"));
    for (int i = 0; i < 128; ++i) QVERIFY(__builtin_popcount(ksigns[i]) % 2 == 0);  // even count of negatives
    QCOMPARE(wb::iq_sign_byte(127 + 128), wb::iq_sign_byte(127));  // only the low 7 bits count
}

void TestQuantIq::grids_are_the_format_tables_data() {
    QTest::addColumn<int>("table");
    const std::vector<GridSpec> specs = grid_specs();
    for (size_t i = 0; i < specs.size(); ++i) QTest::newRow(specs[i].name) << int(i);
}

void TestQuantIq::grids_are_the_format_tables() {
    QFETCH(int, table);
    const GridSpec g = grid_specs()[size_t(table)];
    const QByteArray sha = g.entry_bytes == 8 ? sha256_prefix(static_cast<const uint64_t*>(g.data), size_t(g.n))
                                              : sha256_prefix(static_cast<const uint32_t*>(g.data), size_t(g.n));
    QCOMPARE(sha, QByteArray(g.sha));
    QCOMPARE(entry_of(g, 0), g.first);
    QCOMPARE(entry_of(g, g.n - 1), g.last);
    std::set<uint64_t> unique;
    for (int i = 0; i < g.n; ++i) {
        const uint64_t e = entry_of(g, i);
        unique.insert(e);
        for (int j = 0; j < g.entry_bytes; ++j) {
            const int byte = g.name == std::string("iq1s") ? int(int8_t(e >> (8 * j))) : int((e >> (8 * j)) & 0xFF);
            QVERIFY2(g.bytes.count(byte), qPrintable(QString("%1[%2] byte %3 = %4").arg(g.name).arg(i).arg(j).arg(byte)));
        }
        if (g.ascending && i > 0) QVERIFY(entry_of(g, i - 1) < e);
    }
    QCOMPARE(int(unique.size()), g.n);
}

void TestQuantIq::dequantize_follows_the_format_definition_data() { add_type_rows(); }

void TestQuantIq::dequantize_follows_the_format_definition() {
    QFETCH(uint32_t, type);
    const auto t = GgmlType(type);
    const auto tr = wb::ggml_type_traits(t);
    std::mt19937 rng(type);
    const int64_t n = 256 * 6;
    const std::vector<uint8_t> w = random_row(rng, t, n);
    std::vector<float> got(static_cast<size_t>(n));
    wb::dequantize_row(t, w.data(), got.data(), n);
    for (int64_t e = 0; e < n; ++e) {
        const float want = dequantized(t, element(t, w.data() + (e / 256) * tr.block_bytes, int(e % 256)));
        QVERIFY2(std::memcmp(&want, &got[size_t(e)], 4) == 0,
                 qPrintable(QString("element %1: %2, the format gives %3").arg(e).arg(double(got[size_t(e)])).arg(double(want))));
    }
}

// IQ3_S by hand: d = 0.5; group 0 scale nibble 1 (multiplier 3), group 1 nibble 2 (multiplier 5).
// Index 0 is grid entry 0x01010101 (all 1); index 256 (qh bit) is kIq3sGrid[256]; sign bit 0 of
// group 0 negates element 0.
void TestQuantIq::hand_built_iq3_s_block_decodes_to_hand_computed_values() {
    uint8_t b[110] = {};
    const uint16_t d = 0x3800;  // 0.5
    std::memcpy(b, &d, 2);
    b[106] = 0x21;         // scales: group 0 -> 1, group 1 -> 2
    b[74] = 0x01;          // signs of group 0, run 0: element 0 negative
    b[66 + 1] = 0x01;      // qh of group 1: index 8 (elements 32..35) gets bit 8
    std::vector<float> y(256);
    wb::dequantize_row(GgmlType::IQ3_S, b, y.data(), 256);
    QCOMPARE(y[0], -1.5f);  // 0.5 * 3 * 1, negated
    QCOMPARE(y[1], 1.5f);
    QCOMPARE(y[31], 1.5f);
    const uint32_t e256 = wb::kIq3sGrid[256];
    for (int j = 0; j < 4; ++j) QCOMPARE(y[size_t(32 + j)], 2.5f * float((e256 >> (8 * j)) & 0xFF));  // 0.5 * 5 * grid
    QCOMPARE(y[36], 2.5f);
    QCOMPARE(y[255], 0.5f * 1.0f);  // groups 2..7: scale nibble 0, multiplier 1
}

void TestQuantIq::vec_dot_matches_exact_double_math_data() { add_type_rows(); }

void TestQuantIq::vec_dot_matches_exact_double_math() {
    QFETCH(uint32_t, type);
    const auto t = GgmlType(type);
    std::mt19937 rng(type + 1000);
    for (int64_t n : {256, 2048, 4608}) {
        const std::vector<uint8_t> w = random_row(rng, t, n);
        const std::vector<uint8_t> xq = random_activations(rng, t, n);
        std::vector<float> wf(static_cast<size_t>(n)), xf(static_cast<size_t>(n));
        wb::dequantize_row(t, w.data(), wf.data(), n);
        wb::dequantize_row(GgmlType::Q8_K, xq.data(), xf.data(), n);
        double exact = 0.0, mag = 0.0;
        for (int64_t i = 0; i < n; ++i) exact += double(wf[size_t(i)]) * xf[size_t(i)], mag += std::fabs(double(wf[size_t(i)]) * xf[size_t(i)]);
        for (bool scalar : {false, true})
            for (wb::DotOrder o : {wb::DotOrder::kRow, wb::DotOrder::kTiled}) {
                std::unique_ptr<ScalarKernels> force;
                if (scalar) force = std::make_unique<ScalarKernels>();
                float got = 0.0f;
                wb::vec_dot_rows(t, n, w.data(), 0, 1, xq.data(), &got, o);
                QVERIFY2(std::fabs(got - exact) <= 1e-5 * mag,
                         qPrintable(QString("%1 n=%2: %3, exact %4").arg(wb::quant_kernel_name()).arg(n).arg(double(got)).arg(exact)));
            }
    }
}

void TestQuantIq::dots_follow_llama_cpp_orders_bit_for_bit_data() {
    QTest::addColumn<uint32_t>("type");
    QTest::addColumn<int>("order");
    for (GgmlType t : kTypes)
        for (wb::DotOrder o : {wb::DotOrder::kRow, wb::DotOrder::kTiled})
            QTest::addRow("%s/%s", wb::ggml_type_name(t).c_str(), o == wb::DotOrder::kRow ? "row" : "tiled") << uint32_t(t) << int(o);
}

void TestQuantIq::dots_follow_llama_cpp_orders_bit_for_bit() {
    QFETCH(uint32_t, type);
    QFETCH(int, order);
    const auto t = GgmlType(type);
    const auto o = wb::DotOrder(order);
    const int64_t n = 2304;
    const int rows = 24;
    std::mt19937 rng(type * 131u + uint32_t(order));
    std::vector<uint8_t> w;
    for (int r = 0; r < rows; ++r) {
        const std::vector<uint8_t> row = random_row(rng, t, n);
        w.insert(w.end(), row.begin(), row.end());
    }
    const size_t stride = wb::ggml_row_bytes(t, n);
    const std::vector<uint8_t> xq = random_activations(rng, t, n);
    std::vector<float> want(rows);
    for (int r = 0; r < rows; ++r)
        want[size_t(r)] = order_reference(t, o, w.data() + size_t(r) * stride, reinterpret_cast<const wb::BlockQ8_K*>(xq.data()), n);
    for (bool scalar : {false, true}) {
        std::unique_ptr<ScalarKernels> force;
        if (scalar) force = std::make_unique<ScalarKernels>();
        std::vector<float> got(rows, 0.0f);
        wb::vec_dot_rows(t, n, w.data(), stride, rows, xq.data(), got.data(), o);
        for (int r = 0; r < rows; ++r)
            QVERIFY2(std::memcmp(&got[size_t(r)], &want[size_t(r)], 4) == 0,
                     qPrintable(QString("%1 row %2: %3, llama.cpp's order gives %4")
                                    .arg(wb::quant_kernel_name()).arg(r).arg(double(got[size_t(r)]), 0, 'g', 9)
                                    .arg(double(want[size_t(r)]), 0, 'g', 9)));
    }
}

void TestQuantIq::tiles_follow_the_tiled_order_bit_for_bit_data() { add_type_rows(); }

// The prefill tile (one weight row x kDotTileCols tokens, vec_dot_tile) in the tiled order gives each
// token, bit for bit, llama.cpp's tiled order recomputed from the elements and what the per-token
// kernel gives, in both families; the AVX2 family has a tile kernel of its own for every type (the
// backend takes it for each group of 8 prompt tokens).
void TestQuantIq::tiles_follow_the_tiled_order_bit_for_bit() {
    QFETCH(uint32_t, type);
    const auto t = GgmlType(type);
    const auto o = wb::DotOrder::kTiled;
    const int64_t n = 1792;
    std::mt19937 rng(type * 977u + 3);
    const std::vector<uint8_t> w = random_row(rng, t, n);
    const size_t x_stride = wb::activation_row_bytes(t, n) + 8;  // rows with a gap, as a strided view has
    std::vector<uint8_t> xq(x_stride * wb::kDotTileCols);
    for (int c = 0; c < wb::kDotTileCols; ++c) {
        const std::vector<uint8_t> a = random_activations(rng, t, n);
        std::copy(a.begin(), a.end(), xq.begin() + long(x_stride * size_t(c)));
    }
    QCOMPARE(wb::has_dot_tile(t, o), std::string(wb::quant_kernel_name()) != "scalar");
    for (bool scalar : {false, true}) {
        std::unique_ptr<ScalarKernels> force;
        if (scalar) force = std::make_unique<ScalarKernels>();
        const int64_t out_stride = 3;
        std::vector<float> out(size_t(out_stride * wb::kDotTileCols), -1.0f);
        wb::vec_dot_tile(t, n, w.data(), w.size(), xq.data(), x_stride, out.data(), out_stride, o);
        for (int c = 0; c < wb::kDotTileCols; ++c) {
            const uint8_t* x = xq.data() + x_stride * size_t(c);
            const float want = order_reference(t, o, w.data(), reinterpret_cast<const wb::BlockQ8_K*>(x), n);
            float row = 0.0f;
            wb::vec_dot_rows(t, n, w.data(), 0, 1, x, &row, o);
            const float got = out[size_t(c * out_stride)];
            QVERIFY2(std::memcmp(&got, &want, 4) == 0 && std::memcmp(&row, &want, 4) == 0,
                     qPrintable(QString("%1 token %2: tile %3, per-token kernel %4, llama.cpp's order gives %5")
                                    .arg(wb::quant_kernel_name()).arg(c).arg(double(got), 0, 'g', 9)
                                    .arg(double(row), 0, 'g', 9).arg(double(want), 0, 'g', 9)));
        }
    }
    // The AVX2 family's tile over the row unpacked once (what a prefill task with several groups of 8
    // tokens takes): the same bits.
    const wb::DotKernels k = wb::dot_kernels(t, n, o);
    const std::string family = wb::quant_kernel_name();  // avx512 keeps its own 512-bit IQ4_XS tile
    QCOMPARE(k.tile_unpacked != nullptr, family != "scalar" && !(family == "avx512" && t == GgmlType::IQ4_XS));
    if (!k.tile_unpacked) return;
    std::vector<uint8_t> unpacked(k.unpacked_w_bytes(n));
    k.unpack_w(n, w.data(), unpacked.data());
    std::vector<float> out(wb::kDotTileCols, -1.0f);
    k.tile_unpacked(n, unpacked.data(), xq.data(), x_stride, out.data(), 1);
    for (int c = 0; c < wb::kDotTileCols; ++c) {
        const float want = order_reference(t, o, w.data(), reinterpret_cast<const wb::BlockQ8_K*>(xq.data() + x_stride * size_t(c)), n);
        QVERIFY2(std::memcmp(&out[size_t(c)], &want, 4) == 0,
                 qPrintable(QString("unpacked tile token %1: %2, llama.cpp's order gives %3").arg(c)
                                .arg(double(out[size_t(c)]), 0, 'g', 9).arg(double(want), 0, 'g', 9)));
    }
}

void TestQuantIq::types_are_supported_with_q8_k_activations() {
    for (GgmlType t : kTypes) {
        QVERIFY(wb::ggml_type_traits(t).supported);
        QCOMPARE(wb::vec_dot_type(t), GgmlType::Q8_K);
        QCOMPARE(wb::ggml_type_traits(t).block_elems, 256);
    }
    QCOMPARE(wb::activation_row_bytes(GgmlType::IQ3_S, 512), size_t(2 * 292));
}

QTEST_GUILESS_MAIN(TestQuantIq)
#include "test_quant_iq.moc"
