// Stop strings in streamed text: text that might begin a stop string is held back, a stop string
// split across tokens is still found, and neither it nor anything after it is shown.
#include <QtTest>

#include "engine/stop_strings.h"

using namespace wb;

class TestStopStrings : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void matchSplitAcrossPieces() {
        StopStringMatcher m({"User:"});
        QCOMPARE(m.push("Hello "), std::string("Hello "));
        QCOMPARE(m.push("Us"), std::string(""));  // could be the start of "User:"
        QVERIFY(!m.matched());
        QCOMPARE(m.push("er: next"), std::string(""));
        QVERIFY(m.matched());
        QCOMPARE(m.push("more"), std::string(""));
    }

    void heldTextIsReleasedWhenItStopsMatching() {
        StopStringMatcher m({"</s>"});
        QCOMPARE(m.push("a <"), std::string("a "));
        QCOMPARE(m.push("b"), std::string("<b"));
        QVERIFY(!m.matched());
    }

    void textBeforeTheMatchIsKept() {
        StopStringMatcher m({"STOP", "END"});
        QCOMPARE(m.push("one two END three"), std::string("one two "));
        QVERIFY(m.matched());
    }

    void flushReturnsHeldPrefix() {
        StopStringMatcher m({"###"});
        QCOMPARE(m.push("x ##"), std::string("x "));
        QCOMPARE(m.flush(), std::string("##"));
    }

    void noStopStringsPassEverything() {
        StopStringMatcher m({});
        QCOMPARE(m.push("abc"), std::string("abc"));
        QCOMPARE(m.flush(), std::string(""));
    }
};

QTEST_GUILESS_MAIN(TestStopStrings)
#include "test_stop_strings.moc"
