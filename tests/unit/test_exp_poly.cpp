// util/exp_poly.h: the branch-free exp_poly (its large-|x| case selected, not branched to, so the
// softmax's loop vectorises) gives, bit for bit, what its definition with the branches gives: over a
// dense sweep of [-120, 90] (the normal range, the two-step scaling past |n| > 126, the certain
// underflow and overflow past |n| > 192) and at the infinities, evaluated both one call at a time and
// inside a loop the compiler vectorises (an AVX-512 / FMA clone where the CPU has them, as the CPU
// backend's WB_FMA_CLONES loops are).
#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "util/exp_poly.h"
#include "util/fp16.h"

namespace {

// exp_poly as first written, with its early returns: the definition the branch-free form must equal.
float exp_by_definition(float x) {
    constexpr float kShift = 0x1.8p23f, kInvLn2 = 0x1.715476p+0f, kLn2Hi = 0x1.62e4p-1f, kLn2Lo = 0x1.7f7d1cp-20f;
    constexpr float kC1 = 0x1.ffffecp-1f, kC2 = 0x1.fffdb6p-2f, kC3 = 0x1.555e66p-3f, kC4 = 0x1.573e2ep-5f,
                    kC5 = 0x1.0e4020p-7f;
    const float z = std::fma(x, kInvLn2, kShift);
    const float n = z - kShift;
    const float b = std::fma(-n, kLn2Lo, std::fma(-n, kLn2Hi, x));
    const uint32_t e = wb::f32_to_bits(z) << 23;
    const float scale = wb::bits_to_f32(e + wb::f32_to_bits(1.0f));
    const float b2 = b * b;
    const float poly = std::fma(std::fma(std::fma(kC5, b, kC4), b2, std::fma(kC3, b, kC2)), b2, kC1 * b);
    if (!(std::fabs(n) > 126.0f)) return std::fma(poly, scale, scale);
    const uint32_t neg = n <= 0.0f ? 0x82000000u : 0u;
    const float s1 = wb::bits_to_f32(neg + 0x7f000000u);
    const float s2 = wb::bits_to_f32(e - neg);
    if (std::fabs(n) > 192.0f) return s1 * s1;
    return std::fma(s2, poly, s2) * s1;
}

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
__attribute__((target_clones("avx512f", "fma", "default")))
#endif
void exp_loop(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = wb::exp_poly(x[i]);
}

}  // namespace

class TestExpPoly : public QObject {
    Q_OBJECT

private slots:
    void branchFreeFormEqualsTheDefinition();
};

void TestExpPoly::branchFreeFormEqualsTheDefinition() {
    std::vector<float> x;
    for (double v = -120.0; v <= 90.0; v += 1.0 / 4096) x.push_back(float(v));
    x.push_back(-std::numeric_limits<float>::infinity());
    x.push_back(std::numeric_limits<float>::infinity());
    std::vector<float> looped(x.size());
    exp_loop(x.data(), looped.data(), int64_t(x.size()));
    int64_t large = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const float want = exp_by_definition(x[i]), one = wb::exp_poly(x[i]);
        large += std::fabs(x[i]) > 88.0f;
        QVERIFY2(std::memcmp(&one, &want, sizeof want) == 0, qPrintable(QString("x = %1").arg(double(x[i]), 0, 'g', 9)));
        QVERIFY2(std::memcmp(&looped[i], &want, sizeof want) == 0,
                 qPrintable(QString("x = %1 in the vectorised loop").arg(double(x[i]), 0, 'g', 9)));
    }
    QVERIFY(large > 100000);  // the two-step and the certain over/underflow cases are well covered
}

QTEST_GUILESS_MAIN(TestExpPoly)
#include "test_exp_poly.moc"
