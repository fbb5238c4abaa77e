// libFuzzer target: both tokenizer families on real vocabularies, byte-level BPE (SmolLM2's, the
// default model) and SentencePiece (Gemma 3's), on any bytes: text that is not UTF-8, special-token
// look-alikes, long runs. Encoding, decoding and per-token pieces must never crash, and every id must
// lie in the vocabulary. The first input byte picks the tokenizer and the flags.
//
// The vocabularies come from the GGUF files named by WB_FUZZ_BPE_GGUF and WB_FUZZ_SPM_GGUF (default:
// the fetched models in the model cache); a missing one is skipped with a message at start-up.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"
#include "model/model_paths.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace {

std::vector<std::unique_ptr<wb::Tokenizer>>& tokenizers() {
    static std::vector<std::unique_ptr<wb::Tokenizer>> all;
    return all;
}

void load(const char* env, const std::string& fallback) {
    const char* named = std::getenv(env);
    const std::string path = named && *named ? named : fallback;
    try {
        const auto file = wb::GgufFile::open(path, wb::GgufTensorData::MAY_BE_TRUNCATED);
        tokenizers().push_back(wb::Tokenizer::from_gguf(*file));
    } catch (const wb::Error& e) {
        std::fprintf(stderr, "fuzz_tokenizer: no vocabulary from %s (%s): %s\n", path.c_str(), env, e.what());
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    load("WB_FUZZ_BPE_GGUF", wb::default_model_path());
    load("WB_FUZZ_SPM_GGUF", wb::models_dir() + "/gemma-3-270m-Q4_K_M.gguf");
    if (tokenizers().empty()) {
        std::fprintf(stderr, "fuzz_tokenizer: no vocabulary could be loaded\n");
        std::abort();
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t mode = data[0];
    const wb::Tokenizer& tok = *tokenizers()[mode % tokenizers().size()];
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    const bool add_bos = mode & 2, parse_special = mode & 4, render_special = mode & 8;
    try {
        const std::vector<int32_t> ids = tok.encode(text, add_bos, parse_special);
        for (int32_t id : ids) {
            if (id < 0 || id >= tok.n_vocab()) std::abort();  // an id outside the vocabulary is a bug
            (void)tok.token_to_piece(id, render_special);
        }
        (void)tok.decode(ids, render_special);
    } catch (const wb::Error&) {
        // A specific error is an acceptable answer to hostile text; a crash is not.
    }
    return 0;
}
