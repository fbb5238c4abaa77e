// The prefill tiles (the 32-element types, Q6_K, IQ4_XS, the tiles over packed activations) and the 8-row
// decode kernels, bit for bit against the row dots: every tile output
// must be the float the row dot gives for its (weight row, token) pair, in each form the kernels come
// in (AVX2, AVX2 with AVX-VNNI where the CPU has it, scalar), on random blocks and on activations that
// quantize to the extreme codes (+-127) and sit in the hundreds, where any change of rounding shows.
// And the switches between those forms.
#include <QtTest>

#include <cstring>
#include <stdexcept>
#include <memory>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "quant/quant.h"
#include "quant/quant_blocks.h"
#include "quant/quant_internal.h"
#include "util/fp16.h"

using wb::GgmlType;

namespace {

// AVX-VNNI as CPUID reports it (leaf 7, sub-leaf 1, EAX bit 4), read here independently of the kernels.
bool cpu_reports_avx_vnni() {
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 4)) != 0;
#else
    return false;
#endif
}

// The x86 families ("avx512" is the AVX2 table with some AVX-512 kernels added; both hold these tiles).
bool avx2_family() {
    const std::string name = wb::quant_kernel_name();
    return name == "avx2" || name == "avx512";
}

// The kernel forms a test runs through; each guard restores the default on exit.
enum class Form { kBest, kPlainAvx2, kScalar };  // kPlainAvx2: quant_force_avx2, no AVX-VNNI tiles

struct FormGuard {
    explicit FormGuard(Form f) {
        wb::quant_force_avx2(f == Form::kPlainAvx2);
        wb::quant_force_scalar(f == Form::kScalar);
    }
    ~FormGuard() {
        wb::quant_force_avx2(false);
        wb::quant_force_scalar(false);
    }
};

const char* form_name(Form f) { return f == Form::kBest ? "best" : f == Form::kPlainAvx2 ? "plain avx2" : "scalar"; }

template <class Block>
void randomize_blocks(std::mt19937& rng, uint8_t* row, int64_t n_blocks) {
    std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
    for (int64_t i = 0; i < n_blocks; ++i) {
        Block b;
        auto* raw = reinterpret_cast<uint8_t*>(&b);
        for (size_t k = 0; k < sizeof b; ++k) raw[k] = uint8_t(rng());  // every code, Q8_0's -128 included
        b.d = wb::f32_to_fp16(scale(rng));
        if constexpr (requires { b.m; }) b.m = wb::f32_to_fp16(scale(rng));
        if constexpr (requires { b.dmin; }) b.dmin = wb::f32_to_fp16(scale(rng));  // not a random (NaN) half
        std::memcpy(row + size_t(i) * sizeof b, &b, sizeof b);
    }
}

std::vector<uint8_t> random_row(std::mt19937& rng, GgmlType t, int64_t n) {
    std::vector<uint8_t> row(wb::ggml_row_bytes(t, n));
    switch (t) {
        case GgmlType::Q4_0: randomize_blocks<wb::BlockQ4_0>(rng, row.data(), n / wb::kQK); break;
        case GgmlType::Q4_1: randomize_blocks<wb::BlockQ4_1>(rng, row.data(), n / wb::kQK); break;
        case GgmlType::Q5_0: randomize_blocks<wb::BlockQ5_0>(rng, row.data(), n / wb::kQK); break;
        case GgmlType::Q5_1: randomize_blocks<wb::BlockQ5_1>(rng, row.data(), n / wb::kQK); break;
        case GgmlType::Q8_0: randomize_blocks<wb::BlockQ8_0>(rng, row.data(), n / wb::kQK); break;
        case GgmlType::IQ4_NL: randomize_blocks<wb::BlockIQ4_NL>(rng, row.data(), n / wb::kQK); break;
        case GgmlType::Q6_K: randomize_blocks<wb::BlockQ6_K>(rng, row.data(), n / wb::kQKK); break;
        case GgmlType::Q4_K: randomize_blocks<wb::BlockQ4_K>(rng, row.data(), n / wb::kQKK); break;
        case GgmlType::Q5_K: randomize_blocks<wb::BlockQ5_K>(rng, row.data(), n / wb::kQKK); break;
        case GgmlType::Q2_K: randomize_blocks<wb::BlockQ2_K>(rng, row.data(), n / wb::kQKK); break;
        case GgmlType::Q3_K: randomize_blocks<wb::BlockQ3_K>(rng, row.data(), n / wb::kQKK); break;
        case GgmlType::IQ4_XS: randomize_blocks<wb::BlockIQ4_XS>(rng, row.data(), n / wb::kQKK); break;
        default: throw std::logic_error("random_row: no random blocks for " + wb::ggml_type_name(t));
    }
    return row;
}

// Token c's activations: uniform in [-2, 2] for even c; for odd c values in the hundreds with every
// 5th element at the row's extreme (so blocks quantize to +-127 codes), as large-activation models have.
std::vector<float> token_row(std::mt19937& rng, int c, int64_t n) {
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        x[size_t(i)] = u(rng);
        if (c % 2 == 1) x[size_t(i)] *= i % 5 == 0 ? 400.0f : 150.0f;
    }
    return x;
}

}  // namespace

class TestQuantTiles : public QObject {
    Q_OBJECT

private slots:
    void forcing_switches_the_kernel_family();
    void vnni_tiles_are_in_use_exactly_where_the_cpu_has_avx_vnni();
    void tile_equals_row_dot_bit_for_bit_data();
    void tile_equals_row_dot_bit_for_bit();
    void iq4_xs_tile_reads_every_scale_in_every_group();
    void packed_tile_equals_row_dot_bit_for_bit_data();
    void packed_tile_equals_row_dot_bit_for_bit();
    void tile16_equals_row_dot_bit_for_bit_data();
    void tile16_equals_row_dot_bit_for_bit();
    void rows8_equals_row_dot_bit_for_bit_data();
    void rows8_equals_row_dot_bit_for_bit();
    void repacked16_equals_row_dot_bit_for_bit_data();
    void repacked16_equals_row_dot_bit_for_bit();
};

// quant_force_scalar and quant_force_avx2 switch the family in use (the forms the tests run through),
// scalar winning over AVX2, and switching them off restores the best one.
void TestQuantTiles::forcing_switches_the_kernel_family() {
    const std::string best = wb::quant_kernel_name();
    const FormGuard restore(Form::kBest);  // both switches off again however this ends
    QVERIFY(best == "avx512" || best == "avx2" || best == "scalar");
    wb::quant_force_scalar(true);
    QCOMPARE(std::string(wb::quant_kernel_name()), std::string("scalar"));
    wb::quant_force_scalar(false);
    wb::quant_force_avx2(true);  // the AVX2 family under a wider one, nothing else
    QCOMPARE(std::string(wb::quant_kernel_name()), best == "scalar" ? best : std::string("avx2"));
    wb::quant_force_scalar(true);  // which wins over it
    QCOMPARE(std::string(wb::quant_kernel_name()), std::string("scalar"));
    wb::quant_force_scalar(false);
    wb::quant_force_avx2(false);
    QCOMPARE(std::string(wb::quant_kernel_name()), best);
}

// On an x86 machine with AVX2 the best family takes the AVX-VNNI tiles if and only if CPUID reports
// AVX-VNNI, and quant_force_avx2 gives the plain AVX2 family without them; so the comparisons below run
// both forms wherever the CPU has AVX-VNNI.
void TestQuantTiles::vnni_tiles_are_in_use_exactly_where_the_cpu_has_avx_vnni() {
    if (!avx2_family()) QSKIP("the AVX2 kernel family is not in use on this CPU (no AVX2/FMA/F16C)");
    QCOMPARE(wb::quant_uses_vnni(), cpu_reports_avx_vnni());
    {
        FormGuard off(Form::kPlainAvx2);
        QVERIFY(!wb::quant_uses_vnni());
        QCOMPARE(std::string(wb::quant_kernel_name()), std::string("avx2"));
    }
    QCOMPARE(wb::quant_uses_vnni(), cpu_reports_avx_vnni());
    qInfo("AVX-VNNI tiles %s on this CPU", cpu_reports_avx_vnni() ? "in use" : "not available (AVX2 tiles only)");
}

void TestQuantTiles::tile_equals_row_dot_bit_for_bit_data() {
    QTest::addColumn<uint32_t>("type");
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("order");
    const int row = int(wb::DotOrder::kRow);
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0})
        for (int n : {32, 640, 2048, 4608})  // 4608: more blocks than the multi-row tile keeps on its stack
            QTest::addRow("%s/%d/row", wb::ggml_type_name(t).c_str(), n) << uint32_t(t) << n << row;
    for (int n : {256, 2048})
        QTest::addRow("Q6_K/%d/tiled", n) << uint32_t(GgmlType::Q6_K) << n << int(wb::DotOrder::kTiled);
}

// Four weight rows against the tile's 8 tokens: every output equals the row dot of its pair in the
// same order, compared with memcmp (QCOMPARE's float compare is fuzzy), in every form, through the
// one-row tile and the multi-row one; on AVX2 the tile kernels exist (so the tiles, not loops over the
// row dot, are what is compared).
void TestQuantTiles::tile_equals_row_dot_bit_for_bit() {
    QFETCH(uint32_t, type);
    QFETCH(int, n);
    QFETCH(int, order);
    const auto t = GgmlType(type);
    const auto o = wb::DotOrder(order);
    std::mt19937 rng(uint32_t(11 + n + 37 * type));
    constexpr int kRows = 4;
    const size_t w_stride = wb::ggml_row_bytes(t, n) + 16;  // rows with a gap, as a strided view has
    std::vector<uint8_t> w(w_stride * kRows);
    for (int r = 0; r < kRows; ++r) {
        const std::vector<uint8_t> row = random_row(rng, t, n);
        std::copy(row.begin(), row.end(), w.begin() + long(size_t(r) * w_stride));
    }
    const size_t x_stride = wb::activation_row_bytes(t, n) + 8;
    std::vector<uint8_t> xq(x_stride * wb::kDotTileCols);
    for (int c = 0; c < wb::kDotTileCols; ++c)
        wb::quantize_activations(t, token_row(rng, c, n).data(), xq.data() + size_t(c) * x_stride, n);

    std::vector<Form> forms = {Form::kScalar};
    if (avx2_family()) forms = {Form::kBest, Form::kPlainAvx2, Form::kScalar};
    for (Form f : forms) {
        FormGuard guard(f);
        if (f != Form::kScalar) QVERIFY2(wb::has_dot_tile(t, o), form_name(f));
        // The multi-row form (DotKernels::tile_rows) where the family has one: on AVX2 for the
        // 32-element types; all kRows rows in one call.
        const wb::DotKernels k = wb::dot_kernels(t, n, o);
        const bool q32 = o == wb::DotOrder::kRow;
        if (f != Form::kScalar) QCOMPARE(k.tile_rows != nullptr, q32);
        std::vector<float> rows_out(size_t(kRows * wb::kDotTileCols), -1.0f);
        if (k.tile_rows) k.tile_rows(n, w.data(), w_stride, kRows, xq.data(), x_stride, rows_out.data(), kRows);
        for (int r = 0; r < kRows; ++r) {
            const uint8_t* wr = w.data() + size_t(r) * w_stride;
            std::vector<float> tile(size_t(wb::kDotTileCols), -1.0f);
            wb::vec_dot_tile(t, n, wr, w_stride, xq.data(), x_stride, tile.data(), 1, o);
            for (int c = 0; c < wb::kDotTileCols; ++c) {
                float want = 0.0f;
                wb::vec_dot_rows(t, n, wr, w_stride, 1, xq.data() + size_t(c) * x_stride, &want, o);
                for (bool multi : {false, true}) {
                    if (multi && !k.tile_rows) continue;
                    const float got = multi ? rows_out[size_t(c * kRows + r)] : tile[size_t(c)];
                    QVERIFY2(std::memcmp(&got, &want, sizeof got) == 0,
                             qPrintable(QString("%1 (vnni %2, %3), row %4, token %5: tile %6, row dot %7")
                                            .arg(form_name(f)).arg(wb::quant_uses_vnni()).arg(multi ? "tile_rows" : "tile")
                                            .arg(r).arg(c).arg(double(got), 0, 'g', 9).arg(double(want), 0, 'g', 9)));
                }
            }
        }
    }
}

// IQ4_XS's tile decodes a block's 8 six-bit group scales at once (split over scales_l and scales_h);
// 64 one-block rows give every scale value (0..63) in every group position, and each row's 8 tile
// outputs must be the scalar family's row dot in the tiled order (which reads the scales one at a
// time, iq4xs_scale) bit for bit: one block per row, so a misread scale cannot hide among others.
void TestQuantTiles::iq4_xs_tile_reads_every_scale_in_every_group() {
    if (!avx2_family()) QSKIP("the AVX2 kernel family is not in use on this CPU (no AVX2/FMA/F16C)");
    constexpr int kRows = 64, n = wb::kQKK;
    std::mt19937 rng(2026);
    std::vector<wb::BlockIQ4_XS> w(kRows);
    for (int r = 0; r < kRows; ++r) {
        wb::BlockIQ4_XS& b = w[size_t(r)];
        for (auto& q : b.qs) q = uint8_t(rng());
        b.d = wb::f32_to_fp16(0.01f);
        b.scales_h = 0;
        for (auto& l : b.scales_l) l = 0;
        for (int g = 0; g < 8; ++g) {
            const int ls = (r + 11 * g) % 64;  // over the rows, each group position takes all 64 values
            b.scales_l[g / 2] |= uint8_t((ls & 0xF) << (4 * (g % 2)));
            b.scales_h |= uint16_t((ls >> 4) << (2 * g));
            QCOMPARE(wb::iq4xs_scale(b, g), ls - 32);
        }
    }
    const size_t x_stride = wb::activation_row_bytes(GgmlType::IQ4_XS, n);
    std::vector<uint8_t> xq(x_stride * wb::kDotTileCols);
    for (int c = 0; c < wb::kDotTileCols; ++c)
        wb::quantize_activations(GgmlType::IQ4_XS, token_row(rng, c, n).data(), xq.data() + size_t(c) * x_stride, n);
    std::vector<float> tiles(size_t(kRows * wb::kDotTileCols));
    QVERIFY(wb::has_dot_tile(GgmlType::IQ4_XS, wb::DotOrder::kTiled));
    for (int r = 0; r < kRows; ++r)
        wb::vec_dot_tile(GgmlType::IQ4_XS, n, &w[size_t(r)], sizeof(wb::BlockIQ4_XS), xq.data(), x_stride,
                         tiles.data() + r, kRows, wb::DotOrder::kTiled);
    const FormGuard scalar(Form::kScalar);
    for (int r = 0; r < kRows; ++r)
        for (int c = 0; c < wb::kDotTileCols; ++c) {
            float want = 0.0f;
            wb::vec_dot_rows(GgmlType::IQ4_XS, n, &w[size_t(r)], sizeof(wb::BlockIQ4_XS), 1,
                             xq.data() + size_t(c) * x_stride, &want, wb::DotOrder::kTiled);
            const float got = tiles[size_t(c * kRows + r)];
            QVERIFY2(std::memcmp(&got, &want, sizeof got) == 0,
                     qPrintable(QString("row %1 (scales %2..), token %3: tile %4, scalar row dot %5")
                                    .arg(r).arg(r).arg(c).arg(double(got), 0, 'g', 9).arg(double(want), 0, 'g', 9)));
        }
}

namespace {

// 16 rows of random blocks (every code, and for Q4_K every scale and minimum byte pattern) and 8
// tokens of mixed magnitudes; "extreme": every code 15 (Q4_K, Q4_1), 31 (Q5_K, Q5_1), 63 with scales -128
// (Q6_K), value 113 with scales -32 (IQ4_XS), -128 and 127 (Q8_0), -16 and 15 (Q5_0), -8 and 7 (Q4_0), -127 and 113 (IQ4_NL), and activation codes -127 (even tokens) and +127 (odd
// tokens, after their first): the largest partial sums the packed tile adds in 16 bits before scaling
// and the 16-row tile scales in 32 bits (an overflow would change them).
struct RowsCase {
    static constexpr int kRows = 16;
    GgmlType t;
    size_t w_stride = 0, x_stride = 0;
    std::vector<uint8_t> w, xq;
    RowsCase(GgmlType type, int n, bool extreme) : t(type) {
        std::mt19937 rng(uint32_t(5 + n + extreme + 101 * uint32_t(t)));
        w_stride = wb::ggml_row_bytes(t, n);
        w.resize(w_stride * kRows);
        for (int r = 0; r < kRows; ++r) {
            std::vector<uint8_t> row = random_row(rng, t, n);
            if (extreme && t == GgmlType::Q4_K)
                for (int64_t b = 0; b < n / wb::kQKK; ++b)
                    std::memset(row.data() + size_t(b) * sizeof(wb::BlockQ4_K) + offsetof(wb::BlockQ4_K, qs), 0xFF, wb::kQKK / 2);
            if (extreme && t == GgmlType::Q5_K)  // codes 31: every low nibble and fifth bit set
                for (int64_t b = 0; b < n / wb::kQKK; ++b)
                    std::memset(row.data() + size_t(b) * sizeof(wb::BlockQ5_K) + offsetof(wb::BlockQ5_K, qh), 0xFF,
                                wb::kQKK / 8 + wb::kQKK / 2);
            if (extreme && t == GgmlType::Q8_0)  // codes -128 (even rows) and 127 (odd rows)
                for (int64_t b = 0; b < n / wb::kQK; ++b)
                    std::memset(row.data() + size_t(b) * sizeof(wb::BlockQ8_0) + offsetof(wb::BlockQ8_0, qs), r % 2 ? 0x7F : 0x80, wb::kQK);
            if (extreme && t == GgmlType::Q4_0)  // values -8 (even rows) and 7 (odd rows)
                for (int64_t b = 0; b < n / wb::kQK; ++b)
                    std::memset(row.data() + size_t(b) * sizeof(wb::BlockQ4_0) + offsetof(wb::BlockQ4_0, qs), r % 2 ? 0xFF : 0x00, wb::kQK / 2);
            if (extreme && t == GgmlType::IQ4_NL)  // values -127 (even rows) and 113 (odd rows)
                for (int64_t b = 0; b < n / wb::kQK; ++b)
                    std::memset(row.data() + size_t(b) * sizeof(wb::BlockIQ4_NL) + offsetof(wb::BlockIQ4_NL, qs), r % 2 ? 0xFF : 0x00,
                                wb::kQK / 2);
            if (extreme && t == GgmlType::Q5_0)  // values -16 (even rows: no bit set) and 15 (odd rows: all set)
                for (int64_t b = 0; b < n / wb::kQK; ++b)
                    std::memset(row.data() + size_t(b) * sizeof(wb::BlockQ5_0) + offsetof(wb::BlockQ5_0, qh), r % 2 ? 0xFF : 0x00,
                                4 + wb::kQK / 2);
            if (extreme && t == GgmlType::Q6_K)  // codes 63 (value 31), every scale -128 (no cancelling)
                for (int64_t b = 0; b < n / wb::kQKK; ++b) {
                    auto* q6 = reinterpret_cast<wb::BlockQ6_K*>(row.data() + size_t(b) * sizeof(wb::BlockQ6_K));
                    std::memset(q6->ql, 0xFF, sizeof q6->ql);
                    std::memset(q6->qh, 0xFF, sizeof q6->qh);
                    for (int k = 0; k < 16; ++k) q6->scales[k] = -128;
                }
            if (extreme && t == GgmlType::IQ4_XS)  // code 15 (value 113, stored + 128 = 241), every scale -32
                for (int64_t b = 0; b < n / wb::kQKK; ++b) {
                    auto* iq = reinterpret_cast<wb::BlockIQ4_XS*>(row.data() + size_t(b) * sizeof(wb::BlockIQ4_XS));
                    std::memset(iq->qs, 0xFF, sizeof iq->qs);
                    std::memset(iq->scales_l, 0, sizeof iq->scales_l);
                    iq->scales_h = 0;
                }
            if (extreme && (t == GgmlType::Q4_1 || t == GgmlType::Q5_1))  // codes 15, resp. 31
                for (int64_t b = 0; b < n / wb::kQK; ++b) {
                    const size_t block = t == GgmlType::Q4_1 ? sizeof(wb::BlockQ4_1) : sizeof(wb::BlockQ5_1);
                    std::memset(row.data() + size_t(b) * block + 4, 0xFF, block - 4);  // past d and m
                }
            std::copy(row.begin(), row.end(), w.begin() + long(size_t(r) * w_stride));
        }
        x_stride = wb::activation_row_bytes(t, n);
        xq.resize(x_stride * wb::kDotTileCols);
        for (int c = 0; c < wb::kDotTileCols; ++c) {
            std::vector<float> x = token_row(rng, c, n);
            if (extreme)
                // Q8 quantization scales by the element of largest magnitude, sign included: all +1 gives
                // codes -127; a -1 first and +1 after gives +127 after the first
                for (size_t j = 0; j < x.size(); ++j) x[j] = c % 2 && j == 0 ? -1.0f : 1.0f;
            wb::quantize_activations(t, x.data(), xq.data() + size_t(c) * x_stride, n);
        }
    }
    const uint8_t* row(int r) const { return w.data() + size_t(r) * w_stride; }
    const uint8_t* token(int c) const { return xq.data() + size_t(c) * x_stride; }
    // The row dot of row r and token c in order o (the reference).
    float want(int n, int r, int c, wb::DotOrder o) const {
        float v = 0.0f;
        wb::vec_dot_rows(t, n, row(r), w_stride, 1, token(c), &v, o);
        return v;
    }
};

void q4_k_cases(wb::DotOrder o) {
    QTest::addColumn<uint32_t>("type");
    QTest::addColumn<int>("n");
    QTest::addColumn<bool>("extreme");
    QTest::addColumn<int>("order");
    const auto q4_k = uint32_t(GgmlType::Q4_K);
    for (int n : {256, 2048, 8192}) QTest::addRow("Q4_K/%d", n) << q4_k << n << false << int(o);
    QTest::addRow("Q4_K/256 extreme") << q4_k << 256 << true << int(o);
}

QString mismatch(const char* what, int r, int c, float got, float want) {
    return QString("row %1, token %2: %3 %4, row dot %5").arg(r).arg(c).arg(what).arg(double(got), 0, 'g', 9).arg(double(want), 0, 'g', 9);
}

}  // namespace

void TestQuantTiles::packed_tile_equals_row_dot_bit_for_bit_data() {
    q4_k_cases(wb::DotOrder::kGemm);
    QTest::addRow("Q4_K/8192 extreme") << uint32_t(GgmlType::Q4_K) << 8192 << true << int(wb::DotOrder::kGemm);
    const auto tiled = int(wb::DotOrder::kTiled);
    for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q5_K})
        for (int n : {256, 2048}) QTest::addRow("%s/%d/tiled", wb::ggml_type_name(t).c_str(), n) << uint32_t(t) << n << false << tiled;
    QTest::addRow("Q5_K/256/tiled extreme") << uint32_t(GgmlType::Q5_K) << 256 << true << tiled;
    QTest::addRow("Q5_K/8192/tiled") << uint32_t(GgmlType::Q5_K) << 8192 << false << tiled;
    QTest::addRow("Q4_K/256/tiled extreme") << uint32_t(GgmlType::Q4_K) << 256 << true << tiled;
}

// The tiles over packed activations (DotKernels::pack_x / tile_packed, what the CPU backend uses for
// prefill: Q4_K's gemm order, Q4_K's and Q5_K's tiled order): 16 rows against 8 tokens, each output
// equal to the row dot in that order, bit for bit.
void TestQuantTiles::packed_tile_equals_row_dot_bit_for_bit() {
    if (!avx2_family()) QSKIP("the AVX2 kernel family is not in use on this CPU (no AVX2/FMA/F16C)");
    QFETCH(uint32_t, type);
    QFETCH(int, n);
    QFETCH(bool, extreme);
    QFETCH(int, order);
    const RowsCase q(GgmlType(type), n, extreme);
    const auto o = wb::DotOrder(order);
    // The best family (avx512 where the CPU has it: its own 512-bit tiles and packing) and plain AVX2,
    // each against the AVX2 family's row dot (the scalar family has no row dot in the gemm order).
    for (Form f : {Form::kBest, Form::kPlainAvx2}) {
        std::vector<float> out(size_t(RowsCase::kRows * wb::kDotTileCols), -1.0f);
        {
            const FormGuard guard(f);
            const wb::DotKernels k = wb::dot_kernels(q.t, n, o);
            QVERIFY(k.pack_x && k.tile_packed && k.packed_x_bytes);
            std::vector<uint8_t> packed(k.packed_x_bytes(n));
            k.pack_x(n, q.xq.data(), q.x_stride, packed.data());
            for (int r = 0; r < RowsCase::kRows; ++r) k.tile_packed(n, q.row(r), packed.data(), out.data() + r, RowsCase::kRows);
        }
        const FormGuard reference(Form::kPlainAvx2);
        for (int r = 0; r < RowsCase::kRows; ++r)
            for (int c = 0; c < wb::kDotTileCols; ++c) {
                const float got = out[size_t(c * RowsCase::kRows + r)], want = q.want(n, r, c, o);
                QVERIFY2(std::memcmp(&got, &want, sizeof got) == 0,
                         qPrintable(QString(form_name(f)) + ": " + mismatch("packed tile", r, c, got, want)));
            }
    }
}

void TestQuantTiles::tile16_equals_row_dot_bit_for_bit_data() {
    packed_tile_equals_row_dot_bit_for_bit_data();
    const auto tiled = int(wb::DotOrder::kTiled);
    for (GgmlType t : {GgmlType::Q6_K, GgmlType::IQ4_XS}) {
        for (int n : {256, 2048}) QTest::addRow("%s/%d/tiled", wb::ggml_type_name(t).c_str(), n) << uint32_t(t) << n << false << tiled;
        QTest::addRow("%s/256/tiled extreme", wb::ggml_type_name(t).c_str()) << uint32_t(t) << 256 << true << tiled;
    }
    const auto llamafile = int(wb::DotOrder::kLlamafile);
    for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q5_0, GgmlType::Q4_1, GgmlType::Q5_1})
        for (int n : {32, 2048}) QTest::addRow("%s/%d/llamafile", wb::ggml_type_name(t).c_str(), n) << uint32_t(t) << n << false << llamafile;
    for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q5_0, GgmlType::Q4_1, GgmlType::Q5_1})
        QTest::addRow("%s/2048/llamafile extreme", wb::ggml_type_name(t).c_str()) << uint32_t(t) << 2048 << true << llamafile;
    for (auto [o, name] : {std::pair{wb::DotOrder::kGemv, "gemv"}, std::pair{wb::DotOrder::kGemm, "gemm"}})
        for (GgmlType t : {GgmlType::Q4_0, GgmlType::IQ4_NL}) {
            const std::string ty = wb::ggml_type_name(t);
            for (int n : {32, 96, 2048}) QTest::addRow("%s/%d/%s", ty.c_str(), n, name) << uint32_t(t) << n << false << int(o);
            QTest::addRow("%s/2048/%s extreme", ty.c_str(), name) << uint32_t(t) << 2048 << true << int(o);
        }
}

// The tile over 16 rows unpacked together (DotKernels::tile16_unpacked, the avx512 family's prefill
// form of Q4_K's gemm order, the tiled order of Q4_K, Q5_K, Q6_K and IQ4_XS, the llamafile
// order of Q8_0, Q5_0, Q4_1 and Q5_1, and Q4_0's and IQ4_NL's repacked gemv and gemm order): every output of the 16 rows and 8 tokens equal to the AVX2 family's row dot in that order,
// bit for bit.
void TestQuantTiles::tile16_equals_row_dot_bit_for_bit() {
    QFETCH(uint32_t, type);
    QFETCH(int, n);
    QFETCH(bool, extreme);
    QFETCH(int, order);
    const RowsCase q(GgmlType(type), n, extreme);
    static_assert(RowsCase::kRows == wb::kTile16Rows, "one call covers the case's rows");
    const auto o = wb::DotOrder(order);
    const wb::DotKernels k = wb::dot_kernels(q.t, n, o);
    // Only the avx512 family has them, and there every one of these rows must (a lost registration
    // would otherwise pass unseen through the other tiles).
    if (std::string(wb::quant_kernel_name()) != "avx512")
        QSKIP(qPrintable(QString("the %1 family has no 16-row tiles").arg(wb::quant_kernel_name())));
    QVERIFY(k.tile16_unpacked && k.unpack16_w && k.unpacked16_w_bytes);
    std::vector<uint8_t> unpacked(k.unpacked16_w_bytes(n) + 64);
    uint8_t* u = unpacked.data() + (64 - reinterpret_cast<uintptr_t>(unpacked.data()) % 64) % 64;  // as quant.h asks
    k.unpack16_w(n, q.row(0), q.w_stride, u);
    constexpr int kStride = wb::kTile16Rows + 5;  // outputs of a wider matrix: the stride is not 16
    std::vector<float> out(size_t(kStride * wb::kDotTileCols), -1.0f);
    k.tile16_unpacked(n, u, q.xq.data(), q.x_stride, out.data(), kStride);
    const FormGuard reference(Form::kPlainAvx2);
    for (int r = 0; r < RowsCase::kRows; ++r)
        for (int c = 0; c < wb::kDotTileCols; ++c) {
            const float got = out[size_t(c * kStride + r)], want = q.want(n, r, c, o);
            QVERIFY2(std::memcmp(&got, &want, sizeof got) == 0, qPrintable(mismatch("tile16", r, c, got, want)));
        }
}

void TestQuantTiles::rows8_equals_row_dot_bit_for_bit_data() {
    q4_k_cases(wb::DotOrder::kGemv);  // the decode's order
    for (int n : {32, 2304}) QTest::addRow("Q8_0/%d", n) << uint32_t(GgmlType::Q8_0) << n << false << int(wb::DotOrder::kRow);
    QTest::addRow("Q8_0/2304 extreme") << uint32_t(GgmlType::Q8_0) << 2304 << true << int(wb::DotOrder::kRow);
}

// The kernels over 8 rows (DotKernels::rows8, what the CPU backend uses for decode: Q4_K's gemv order,
// Q8_0's row order): each of the 16 rows (two calls) against each token equal to the row dot in that
// order, bit for bit.
void TestQuantTiles::rows8_equals_row_dot_bit_for_bit() {
    if (!avx2_family()) QSKIP("the AVX2 kernel family is not in use on this CPU (no AVX2/FMA/F16C)");
    QFETCH(uint32_t, type);
    QFETCH(int, n);
    QFETCH(bool, extreme);
    QFETCH(int, order);
    const RowsCase q(GgmlType(type), n, extreme);
    const auto o = wb::DotOrder(order);
    // The best family (avx512's own 512-bit kernels where the CPU has them) and plain AVX2, each
    // against the AVX2 family's row dot.
    for (Form f : {Form::kBest, Form::kPlainAvx2}) {
        float out[wb::kDotTileCols][RowsCase::kRows];
        {
            const FormGuard guard(f);
            const wb::DotKernels k = wb::dot_kernels(q.t, n, o);
            QVERIFY(k.rows8);
            for (int c = 0; c < wb::kDotTileCols; ++c)
                for (int r = 0; r < RowsCase::kRows; r += 8) k.rows8(n, q.row(r), q.w_stride, q.token(c), out[c] + r);
        }
        const FormGuard reference(Form::kPlainAvx2);
        for (int c = 0; c < wb::kDotTileCols; ++c)
            for (int r = 0; r < RowsCase::kRows; ++r) {
                const float want = q.want(n, r, c, o);
                QVERIFY2(std::memcmp(&out[c][r], &want, sizeof want) == 0,
                         qPrintable(QString(form_name(f)) + ": " + mismatch("rows8", r, c, out[c][r], want)));
            }
    }
}

void TestQuantTiles::repacked16_equals_row_dot_bit_for_bit_data() {
    q4_k_cases(wb::DotOrder::kGemv);  // the decode's order
    QTest::addRow("Q4_K/8192 extreme") << uint32_t(GgmlType::Q4_K) << 8192 << true << int(wb::DotOrder::kGemv);
    for (int n : {256, 2048}) QTest::addRow("Q4_K/%d/gemm", n) << uint32_t(GgmlType::Q4_K) << n << false << int(wb::DotOrder::kGemm);
    QTest::addRow("Q4_K/256/gemm extreme") << uint32_t(GgmlType::Q4_K) << 256 << true << int(wb::DotOrder::kGemm);
    for (int n : {32, 96, 2304}) QTest::addRow("Q8_0/%d", n) << uint32_t(GgmlType::Q8_0) << n << false << int(wb::DotOrder::kRow);
    QTest::addRow("Q8_0/2304 extreme") << uint32_t(GgmlType::Q8_0) << 2304 << true << int(wb::DotOrder::kRow);
    for (int n : {32, 96, 640, 2304}) QTest::addRow("Q5_0/%d", n) << uint32_t(GgmlType::Q5_0) << n << false << int(wb::DotOrder::kRow);
    QTest::addRow("Q5_0/2304 extreme") << uint32_t(GgmlType::Q5_0) << 2304 << true << int(wb::DotOrder::kRow);
    for (int n : {32, 576, 1536}) QTest::addRow("Q4_1/%d", n) << uint32_t(GgmlType::Q4_1) << n << false << int(wb::DotOrder::kRow);
    QTest::addRow("Q4_1/1536 extreme") << uint32_t(GgmlType::Q4_1) << 1536 << true << int(wb::DotOrder::kRow);
    for (auto [o, name] : {std::pair{wb::DotOrder::kRow, "row"}, std::pair{wb::DotOrder::kTiled, "tiled"}}) {
        for (int n : {256, 3072}) QTest::addRow("Q6_K/%d/%s", n, name) << uint32_t(GgmlType::Q6_K) << n << false << int(o);
        QTest::addRow("Q6_K/2048/%s extreme", name) << uint32_t(GgmlType::Q6_K) << 2048 << true << int(o);
        for (int n : {256, 2048, 8192}) QTest::addRow("Q5_K/%d/%s", n, name) << uint32_t(GgmlType::Q5_K) << n << false << int(o);
        QTest::addRow("Q5_K/2048/%s extreme", name) << uint32_t(GgmlType::Q5_K) << 2048 << true << int(o);
    }
    for (auto [o, name] : {std::pair{wb::DotOrder::kGemv, "gemv"}, std::pair{wb::DotOrder::kGemm, "gemm"}})
        for (GgmlType t : {GgmlType::Q4_0, GgmlType::IQ4_NL}) {
            const std::string ty = wb::ggml_type_name(t);
            for (int n : {32, 96, 2048}) QTest::addRow("%s/%d/%s", ty.c_str(), n, name) << uint32_t(t) << n << false << int(o);
            QTest::addRow("%s/2048/%s extreme", ty.c_str(), name) << uint32_t(t) << 2048 << true << int(o);
        }
}

// The layout repacked at load (DotKernels::repack16, the avx512 family's decode form of Q4_K, Q5_K,
// Q8_0, Q6_K, Q5_0, Q4_0, IQ4_NL and Q4_1): each of the 16 rows against each token through row16_repacked equal to the AVX2 family's
// row dot in that order, bit for bit; every row unrepacked byte for byte; and where the order has a
// 16-row tile, unpack16_repacked writing exactly the bytes unpack16_w writes from the file's rows (the
// prefill then reads only the repacked copy).
void TestQuantTiles::repacked16_equals_row_dot_bit_for_bit() {
    QFETCH(uint32_t, type);
    QFETCH(int, n);
    QFETCH(bool, extreme);
    QFETCH(int, order);
    const RowsCase q(GgmlType(type), n, extreme);
    const auto o = wb::DotOrder(order);
    if (std::string(wb::quant_kernel_name()) != "avx512")
        QSKIP(qPrintable(QString("the %1 family repacks nothing").arg(wb::quant_kernel_name())));
    const wb::DotKernels k = wb::dot_kernels(q.t, n, o);
    QVERIFY(k.repack16 && k.row16_repacked && k.repacked16_bytes && k.unrepack_row);
    for (wb::DotOrder other : {wb::DotOrder::kRow, wb::DotOrder::kTiled, wb::DotOrder::kGemv, wb::DotOrder::kGemm, wb::DotOrder::kLlamafile}) {
        const wb::DotKernels k2 = wb::dot_kernels(q.t, n, other);
        QVERIFY2(!k2.repack16 || (k2.repack16 == k.repack16 && k2.repacked16_bytes == k.repacked16_bytes), "one layout for every order");
    }
    const auto aligned = [](std::vector<uint8_t>& buf, size_t bytes) {  // 64-byte aligned, as quant.h asks
        buf.assign(bytes + 64, 0xA5);
        return buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
    };
    std::vector<uint8_t> rbuf;
    uint8_t* repacked = aligned(rbuf, k.repacked16_bytes(n));
    k.repack16(n, q.row(0), q.w_stride, repacked);
    float out[wb::kDotTileCols][RowsCase::kRows];
    for (int c = 0; c < wb::kDotTileCols; ++c) k.row16_repacked(n, repacked, q.token(c), out[c]);
    // Nothing is lost: every row comes back byte for byte (an embedding lookup reads it so).
    std::vector<uint8_t> back(q.w_stride);
    for (int r = 0; r < RowsCase::kRows; ++r) {
        k.unrepack_row(n, repacked, r, back.data());
        QVERIFY2(std::memcmp(back.data(), q.row(r), q.w_stride) == 0, qPrintable(QString("row %1 unrepacked").arg(r)));
    }
    if (k.tile16_unpacked) {
        QVERIFY(k.unpack16_repacked);
        std::vector<uint8_t> a, b;
        uint8_t* from_file = aligned(a, k.unpacked16_w_bytes(n));
        uint8_t* from_repacked = aligned(b, k.unpacked16_w_bytes(n));
        k.unpack16_w(n, q.row(0), q.w_stride, from_file);
        k.unpack16_repacked(n, repacked, from_repacked);
        QVERIFY2(std::memcmp(from_file, from_repacked, k.unpacked16_w_bytes(n)) == 0, "unpack16 from the repacked rows");
    } else {
        QVERIFY(!k.unpack16_repacked);
    }
    const FormGuard reference(Form::kPlainAvx2);
    for (int c = 0; c < wb::kDotTileCols; ++c)
        for (int r = 0; r < RowsCase::kRows; ++r) {
            const float want = q.want(n, r, c, o);
            QVERIFY2(std::memcmp(&out[c][r], &want, sizeof want) == 0, qPrintable(mismatch("row16_repacked", r, c, out[c][r], want)));
        }
}

QTEST_GUILESS_MAIN(TestQuantTiles)
#include "test_quant_tiles.moc"
