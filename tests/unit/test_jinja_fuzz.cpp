// Hostile and broken templates never crash or hang the Jinja engine: thousands of truncated and
// mutated copies of the real templates (tests/reference/templates) and random token soups, from a
// fixed seed, each either render or throw wb::Error, each within a bounded time.
#include <QtTest>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "chat/jinja/json.h"
#include "chat/jinja/template.h"
#include "util/error.h"

using namespace wb::jinja;

namespace {

const std::string kDir = std::string(WB_REFERENCE_DIR) + "/templates/";

// Pieces of template syntax that mutations insert: tag delimiters, keywords, operators, calls that
// build big values, and bytes that are not valid UTF-8.
const char* const kTokens[] = {
    "{%", "%}", "{{", "}}", "{#", "#}", "{%-", "-%}", "{{-", "-}}", "{%+", "+%}", "(", ")", "[", "]", "{", "}",
    "'", "\"", "\\", "|", ",", ":", ".", "~", "+", "-", "*", "**", "/", "//", "%", "==", "!=", "<", ">=", "=",
    " if ", " else ", " elif ", " endif ", " for ", " in ", " endfor ", " set ", " endset ", " macro ", " endmacro ",
    " call ", " endcall ", " filter ", " endfilter ", " raw ", " endraw ", " break ", " continue ", " not ", " and ",
    " or ", " is ", " defined ", " none ", " loop ", " loop.index ", " loop.previtem ", "messages", "message",
    "message['content']", "tools", "ns", "namespace(a=1)", "range(99999)", "range(-5)", " recursive ", "caller()",
    "varargs", "kwargs", " tojson ", " tojson(indent=2) ", " trim ", " map(attribute='x') ", " selectattr('role') ",
    " list ", " join(', ') ", " items ", " first ", " length ", " string ", " safe ", " default(1) ", " int ",
    "'%s' % ", "'{}'.format(1)", ".split()", ".strip('x')", ".append(1)", ".pop()", ".__class__", "[::-1]", "[1:]",
    "raise_exception('x')", "strftime_now('%Y%')", "1e308 * 10", "2 ** 63", "'x' * 99999", "[1] * 99999", "\n",
    "\t", "   ", "\xff", "\xc3", "\xe2\x82", "\x00", "0x", "1_", "1.", ".5", "9999999999999999999999"};

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::vector<std::string> corpus() {
    std::vector<std::string> out;
    for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
        if (entry.path().extension() == ".jinja") out.push_back(entry.path().string());
    }
    std::sort(out.begin(), out.end());
    std::vector<std::string> sources;
    for (const auto& p : out) sources.push_back(slurp(p));
    return sources;
}

class Mutator {
public:
    explicit Mutator(std::uint64_t seed) : rng_(seed) {}

    std::size_t below(std::size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }
    const char* token() { return kTokens[below(std::size(kTokens))]; }

    std::string mutate(std::string s) {
        const int edits = 1 + static_cast<int>(below(4));
        for (int e = 0; e < edits; ++e) {
            const std::size_t at = below(s.size() + 1);
            const std::size_t len = std::min<std::size_t>(below(40), s.size() - std::min(at, s.size()));
            switch (below(5)) {
                case 0: s.erase(at, len); break;                        // delete a span
                case 1: s.insert(at, token()); break;                    // insert syntax
                case 2: s.insert(at, s.substr(at, len)); break;          // duplicate a span
                case 3: if (at < s.size()) s[at] = static_cast<char>(below(256)); break;  // flip a byte
                default: s.insert(below(s.size() + 1), s.substr(at, len)); break;         // move a copy
            }
        }
        return s;
    }

    std::string soup() {
        std::string s;
        const std::size_t n = 3 + below(60);
        for (std::size_t i = 0; i < n; ++i) s += token();
        return s;
    }

private:
    std::mt19937_64 rng_;
};

Value fuzz_context() {
    // (moc cannot read raw string literals, so this is a plain one.)
    return parse_json(
        "{\"messages\": [{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", \"content\": \"hi {{ x }}\"},"
        " {\"role\": \"assistant\", \"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": \"f\","
        " \"arguments\": {\"a\": [1, 2.5, null]}}}]}, {\"role\": \"tool\", \"content\": \"{\\\"r\\\": 1}\"},"
        " {\"role\": \"assistant\", \"content\": \"<think>t</think>done\"}],"
        " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"description\": \"d\","
        " \"parameters\": {\"type\": \"object\"}}}],"
        " \"add_generation_prompt\": true, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\", \"documents\": null}");
}

// Small limits keep each case fast; what is checked is that the engine stops, not where.
RenderOptions fuzz_options() {
    RenderOptions o;
    o.limits.max_output_bytes = 1u << 20;
    o.limits.max_string_bytes = 1u << 20;
    o.limits.max_list_items = 1u << 16;
    o.limits.max_loop_iterations = 20000;
    o.limits.max_steps = 300000;
    o.local_time = [] { return std::tm{}; };
    return o;
}

struct Outcome {
    int rendered = 0, parse_errors = 0, render_errors = 0;
    double worst_seconds = 0;
    std::string worst;
};

// One template: parse and render; anything but wb::Error is a failure.
void run_one(const std::string& source, const Value& context, Outcome& out) {
    const auto start = std::chrono::steady_clock::now();
    bool parsed = false;
    try {
        const Template t = Template::parse(source);
        parsed = true;
        t.render(context, fuzz_options());
        ++out.rendered;
    } catch (const wb::Error&) {
        ++(parsed ? out.render_errors : out.parse_errors);
    } catch (const std::exception& e) {
        QFAIL(qPrintable(QString("non-wb::Error exception (%1) for template: %2").arg(e.what(), QString::fromStdString(source))));
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (s > out.worst_seconds) {
        out.worst_seconds = s;
        out.worst = source.substr(0, 200);
    }
}

}  // namespace

class TestJinjaFuzz : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void mutated_templates_never_crash_data();
    void mutated_templates_never_crash();
};

void TestJinjaFuzz::mutated_templates_never_crash_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<int>("count");
    QTest::newRow("truncated real templates") << "truncate" << 12;  // per template
    QTest::newRow("mutated real templates") << "mutate" << 60;      // per template
    QTest::newRow("random token soups") << "soup" << 2000;
}

void TestJinjaFuzz::mutated_templates_never_crash() {
    QFETCH(QString, kind);
    QFETCH(int, count);
    const std::vector<std::string> sources = corpus();
    QVERIFY(sources.size() >= 70);
    const Value context = fuzz_context();
    Mutator m(kind == "truncate" ? 1 : kind == "mutate" ? 2 : 3);
    Outcome out;
    int cases = 0;
    const auto start = std::chrono::steady_clock::now();
    if (kind == "soup") {
        for (int i = 0; i < count; ++i, ++cases) run_one(m.soup(), context, out);
    } else {
        for (const std::string& s : sources) {
            for (int i = 0; i < count; ++i, ++cases) {
                run_one(kind == "truncate" ? s.substr(0, m.below(s.size() + 1)) : m.mutate(s), context, out);
            }
        }
    }
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    qInfo("%s: %d cases, %d rendered, %d parse errors, %d render errors, %.1f s, slowest %.3f s",
          qPrintable(kind), cases, out.rendered, out.parse_errors, out.render_errors, total, out.worst_seconds);
    QVERIFY2(out.worst_seconds < 5.0, qPrintable(QString("slowest %1 s: %2").arg(out.worst_seconds).arg(QString::fromStdString(out.worst))));
    // Mutations must leave enough templates valid for the renderer to be exercised, not only the parser.
    if (kind == "mutate") QVERIFY(out.rendered > cases / 10);
}

QTEST_APPLESS_MAIN(TestJinjaFuzz)
#include "test_jinja_fuzz.moc"
