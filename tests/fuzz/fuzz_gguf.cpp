// libFuzzer target: the GGUF reader and everything that reads a header before a model is built (the
// tokenizer's vocabulary, the model's hyperparameters and tensor checks). A GGUF comes from a
// download, so any bytes must give either a usable file or a wb::Error, never a crash, a hang or a
// huge allocation. The input is written to a file because GgufFile maps files.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/model.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace {

// One scratch file per process (libFuzzer's -jobs run several processes), removed at exit.
const std::string& scratch_path() {
    static const std::string path = [] {
        const char* dir = std::getenv("TMPDIR");
        return std::string(dir && *dir ? dir : "/tmp") + "/wb-fuzz-gguf-" + std::to_string(getpid()) + ".gguf";
    }();
    // Registered after `path` is built, so it runs before `path` is destroyed.
    static const bool cleanup = std::atexit([] { std::remove(path.c_str()); }) == 0;
    (void)cleanup;
    return path;
}

void open_and_read(const std::string& path, wb::GgufTensorData data) {
    try {
        const auto file = wb::GgufFile::open(path, data);
        (void)wb::Model::check(*file);  // hyperparameters, tensors, tokenizer: the reason or ""
        (void)wb::Tokenizer::from_gguf(*file);
    } catch (const wb::Error&) {
        // The expected outcome for almost every input: a specific error, and the program goes on.
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FILE* f = std::fopen(scratch_path().c_str(), "wb");
    if (!f) return 0;
    const bool written = std::fwrite(data, 1, size, f) == size;
    std::fclose(f);
    if (!written) return 0;
    open_and_read(scratch_path(), wb::GgufTensorData::REQUIRED);
    open_and_read(scratch_path(), wb::GgufTensorData::MAY_BE_TRUNCATED);
    return 0;
}
