// whitebox-cli's --json output helpers (app/cli/cli_json): what the hand-written writer they replaced
// guaranteed and scripts rely on. Numbers print at float precision (0.1f as 0.100000001,
// not 0.10000000149011612), NaN and infinity as null, keys in the order written, and a string holding
// invalid UTF-8 (a token piece cut inside a character) still gives valid JSON instead of an exception.
// Where nlohmann-json differs from the old writer: a cut sequence becomes one U+FFFD (not one per
// byte), 0x7F is written raw (not \u007f), and a whole double prints as 12345.0 (not 12345).
// Plain executable (label unit): PASS/FAIL lines, exit status 1 on any failure.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "cli/cli_json.h"

using namespace wb::cli;

namespace {

int g_failures = 0;

void expect_eq(const std::string& got, const std::string& want, const std::string& what) {
    const bool ok = got == want;
    std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
    if (!ok) {
        std::printf("  got:  %s\n  want: %s\n", got.c_str(), want.c_str());
        ++g_failures;
    }
}

void numbers() {
    expect_eq(json_dump(json_number(0.1f)), "0.100000001", "a float widened to double prints at 9 digits, not 17");
    expect_eq(json_dump(json_number(0.786502898123)), "0.786502898", "9 significant digits, as before");
    expect_eq(json_dump(json_number(12345.0)), "12345.0", "a whole number stays a number");
    expect_eq(json_dump(json_number(std::nan(""))), "null", "NaN is null (JSON has no NaN)");
    expect_eq(json_dump(json_number(-std::numeric_limits<double>::infinity())), "null", "infinity is null");
}

void strings() {
    expect_eq(json_quote(std::string("a\"b\\c\n\t\x01")), "\"a\\\"b\\\\c\\n\\t\\u0001\"", "escapes");
    expect_eq(json_quote("h\xC3\xA9llo \xF0\x9F\xA6\x8A"), "\"h\xC3\xA9llo \xF0\x9F\xA6\x8A\"", "valid UTF-8 kept as is");
    // The first half of a 4-byte character, as a token piece can end: one U+FFFD, no exception.
    expect_eq(json_quote(" \xF0\x9F"), "\" \xEF\xBF\xBD\"", "a cut character becomes U+FFFD");
    expect_eq(json_dump(Json{{"piece", "\xFF"}}), "{\"piece\":\"\xEF\xBF\xBD\"}", "invalid byte inside an object");
}

void key_order() {
    Json j = {{"text", "x"}, {"tokens", Json::array({3, 1})}};
    j["timings"] = {{"prefill_ms", json_number(1.5)}};
    expect_eq(json_dump(j), "{\"text\":\"x\",\"tokens\":[3,1],\"timings\":{\"prefill_ms\":1.5}}", "keys in written order");
}

}  // namespace

int main() {
    numbers();
    strings();
    key_order();
    std::printf("%s\n", g_failures ? "FAILED" : "all passed");
    return g_failures ? 1 : 0;
}
