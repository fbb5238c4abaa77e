// The CPU backend's decode attention alone, as a decode step meets it: one query row against every
// layer's f16 cache at depth D, through CpuBackend::attention with the backend's own thread pool, in
// wall milliseconds per token (median of the runs). What a change to the decode attention's schedule
// or kernels is measured with before the end-to-end benchmark (docs/benchmarks.md):
//   build/tests/bench_attention [--shape smollm2|gemma3] [--depth 4096] [--threads 2] [--runs 20]
// The shapes are the two real models': SmolLM2-135M (30 layers, 9 query heads over 3 kv heads of 64
// dims) and Gemma 3 270M (18 layers, 4 query heads over 1 kv head of 256 dims, five local layers of
// six with a 512-token window). The cache holds random values: the speed does not depend on them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/backend_cpu.h"
#include "kv/kv_cache.h"
#include "util/fp16.h"

namespace {

struct Shape {
    const char* name;
    int32_t n_layer, n_head, n_head_kv, head_dim, window;  // window: every layer but each sixth, if > 0
};

constexpr Shape kShapes[] = {
    {"smollm2", 30, 9, 3, 64, 0},
    {"gemma3", 18, 4, 1, 256, 512},
};

int usage() {
    std::fprintf(stderr, "usage: bench_attention [--shape smollm2|gemma3] [--depth D] [--threads N] [--runs N]\n");
    return 2;
}

// Every position [0, depth] of every layer holds random f16 values (a block's worth, repeated).
void fill_cache(wb::KvCache& kv, int32_t depth) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<uint16_t> row(kv.k_row_bytes() / sizeof(uint16_t));
    for (uint16_t& h : row) h = wb::f32_to_fp16(u(rng));
    for (int32_t il = 0; il < kv.config().n_layer; ++il)
        for (int32_t pos = 0; pos <= depth; ++pos) {
            std::memcpy(kv.k_row(il, pos), row.data(), kv.k_row_bytes());
            std::memcpy(kv.v_row(il, pos), row.data(), kv.v_row_bytes());
        }
}

}  // namespace

int main(int argc, char** argv) {
    const Shape* shape = &kShapes[0];
    int32_t depth = 4096;
    int threads = 2, runs = 20;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) return usage();
        if (a == "--shape") {
            const std::string s = argv[++i];
            shape = nullptr;
            for (const Shape& c : kShapes)
                if (s == c.name) shape = &c;
            if (!shape) return usage();
        } else if (a == "--depth") {
            depth = std::max(1, std::atoi(argv[++i]));
        } else if (a == "--threads") {
            threads = std::max(1, std::atoi(argv[++i]));
        } else if (a == "--runs") {
            runs = std::max(1, std::atoi(argv[++i]));
        } else {
            return usage();
        }
    }

    wb::CpuBackend backend(threads);
    wb::KvCacheConfig config;
    config.n_layer = shape->n_layer;
    config.n_head_kv = shape->n_head_kv;
    config.head_dim = shape->head_dim;
    config.n_ctx = depth + 1;
    config.sliding_window = shape->window;
    config.layer_is_swa.resize(size_t(shape->n_layer));
    for (int32_t il = 0; il < shape->n_layer; ++il) config.layer_is_swa[size_t(il)] = shape->window > 0 && il % 6 != 5;
    wb::KvCache kv(config, backend);
    kv.reserve(depth + 1);
    fill_cache(kv, depth);
    kv.set_n_tokens(depth);

    const int32_t q_dim = shape->n_head * shape->head_dim;
    wb::Tensor q = backend.alloc(1, q_dim), out = backend.alloc(1, q_dim);
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int32_t i = 0; i < q_dim; ++i) q.data[i] = u(rng);

    std::vector<double> ms;
    for (int run = 0; run <= runs; ++run) {  // run 0 warms up
        const auto t0 = std::chrono::steady_clock::now();
        for (int32_t il = 0; il < shape->n_layer; ++il) {
            wb::AttentionParams p{shape->n_head, shape->n_head_kv, shape->head_dim, 0.125f, 0};
            if (config.layer_is_swa[size_t(il)]) p.window = shape->window;
            backend.attention(q, kv, il, depth, p, out);
        }
        const std::chrono::duration<double, std::milli> dt = std::chrono::steady_clock::now() - t0;
        if (run > 0) ms.push_back(dt.count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("decode attention, %s at depth %d, %d threads: %.3f ms a token (median of %d; fastest %.3f)\n",
                shape->name, depth, threads, ms[ms.size() / 2], runs, ms.front());
    backend.free(q);
    backend.free(out);
    return 0;
}
