#pragma once
// What happens when a conversation fills the context (llama.cpp's context shift, a chat's trimming of
// old turns, or a plain stop), and the two mechanisms below that carry the first two out.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "kv/kv_types.h"
#include "model/model_config.h"

namespace wb {

class Backend;
class KvCache;
struct ModelWeights;

enum class ContextPolicy {
    STOP,   // the reply ends with context_full; the caller decides (the app offers the other two)
    SHIFT,  // keep the first n_keep tokens, drop the oldest half of the rest, continue without recomputing
    TRIM,   // the chat drops whole old turns (never the system prompt) and recomputes what it keeps
};

const char* context_policy_name(ContextPolicy p);  // "stop", "shift", "trim"
// wb::Error "unknown context policy 'x' (stop, shift or trim)" otherwise.
ContextPolicy parse_context_policy(const std::string& s);

// wb::Error when a cache with keys of type_k cannot carry the policy out for a model whose rope turns
// n_rot of the head_dim dimensions of a head: a shift re-rotates the stored keys, a quantized K through
// an f32 copy of whole heads (as llama.cpp's K-shift graph, which cannot write back a partial head into
// the blocks), so a quantized K with a partial rope cannot shift. Session::set_context_policy checks it;
// the app asks it before it offers Shift. backend names the backend the cache lives on and
// backend_shifts_k is its Backend::can_shift_kv(type_k): a backend that cannot re-rope these keys
// (CUDA with a quantized K so far) is refused up front too, naming the backend and the type.
void check_context_policy(ContextPolicy p, KvType type_k, int32_t n_rot, int32_t head_dim, const std::string& backend,
                          bool backend_shifts_k);
// The same for a cache on `backend` (its name() and can_shift_kv(type_k)).
void check_context_policy(ContextPolicy p, KvType type_k, int32_t n_rot, int32_t head_dim, const Backend& backend);

// One cut of a full context, as the engine carried it out: the tokens [position, position + dropped)
// of the conversation are no longer in the context, and what followed them now starts at `position`.
// A shift keeps the first `position` tokens (n_keep) and drops the oldest half of the rest without
// recomputing; a trim drops whole old turns after the system prompt and recomputes what follows.
struct ContextCut {
    ContextPolicy how = ContextPolicy::STOP;  // SHIFT or TRIM
    int32_t position = 0;
    int32_t dropped = 0;
};

// The cut between a chat's whole prompt and the trimmed one (trim_turns' messages encoded): they
// agree up to `position` (the system prompt), and the trimmed one is `dropped` tokens shorter.
ContextCut trim_cut(const std::vector<int32_t>& whole, const std::vector<int32_t>& trimmed);

// How a session handles a full context. Only SHIFT changes what the session does (it shifts instead of
// ending the reply); TRIM is carried out by the chat before it calls generate() (trim_turns), so the
// session itself stops as under STOP if a single reply still fills the context.
struct ContextPolicyOptions {
    ContextPolicy policy = ContextPolicy::STOP;
    int32_t n_keep = 0;  // tokens a shift never drops; -1 = the whole prompt of the generate() call
};

// The shift of llama.cpp (examples/main, tools/server): with n_past tokens in the cache, n_keep
// clamped to [0, n_ctx - 4], drop floor((n_past - n_keep) / 2) tokens after the kept ones.
int32_t shift_keep(int32_t n_keep, int32_t n_ctx);
int32_t shift_discard(int32_t n_past, int32_t n_keep);

// Drops positions [n_keep, n_keep + n_discard) of the cache and moves the later ones down by
// n_discard, turning their keys back by n_discard positions of each layer's rope on the backend
// (Backend::kv_shift, as llama.cpp's K-shift graph does), so that decoding continues without
// recomputing anything. On sliding-window layers only the rows the next window can see are moved.
// Returns false, with the cache unchanged, when a sliding-window layer no longer holds kept rows that
// the window after the shift would see (the caller recomputes instead).
bool shift_kv(Backend& backend, const ModelConfig& config, const ModelWeights& weights, KvCache& kv, int32_t n_keep,
              int32_t n_discard);

// The trim of a chat: the messages minus the fewest whole old turns (from the first message after the
// leading system messages: a user message and the replies up to the next user message) such that
// count_tokens(result) <= budget. The system messages and the last user turn are never dropped; when
// even that does not fit, that is what is returned (the caller reports the context as too small).
// *n_dropped: messages removed.
std::vector<ChatMessage> trim_turns(const std::vector<ChatMessage>& messages,
                                    const std::function<int32_t(const std::vector<ChatMessage>&)>& count_tokens,
                                    int32_t budget, int32_t* n_dropped = nullptr);

}  // namespace wb
