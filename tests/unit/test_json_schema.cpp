// JSON Schema -> GBNF: the grammar accepts documents valid against the schema and refuses invalid
// ones (checked with the matcher on hand-written documents), and unsupported keywords are errors that
// name the keyword and where it is.
#include <QtTest>

#include <memory>

#include "sampling/grammar/gbnf.h"
#include "sampling/grammar/grammar_matcher.h"
#include "sampling/grammar/json_schema.h"
#include "util/error.h"

using namespace wb;

namespace {

bool schema_matches(const std::string& schema, const std::string& doc) {
    GrammarMatcher m(std::make_shared<const Grammar>(parse_gbnf(json_schema_to_gbnf(schema))));
    return m.allows(doc) && (m.accept(doc), m.complete());
}

const char* kPerson =
    "{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\",\"minLength\":1},"
    "\"age\":{\"type\":\"integer\"},"
    "\"email\":{\"type\":[\"string\",\"null\"]},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\",3]},\"minItems\":1,\"maxItems\":2}},"
    "\"required\":[\"name\",\"age\"]}";

const char* kRefs =
    "{\"$defs\":{\"node\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"number\"},"
    "\"next\":{\"anyOf\":[{\"$ref\":\"#/$defs/node\"},{\"type\":\"null\"}]}},\"required\":[\"v\",\"next\"]}},"
    "\"$ref\":\"#/$defs/node\"}";

// What json_schema_to_gbnf refuses the schema with ("(no error)" when it compiles).
QString errorOf(const QString& schema) {
    try {
        json_schema_to_gbnf(schema.toStdString());
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

class TestJsonSchema : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void documentsMatchTheirSchema_data() {
        QTest::addColumn<QString>("schema");
        QTest::addColumn<QString>("doc");
        QTest::addColumn<bool>("valid");
        const QString person = kPerson;
        QTest::newRow("required only") << person << "{\"name\":\"Ann\",\"age\":30}" << true;
        QTest::newRow("all, spaced") << person << "{ \"name\": \"A\\\"n\", \"age\": -4, \"email\": null, \"tags\": [\"a\", 3] }" << true;
        QTest::newRow("optional middle left out") << person << "{\"name\":\"A\",\"age\":1,\"tags\":[\"b\"]}" << true;
        QTest::newRow("pretty printed") << person << "{\n  \"name\": \"A\",\n  \"age\": 1\n}" << true;
        QTest::newRow("missing required") << person << "{\"name\":\"Ann\"}" << false;
        QTest::newRow("wrong order") << person << "{\"age\":1,\"name\":\"A\"}" << false;
        QTest::newRow("empty name") << person << "{\"name\":\"\",\"age\":1}" << false;
        QTest::newRow("float age") << person << "{\"name\":\"A\",\"age\":1.5}" << false;
        QTest::newRow("leading zero") << person << "{\"name\":\"A\",\"age\":01}" << false;
        QTest::newRow("extra property") << person << "{\"name\":\"A\",\"age\":1,\"x\":1}" << false;
        QTest::newRow("too many items") << person << "{\"name\":\"A\",\"age\":1,\"tags\":[\"a\",\"b\",3]}" << false;
        QTest::newRow("no items") << person << "{\"name\":\"A\",\"age\":1,\"tags\":[]}" << false;
        QTest::newRow("not in enum") << person << "{\"name\":\"A\",\"age\":1,\"tags\":[\"c\"]}" << false;
        QTest::newRow("trailing comma") << person << "{\"name\":\"A\",\"age\":1,}" << false;
        QTest::newRow("control char in string") << person << "{\"name\":\"A\nB\",\"age\":1}" << false;
        QTest::newRow("recursive ref") << kRefs << "{\"v\":1.5e3,\"next\":{\"v\":2,\"next\":null}}" << true;
        QTest::newRow("recursive ref bad") << kRefs << "{\"v\":1,\"next\":{\"v\":2}}" << false;
        QTest::newRow("const") << "{\"const\":\"on\"}" << "\"on\"" << true;
        QTest::newRow("const other") << "{\"const\":\"on\"}" << "\"off\"" << false;
        QTest::newRow("oneOf") << "{\"oneOf\":[{\"type\":\"boolean\"},{\"type\":\"integer\"}]}" << "7" << true;
        QTest::newRow("any value") << "{}" << "[1,{\"a\":[true,null]},\"x\"]" << true;
        QTest::newRow("bare object") << "{\"type\":\"object\"}" << "{\"k\":[1]}" << true;
        QTest::newRow("bare object not array") << "{\"type\":\"object\"}" << "[1]" << false;
        QTest::newRow("maxLength") << "{\"type\":\"string\",\"maxLength\":3}" << "\"abcd\"" << false;
        // A property named like a generated member rule ("m1") is still its own member.
        const char* m1 = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"m1\":{\"enum\":[\"x\"]}}}";
        QTest::newRow("property m1") << m1 << "{\"a\":\"q\",\"m1\":\"x\"}" << true;
        QTest::newRow("property m1 without key") << m1 << "{\"a\":\"q\"\"x\"}" << false;
        // "a b" and "a-b" both want the rule root-a-b; the second's root-a-b-2 was the name the parser
        // gave the first one's {0,3} repetition: "defined twice" (fuzz_json_schema, properties-like-a-repetition).
        const char* alike = R"({"type":"object","properties":{"a b":{"type":"string","maxLength":3},)"
                            R"("a-b":{"type":"string","maxLength":3}}})";
        QTest::newRow("properties named alike") << alike << R"({"a b":"x","a-b":"yz"})" << true;
        QTest::newRow("properties named alike, too long") << alike << R"({"a b":"x","a-b":"wxyz"})" << false;
        QTest::newRow("maxItems without items") << "{\"type\":\"array\",\"maxItems\":2}" << "[1,\"a\",3]" << false;
        QTest::newRow("maxItems without items ok") << "{\"type\":\"array\",\"maxItems\":2}" << "[1,\"a\"]" << true;
        QTest::newRow("closed object without properties") << "{\"type\":\"object\",\"additionalProperties\":false}"
                                                          << "{\"a\":1}" << false;
        QTest::newRow("closed empty object") << "{\"type\":\"object\",\"additionalProperties\":false}" << "{}" << true;
        QTest::newRow("enum with a type label") << "{\"type\":\"string\",\"enum\":[\"a\",\"b\"]}" << "\"b\"" << true;
        // The schema false as an alternative allows nothing, so it drops out and the others decide.
        QTest::newRow("anyOf false first") << "{\"anyOf\":[false,{\"type\":\"integer\"}]}" << "3" << true;
        QTest::newRow("anyOf false first, other type") << "{\"anyOf\":[false,{\"type\":\"integer\"}]}" << "\"3\"" << false;
        QTest::newRow("oneOf false last") << "{\"oneOf\":[{\"const\":\"x\"},false]}" << "\"x\"" << true;
    }
    void documentsMatchTheirSchema() {
        QFETCH(QString, schema);
        QFETCH(QString, doc);
        QFETCH(bool, valid);
        QCOMPARE(schema_matches(schema.toStdString(), doc.toStdString()), valid);
    }

    void unsupportedSchemasAreNamed_data() {
        QTest::addColumn<QString>("schema");
        QTest::addColumn<QString>("message");
        QTest::newRow("format") << "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"format\":\"email\"}}}"
                                << "JSON Schema at #/properties/a: the keyword 'format' is not supported";
        QTest::newRow("minimum") << "{\"type\":\"integer\",\"minimum\":0}" << "the keyword 'minimum' is not supported";
        QTest::newRow("remote ref") << "{\"$ref\":\"https://example.com/s.json\"}" << "only local references";
        QTest::newRow("missing def") << "{\"$ref\":\"#/$defs/nope\"}" << "$ref '#/$defs/nope' is not supported";
        QTest::newRow("additional") << "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":true}"
                                    << "additionalProperties other than false";
        QTest::newRow("required unknown") << "{\"type\":\"object\",\"properties\":{\"a\":{}},\"required\":[\"b\"]}"
                                          << "required names '\"b\"'";
        QTest::newRow("not json") << "{\"type\":" << "the JSON Schema is not valid JSON";
        // nlohmann-json throws out_of_range, not parse_error, for a number beyond a double (fuzz_json_schema).
        QTest::newRow("number beyond a double") << "{\"minLength\":1e999}" << "the JSON Schema is not valid JSON";
        QTest::newRow("unknown type") << "{\"type\":\"date\"}" << "unknown type 'date'";
        // A constraint beside a keyword that decides the value alone would be dropped: refused.
        QTest::newRow("required beside oneOf")
            << "{\"properties\":{\"a\":{}},\"required\":[\"a\"],\"oneOf\":[{\"type\":\"object\"}]}"
            << "'properties' beside 'oneOf' is not supported";
        QTest::newRow("type beside $ref") << "{\"$defs\":{\"x\":{}},\"type\":\"string\",\"$ref\":\"#/$defs/x\"}"
                                         << "'type' beside '$ref' is not supported";
        QTest::newRow("maxLength beside enum") << "{\"enum\":[\"a\"],\"maxLength\":3}" << "'maxLength' beside 'enum'";
        std::string deep = "true";
        for (int i = 0; i < 100; ++i) deep = "{\"items\":" + deep + "}";
        QTest::newRow("nested 100 deep") << QString::fromStdString(deep) << "nested more than 64 levels deep";
        // A const value is copied and dumped whole, recursively: 30000 arrays deep overflowed the stack.
        const std::string deep_const = "{\"const\":" + std::string(30000, '[') + std::string(30000, ']') + "}";
        QTest::newRow("const 30000 deep") << QString::fromStdString(deep_const) << "nested deeper than 256 levels";
    }
    void unsupportedSchemasAreNamed() {
        QFETCH(QString, schema);
        QFETCH(QString, message);
        const QString got = errorOf(schema);
        QVERIFY2(got.contains(message), qPrintable("got: " + got));
    }

    // A schema that no finite JSON value satisfies compiles to a grammar with a rule that never
    // finishes: refused with the place in the schema (an optional self-reference, as in "recursive
    // ref" above, is fine).
    void schemasNoValueSatisfiesAreRefused_data() {
        QTest::addColumn<QString>("schema");
        QTest::addColumn<QString>("message");
        QTest::newRow("required self") << R"({"type":"object","properties":{"next":{"$ref":"#"}},"required":["next"]})"
                                       << "JSON Schema at #: no finite JSON value is valid against it";
        QTest::newRow("minItems through a def")
            << R"({"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","minItems":1,)"
               R"("items":{"$ref":"#/$defs/node"}}},"required":["kids"]}},"$ref":"#/$defs/node"})"
            << "JSON Schema at #/$defs/node: no finite JSON value is valid against it";
        QTest::newRow("every alternative") << R"({"properties":{"a":{"anyOf":[{"$ref":"#"},{"type":"array","items":)"
                                              R"({"$ref":"#"},"minItems":2}]}},"required":["a"]})"
                                           << "no finite JSON value is valid against it";
        // Only references to itself, with no value between (fuzz_json_schema): the converter's GBNF
        // had no root rule, or a left-recursive one, and the parser's error leaked out.
        QTest::newRow("only a self reference") << R"({"$ref":"#"})" << "JSON Schema at #: it refers to itself";
        QTest::newRow("self reference in anyOf") << R"({"anyOf":[{"$ref":"#"},{"$ref":"#"}]})"
                                                 << "JSON Schema at #: it refers to itself";
        QTest::newRow("def refers to itself") << R"({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})"
                                              << "it refers to itself";
        QTest::newRow("no type at all") << R"({"type":[]})" << "JSON Schema at #: type must not be an empty list";
        QTest::newRow("only false alternatives") << R"({"properties":{"a":{"anyOf":[false,false]}}})"
                                                 << "JSON Schema at #/properties/a: anyOf has only the schema false";
    }
    void schemasNoValueSatisfiesAreRefused() {
        QFETCH(QString, schema);
        QFETCH(QString, message);
        const QString got = errorOf(schema);
        QVERIFY2(got.contains(message), qPrintable("got: " + got));
    }
};

QTEST_GUILESS_MAIN(TestJsonSchema)
#include "test_json_schema.moc"
