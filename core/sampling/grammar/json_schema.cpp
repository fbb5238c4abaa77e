// Each schema node becomes one GBNF rule named after its place in the schema (root, root-name,
// root-tags-item, ...); the JSON building blocks (string, number, ws, ...) are shared rules added on
// first use. Every value rule ends with optional whitespace, so the grammar decides where a space
// may go and a reply cannot run on with blank lines after the document.
#include "sampling/grammar/json_schema.h"

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "sampling/grammar/gbnf.h"
#include "util/error.h"
#include "util/json_depth.h"

namespace wb {

namespace {

using json = nlohmann::ordered_json;

// The building blocks, by rule name.
const std::map<std::string, std::string> kPrimitives = {
    {"ws", "[ \\t\\n]{0,8}"},
    {"json-char", "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )"},
    {"json-string", "\"\\\"\" json-char* \"\\\"\" ws"},
    {"json-int", "\"-\"? ( [1-9] [0-9]{0,18} | \"0\" )"},
    {"json-integer", "json-int ws"},
    {"json-number", "json-int ( \".\" [0-9]+ )? ( [eE] [-+]? [0-9]+ )? ws"},
    {"json-boolean", "( \"true\" | \"false\" ) ws"},
    {"json-null", "\"null\" ws"},
    {"json-value", "json-object | json-array | json-string | json-number | json-boolean | json-null"},
    {"json-object", "\"{\" ws ( json-string \":\" ws json-value ( \",\" ws json-string \":\" ws json-value )* )? \"}\" ws"},
    {"json-array", "\"[\" ws ( json-value ( \",\" ws json-value )* )? \"]\" ws"},
};
// What each primitive needs besides itself.
const std::map<std::string, std::vector<std::string>> kNeeds = {
    {"json-string", {"json-char", "ws"}}, {"json-integer", {"json-int", "ws"}}, {"json-number", {"json-int", "ws"}},
    {"json-boolean", {"ws"}}, {"json-null", {"ws"}},
    {"json-value", {"json-object", "json-array", "json-string", "json-number", "json-boolean", "json-null"}},
    {"json-object", {"json-string", "ws", "json-value"}}, {"json-array", {"ws", "json-value"}},
};

const char* const kSelfOnly =
    "it refers to itself ($ref, anyOf or oneOf) with no value in between, so it defines no JSON value";

const std::set<std::string> kAnnotations = {"title", "description", "default", "examples", "$schema", "$id", "$comment"};

// A GBNF literal for the bytes of s.
std::string gbnf_literal(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += char(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c < 0x20) {
            const char* hex = "0123456789ABCDEF";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        } else {
            out += char(c);
        }
    }
    return out + "\"";
}

std::string rule_name_part(const std::string& s) {
    std::string out;
    for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) ? c : '-');
    return out.empty() ? "x" : out;
}

class SchemaConverter {
public:
    explicit SchemaConverter(const json& root) : root_(root) {}

    std::string convert() {
        const std::string top = visit(root_, "root", "#");
        // {"$ref": "#"} alone: the root is only a reference to itself, and nothing defines a value.
        if (top == "root" && !rules_.count("root")) fail("#", kSelfOnly);
        if (top != "root") rules_["root"] = top;
        std::string out;
        for (const auto& [name, body] : rules_) out += name + " ::= " + body + "\n";
        refuse_endless(out);
        return out;
    }

private:
    [[noreturn]] static void fail(const std::string& where, const std::string& what) {
        throw Error("JSON Schema at " + where + ": " + what);
    }

    std::string primitive(const std::string& name) {
        if (rules_.count(name)) return name;
        rules_[name] = kPrimitives.at(name);
        auto needs = kNeeds.find(name);
        if (needs != kNeeds.end())
            for (const std::string& n : needs->second) primitive(n);
        return name;
    }

    std::string unique_name(const std::string& want) {
        std::string name = want;
        for (int i = 2; rules_.count(name) || kPrimitives.count(name); ++i) name = want + "-" + std::to_string(i);
        rules_[name] = "";  // reserved while its body is built
        origin_[name] = where_;
        return name;
    }

    // A schema no finite document satisfies ({"properties": {"next": {"$ref": "#"}}, "required":
    // ["next"]}) compiles to a grammar with a rule that never finishes; the parser finds it, and the
    // error names the place in the schema the rule was made for.
    void refuse_endless(const std::string& gbnf) const {
        try {
            parse_gbnf(gbnf);
        } catch (const GrammarNeverFinishesError& e) {
            const auto origin = origin_.find(e.rule());
            fail(origin == origin_.end() ? "#" : origin->second,
                 "no finite JSON value is valid against it: every value of it holds another one of it (through a "
                 "required property, minItems or each of its alternatives), without end; make one of them optional");
        } catch (const GrammarLeftRecursionError& e) {
            // Only $ref and the alternatives of anyOf / oneOf / a type list start a rule with another
            // rule, so a cycle of them is a schema that refers to itself with no value in between.
            const auto origin = origin_.find(e.rule());
            fail(origin == origin_.end() ? "#" : origin->second, kSelfOnly);
        }
    }

    // $ref, const, enum and the combinators decide the value alone: a constraint beside them would
    // be dropped without a word, so it is refused (a "type" beside const or enum is only a label).
    static void refuse_ignored_siblings(const json& s, const std::string& where) {
        static const char* kDeciding[] = {"$ref", "const", "enum", "anyOf", "oneOf", "allOf"};
        static const char* kConstraints[] = {"type", "properties", "required", "additionalProperties", "items",
                                             "minItems", "maxItems", "minLength", "maxLength"};
        for (const char* d : kDeciding) {
            if (!s.contains(d)) continue;
            const bool label_ok = std::string(d) == "const" || std::string(d) == "enum";
            for (const char* c : kConstraints)
                if (s.contains(c) && !(label_ok && std::string(c) == "type"))
                    fail(where, std::string("'") + c + "' beside '" + d + "' is not supported (move it into " +
                                    (label_ok ? "the values" : "each alternative") + ")");
            for (const char* other : kDeciding)
                if (other != d && s.contains(other))
                    fail(where, std::string("'") + d + "' and '" + other + "' together are not supported");
            return;
        }
    }

    // A rule for the schema s; returns its name (the name may be a shared primitive).
    std::string visit(const json& s, const std::string& want, const std::string& where) {
        // Nesting as deep as this is no schema a person wrote; it would only exhaust the stack.
        struct Depth {
            int& d;
            explicit Depth(int& d_) : d(d_) { ++d; }
            ~Depth() { --d; }
        } depth(depth_);
        if (depth_ > 64) fail(where, "the schema is nested more than 64 levels deep");
        // Rules made while this schema is converted come from here (for errors about them).
        struct Place {
            std::string& current;
            std::string saved;
            Place(std::string& c, const std::string& w) : current(c), saved(c) { current = w; }
            ~Place() { current = saved; }
        } place(where_, where);
        if (s.is_boolean()) {
            if (!s.get<bool>()) fail(where, "the schema false allows no value");
            return primitive("json-value");
        }
        if (!s.is_object()) fail(where, "a schema must be an object or a boolean");
        for (const auto& [key, value] : s.items()) {
            static const std::set<std::string> known = {"type", "properties", "required", "additionalProperties", "items",
                                                        "minItems", "maxItems", "minLength", "maxLength", "enum",
                                                        "const", "anyOf", "oneOf", "allOf", "$ref", "$defs", "definitions"};
            if (!known.count(key) && !kAnnotations.count(key))
                fail(where, "the keyword '" + key + "' is not supported (supported: type, properties, required, "
                            "additionalProperties: false, items, minItems, maxItems, minLength, maxLength, enum, "
                            "const, anyOf, oneOf, $ref)");
        }
        refuse_ignored_siblings(s, where);
        if (s.contains("$ref")) return reference(s["$ref"], where);
        if (s.contains("const")) return literal_rule({s["const"]}, want);
        if (s.contains("enum")) {
            if (!s["enum"].is_array() || s["enum"].empty()) fail(where, "enum must be a non-empty array");
            return literal_rule(std::vector<json>(s["enum"].begin(), s["enum"].end()), want);
        }
        for (const char* key : {"anyOf", "oneOf", "allOf"}) {
            if (!s.contains(key)) continue;
            const json& list = s[key];
            if (!list.is_array() || list.empty()) fail(where, std::string(key) + " must be a non-empty array");
            if (std::string(key) == "allOf" && list.size() != 1)
                fail(where, "allOf with more than one schema is not supported");
            std::vector<std::string> alts;
            for (size_t i = 0; i < list.size(); ++i) {
                // The schema false allows no value, so as an alternative it only drops out (of anyOf
                // and oneOf alike: it never matches, so it never makes a second match).
                if (std::string(key) != "allOf" && list[i] == json(false)) continue;
                alts.push_back(visit(list[i], want + "-" + std::to_string(i), where + "/" + key + "/" + std::to_string(i)));
            }
            if (alts.empty()) fail(where, std::string(key) + " has only the schema false: it allows no value");
            return define(want, join(alts, " | "));
        }
        if (!s.contains("type")) {
            for (const char* k : {"properties", "required", "additionalProperties"})
                if (s.contains(k)) return object_rule(s, want, where);
            for (const char* k : {"items", "minItems", "maxItems"})
                if (s.contains(k)) return array_rule(s, want, where);
            if (s.contains("minLength") || s.contains("maxLength")) return string_rule(s, want, where);
            return primitive("json-value");
        }
        const json& type = s["type"];
        if (type.is_array()) {
            // No type at all would compile to a rule matching only the empty text.
            if (type.empty()) fail(where, "type must not be an empty list (it allows no value)");
            std::vector<std::string> alts;
            for (const json& t : type) {
                json one = s;
                one["type"] = t;
                alts.push_back(typed(one, t, want + "-" + rule_name_part(t.is_string() ? t.get<std::string>() : "t"), where));
            }
            return define(want, join(alts, " | "));
        }
        return typed(s, type, want, where);
    }

    std::string typed(const json& s, const json& type, const std::string& want, const std::string& where) {
        if (!type.is_string()) fail(where, "type must be a string or a list of strings");
        const std::string t = type.get<std::string>();
        if (t == "string") return string_rule(s, want, where);
        if (t == "number") return primitive("json-number");
        if (t == "integer") return primitive("json-integer");
        if (t == "boolean") return primitive("json-boolean");
        if (t == "null") return primitive("json-null");
        if (t == "object")
            return s.contains("properties") || s.contains("required") || s.contains("additionalProperties")
                       ? object_rule(s, want, where)
                       : primitive("json-object");
        if (t == "array")
            return s.contains("items") || s.contains("minItems") || s.contains("maxItems") ? array_rule(s, want, where)
                                                                                          : primitive("json-array");
        fail(where, "unknown type '" + t + "'");
    }

    std::string define(const std::string& want, const std::string& body) {
        const std::string name = unique_name(want);
        rules_[name] = body;
        return name;
    }

    static std::string join(const std::vector<std::string>& parts, const std::string& sep) {
        std::string out;
        for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
        return out;
    }

    std::string literal_rule(const std::vector<json>& values, const std::string& want) {
        std::vector<std::string> alts;
        for (const json& v : values) alts.push_back(gbnf_literal(v.dump()));
        primitive("ws");
        return define(want, "( " + join(alts, " | ") + " ) ws");
    }

    static int count(const json& s, const char* key, const std::string& where) {
        if (!s.contains(key)) return -1;
        if (!s[key].is_number_integer() || s[key].get<long long>() < 0 || s[key].get<long long>() > 10000)
            fail(where, std::string(key) + " must be an integer from 0 to 10000");
        return s[key].get<int>();
    }

    // "{m,n}" for a repetition (n < 0: unbounded).
    static std::string repeat(int m, int n) {
        return "{" + std::to_string(m) + "," + (n < 0 ? std::string() : std::to_string(n)) + "}";
    }

    std::string string_rule(const json& s, const std::string& want, const std::string& where) {
        const int lo = count(s, "minLength", where), hi = count(s, "maxLength", where);
        if (lo < 0 && hi < 0) return primitive("json-string");
        if (hi >= 0 && hi < std::max(lo, 0)) fail(where, "maxLength is below minLength");
        primitive("json-char");
        primitive("ws");
        return define(want, "\"\\\"\" json-char" + repeat(std::max(lo, 0), hi) + " \"\\\"\" ws");
    }

    std::string array_rule(const json& s, const std::string& want, const std::string& where) {
        const int lo = std::max(count(s, "minItems", where), 0), hi = count(s, "maxItems", where);
        if (hi >= 0 && hi < lo) fail(where, "maxItems is below minItems");
        const std::string item =
            s.contains("items") ? visit(s["items"], want + "-item", where + "/items") : primitive("json-value");
        primitive("ws");
        std::string body;
        if (hi == 0) {
            body = "\"[\" ws \"]\" ws";
        } else {
            const std::string more = "( \",\" ws " + item + " )" + repeat(std::max(lo - 1, 0), hi < 0 ? -1 : hi - 1);
            body = lo == 0 ? "\"[\" ws ( " + item + " " + more + " )? \"]\" ws" : "\"[\" ws " + item + " " + more + " \"]\" ws";
        }
        return define(want, body);
    }

    std::string object_rule(const json& s, const std::string& want, const std::string& where) {
        if (s.contains("additionalProperties") && s["additionalProperties"] != json(false))
            fail(where, "additionalProperties other than false is not supported (the object has exactly its properties)");
        static const json kNoProperties = json::object();
        const json& props = s.contains("properties") ? s["properties"] : kNoProperties;
        if (!props.is_object()) fail(where, "properties must be an object");
        std::set<std::string> required;
        if (s.contains("required")) {
            if (!s["required"].is_array()) fail(where, "required must be an array of names");
            for (const json& r : s["required"]) {
                if (!r.is_string() || !props.contains(r.get<std::string>()))
                    fail(where, "required names '" + r.dump() + "', which is not among the properties");
                required.insert(r.get<std::string>());
            }
        }
        const std::string name = unique_name(want);
        std::vector<std::string> kv;
        std::vector<bool> must;
        for (const auto& [key, sub] : props.items()) {
            const std::string value = visit(sub, name + "-" + rule_name_part(key), where + "/properties/" + key);
            kv.push_back(gbnf_literal(json(key).dump()) + " ws \":\" ws " + value);
            must.push_back(required.count(key) != 0);
        }
        primitive("ws");
        rules_[name] = "\"{\" ws " + (kv.empty() ? std::string() : members(name, kv, must, 0, true) + " ") + "\"}\" ws";
        return name;
    }

    // The properties from i on, in order, each optional one possibly left out; `first`: nothing has been
    // written yet, so no comma goes before the next one. One rule per (i, first) keeps this linear.
    std::string members(const std::string& obj, const std::vector<std::string>& kv, const std::vector<bool>& must,
                        size_t i, bool first) {
        if (i == kv.size()) return "";
        // Memoised by position, named like no other rule (a property may be called "m1").
        const auto key = std::make_tuple(obj, i, first);
        if (auto known = members_.find(key); known != members_.end()) return known->second;
        const std::string name = unique_name(obj + "-m" + std::to_string(i) + (first ? "-first" : ""));
        members_[key] = name;
        const std::string rest = members(obj, kv, must, i + 1, false);
        const std::string take = std::string(first ? "" : "\",\" ws ") + kv[i] + (rest.empty() ? "" : " " + rest);
        std::string body = take;
        if (!must[i]) body += " | " + (i + 1 == kv.size() ? std::string("\"\"") : members(obj, kv, must, i + 1, first));
        rules_[name] = body;
        return name;
    }

    std::string reference(const json& ref, const std::string& where) {
        if (!ref.is_string()) fail(where, "$ref must be a string");
        const std::string r = ref.get<std::string>();
        auto done = refs_.find(r);
        if (done != refs_.end()) return done->second;
        const json* target = nullptr;
        std::string want = "root";
        if (r == "#") {
            target = &root_;
        } else {
            for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
                const std::string p = prefix;
                const std::string section = p.substr(2, p.size() - 3);
                if (r.rfind(p, 0) == 0 && root_.contains(section) && root_[section].contains(r.substr(p.size()))) {
                    target = &root_[section][r.substr(p.size())];
                    want = "def-" + rule_name_part(r.substr(p.size()));
                }
            }
        }
        if (!target) fail(where, "$ref '" + r + "' is not supported (only local references: #, #/$defs/NAME, #/definitions/NAME that exist)");
        if (r == "#") return refs_[r] = "root";
        // Named before it is built, so a recursive definition refers to itself.
        const std::string name = unique_name(want);
        origin_[name] = r;
        refs_[r] = name;
        rules_[name] = visit(*target, name + "-v", r.substr(1));
        return name;
    }

    const json& root_;
    std::map<std::string, std::string> rules_;
    std::map<std::string, std::string> refs_;
    std::map<std::string, std::string> origin_;  // rule -> the place in the schema it was made for
    std::string where_ = "#";                    // the place being converted
    std::map<std::tuple<std::string, size_t, bool>, std::string> members_;
    int depth_ = 0;
};

}  // namespace

std::string json_schema_to_gbnf(const std::string& schema_json) {
    // visit() stops at 64 schema levels, but a const or enum value is copied and dumped whole, and
    // nlohmann-json recurses for both: a value 30000 arrays deep overflowed the stack. No schema a
    // person writes nests this deep.
    constexpr int kMaxDepth = 256;
    if (json_nested_deeper_than(schema_json, kMaxDepth))
        throw Error("the JSON Schema is nested deeper than " + std::to_string(kMaxDepth) + " levels");
    json schema;
    try {
        schema = json::parse(schema_json);
    } catch (const json::exception& e) {
        // parse_error for malformed text, out_of_range for a number too large for a double (1e999):
        // either way the text is no schema, and no exception but wb::Error may reach the caller.
        throw Error(std::string("the JSON Schema is not valid JSON: ") + e.what());
    }
    return SchemaConverter(schema).convert();
}

}  // namespace wb
