// The CUDA backend's quantized KV cache and context shift against the CPU backend, for every pair of
// cache types (f16, q8_0, q4_0 for K and for V), in heads of 64, 128 and 256 (a quantized K rotated in
// one run of the head, a quantized V in runs of 64) and 96 (Phi-3's: no rotation at all), and a group
// of 16 query heads per kv head (two blocks of the kernel's 8 vectors):
//   - kv_store: the rows each backend stores into its own cache (rotated by the Hadamard runs, then
//     quantized) are identical byte for byte: the kernels call kv_quant_parts.h's quantizers (checked
//     against core/kv by test_kv_quant_parts) inside their own loops, which this checks;
//   - scores over a quantized K: the kernel's scores (AttentionParams::capture_scores, every head)
//     equal the CPU's (cpu_scores: kv_prepare_query + kv_dot_keys, scale, soft cap) bit for bit,
//     except under a soft cap (the device's tanhf: within 1e-6 x cap). The CPU's are llama.cpp's AVX2
//     order where its kernels are AVX2 / AVX-512; with the scalar family this check may fail;
//   - attention over those caches, in the batches of a chat (a prefill crossing a block boundary, a
//     decode step, a continuation; windows that release blocks; scale_q; a soft cap), against an exact
//     reference computed here in double precision from the CPU cache's rows and cpu_scores:
//       GPU vs exact: rel_l2 <= 1e-4 and max_abs <= kGpuMaxAbs per element (what each bound can and
//       cannot catch: at kGpuMaxAbs). rel_l2 alone, over a whole batch, would dilute one wrong block.
//       GPU vs CPU: rel_l2 <= (CPU vs exact) + 1e-4 and max_abs <= (CPU vs exact) + kGpuMaxAbs (the
//       triangle inequality): the CPU's own error is its f16 rounding of what weights an f16 V (the
//       probabilities on the f16 path, the accumulator beside a quantized K, as llama.cpp does),
//       printed and bounded (cpu_tolerance, cpu_max_abs);
//     and the captured probabilities against the CPU's within 1e-4 (the f16 path's tolerance);
//   - the device memory counted for the cache is the blocks times KvCache::block_bytes() of its types;
//   - kv_shift with an f16 K and a V of each type: after the shift both caches hold the same bytes
//     (K re-rotated by the shared rope_shift_pair, V moved as its bytes), the rows really moved, and
//     attention after it agrees as above; with a quantized K the CPU shifts and CUDA refuses (so far).
//
// Without a CUDA device: prints "SKIPPED: no CUDA device" and returns 77. With --cpu (test_gpu_kv_cpu,
// label unit, no device) the second backend is another CpuBackend and only the checks that carry
// information without a GPU run: the CPU against the exact reference (rel_l2 and max_abs bounds), the
// CPU backend's captured scores against cpu_scores bit for bit (the reference's scores are the CPU's),
// the shifted rows moved, the quantized-K shift done by the CPU. Comparing the CPU backend with itself (stored
// bytes, outputs, probabilities) would not fail, so --cpu skips it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "engine/backend_cpu.h"
#include "engine/rope_shift.h"
#include "gpu_test_util.h"
#include "kv/kv_cache.h"
#include "kv/kv_types.h"

using namespace wb;
using namespace wb::gputest;

namespace {

const KvType kTypes[] = {KvType::F16, KvType::Q8_0, KvType::Q4_0};

std::string types_name(KvType k, KvType v) { return std::string("K ") + kv_type_name(k) + " V " + kv_type_name(v); }

// n bytes at src, which lies in b's memory (device memory for the CUDA backend).
std::vector<uint8_t> read_bytes(Backend& b, const void* src, size_t n) {
    std::vector<uint8_t> out(n);
    b.synchronize();
    if (on_host(b)) {
        std::memcpy(out.data(), src, n);
    } else if (cudaMemcpy(out.data(), src, n, cudaMemcpyDeviceToHost) != cudaSuccess) {
        throw Error("read_bytes: cudaMemcpy failed");
    }
    return out;
}

// Rows [p0, p1) of layer il whose K or V bytes differ between the two caches.
int differing_rows(Backend& cpu, Backend& gpu, const KvCache& kc, const KvCache& kg, int32_t il, int32_t p0, int32_t p1) {
    int diff = 0;
    for (int32_t p = p0; p < p1; ++p) {
        const bool k_same = read_bytes(cpu, kc.k_row(il, p), kc.k_row_bytes()) == read_bytes(gpu, kg.k_row(il, p), kg.k_row_bytes());
        const bool v_same = read_bytes(cpu, kc.v_row(il, p), kc.v_row_bytes()) == read_bytes(gpu, kg.v_row(il, p), kg.v_row_bytes());
        diff += (k_same && v_same) ? 0 : 1;
    }
    return diff;
}

AttentionParams attention_params(int32_t n_head, int32_t n_head_kv, int32_t head_dim, int32_t window, bool scale_q,
                                 float softcap) {
    AttentionParams p;
    p.n_head = n_head;
    p.n_head_kv = n_head_kv;
    p.head_dim = head_dim;
    p.scale = 1.0f / std::sqrt(float(head_dim));
    p.window = window;
    p.scale_q = scale_q;
    p.softcap = softcap;
    return p;
}

// The scores of one query head over keys first .. pos of the CPU cache, as the CPU backend's flash path
// forms them: q rotated and prepared (kv_prepare_query), kv_dot_keys, then the scale and the soft cap.
std::vector<float> cpu_scores(const KvCache& kv, int32_t il, const float* qh, int32_t first, int32_t pos, int32_t kvh,
                              const AttentionParams& p) {
    const KvCacheConfig& c = kv.config();
    const int32_t hd = p.head_dim;
    std::vector<float> qs(qh, qh + hd);
    if (p.scale_q)
        for (float& x : qs) x *= p.scale;
    kv_rotate(qs.data(), hd, kv_rotation_k(c.type_k, hd));
    std::vector<uint8_t> prep(kv_query_bytes(c.type_k, hd));
    kv_prepare_query(c.type_k, qs.data(), prep.data(), hd);
    std::vector<float> w(static_cast<size_t>(pos - first + 1));
    for (int32_t j = first; j <= pos; ++j) {
        float s = 0.0f;
        kv_dot_keys(c.type_k, hd, static_cast<const uint8_t*>(kv.k_row(il, j)) + size_t(kvh) * kv.k_head_bytes(), 0, 1,
                    prep.data(), &s);
        float scale = p.scale_q ? 1.0f : p.scale;
        if (p.softcap > 0.0f) scale /= p.softcap;
        s *= scale;
        if (p.softcap > 0.0f) s = p.softcap * std::tanh(s);
        w[size_t(j - first)] = s;
    }
    return w;
}

int32_t first_key(int32_t pos, int32_t window) { return window > 0 ? std::max(0, pos - window + 1) : 0; }

// One query head's output over the CPU cache, in double from the CPU's own scores (see the header).
void exact_head(const KvCache& kv, int32_t il, const float* qh, int32_t pos, int32_t kvh, const AttentionParams& p,
                float* out) {
    const KvCacheConfig& c = kv.config();
    const int32_t hd = p.head_dim;
    const int32_t first = first_key(pos, p.window);
    std::vector<float> vrow(static_cast<size_t>(hd));
    const std::vector<float> sc = cpu_scores(kv, il, qh, first, pos, kvh, p);
    std::vector<double> w(sc.begin(), sc.end());
    double mx = -INFINITY;
    for (double x : w) mx = std::max(mx, x);
    double sum = 0.0;
    for (double& x : w) sum += (x = std::exp(x - mx));
    std::vector<double> acc(static_cast<size_t>(hd), 0.0);
    for (int32_t j = first; j <= pos; ++j) {
        kv_dequantize_row(c.type_v, static_cast<const uint8_t*>(kv.v_row(il, j)) + size_t(kvh) * kv.v_head_bytes(),
                          vrow.data(), hd);
        for (int32_t d = 0; d < hd; ++d) acc[size_t(d)] += w[size_t(j - first)] * double(vrow[size_t(d)]);
    }
    for (int32_t d = 0; d < hd; ++d) out[d] = float(acc[size_t(d)] / sum);
    kv_rotate(out, hd, kv_rotation_v(c.type_v, hd));
}

std::vector<float> exact_attention(const KvCache& kv, int32_t il, const std::vector<float>& q, int32_t n, int32_t pos0,
                                   const AttentionParams& p) {
    const int64_t q_dim = int64_t(p.n_head) * p.head_dim;
    std::vector<float> out(size_t(n * q_dim));
    for (int32_t r = 0; r < n; ++r)
        for (int32_t h = 0; h < p.n_head; ++h)
            exact_head(kv, il, q.data() + r * q_dim + int64_t(h) * p.head_dim, pos0 + r, h / (p.n_head / p.n_head_kv), p,
                       out.data() + r * q_dim + int64_t(h) * p.head_dim);
    return out;
}

// How far the CPU backend's attention is from the exact result (measured with this test's data,
// --cpu): a quantized V is accumulated in f32 (1e-6); an f16 V beside an f16 K weighted by
// probabilities rounded to f16 (2e-4); an f16 V beside a quantized K in an f16 accumulator, every
// update rounded to f16 as llama.cpp's flash attention does (up to 2.2e-3 at 331 keys, growing with
// the keys).
double cpu_tolerance(const KvCacheConfig& c) {
    if (c.type_v != KvType::F16) return 1e-4;
    return c.type_k == KvType::F16 ? 1e-3 : 5e-3;
}

// The largest per-element error of the CPU backend's attention against the exact result (outputs are
// averages of values within about +-1; measured with this test's data, --cpu, at up to 331 keys): a
// quantized V accumulated in f32, 2.9e-6; an f16 K and V, 8.0e-4 (probabilities rounded to f16); an
// f16 V beside a quantized K, 1.4e-2 (the f16 accumulator, growing with the keys).
double cpu_max_abs(const KvCacheConfig& c) {
    if (c.type_v != KvType::F16) return 2e-5;
    return c.type_k == KvType::F16 ? 2e-3 : 3e-2;
}

// The GPU's per-element bound against the exact result. It accumulates every V in f32, as the CPU
// does a quantized V (2.9e-6 above), in another order: 5e-5 leaves over 10x room. A V block misread
// by ~0.1 per value (a nibble or a scale off) in a key that carries 1e-3 of a row's weight moves an
// output by ~1e-4 and fails it; keys of less weight can hide a misread block, and a misread quantized
// K block is caught by the bit-for-bit score check instead.
constexpr double kGpuMaxAbs = 5e-5;

// expect_close, plus a bound on the largest per-element error: rel_l2 over a whole batch dilutes one
// wrong block, max_abs does not.
void expect_within(const std::string& what, const std::vector<float>& ref, const std::vector<float>& got, double tol,
                   double abs_tol) {
    const ErrorStats s = compare(ref, got);
    char buf[256];
    std::snprintf(buf, sizeof buf, " (rel_l2 %.3g <= %.3g, max_abs %.3g <= %.3g, unwritten/non-finite %zu)", s.rel_l2, tol,
                  s.max_abs, abs_tol, s.non_finite);
    report(s.non_finite == 0 && s.rel_l2 <= tol && s.max_abs <= abs_tol, what + buf);
}

// Both backends' caches of one configuration, filled and attended to batch by batch.
struct Pair {
    Backend& cpu;
    Backend& gpu;
    KvCache kc, kg;
    int32_t pos = 0;
    Pair(Backend& c, Backend& g, const KvCacheConfig& cfg) : cpu(c), gpu(g), kc(cfg, c), kg(cfg, g) {}

    // Stores n random K/V rows at the next positions on both backends (settle() marks them written).
    void store(int32_t il, int32_t n, uint64_t seed) {
        const int64_t kv_dim = int64_t(kc.config().n_head_kv) * kc.config().head_dim;
        kc.reserve(pos + n);
        kg.reserve(pos + n);
        const std::vector<float> k = random_floats(size_t(n * kv_dim), seed * 3 + 2, 1.5f);
        const std::vector<float> v = random_floats(size_t(n * kv_dim), seed * 3 + 3);
        OwnedTensor kc_t(cpu, n, kv_dim), vc_t(cpu, n, kv_dim), kg_t(gpu, n, kv_dim), vg_t(gpu, n, kv_dim);
        upload(cpu, kc_t.t, k);
        upload(cpu, vc_t.t, v);
        upload(gpu, kg_t.t, k);
        upload(gpu, vg_t.t, v);
        cpu.kv_store(kc, il, kc_t.t, vc_t.t, pos);
        gpu.kv_store(kg, il, kg_t.t, vg_t.t, pos);
        pos += n;
    }

    // Marks the stored positions as written: a sliding-window layer then releases the blocks the
    // next query no longer sees, so a batch attends before this.
    void settle() {
        kc.set_n_tokens(pos);
        kg.set_n_tokens(pos);
    }

    // Attention of the last n positions' queries on both backends, checked as the header says.
    void attend(int32_t il, int32_t n, const AttentionParams& ap, uint64_t seed, const std::string& what) {
        const int64_t q_dim = int64_t(ap.n_head) * ap.head_dim;
        const int32_t pos0 = pos - n;
        const std::vector<float> q = random_floats(size_t(n * q_dim), seed * 3 + 1, 1.5f);
        OwnedTensor qc(cpu, n, q_dim), oc(cpu, n, q_dim), qg(gpu, n, q_dim), og(gpu, n, q_dim);
        upload(cpu, qc.t, q);
        upload(gpu, qg.t, q);
        poison(gpu, og.t);
        const std::vector<int32_t> heads = {0, ap.n_head - 1};
        const size_t n_cap = heads.size() * size_t(n) * size_t(pos);
        std::vector<float> cap_c(n_cap), cap_g(n_cap, std::nanf(""));
        AttentionParams apc = ap, apg = ap;
        apc.capture_heads = apg.capture_heads = heads.data();
        apc.n_capture_heads = apg.n_capture_heads = int32_t(heads.size());
        apc.capture_probs = cap_c.data();
        apg.capture_probs = cap_g.data();
        cpu.attention(qc.t, kc, il, pos0, apc, oc.t);
        const std::vector<float> exact = exact_attention(kc, il, q, n, pos0, ap);
        const std::vector<float> out_c = download(cpu, oc.t);
        const std::string at = what + " pos0 " + std::to_string(pos0) + " rows " + std::to_string(n);
        const ErrorStats cpu_err = compare(exact, out_c);
        expect_within(at + " cpu vs exact", exact, out_c, cpu_tolerance(kc.config()), cpu_max_abs(kc.config()));
        if (kv_type_is_quantized(kc.config().type_k)) check_scores(il, n, ap, q, qg.t, at);
        if (on_host(gpu)) return;  // --cpu: the CPU backend twice would compute the same bits
        gpu.attention(qg.t, kg, il, pos0, apg, og.t);
        const std::vector<float> out_g = download(gpu, og.t);
        expect_within(at + " vs exact", exact, out_g, 1e-4, kGpuMaxAbs);
        char cpu_note[96];
        std::snprintf(cpu_note, sizeof cpu_note, " (cpu vs exact %g / max_abs %g)", cpu_err.rel_l2, cpu_err.max_abs);
        expect_within(at + " vs cpu" + cpu_note, out_c, out_g, cpu_err.rel_l2 + 1e-4, cpu_err.max_abs + kGpuMaxAbs);
        expect_close(at + " captured probabilities vs cpu", cap_c, cap_g, 1e-4);
    }

    // The second backend's scores (capture_scores, every head) against cpu_scores over the CPU's cache,
    // which holds the same bytes (checked below): bit for bit, except the device's tanhf under a soft cap
    // (a few ulp of the cap). With --cpu this proves that cpu_scores, the exact reference's scores, are
    // the CPU backend's.
    void check_scores(int32_t il, int32_t n, const AttentionParams& ap, const std::vector<float>& q, const Tensor& qg,
                      const std::string& at) {
        const int32_t pos0 = pos - n;
        const int64_t q_dim = int64_t(ap.n_head) * ap.head_dim;
        std::vector<int32_t> heads(static_cast<size_t>(ap.n_head));
        for (int32_t h = 0; h < ap.n_head; ++h) heads[size_t(h)] = h;
        const size_t n_cap = heads.size() * size_t(n) * size_t(pos);
        std::vector<float> ref(n_cap, 0.0f), got(n_cap, std::nanf(""));
        for (int32_t h = 0; h < ap.n_head; ++h)
            for (int32_t r = 0; r < n; ++r) {
                const int32_t p = pos0 + r, first = first_key(p, ap.window);
                const std::vector<float> sc =
                    cpu_scores(kc, il, q.data() + r * q_dim + int64_t(h) * ap.head_dim, first, p, h / (ap.n_head / ap.n_head_kv), ap);
                std::copy(sc.begin(), sc.end(), ref.begin() + (int64_t(h) * n + r) * pos + first);
            }
        AttentionParams as = ap;
        as.capture_heads = heads.data();
        as.n_capture_heads = ap.n_head;
        as.capture_probs = got.data();
        as.capture_scores = true;
        OwnedTensor o(gpu, n, q_dim);
        gpu.attention(qg, kg, il, pos0, as, o.t);
        size_t differ = 0;
        double max_abs = 0.0;
        for (size_t i = 0; i < n_cap; ++i) {
            differ += std::memcmp(&ref[i], &got[i], sizeof(float)) != 0 ? 1 : 0;
            max_abs = std::max(max_abs, std::isnan(got[i]) ? INFINITY : std::fabs(double(got[i]) - double(ref[i])));
        }
        const bool capped_gpu = ap.softcap > 0.0f && !on_host(gpu);
        const double tol = capped_gpu ? 1e-6 * ap.softcap : 0.0;
        char buf[160];
        std::snprintf(buf, sizeof buf, " scores (%zu captured, masked ones 0) vs cpu: %zu differ in a bit, max_abs %g <= %g",
                      n_cap, differ, max_abs, tol);
        report(capped_gpu ? max_abs <= tol : differ == 0, at + buf);
    }
};

KvCacheConfig cache_config(KvType tk, KvType tv, int32_t n_head_kv, int32_t head_dim, int32_t window) {
    KvCacheConfig kc;
    kc.n_layer = 2;
    kc.n_head_kv = n_head_kv;
    kc.head_dim = head_dim;
    kc.n_ctx = 1024;
    kc.type_k = tk;
    kc.type_v = tv;
    kc.layer_is_swa = {window > 0, window > 0};
    kc.sliding_window = window;
    return kc;
}

void test_store_and_attention(Backend& cpu, Backend& gpu) {
    struct Case {
        int32_t n_head, n_head_kv, head_dim, window;
        bool scale_q;
        float softcap;
    };
    // Heads of 64 (one rotation run per head), 128 and 256 (Gemma 3's: a run of 256, scale_q, a window
    // that releases blocks), a soft cap with scale_q (Gemma 2), heads of 96 (Phi-3's: not a multiple of
    // 64, so no rotation at all) and a group of 16 query heads per kv head (more than the kernel's 8
    // vectors per block: the group is split over two blocks).
    const Case cases[] = {{9, 3, 64, 0, false, 0.0f},   {8, 2, 128, 0, false, 0.0f}, {4, 1, 256, 100, true, 0.0f},
                          {8, 4, 128, 100, true, 2.0f}, {6, 2, 96, 0, false, 0.0f},  {16, 1, 64, 0, false, 0.0f}};
    for (KvType tk : kTypes)
        for (KvType tv : kTypes)
            for (const Case& c : cases) {
                Pair pr(cpu, gpu, cache_config(tk, tv, c.n_head_kv, c.head_dim, c.window));
                const AttentionParams ap = attention_params(c.n_head, c.n_head_kv, c.head_dim, c.window, c.scale_q, c.softcap);
                const std::string name = types_name(tk, tv) + ", heads " + std::to_string(c.n_head) + "/" +
                                         std::to_string(c.n_head_kv) + " dim " + std::to_string(c.head_dim) +
                                         (c.window ? " window " + std::to_string(c.window) : "") +
                                         (c.scale_q ? " scale_q" : "") + (c.softcap > 0 ? " softcap" : "");
                const int32_t il = 1;
                // 331 positions: a window of 100 has released block 0 before the last batch.
                for (int32_t n : {150, 1, 120, 60}) {
                    pr.store(il, n, uint64_t(pr.pos) + 7);
                    pr.attend(il, n, ap, uint64_t(pr.pos), name);
                    pr.settle();
                }
                if (on_host(gpu)) continue;  // --cpu: the same quantizers on the same floats, same bytes
                const int32_t from = c.window ? pr.pos - c.window : 0;
                const int diff = differing_rows(cpu, gpu, pr.kc, pr.kg, il, from, pr.pos);
                report(diff == 0, name + ": stored K/V rows identical byte for byte (" + std::to_string(diff) + " differ)");
            }
}

// The device memory of a cache's blocks is counted in its types' bytes (the memory ledger's KV row).
void test_block_bytes(Backend& gpu_for_types) {
    if (on_host(gpu_for_types)) {
        std::printf("NOTE --cpu: the device memory count of KV blocks needs the CUDA backend; not checked\n");
        return;
    }
    for (KvType tk : kTypes)
        for (KvType tv : kTypes) {
            std::unique_ptr<Backend> fresh = make_cuda_backend();  // no pooled blocks of earlier tests
            KvCache kv(cache_config(tk, tv, 2, 128, 0), *fresh);
            kv.reserve(300);
            const uint64_t blocks = 2 * 3;  // 2 layers x ceil(300 / 128)
            const uint64_t counted = fresh->device_memory().kv_cache;
            const uint64_t expected = blocks * kv.block_bytes();
            report(counted == expected && expected == kv.stats().bytes_reserved,
                   types_name(tk, tv) + ": device KV memory " + std::to_string(counted) + " = blocks x block_bytes " +
                       std::to_string(expected) + " = KvStats reserved " + std::to_string(kv.stats().bytes_reserved));
        }
}

RopeParams shift_rope(bool yarn) {
    RopeParams p;
    p.n_head = 2;
    p.head_dim = 128;
    p.n_rot = yarn ? 64 : 128;  // partial rotation: the unrotated tail is copied
    p.mode = yarn ? RopeMode::NEOX : RopeMode::NORMAL;
    if (yarn) {
        p.freq_scale = 0.25f;
        p.ext_factor = 1.0f;
        p.n_ctx_orig = 128;
    }
    return p;
}

// One shift of 300 positions as context_policy's shift_kv does it on a global layer: keep 10, drop
// 100, move the 190 after them down (the kept ones re-roped by 0 when the magnitude is not 1).
void shift_both(Pair& pr, int32_t il, const RopeParams& p, std::string* error) {
    const int32_t n_keep = 10, n_discard = 100, src = n_keep + n_discard, n = pr.pos;
    try {
        for (Backend* b : {&pr.cpu, &pr.gpu}) {
            KvCache& kv = b == &pr.cpu ? pr.kc : pr.kg;
            if (rope_magnitude(p) != 1.0f) b->kv_shift(kv, il, 0, 0, n_keep, p);
            b->kv_shift(kv, il, src, src - n_discard, n - src, p);
        }
    } catch (const Error& e) {
        *error = e.what();
        return;
    }
    pr.kc.finish_shift(n_keep, n_discard);
    pr.kg.finish_shift(n_keep, n_discard);
    pr.pos -= n_discard;
}

void test_shift(Backend& cpu, Backend& gpu) {
    const int32_t il = 1;
    for (KvType tv : kTypes)
        for (bool yarn : {false, true}) {
            Pair pr(cpu, gpu, cache_config(KvType::F16, tv, 2, 128, 0));
            const RopeParams rp = shift_rope(yarn);
            const std::string name = "shift, " + types_name(KvType::F16, tv) + (yarn ? ", NEOX partial YaRN rope" : ", rope");
            for (int32_t n : {150, 150}) pr.store(il, n, uint64_t(pr.pos) + 3);
            pr.settle();
            const std::vector<uint8_t> v_before = read_bytes(cpu, pr.kc.v_row(il, 110), pr.kc.v_row_bytes());
            const std::vector<uint8_t> k_before = read_bytes(cpu, pr.kc.k_row(il, 110), pr.kc.k_row_bytes());
            std::string error;
            shift_both(pr, il, rp, &error);
            if (!error.empty()) {
                report(false, name + ": " + error);
                continue;
            }
            const bool moved = read_bytes(gpu, pr.kg.v_row(il, 10), pr.kg.v_row_bytes()) == v_before &&
                               read_bytes(gpu, pr.kg.k_row(il, 10), pr.kg.k_row_bytes()) != k_before;
            // --cpu: whether the rows moved carries information; both caches' bytes agreeing does not.
            const int diff = on_host(gpu) ? 0 : differing_rows(cpu, gpu, pr.kc, pr.kg, il, 0, pr.pos);
            report(moved && diff == 0, name + ": row 110 moved to 10 (V as it was, K re-roped: " + (moved ? "yes" : "no") +
                                           ")" + (on_host(gpu) ? "" : ", all 200 rows identical on both (" +
                                                                          std::to_string(diff) + " differ)"));
            const AttentionParams ap = attention_params(8, 2, 128, 0, false, 0.0f);
            pr.store(il, 20, 991);
            pr.attend(il, 20, ap, 992, name + ", then attention");
        }
    for (KvType tk : {KvType::Q8_0, KvType::Q4_0}) {
        Pair pr(cpu, gpu, cache_config(tk, KvType::F16, 2, 128, 0));
        pr.store(il, 300, 5);
        pr.settle();
        // The CPU shifts a quantized K (test_context_policy proves it against llama.cpp); the CUDA kernel
        // takes an f16 K only so far and refuses one with an Error (the session refuses the policy first).
        bool accepted[2] = {true, true};
        for (int i = 0; i < 2; ++i) {
            try {
                (i == 0 ? cpu : gpu).kv_shift(i == 0 ? pr.kc : pr.kg, il, 110, 10, 190, shift_rope(false));
            } catch (const Error&) {
                accepted[i] = false;
            }
        }
        const bool second_should = on_host(gpu);
        report(accepted[0] && accepted[1] == second_should,
               std::string("shift with a ") + kv_type_name(tk) + " K: the CPU " + (accepted[0] ? "shifts" : "refuses") +
                   ", the " + (on_host(gpu) ? "second CPU " : "GPU ") + (accepted[1] ? "shifts" : "refuses") + " it");
    }
}

}  // namespace

int main(int argc, char** argv) {
    const bool cpu_only = argc > 1 && std::string(argv[1]) == "--cpu";
    if (!cpu_only && !cuda_device_present()) {
        std::printf("SKIPPED: no CUDA device\n");
        return kSkip;
    }
    try {
        CpuBackend cpu(0);
        std::unique_ptr<Backend> second = cpu_only ? std::unique_ptr<Backend>(new CpuBackend(0)) : make_cuda_backend();
        std::printf("cpu:  %s\nother: %s\n", cpu.description().c_str(), second->description().c_str());
        test_store_and_attention(cpu, *second);
        test_block_bytes(*second);
        test_shift(cpu, *second);
    } catch (const std::exception& e) {
        report(false, std::string("exception: ") + e.what());
    }
    return finish(cpu_only ? "test_gpu_kv --cpu" : "test_gpu_kv");
}
