// Runs a fuzz target's LLVMFuzzerTestOneInput over files, without libFuzzer: the ctest form of the
// fuzz targets, built with the normal compiler. Each argument is a file or a directory of files (the
// committed seed corpus and the regressions, inputs that once crashed). Exit 0 when every input ran.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

std::vector<std::filesystem::path> inputs_of(const std::filesystem::path& p) {
    std::vector<std::filesystem::path> out;
    if (std::filesystem::is_directory(p)) {
        for (const auto& e : std::filesystem::directory_iterator(p))
            if (e.is_regular_file()) out.push_back(e.path());
        std::sort(out.begin(), out.end());
    } else {
        out.push_back(p);
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    size_t n = 0;
    for (int i = 1; i < argc; ++i) {
        if (!std::filesystem::exists(argv[i])) {
            std::fprintf(stderr, "fuzz_replay: %s does not exist\n", argv[i]);
            return 2;
        }
        for (const auto& file : inputs_of(argv[i])) {
            std::ifstream in(file, std::ios::binary);
            const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
            ++n;
        }
    }
    if (n == 0) {
        std::fprintf(stderr, "fuzz_replay: no inputs\n");
        return 2;
    }
    std::printf("fuzz_replay: %zu inputs ran\n", n);
    return 0;
}
