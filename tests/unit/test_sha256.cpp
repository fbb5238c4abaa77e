// SHA-256 (util/sha256.h), which names a trace file's model file: FIPS 180-4's examples.
#include <QtTest>

#include <algorithm>
#include <string>

#include "util/sha256.h"

using namespace wb;

class TestSha256 : public QObject {
    Q_OBJECT
private slots:
    void matches_the_standard_vectors();
};

void TestSha256::matches_the_standard_vectors() {
    // FIPS 180-4's examples, and a message that needs a second padding block.
    auto hex = [](const std::string& s) {
        Sha256 h;
        h.update(s.data(), s.size());
        return h.hex_digest();
    };
    QCOMPARE(hex(""), std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    QCOMPARE(hex("abc"), std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    QCOMPARE(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
             std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    // Fed in pieces of odd sizes: the same digest as in one piece.
    const std::string million(1000000, 'a');
    Sha256 h;
    for (size_t at = 0; at < million.size(); at += 777) h.update(million.data() + at, std::min<size_t>(777, million.size() - at));
    QCOMPARE(h.hex_digest(), std::string("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
}

QTEST_GUILESS_MAIN(TestSha256)
#include "test_sha256.moc"
