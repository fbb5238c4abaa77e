// libFuzzer target: the JSON Schema -> GBNF converter (core/sampling/grammar/json_schema.cpp) on any
// bytes, as a schema typed into the Sampling panel or given to --json-schema. It must give GBNF or a
// wb::Error; the GBNF it gives must parse (a converter output the parser refuses would reach the user
// as a grammar error about rules they never wrote: a bug), and the grammar's matcher must start. An
// error must be the converter's own ("JSON Schema ..." / "the JSON Schema ..."), not a parse error of
// its output leaking through, and no exception of the JSON library may escape.
// The seeds are schemas as people write them (corpus/fuzz_json_schema) and the Sampling panel's examples.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "sampling/grammar/gbnf.h"
#include "sampling/grammar/grammar_matcher.h"
#include "sampling/grammar/json_schema.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string schema(reinterpret_cast<const char*>(data), size);
    std::string gbnf;
    try {
        gbnf = wb::json_schema_to_gbnf(schema);
    } catch (const wb::Error& e) {
        const std::string what = e.what();
        if (what.rfind("JSON Schema at ", 0) == 0 || what.rfind("the JSON Schema ", 0) == 0) return 0;
        std::fprintf(stderr, "fuzz_json_schema: the converter failed with another part's error: %s\n", e.what());
        std::abort();
    }
    try {
        const wb::GrammarMatcher m(std::make_shared<const wb::Grammar>(wb::parse_gbnf(gbnf)));
        (void)m;
    } catch (const wb::Error& e) {
        std::fprintf(stderr, "fuzz_json_schema: the converter's GBNF does not parse: %s\n%s", e.what(), gbnf.c_str());
        std::abort();
    }
    return 0;
}
