#include "engine/context_policy.h"

#include <algorithm>

#include "engine/backend.h"
#include "kv/kv_cache.h"
#include "model/forward.h"
#include "model/weights.h"
#include "util/error.h"

namespace wb {

const char* context_policy_name(ContextPolicy p) {
    switch (p) {
        case ContextPolicy::STOP: return "stop";
        case ContextPolicy::SHIFT: return "shift";
        case ContextPolicy::TRIM: return "trim";
    }
    return "?";
}

ContextPolicy parse_context_policy(const std::string& s) {
    if (s == "stop") return ContextPolicy::STOP;
    if (s == "shift") return ContextPolicy::SHIFT;
    if (s == "trim") return ContextPolicy::TRIM;
    throw Error("unknown context policy '" + s + "' (stop, shift or trim)");
}

void check_context_policy(ContextPolicy p, KvType type_k, int32_t n_rot, int32_t head_dim, const std::string& backend,
                          bool backend_shifts_k) {
    if (p != ContextPolicy::SHIFT) return;
    // The rope's refusal first: it holds on every backend, so switching backends would not help.
    if (kv_type_is_quantized(type_k) && n_rot != head_dim)
        throw Error(std::string("a context shift re-rotates ") + kv_type_name(type_k) +
                    " keys only when the rope covers the whole head (this model ropes " + std::to_string(n_rot) +
                    " of " + std::to_string(head_dim) + " dimensions): choose f16 keys, or trim or stop");
    if (!backend_shifts_k)
        throw Error("the " + backend + " backend cannot shift a KV cache with " + kv_type_name(type_k) +
                    " keys (a context shift re-ropes the stored keys): choose f16 keys or the CPU backend, or trim or stop");
}

void check_context_policy(ContextPolicy p, KvType type_k, int32_t n_rot, int32_t head_dim, const Backend& backend) {
    check_context_policy(p, type_k, n_rot, head_dim, backend.name(), backend.can_shift_kv(type_k));
}

ContextCut trim_cut(const std::vector<int32_t>& whole, const std::vector<int32_t>& trimmed) {
    ContextCut cut;
    cut.how = ContextPolicy::TRIM;
    size_t common = 0;
    while (common < whole.size() && common < trimmed.size() && whole[common] == trimmed[common]) ++common;
    cut.position = int32_t(common);
    cut.dropped = std::max(0, int32_t(whole.size()) - int32_t(trimmed.size()));
    return cut;
}

int32_t shift_keep(int32_t n_keep, int32_t n_ctx) { return std::clamp(n_keep, 0, std::max(0, n_ctx - 4)); }

int32_t shift_discard(int32_t n_past, int32_t n_keep) { return std::max(0, (n_past - n_keep) / 2); }

namespace {

// The rope a layer's keys were turned with (arch_llama.cpp, arch_gemma.cpp): Gemma's local layers
// have their own theta and scale; every other layer the model's.
RopeParams key_rope(const ModelConfig& c, const ModelWeights& w, int32_t n_ctx, int32_t il) {
    const bool gemma = c.arch == "gemma2" || c.arch == "gemma3";
    const bool local = gemma && c.layer_is_swa[size_t(il)];
    return layer_rope(c, w, n_ctx, c.n_head_kv, local ? c.rope_base_swa : c.rope_base,
                      local ? c.rope_freq_scale_swa : c.rope_freq_scale);
}

}  // namespace

bool shift_kv(Backend& be, const ModelConfig& c, const ModelWeights& w, KvCache& kv, int32_t n_keep,
              int32_t n_discard) {
    const int32_t n = kv.n_tokens();
    if (n_keep < 0 || n_discard <= 0 || n_keep + n_discard > n) throw Error("context shift: nothing to drop");
    const int32_t first_moved = n_keep + n_discard, n_after = n - n_discard;
    const int32_t window = kv.config().sliding_window;
    // A sliding-window layer's next query (at n_after) sees positions from n_after - window + 1: the
    // moved rows from there on, and kept rows too if the window reaches back past n_keep.
    for (int32_t il = 0; il < c.n_layer; ++il)
        if (kv.config().layer_is_swa[size_t(il)] && window > 0 &&
            !kv.has_rows(il, std::max(0, n_after - window + 1), n_keep))
            return false;
    for (int32_t il = 0; il < c.n_layer; ++il) {
        const RopeParams p = key_rope(c, w, kv.config().n_ctx, il);
        const bool local = kv.config().layer_is_swa[size_t(il)] && window > 0;
        const int32_t src = local ? std::max(first_moved, n - window + 1) : first_moved;
        const int32_t dst = src - n_discard;
        kv.ensure_rows(il, dst, n_after);
        kv.set_gap(il, n_keep, dst);  // a local layer's rows no window will see again (none elsewhere)
        // llama.cpp ropes every cell, the kept ones by 0: the identity for f16 keys unless the magnitude is
        // not 1, while a quantized K goes through f32 and back (Hadamard rotations, rope, quantization),
        // which can change the kept rows too (measured: it changes none at head_dim 64 or 256). On a local
        // layer only the kept rows the next window sees (checked above): those before it may be released
        // already (a cache that ran under Stop past the window before Shift was chosen) and no query will
        // read them again.
        const bool requantized = kv_type_is_quantized(kv.config().type_k);
        const int32_t k0 = local ? std::clamp(n_after - window + 1, 0, n_keep) : 0;
        if ((requantized || rope_magnitude(p) != 1.0f) && n_keep > k0) be.kv_shift(kv, il, k0, k0, n_keep - k0, p);
        be.kv_shift(kv, il, src, dst, n - src, p);
    }
    kv.finish_shift(n_keep, n_discard);
    return true;
}

std::vector<ChatMessage> trim_turns(const std::vector<ChatMessage>& messages,
                                    const std::function<int32_t(const std::vector<ChatMessage>&)>& count_tokens,
                                    int32_t budget, int32_t* n_dropped) {
    size_t head = 0;  // leading system messages
    while (head < messages.size() && messages[head].role == "system") ++head;
    size_t last_user = messages.size();
    for (size_t i = messages.size(); i-- > head;)
        if (messages[i].role == "user") {
            last_user = i;
            break;
        }
    std::vector<ChatMessage> out = messages;
    size_t cut = head;  // messages [head, cut) dropped
    while (count_tokens(out) > budget && cut < last_user) {
        // One turn: the user message at cut and everything up to the next user message.
        size_t next = cut + 1;
        while (next < last_user && messages[next].role != "user") ++next;
        cut = next;
        out.assign(messages.begin(), messages.begin() + long(head));
        out.insert(out.end(), messages.begin() + long(cut), messages.end());
    }
    if (n_dropped) *n_dropped = int32_t(cut - head);
    return out;
}

}  // namespace wb
