// fp16 / bf16 conversions: exhaustive over all 65536 bit patterns against an independent decode, plus
// hand-picked values for rounding (ties to even), overflow, underflow and NaN.
#include <QtTest>

#include <cmath>
#include <limits>

#include "util/fp16.h"

namespace {

bool fp16_is_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0; }
bool bf16_is_nan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x007fu) != 0; }

// The binary16 definition written out with ldexp, independent of the bit manipulation under test.
double fp16_reference(uint16_t h) {
    const int sign = h >> 15;
    const int exp = (h >> 10) & 0x1f;
    const int mant = h & 0x3ff;
    double v;
    if (exp == 0)
        v = std::ldexp(double(mant), -24);
    else if (exp == 31)
        v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    else
        v = std::ldexp(1.0 + mant / 1024.0, exp - 15);
    return sign ? -v : v;
}

}  // namespace

class TestFp16 : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void fp16_decode_matches_the_definition_for_every_bit_pattern();
    void fp16_round_trips_every_non_nan_value();
    void f32_to_fp16_rounds_known_values();
    void f32_to_fp16_rounds_known_values_data();
    void nan_stays_nan_in_both_formats();
    void bf16_round_trips_every_non_nan_value();
    void f32_to_bf16_rounds_to_nearest_even();
    void f32_to_bf16_rounds_to_nearest_even_data();
};

void TestFp16::fp16_decode_matches_the_definition_for_every_bit_pattern() {
    for (uint32_t h = 0; h <= 0xffffu; ++h) {
        const float got = wb::fp16_to_f32(uint16_t(h));
        const double want = fp16_reference(uint16_t(h));
        if (std::isnan(want)) {
            QVERIFY2(std::isnan(got), qPrintable(QString::number(h, 16)));
            continue;
        }
        QVERIFY2(double(got) == want, qPrintable(QString::number(h, 16)));
        QCOMPARE(std::signbit(got), bool(h & 0x8000u));  // keeps -0
    }
}

void TestFp16::fp16_round_trips_every_non_nan_value() {
    for (uint32_t h = 0; h <= 0xffffu; ++h) {
        if (fp16_is_nan(uint16_t(h))) continue;
        QCOMPARE(wb::f32_to_fp16(wb::fp16_to_f32(uint16_t(h))), uint16_t(h));
    }
}

void TestFp16::f32_to_fp16_rounds_known_values_data() {
    QTest::addColumn<float>("value");
    QTest::addColumn<uint16_t>("expected");
    const float inf = std::numeric_limits<float>::infinity();
    const auto row = [](const char* name, double v, uint16_t h) { QTest::newRow(name) << float(v) << h; };
    row("1.0", 1.0, 0x3c00);
    row("-2.0", -2.0, 0xc000);
    row("0.5", 0.5, 0x3800);
    row("+0", 0.0, 0x0000);
    row("-0", -0.0, 0x8000);
    row("largest finite 65504", 65504.0, 0x7bff);
    row("smallest normal 2^-14", std::ldexp(1.0, -14), 0x0400);
    row("smallest subnormal 2^-24", std::ldexp(1.0, -24), 0x0001);
    row("largest subnormal", std::ldexp(1023.0, -24), 0x03ff);
    row("+inf", inf, 0x7c00);
    row("-inf", -inf, 0xfc00);
    // Ties go to the even neighbour; anything above the tie goes up.
    row("tie 1+2^-11 down to even 1.0", 1.0 + std::ldexp(1.0, -11), 0x3c00);
    row("tie 1+3*2^-11 up to even", 1.0 + 3 * std::ldexp(1.0, -11), 0x3c02);
    row("just above tie rounds up", 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -20), 0x3c01);
    row("just below tie rounds down", 1.0 + std::ldexp(1.0, -11) - std::ldexp(1.0, -20), 0x3c00);
    row("tie below 2 carries into the exponent", 2.0 - std::ldexp(1.0, -11), 0x4000);
    row("subnormal tie carries into the smallest normal", std::ldexp(1023.5, -24), 0x0400);
    row("subnormal tie 1.5*2^-24 up to even 2", std::ldexp(1.5, -24), 0x0002);
    row("subnormal tie 2.5*2^-24 down to even 2", std::ldexp(2.5, -24), 0x0002);
    // Overflow: 65520 is the tie between 65504 (odd mantissa) and 2^16, so it rounds to 2^16 = inf.
    row("65519 stays finite", 65519.0, 0x7bff);
    row("65520 overflows to inf", 65520.0, 0x7c00);
    row("1e6 overflows to inf", 1e6, 0x7c00);
    row("-1e6 overflows to -inf", -1e6, 0xfc00);
    row("float max overflows to inf", double(std::numeric_limits<float>::max()), 0x7c00);
    // Underflow: half the smallest subnormal is a tie with zero and goes to zero (even).
    row("2^-25 underflows to zero", std::ldexp(1.0, -25), 0x0000);
    row("just above 2^-25 rounds to the smallest subnormal", std::ldexp(1.0, -25) * (1.0 + 1e-6), 0x0001);
    row("1e-10 underflows to zero", 1e-10, 0x0000);
    row("-1e-10 underflows to -0", -1e-10, 0x8000);
    row("smallest float subnormal underflows", double(std::numeric_limits<float>::denorm_min()), 0x0000);
}

void TestFp16::f32_to_fp16_rounds_known_values() {
    QFETCH(float, value);
    QFETCH(uint16_t, expected);
    QCOMPARE(wb::f32_to_fp16(value), expected);
}

void TestFp16::nan_stays_nan_in_both_formats() {
    const float qnan = std::numeric_limits<float>::quiet_NaN();
    const float snan = wb::bits_to_f32(0x7f800001u);  // payload only in the low bits that get dropped
    const float neg_nan = wb::bits_to_f32(0xffc00000u);
    for (float nan : {qnan, snan, neg_nan}) {
        QVERIFY(fp16_is_nan(wb::f32_to_fp16(nan)));
        QVERIFY(bf16_is_nan(wb::f32_to_bf16(nan)));
    }
    QVERIFY(std::isnan(wb::fp16_to_f32(0x7e00)));
    QVERIFY(std::isnan(wb::fp16_to_f32(0x7c01)));
    QVERIFY(std::isnan(wb::bf16_to_f32(0x7fc0)));
}

void TestFp16::bf16_round_trips_every_non_nan_value() {
    for (uint32_t b = 0; b <= 0xffffu; ++b) {
        if (bf16_is_nan(uint16_t(b))) continue;
        const float f = wb::bf16_to_f32(uint16_t(b));
        QCOMPARE(wb::f32_to_bits(f), b << 16);  // bf16 is the top half of a float
        QCOMPARE(wb::f32_to_bf16(f), uint16_t(b));
    }
}

void TestFp16::f32_to_bf16_rounds_to_nearest_even_data() {
    QTest::addColumn<uint32_t>("f32_bits");
    QTest::addColumn<uint16_t>("expected");
    QTest::newRow("1.0 exact") << 0x3f800000u << uint16_t(0x3f80);
    QTest::newRow("tie down to even") << 0x3f808000u << uint16_t(0x3f80);
    QTest::newRow("tie up to even") << 0x3f818000u << uint16_t(0x3f82);
    QTest::newRow("just above tie rounds up") << 0x3f808001u << uint16_t(0x3f81);
    QTest::newRow("just below tie rounds down") << 0x3f807fffu << uint16_t(0x3f80);
    QTest::newRow("negative tie to even") << 0xbf818000u << uint16_t(0xbf82);
    QTest::newRow("carry into the exponent") << 0x3fffffffu << uint16_t(0x4000);
    QTest::newRow("float max overflows to inf") << 0x7f7fffffu << uint16_t(0x7f80);
    QTest::newRow("inf stays inf") << 0x7f800000u << uint16_t(0x7f80);
    QTest::newRow("-0 stays -0") << 0x80000000u << uint16_t(0x8000);
    QTest::newRow("float subnormal rounds like any value") << 0x00008000u << uint16_t(0x0000);
}

void TestFp16::f32_to_bf16_rounds_to_nearest_even() {
    QFETCH(uint32_t, f32_bits);
    QFETCH(uint16_t, expected);
    QCOMPARE(wb::f32_to_bf16(wb::bits_to_f32(f32_bits)), expected);
}

QTEST_GUILESS_MAIN(TestFp16)
#include "test_fp16.moc"
