// The prefill tiles alone: one weight matrix of random blocks against 8 tokens, in each kernel family
// the CPU has (the best one, e.g. avx512, and plain AVX2), timed in this thread's CPU time so that a
// comparison of two families stays meaningful on a machine that is not idle (wall time is printed too).
// What a kernel change to the tiles is measured with before the end-to-end benchmark (docs/benchmarks.md):
//   build/tests/bench_tiles [--runs 20]
// Per case: type, order, shape, then per family the median CPU microseconds of 512 tokens against the
// matrix as a prefill's tasks meet them (packing and unpacking included) and the multiply-adds per CPU
// nanosecond; where the family has a 16-row tile, the same through it. Then the decode kernels over 8
// rows on a matrix that stays in the L2 cache: the bytes of weights per CPU second they can take (the
// file's bytes, also for the rows repacked at load, whose copy is up to 3 % larger). Then the decode
// attention's f16 products, and the repacked decode kernels over a matrix read from memory, against a
// plain read of the same bytes.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/quant.h"
#include "quant/quant_blocks.h"
#include "quant/quant_internal.h"
#include "util/fp16.h"

using wb::GgmlType;

namespace {

double cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Case {
    GgmlType type;
    wb::DotOrder order;
    int64_t n, rows;
};

// Random bytes with sane scales: each block's leading fp16 fields (d, and dmin or m where the type has
// them) are set to small values so that no NaN or infinity slows the float part.
std::vector<uint8_t> random_matrix(std::mt19937& rng, GgmlType t, int64_t n, int64_t rows) {
    const size_t row_bytes = wb::ggml_row_bytes(t, n);
    std::vector<uint8_t> w(row_bytes * size_t(rows));
    for (auto& b : w) b = uint8_t(rng());
    const size_t block = wb::ggml_type_traits(t).block_bytes;
    const uint16_t small = wb::f32_to_fp16(0.01f);
    for (size_t off = 0; off + block <= w.size(); off += block) {
        if (t == GgmlType::Q4_K || t == GgmlType::Q5_K) {  // d, dmin first
            std::memcpy(&w[off], &small, 2);
            std::memcpy(&w[off + 2], &small, 2);
        } else if (t == GgmlType::Q6_K) {  // d last
            std::memcpy(&w[off + block - 2], &small, 2);
        } else {  // d first (Q8_0, IQ4_XS, ...)
            std::memcpy(&w[off], &small, 2);
        }
    }
    return w;
}

constexpr int64_t kTaskRows = 64;  // rows meeting every group of tokens in turn (the backend's tasks take 16)
constexpr int kGroups = 64;        // groups of 8 tokens: a 512-token prompt

// Median CPU seconds of a prefill's pass over the matrix as the CPU backend makes it: per task of 64
// rows, every group of 8 tokens against those rows, through the tile over packed activations (the
// packing once per group and matmul) or, with sixteen = true, through the 16-row tile (the task's rows
// unpacked once); 0 where the family has no such tile.
double time_prefill(const Case& c, const std::vector<uint8_t>& w, const std::vector<uint8_t>& xq, size_t x_stride,
                    int runs, bool sixteen) {
    const wb::DotKernels k = wb::dot_kernels(c.type, c.n, c.order);
    if (sixteen ? !k.tile16_unpacked : !k.tile) return 0.0;
    const size_t w_stride = wb::ggml_row_bytes(c.type, c.n);
    const size_t group_stride = x_stride * wb::kDotTileCols;
    std::vector<uint8_t> unpacked_buf(sixteen ? k.unpacked16_w_bytes(c.n) * size_t(kTaskRows / wb::kTile16Rows) + 64 : 0);
    uint8_t* unpacked = unpacked_buf.data() + (64 - reinterpret_cast<uintptr_t>(unpacked_buf.data()) % 64) % 64;  // as quant.h asks
    std::vector<uint8_t> packed(k.tile_packed ? k.packed_x_bytes(c.n) * kGroups : 0);
    std::vector<float> out(size_t(c.rows * wb::kDotTileCols * kGroups));
    std::vector<double> times;
    for (int run = 0; run <= runs; ++run) {  // the first pass warms the caches and is not counted
        const double t0 = cpu_seconds();
        if (!sixteen && k.tile_packed)
            for (int g = 0; g < kGroups; ++g)
                k.pack_x(c.n, xq.data() + size_t(g) * group_stride, x_stride, packed.data() + size_t(g) * k.packed_x_bytes(c.n));
        for (int64_t r0 = 0; r0 < c.rows; r0 += kTaskRows) {
            const uint8_t* rows = w.data() + size_t(r0) * w_stride;
            if (sixteen)
                for (int64_t r = 0; r < kTaskRows; r += wb::kTile16Rows)
                    k.unpack16_w(c.n, rows + size_t(r) * w_stride, w_stride,
                                 unpacked + size_t(r / wb::kTile16Rows) * k.unpacked16_w_bytes(c.n));
            for (int g = 0; g < kGroups; ++g) {
                float* o = out.data() + size_t(g) * wb::kDotTileCols * size_t(c.rows) + r0;
                const uint8_t* x = xq.data() + size_t(g) * group_stride;
                for (int64_t r = 0; r < kTaskRows; r += sixteen ? wb::kTile16Rows : 1) {
                    if (sixteen)
                        k.tile16_unpacked(c.n, unpacked + size_t(r / wb::kTile16Rows) * k.unpacked16_w_bytes(c.n), x,
                                          x_stride, o + r, c.rows);
                    else if (k.tile_packed)
                        k.tile_packed(c.n, rows + size_t(r) * w_stride, packed.data() + size_t(g) * k.packed_x_bytes(c.n),
                                      o + r, c.rows);
                    else
                        k.tile(c.n, rows + size_t(r) * w_stride, w_stride, x, x_stride, o + r, c.rows);
                }
            }
        }
        if (run > 0) times.push_back(cpu_seconds() - t0);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

// Median CPU seconds of a decode's kernel over 8 rows (DotKernels::rows8) against one token, the
// whole matrix; the row kernel (DotKernels::dot) one row at a time where the family has no rows8. The
// matrix is small enough to stay in the L2 cache, so this measures the instructions per weight, not
// the memory.
double time_rows8(const Case& c, const std::vector<uint8_t>& w, const std::vector<uint8_t>& xq, int runs) {
    const wb::DotKernels k = wb::dot_kernels(c.type, c.n, c.order);
    const size_t w_stride = wb::ggml_row_bytes(c.type, c.n);
    std::vector<float> out(size_t(c.rows));
    std::vector<double> times;
    for (int run = 0; run <= runs; ++run) {
        const double t0 = cpu_seconds();
        for (int rep = 0; rep < kGroups; ++rep) {
            if (k.rows8)
                for (int64_t r = 0; r < c.rows; r += 8) k.rows8(c.n, w.data() + size_t(r) * w_stride, w_stride, xq.data(), out.data() + r);
            else
                for (int64_t r = 0; r < c.rows; ++r) out[size_t(r)] = k.row(c.n, w.data() + size_t(r) * w_stride, xq.data());
        }
        if (run > 0) times.push_back((cpu_seconds() - t0) / kGroups);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

// The same for the rows repacked at load (DotKernels::row16_repacked) where the family has them; 0
// where not. The repacking itself is load-time work and not timed.
double time_repacked(const Case& c, const std::vector<uint8_t>& w, const std::vector<uint8_t>& xq, int runs) {
    const wb::DotKernels k = wb::dot_kernels(c.type, c.n, c.order);
    if (!k.row16_repacked) return 0.0;
    const size_t w_stride = wb::ggml_row_bytes(c.type, c.n), group = k.repacked16_bytes(c.n);
    std::vector<uint8_t> buf(group * size_t(c.rows / 16) + 64);
    uint8_t* repacked = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
    for (int64_t r = 0; r < c.rows; r += 16) k.repack16(c.n, w.data() + size_t(r) * w_stride, w_stride, repacked + size_t(r / 16) * group);
    std::vector<float> out(size_t(c.rows));
    std::vector<double> times;
    for (int run = 0; run <= runs; ++run) {
        const double t0 = cpu_seconds();
        for (int rep = 0; rep < kGroups; ++rep)
            for (int64_t r = 0; r < c.rows; r += 16) k.row16_repacked(c.n, repacked + size_t(r / 16) * group, xq.data(), out.data() + r);
        if (run > 0) times.push_back((cpu_seconds() - t0) / kGroups);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

// Decode attention's f16 products over a cache larger than the L3, as one token of SmolLM2 at depth
// 4096 meets them (3 kv heads of 64 dims with 3 query heads each, 30 layers, blocks of 128 positions
// holding K then V as kv/kv_cache.h lays them out): the scores (dot_f16_keys, kStep32 order) and V^T p
// (fma_f16_keys into 32 lanes, 32 dims a task: a 64-byte line of a row, as the backend splits it), in
// CPU milliseconds per token on one thread.
void bench_attention(int runs) {
    constexpr int kLayers = 30, kKv = 3, kHd = 64, kGroup = 3, kDepth = 4096, kBlock = 128, kLanes = 32, kDims = 32;
    constexpr int64_t kRow = kKv * kHd, kBlocks = kDepth / kBlock;
    constexpr size_t kBlockHalves = size_t(2 * kBlock * kRow);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const size_t n_halves = size_t(kLayers * kBlocks) * kBlockHalves;
    // random halves, one block's worth repeated (the products' speed does not depend on the values)
    std::vector<uint16_t> cache(n_halves);
    for (size_t i = 0; i < kBlockHalves; ++i) cache[i] = wb::f32_to_fp16(u(rng));
    for (size_t off = kBlockHalves; off < n_halves; off += kBlockHalves)
        std::memcpy(cache.data() + off, cache.data(), kBlockHalves * sizeof(uint16_t));
    std::vector<float> q(size_t(kKv * kGroup * kHd)), scores(size_t(kGroup) * kDepth), lanes(size_t(kGroup * kLanes * kDims));
    for (float& x : q) x = wb::fp16_to_f32(wb::f32_to_fp16(u(rng)));
    for (float& x : scores) x = 1.0f / kDepth;
    std::vector<double> tk, tv;
    for (int run = 0; run <= runs; ++run) {
        double t0 = cpu_seconds();
        for (int l = 0; l < kLayers; ++l)
            for (int h = 0; h < kKv; ++h)
                for (int64_t b = 0; b < kBlocks; ++b)
                    wb::dot_f16_keys(wb::F16DotOrder::kStep32, kHd, cache.data() + size_t(l * kBlocks + b) * kBlockHalves + h * kHd, kRow,
                                     kBlock, q.data() + h * kGroup * kHd, kHd, kGroup, scores.data() + b * kBlock, kDepth);
        double t1 = cpu_seconds();
        for (int l = 0; l < kLayers; ++l)
            for (int h = 0; h < kKv; ++h)
                for (int d = 0; d < kHd; d += kDims) {
                    std::fill(lanes.begin(), lanes.end(), 0.0f);
                    for (int64_t b = 0; b < kBlocks; ++b)
                        wb::fma_f16_keys(kDims, cache.data() + size_t(l * kBlocks + b) * kBlockHalves + kBlock * kRow + h * kHd + d, kRow,
                                         kBlock, (b * kBlock) % kLanes, kLanes, scores.data() + b * kBlock, kDepth, kGroup, lanes.data(),
                                         kLanes * kDims);
                }
        if (run > 0) {
            tk.push_back(t1 - t0);
            tv.push_back(cpu_seconds() - t1);
        }
    }
    std::sort(tk.begin(), tk.end());
    std::sort(tv.begin(), tv.end());
    std::printf("decode attention, SmolLM2's shape at depth %d (%zu MB of cache), one thread, per token: scores %.2f ms, V^T p %.2f ms\n",
                kDepth, n_halves * 2 >> 20, 1e3 * tk[tk.size() / 2], 1e3 * tv[tv.size() / 2]);
}

// The decode kernels over a matrix read from memory (2048 x 65536, larger than the L3), one thread: the
// repacked pass against a plain read of the same bytes, alternated run by run, as the median ratio of
// their speeds (1.0: the kernel reads as fast as the memory streams). What a layout's reading order costs
// beyond its bytes: with a second stream inside each group of 16 rows (Q8_0's and Q5_0's d in an array
// after their blocks) the hardware prefetchers fell behind and the ratio was 0.48-0.64.
void bench_repacked_from_memory(int runs) {
    constexpr int64_t kN = 2048, kRows = 65536;
    std::mt19937 rng(11);
    std::printf("decode from memory (%lldx%lld), one thread: repacked kernel / plain read, median of %d\n", (long long)kN,
                (long long)kRows, runs);
    for (const Case& c : {Case{GgmlType::Q4_K, wb::DotOrder::kGemv, kN, kRows}, Case{GgmlType::Q5_K, wb::DotOrder::kRow, kN, kRows},
                          Case{GgmlType::Q6_K, wb::DotOrder::kRow, kN, kRows}, Case{GgmlType::Q8_0, wb::DotOrder::kRow, kN, kRows},
                          Case{GgmlType::Q5_0, wb::DotOrder::kRow, kN, kRows}, Case{GgmlType::Q4_1, wb::DotOrder::kRow, kN, kRows},
                          Case{GgmlType::Q4_0, wb::DotOrder::kGemv, kN, kRows}}) {
        const wb::DotKernels k = wb::dot_kernels(c.type, c.n, c.order);
        if (!k.row16_repacked) continue;
        const size_t group = k.repacked16_bytes(c.n), bytes = group * size_t(c.rows / 16);
        std::vector<uint8_t> buf(bytes + 64);
        uint8_t* repacked = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
        {
            const std::vector<uint8_t> w = random_matrix(rng, c.type, c.n, 16);  // one group's rows, repeated
            for (int64_t r = 0; r < c.rows; r += 16) k.repack16(c.n, w.data(), wb::ggml_row_bytes(c.type, c.n), repacked + size_t(r / 16) * group);
        }
        std::vector<uint8_t> xq(wb::activation_row_bytes(c.type, c.n));
        std::vector<float> x(size_t(c.n), 0.5f), out(size_t(c.rows));
        wb::quantize_activations(c.type, x.data(), xq.data(), c.n);
        std::vector<double> ratios;
        uint64_t sink = 0;
        for (int run = 0; run <= runs; ++run) {
            const double t0 = cpu_seconds();
            for (int64_t r = 0; r < c.rows; r += 16) k.row16_repacked(c.n, repacked + size_t(r / 16) * group, xq.data(), out.data() + r);
            const double t1 = cpu_seconds();
            uint64_t a[4] = {0, 0, 0, 0};
            for (size_t i = 0; i + 32 <= bytes; i += 32)
                for (int l = 0; l < 4; ++l) {
                    uint64_t v;
                    std::memcpy(&v, repacked + i + 8 * size_t(l), 8);
                    a[l] += v;
                }
            sink += a[0] + a[1] + a[2] + a[3];  // printed below (as nothing) so the read is not optimized away
            if (run > 0) ratios.push_back((cpu_seconds() - t1) / (t1 - t0));
        }
        std::sort(ratios.begin(), ratios.end());
        std::printf("%-7s %5.1f MB  %.2f (%.2f - %.2f)%s\n", wb::ggml_type_name(c.type).c_str(), double(bytes) / 1e6,
                    ratios[ratios.size() / 2], ratios.front(), ratios.back(), sink == 1 ? " " : "");
    }
}

}  // namespace

int main(int argc, char** argv) {
    int runs = 20;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = std::max(1, std::atoi(argv[++i]));
        } else {
            std::fprintf(stderr, "usage: bench_tiles [--runs N]\n");
            return 2;
        }
    }
    const std::vector<Case> cases = {
        {GgmlType::Q5_K, wb::DotOrder::kTiled, 2048, 256},  {GgmlType::Q5_K, wb::DotOrder::kTiled, 8192, 128},
        {GgmlType::Q4_K, wb::DotOrder::kGemm, 2048, 256},   {GgmlType::Q4_K, wb::DotOrder::kTiled, 2048, 256},
        {GgmlType::Q6_K, wb::DotOrder::kTiled, 2048, 256},  {GgmlType::IQ4_XS, wb::DotOrder::kTiled, 2048, 256},
        {GgmlType::Q8_0, wb::DotOrder::kLlamafile, 2048, 256},
    };
    std::mt19937 rng(7);
    std::printf("%-7s %-9s %-11s %s\n", "type", "order", "n x rows", "family: median CPU us per matrix, MAC per ns");
    for (const Case& c : cases) {
        const std::vector<uint8_t> w = random_matrix(rng, c.type, c.n, c.rows);
        const size_t x_stride = wb::activation_row_bytes(c.type, c.n);
        std::vector<uint8_t> xq(x_stride * wb::kDotTileCols * kGroups);
        std::uniform_real_distribution<float> u(-2.0f, 2.0f);
        std::vector<float> x(size_t(c.n));
        for (int t = 0; t < wb::kDotTileCols * kGroups; ++t) {
            for (float& v : x) v = u(rng);
            wb::quantize_activations(c.type, x.data(), xq.data() + size_t(t) * x_stride, c.n);
        }
        const char* order = c.order == wb::DotOrder::kTiled ? "tiled" : c.order == wb::DotOrder::kGemm ? "gemm" : "llamafile";
        std::printf("%-7s %-9s %5lldx%-5lld", wb::ggml_type_name(c.type).c_str(), order, (long long)c.n, (long long)c.rows);
        const double macs = double(c.n) * double(c.rows) * wb::kDotTileCols * kGroups;
        for (bool plain : {false, true}) {
            wb::quant_force_avx2(plain);
            const std::string family = wb::quant_kernel_name();
            const double s = time_prefill(c, w, xq, x_stride, runs, false);
            std::printf("  %s: %8.0f us %5.1f", family.c_str(), 1e6 * s, macs / (1e9 * s));
            if (const double s16 = time_prefill(c, w, xq, x_stride, runs, true); s16 > 0)
                std::printf("  %s 16-row: %8.0f us %5.1f", family.c_str(), 1e6 * s16, macs / (1e9 * s16));
        }
        wb::quant_force_avx2(false);
        std::printf("\n");
    }
    std::printf("decode, 8 rows at a time (DotKernels::rows8, else one row at a time), one token, per matrix:\n");
    for (const Case& c : {Case{GgmlType::Q4_K, wb::DotOrder::kGemv, 2048, 256}, Case{GgmlType::Q8_0, wb::DotOrder::kRow, 2048, 256},
                          Case{GgmlType::Q6_K, wb::DotOrder::kRow, 2048, 256},
                          Case{GgmlType::Q5_K, wb::DotOrder::kRow, 2048, 256}, Case{GgmlType::Q4_0, wb::DotOrder::kGemv, 2048, 256}}) {
        const std::vector<uint8_t> w = random_matrix(rng, c.type, c.n, c.rows);
        std::vector<uint8_t> xq(wb::activation_row_bytes(c.type, c.n));
        std::vector<float> x(size_t(c.n), 0.5f);
        wb::quantize_activations(c.type, x.data(), xq.data(), c.n);
        std::printf("%-7s %5lldx%-5lld", wb::ggml_type_name(c.type).c_str(), (long long)c.n, (long long)c.rows);
        for (bool plain : {false, true}) {
            wb::quant_force_avx2(plain);
            const std::string family = wb::quant_kernel_name();
            const double s = time_rows8(c, w, xq, runs);
            const double bytes = double(wb::ggml_row_bytes(c.type, c.n)) * double(c.rows);
            std::printf("  %s: %6.1f us %5.1f GB/s", family.c_str(), 1e6 * s, bytes / (1e9 * s));
            if (const double sr = time_repacked(c, w, xq, runs); sr > 0)
                std::printf("  %s repacked: %6.1f us %5.1f GB/s", family.c_str(), 1e6 * sr, bytes / (1e9 * sr));
        }
        wb::quant_force_avx2(false);
        std::printf("\n");
    }
    bench_attention(runs);
    bench_repacked_from_memory(runs);
    return 0;
}
