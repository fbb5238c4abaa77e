// whitebox-cli info / tokenize: look at a GGUF file without running it.
#include <cstdio>
#include <sys/stat.h>

#include "cli/commands.h"
#include "cli/cli_json.h"
#include "engine/model.h"
#include "gguf/gguf_file.h"
#include "model/model_config.h"
#include "model/model_paths.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace wb::cli {

namespace {

std::string number(double d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", d);
    return buf;
}

// Short rendering of a metadata value for the text listing (arrays: type, length and a few items).
std::string value_summary(const GgufValue& v) {
    switch (v.type) {
        case GgufValueType::STRING: return v.s.size() > 200 ? json_quote(v.s.substr(0, 200)) + "..." : json_quote(v.s);
        case GgufValueType::ARRAY: {
            std::string out = "[";
            out += gguf_value_type_name(v.elem_type);
            out += " x " + std::to_string(v.array_len) + "]";
            size_t shown = 0;
            for (; shown < 4 && shown < v.strings.size(); ++shown) out.append(" ").append(json_quote(v.strings[shown]));
            for (; shown < 4 && shown < v.ints.size(); ++shown) out.append(" ").append(std::to_string(v.ints[shown]));
            for (; shown < 4 && shown < v.floats.size(); ++shown) out.append(" ").append(number(v.floats[shown]));
            if (v.array_len > shown) out += " ...";
            return out;
        }
        case GgufValueType::BOOL: return v.i ? "true" : "false";
        case GgufValueType::FLOAT32:
        case GgufValueType::FLOAT64: return number(v.f);
        default: return std::to_string(v.i);
    }
}

std::string shape_of(const GgufTensor& t) {
    std::string s = "[";
    for (uint32_t d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
    return s + "]";
}

Json value_json(const GgufValue& v) {
    switch (v.type) {
        case GgufValueType::STRING: return v.s;
        case GgufValueType::BOOL: return v.i != 0;
        case GgufValueType::FLOAT32:
        case GgufValueType::FLOAT64: return json_number(v.f);
        case GgufValueType::ARRAY: {
            // Vocabulary-sized arrays would drown the output: give their type and length only.
            if (v.array_len > 64) return {{"array_of", gguf_value_type_name(v.elem_type)}, {"length", v.array_len}};
            if (!v.strings.empty()) return v.strings;
            Json out = Json::array();
            for (double f : v.floats) out.push_back(json_number(f));
            if (v.floats.empty())
                for (auto i : v.ints) out.push_back(i);
            return out;
        }
        default: return v.i;
    }
}

}  // namespace

std::string resolve_model_path(const CliOptions& o) {
    const std::string path = o.model.empty() ? default_model_path() : o.model;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {
        if (o.model.empty())
            throw Error("default model not found at " + path + " (run scripts/fetch-models.sh, or pass -m MODEL)");
        throw Error("model file not found: " + path);
    }
    return path;
}

namespace {

// Which template generate --chat and chat would use, and why: "Jinja template (tokenizer.chat_template)",
// "built-in gemma (the model has no chat template; ...)", or the parse error.
std::string chat_template_summary(const GgufFile& file) {
    const ChatTemplate t = choose_chat_template(file, *Tokenizer::from_gguf(file));
    if (!t.error().empty()) return "unusable: " + t.error();
    if (t.kind() == ChatTemplateKind::JINJA) return t.description() + " (tokenizer.chat_template)";
    return t.description() + " (" + t.warning() + ")";
}

}  // namespace

int cmd_info(const CliOptions& o) {
    const auto file = GgufFile::open(resolve_model_path(o));
    uint64_t weight_bytes = 0;
    for (const auto& t : file->tensors()) weight_bytes += t.n_bytes;
    // The config is optional here: info must also describe files WhiteBox cannot run.
    std::string config_error;
    ModelConfig cfg;
    try {
        cfg = ModelConfig::from_gguf(*file);
    } catch (const Error& e) {
        config_error = e.what();
    }
    // Hyperparameters that parse do not make a runnable file: tensors and tokenizer are checked too.
    const std::string run_error = config_error.empty() ? Model::check(*file) : config_error;
    const int32_t ctx = o.ctx > 0 ? o.ctx : std::min(cfg.n_ctx_train, 4096);
    // K and V of every layer and kv head in the chosen element types (--cache-type-k / -v, f16 by
    // default): n_layer * n_head_kv * (bytes of a head's K row + of its V row) per position.
    const uint64_t kv_per_token =
        config_error.empty() ? uint64_t(cfg.n_layer) * uint64_t(cfg.n_head_kv) *
                                   (kv_type_row_bytes(o.cache_type_k, cfg.head_dim) + kv_type_row_bytes(o.cache_type_v, cfg.head_dim))
                             : 0;
    const std::string kv_types = std::string("K ") + kv_type_name(o.cache_type_k) + ", V " + kv_type_name(o.cache_type_v);
    const std::string chat = run_error.empty() ? chat_template_summary(*file) : std::string();

    if (o.json) {
        Json metadata = Json::object();
        for (const auto& [k, v] : file->metadata()) metadata[k] = value_json(v);
        Json tensors = Json::array();
        for (const auto& t : file->tensors())
            tensors.push_back({{"name", t.name}, {"type", ggml_type_name(t.type)},
                               {"shape", std::vector<int64_t>(t.ne, t.ne + t.n_dims)}, {"bytes", t.n_bytes},
                               {"offset", t.offset}});
        Json memory = {{"weights_bytes", weight_bytes}};
        if (config_error.empty()) {
            memory["kv_type_k"] = kv_type_name(o.cache_type_k);
            memory["kv_type_v"] = kv_type_name(o.cache_type_v);
            memory["kv_bytes_per_token"] = kv_per_token;
            memory["context"] = ctx;
            memory["kv_bytes_at_context"] = kv_per_token * uint64_t(ctx);
        }
        Json j = {{"path", file->path()}, {"version", file->version()}, {"file_size", file->file_size()},
                  {"metadata", std::move(metadata)}, {"tensors", std::move(tensors)}, {"memory", std::move(memory)}};
        if (!run_error.empty()) j["unsupported"] = run_error;
        if (!chat.empty()) j["chat_template"] = chat;
        std::printf("%s\n", json_dump(j).c_str());
        return 0;
    }
    std::printf("file: %s (GGUF v%u, %.1f MiB)\n", file->path().c_str(), file->version(), double(file->file_size()) / 1048576.0);
    std::printf("\nmetadata (%zu keys):\n", file->metadata().size());
    for (const auto& [k, v] : file->metadata()) std::printf("  %-44s %s\n", k.c_str(), value_summary(v).c_str());
    std::printf("\ntensors (%zu):\n  %-32s %-6s %-18s %12s\n", file->tensors().size(), "name", "type", "shape", "bytes");
    for (const auto& t : file->tensors())
        std::printf("  %-32s %-6s %-18s %12llu\n", t.name.c_str(), ggml_type_name(t.type).c_str(), shape_of(t).c_str(),
                    static_cast<unsigned long long>(t.n_bytes));
    std::printf("\nmemory estimate:\n  weights   %10.1f MiB\n", double(weight_bytes) / 1048576.0);
    if (config_error.empty())
        std::printf("  KV cache  %10.1f KiB per token, %.1f MiB at a %d-token context (%s)\n", double(kv_per_token) / 1024.0,
                    double(kv_per_token * uint64_t(ctx)) / 1048576.0, ctx, kv_types.c_str());
    if (!run_error.empty()) std::printf("  this file cannot be run: %s\n", run_error.c_str());
    if (!chat.empty()) std::printf("\nchat template: %s\n", chat.c_str());
    return 0;
}

int cmd_tokenize(const CliOptions& o) {
    const auto file = GgufFile::open(resolve_model_path(o));
    const auto tok = Tokenizer::from_gguf(*file);
    const std::vector<int32_t> ids = tok->encode(o.prompt, tok->add_bos(), true);
    std::vector<std::string> pieces;
    for (int32_t id : ids) pieces.push_back(tok->token_to_piece(id, true));
    if (o.json) {
        std::printf("%s\n", json_dump({{"tokens", ids}, {"pieces", pieces}}).c_str());
        return 0;
    }
    for (size_t i = 0; i < ids.size(); ++i) std::printf("%6d  %s\n", ids[i], json_quote(pieces[i]).c_str());
    std::printf("%zu tokens\n", ids.size());
    return 0;
}

}  // namespace wb::cli
