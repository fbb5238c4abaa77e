// The sampler flags with llama.cpp's names (--dry-*, --xtc-*, --mirostat*, --top-nsigma,
// --logit-bias, --samplers, --grammar, --grammar-file, --json-schema), parsed apart from the other options so cli_options.cpp stays short.
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fstream>
#include <sstream>

#include "cli/cli_options.h"
#include "sampling/grammar/gbnf.h"
#include "sampling/sampler.h"
#ifdef WB_HAVE_JSON_SCHEMA
#include "sampling/grammar/json_schema.h"
#endif
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace wb::cli {

namespace {

// The bias after a sign at pos, when the rest of v is a number (or inf); false otherwise.
bool bias_after(const std::string& v, size_t pos, float* bias) {
    const std::string amount = v.substr(pos + 1);
    errno = 0;
    char* end = nullptr;
    const float x = std::strtof(amount.c_str(), &end);
    if (amount.empty() || *end != '\0' || errno != 0 || std::isnan(x)) return false;
    *bias = v[pos] == '-' ? -x : x;
    if (*bias == INFINITY) throw Error("--logit-bias: +inf would leave no valid distribution; use a finite bias");
    return true;
}

bool is_token_id(const std::string& key) { return !key.empty() && key.find_first_not_of("0123456789") == std::string::npos; }

bool is_quoted(const std::string& key) {
    return key.size() >= 2 && (key.front() == '\'' || key.front() == '"') && key.back() == key.front();
}

// "15043+1", "15043-1e-5", "15043-inf", "' the'-5", "a-b+2": a complete key (a token id or quoted
// text) is taken at the first sign after it, so a bias may have an exponent; an unquoted text key is
// everything before the last sign that is followed by a number (so it may contain '+' or '-').
void parse_logit_bias(const std::string& v, CliOptions& o) {
    const std::string bad = "--logit-bias expects TOKEN_ID(+|-)BIAS or 'TEXT'(+|-)BIAS (BIAS a number or inf), got '" + v + "'";
    float bias = 0.0f;
    for (size_t pos = v.find_first_of("+-", 1); pos != std::string::npos; pos = v.find_first_of("+-", pos + 1)) {
        const std::string key = v.substr(0, pos);
        if (!(is_token_id(key) || (is_quoted(key) && key.size() > 2)) || !bias_after(v, pos, &bias)) continue;
        if (is_token_id(key)) o.sampling.logit_bias.push_back({to_int("--logit-bias", key, sampling_range::token_id), bias});
        else o.logit_bias_text.push_back({key.substr(1, key.size() - 2), bias});
        return;
    }
    for (size_t pos = v.find_last_of("+-"); pos != std::string::npos && pos > 0; pos = v.find_last_of("+-", pos - 1)) {
        if (!bias_after(v, pos, &bias)) continue;
        const std::string key = v.substr(0, pos);
        if (is_quoted(key) || is_token_id(key)) break;  // a complete key the first pass refused: "''-1"
        o.logit_bias_text.push_back({key, bias});
        return;
    }
    throw Error(bad);
}

std::string read_text_file(const std::string& flag, const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(flag + ": cannot read '" + path + "'");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// A JSON document given inline starts with '{' (or is exactly true / false); anything else names a
// file, "true.json" included.
std::string schema_text(const std::string& v) {
    const size_t first = v.find_first_not_of(" \t\r\n");
    const size_t last = v.find_last_not_of(" \t\r\n");
    if (first == std::string::npos) return read_text_file("--json-schema", v);
    const std::string trimmed = v.substr(first, last - first + 1);
    if (trimmed[0] == '{' || trimmed == "true" || trimmed == "false") return v;
    return read_text_file("--json-schema", v);
}

// The grammar is checked here, so a malformed one stops the command before a model is loaded.
void set_grammar(const std::string& flag, const std::string& value, CliOptions& o) {
    if (!o.grammar_flag.empty() && o.grammar_flag != flag)
        throw Error(flag + " and " + o.grammar_flag + " were both given; the reply can follow only one");
    o.grammar_flag = flag;
    std::string gbnf;
    if (flag == "--json-schema") {
#ifdef WB_HAVE_JSON_SCHEMA
        try {
            gbnf = json_schema_to_gbnf(schema_text(value));
        } catch (const Error& e) {
            throw Error(flag + ": " + e.what());
        }
#else
        throw Error("--json-schema: this whitebox-cli was built without nlohmann-json, which JSON Schema needs");
#endif
    } else {
        gbnf = flag == "--grammar-file" ? read_text_file(flag, value) : value;
    }
    try {
        parse_gbnf(gbnf);
    } catch (const Error& e) {
        throw Error(flag + ": " + e.what());
    }
    o.sampling.grammar = gbnf;
}

}  // namespace

bool parse_sampler_flag(const std::string& a, const std::function<std::string()>& next, CliOptions& o) {
    SamplingParams& s = o.sampling;
    if (a == "--dry-multiplier") s.dry_multiplier = to_float(a, next(), sampling_range::dry_multiplier);
    else if (a == "--dry-base") s.dry_base = to_float(a, next(), sampling_range::dry_base);
    else if (a == "--dry-allowed-length") s.dry_allowed_length = to_int(a, next(), sampling_range::dry_allowed_length);
    else if (a == "--dry-penalty-last-n") s.dry_penalty_last_n = to_int(a, next(), sampling_range::window);
    else if (a == "--dry-sequence-breaker") {
        // As llama.cpp: the first one replaces the defaults; "none" clears them.
        if (!o.dry_breakers_given) s.dry_sequence_breakers.clear();
        o.dry_breakers_given = true;
        const std::string v = next();
        if (v == "none") s.dry_sequence_breakers.clear();
        else if (v.empty()) throw Error("--dry-sequence-breaker expects a non-empty string (or none)");
        else s.dry_sequence_breakers.push_back(v == "\\n" ? "\n" : v);
    }
    else if (a == "--xtc-probability") s.xtc_probability = to_float(a, next(), sampling_range::probability);
    else if (a == "--xtc-threshold") s.xtc_threshold = to_float(a, next(), sampling_range::probability);
    else if (a == "--mirostat") s.mirostat = to_int(a, next(), sampling_range::mirostat);
    else if (a == "--mirostat-lr") s.mirostat_eta = to_float(a, next(), sampling_range::mirostat_rate);
    else if (a == "--mirostat-ent") s.mirostat_tau = to_float(a, next(), sampling_range::mirostat_rate);
    else if (a == "--top-nsigma" || a == "--top-n-sigma") s.top_n_sigma = to_float(a, next(), sampling_range::top_n_sigma);
    else if (a == "--logit-bias" || a == "-l") parse_logit_bias(next(), o);
    else if (a == "--grammar" || a == "--grammar-file" || a == "--json-schema") set_grammar(a, next(), o);
    else if (a == "--samplers") {
        s.samplers = parse_sampler_sequence(next());
        if (s.samplers.empty()) throw Error("--samplers expects a ';'-separated list of sampler names");
    }
    else return false;
    return true;
}

void resolve_logit_bias(const CliOptions& o, const Tokenizer& tok, SamplingParams& p) {
    for (const LogitBias& b : p.logit_bias)
        if (b.token >= tok.n_vocab())
            throw Error("--logit-bias: token " + std::to_string(b.token) + " is beyond the vocabulary of " +
                        std::to_string(tok.n_vocab()) + " tokens");
    // A text gets its bias on every token it encodes to, as llama.cpp's server does for string keys.
    for (const auto& [text, bias] : o.logit_bias_text) {
        const std::vector<int32_t> ids = tok.encode(text, false, false);
        if (ids.empty()) throw Error("--logit-bias: '" + text + "' encodes to no token");
        for (int32_t id : ids) p.logit_bias.push_back({id, bias});
    }
}

}  // namespace wb::cli
