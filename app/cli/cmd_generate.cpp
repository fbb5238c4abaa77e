// whitebox-cli generate / chat: run the model on a prompt or an interactive conversation.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>

#include "cli/chat_repl.h"
#include "cli/commands.h"
#include "cli/generate_observer.h"
#include "cli/cli_json.h"
#include "engine/backend.h"
#include "engine/chat_prompt.h"
#include "engine/model.h"
#include "engine/model_compare.h"
#include "engine/session.h"
#include "util/error.h"
#include "util/sha256.h"

namespace wb::cli {

namespace {

struct Runtime {
    std::unique_ptr<Model> model;
    BackendChoice backend;
    std::unique_ptr<Session> session;
};

Runtime open_runtime(const CliOptions& o) {
    Runtime rt;
    const bool chat = o.chat || o.command == "chat";
    rt.model = Model::load(resolve_model_path(o), chat_template_choice(o));
    if (chat) require_chat_template(rt.model->chat_template());
    rt.backend = create_backend(parse_backend_kind(o.backend), o.threads, o.cache_type_k, o.cache_type_v);
    if (!rt.backend.note.empty()) std::fprintf(stderr, "note: %s\n", rt.backend.note.c_str());
    if (!rt.model->chat_template().warning().empty() && chat)
        std::fprintf(stderr, "warning: %s\n", rt.model->chat_template().warning().c_str());
    SessionOptions so;
    so.n_ctx = o.ctx;
    so.kv_type_k = o.cache_type_k;
    so.kv_type_v = o.cache_type_v;
    rt.session = std::make_unique<Session>(*rt.model, *rt.backend.backend, so);
    return rt;
}

SamplingParams sampling_for(const CliOptions& o, const Model& m, bool chat) {
    SamplingParams p = o.sampling;
    p.max_tokens = o.n_predict;
    resolve_logit_bias(o, m.tokenizer(), p);
    // The template's end-of-turn marker ends a reply even if a file forgot to type it as a control token.
    if (chat)
        for (const auto& s : m.chat_template().end_of_turn_texts()) p.stop.push_back(s);
    return p;
}

std::vector<int32_t> encode_chat(const Model& m, const std::vector<ChatMessage>& messages) {
    return build_chat_prompt(m, messages, true).ids;
}

Json lens_json(const std::vector<LensLayer>& lens) {
    Json out = Json::array();
    for (const LensLayer& l : lens) {
        Json top = Json::array();
        for (size_t i = 0; i < l.top_ids.size(); ++i) top.push_back(Json::array({l.top_ids[i], json_number(l.top_p[i])}));
        out.push_back({{"layer", l.layer}, {"top", std::move(top)}, {"p_drawn", json_number(l.p_drawn)},
                       {"entropy", json_number(l.entropy)}});
    }
    return out;
}

Json heads_json(const std::vector<HeadStats>& heads) {
    Json out = Json::array();
    for (const HeadStats& h : heads)
        out.push_back({{"layer", h.layer}, {"head", h.head}, {"kv_head", h.kv_head}, {"entropy", json_number(h.entropy)},
                       {"sink", json_number(h.sink)}, {"prev", json_number(h.prev)}, {"distance", json_number(h.distance)},
                       {"in_window", json_number(h.in_window)}, {"window", h.window}});
    return out;
}

Json steps_json(const GenerateObserver& obs, bool with_candidates, bool with_lens) {
    const std::vector<TokenEvent>& steps = obs.steps();
    Json out = Json::array();
    for (size_t si = 0; si < steps.size(); ++si) {
        const TokenEvent& e = steps[si];
        Json step = {{"token", e.id}, {"piece", e.token_piece}, {"p", json_number(e.p)}};
        if (with_candidates) {
            step["entropy"] = json_number(e.entropy);
            Json candidates = Json::array();
            for (const TokenCandidate& c : e.candidates)
                candidates.push_back({{"id", c.id}, {"piece", c.piece}, {"p_raw", json_number(c.p_raw)},
                                      {"p_final", json_number(c.p_final)}});
            step["candidates"] = std::move(candidates);
        }
        if (with_lens) step["lens"] = lens_json(e.lens);
        if (si < obs.step_heads().size()) step["heads"] = heads_json(obs.step_heads()[si]);
        out.push_back(std::move(step));
    }
    return out;
}

// --compare-model: the reply through the second file on the same backend, teacher-forced. Prompt and
// reply are evaluated as one context, so a reply that went on after context shifts is longer than the
// session that made it: both sides then run in sessions sized to hold it (the model's training
// context permitting; beyond it the Session says so).
ModelComparison compare_reply(const CliOptions& o, Runtime& rt, const std::vector<int32_t>& prompt,
                              const std::vector<int32_t>& reply) {
    const std::unique_ptr<Model> other = Model::load(o.compare_model);
    SessionOptions so;
    so.n_ctx = std::max<int32_t>(rt.session->n_ctx(), int32_t(prompt.size() + reply.size()));
    so.kv_type_k = o.cache_type_k;
    so.kv_type_v = o.cache_type_v;
    std::unique_ptr<Session> second, first;
    try {
        second = std::make_unique<Session>(*other, *rt.backend.backend, so);
        if (so.n_ctx > rt.session->n_ctx()) first = std::make_unique<Session>(*rt.model, *rt.backend.backend, so);
    } catch (const Error& e) {
        throw Error(std::string("compare: ") + e.what());
    }
    return compare_models(first ? *first : *rt.session, *second, prompt, reply);
}

Json compare_json(const std::string& path, const ModelComparison& c) {
    Json tokens = Json::array();
    for (const TokenComparison& t : c.tokens)
        tokens.push_back({{"token", t.token}, {"kl", json_number(t.kl)}, {"top", t.top_a}, {"top_other", t.top_b}});
    return {{"model", path}, {"kl_mean", json_number(c.kl_mean)}, {"kl_max", json_number(c.kl_max)},
            {"flips", c.flips}, {"tokens", std::move(tokens)}};
}

void print_compare(const std::string& path, const ModelComparison& c) {
    std::fprintf(stderr, "compare with %s: KL mean %.6f, max %.6f nats; top-1 flips %d of %zu tokens\n", path.c_str(),
                 c.kl_mean, c.kl_max, c.flips, c.tokens.size());
    for (size_t i = 0; i < c.tokens.size(); ++i)
        std::fprintf(stderr, "  %zu token %d: KL %.6f%s\n", i, c.tokens[i].token, c.tokens[i].kl,
                     c.tokens[i].flip() ? (" flip " + std::to_string(c.tokens[i].top_a) + " -> " +
                                           std::to_string(c.tokens[i].top_b)).c_str() : "");
}

void print_json_result(const GenerateResult& r, const std::vector<int32_t>& prompt, const std::string& backend,
                       const GenerateObserver& obs, bool with_candidates, bool with_lens, const CliOptions& o,
                       const ModelComparison& cmp) {
    Json j = {{"text", r.text}, {"tokens", r.tokens}, {"steps", steps_json(obs, with_candidates, with_lens)}};
    if (!o.compare_model.empty()) j["compare"] = compare_json(o.compare_model, cmp);
    j["prompt_tokens"] = prompt.size();
    j["prompt_token_ids"] = prompt;
    j["stop_reason"] = stop_reason_name(r.reason);
    if (r.reason == StopReason::ERROR) j["error"] = r.error;
    j["seed"] = r.seed;
    j["backend"] = backend;
    const Timings& t = r.timings;
    j["timings"] = {{"prefill_ms", json_number(t.prefill_ms)}, {"prefill_tokens", t.n_prefill},
                    {"prefill_tps", json_number(t.prefill_tps())}, {"ttft_ms", json_number(t.ttft_ms)},
                    {"decode_ms", json_number(t.decode_ms)}, {"decode_tokens", t.n_decode},
                    {"decode_tps", json_number(t.decode_tps())}};
    std::printf("%s\n", json_dump(j).c_str());
}

#ifdef WB_HAVE_TRACE_FILE
// What a trace file holds besides the steps (the model file hashed here unless a replay already did).
GenerationTrace trace_header(const CliOptions& o, const Runtime& rt, const std::string& model_sha256,
                             const SamplingParams& sampling, uint64_t seed_in_use, const std::vector<int32_t>& prompt,
                             const GenerateObserver& obs) {
    GenerationTrace t;
    t.model_sha256 = model_sha256.empty() ? sha256_file(resolve_model_path(o)) : model_sha256;
    t.backend = rt.backend.backend->name();
    t.engine = engine_of(o, *rt.session);
    t.params = sampling;
    t.trace_candidates = obs.capture().trace_top();  // what the session recorded
    t.seed_in_use = seed_in_use;
    t.prompt = prompt;
    return t;
}
#endif

}  // namespace

ChatTemplateChoice chat_template_choice(const CliOptions& o) {
    ChatTemplateChoice c;
    if (!o.chat_format.empty()) {
        c.builtin = builtin_chat_format(o.chat_format);
        if (!c.builtin)
            throw Error("--chat-format expects one of " + builtin_chat_format_names() + ", got '" + o.chat_format + "'");
    }
    if (!o.chat_template_file.empty()) {
        c.jinja_source = read_text_file(o.chat_template_file);
        if (c.jinja_source.empty()) throw Error(o.chat_template_file + ": the chat template file is empty");
        c.jinja_origin = o.chat_template_file;
    }
    return c;
}

void require_chat_template(const ChatTemplate& t) {
    if (!t.error().empty())
        throw Error(t.error() + " (pass --chat-template FILE with a working template, or --chat-format " +
                    builtin_chat_format_names() + ")");
}

// --context-policy and --keep on the session; a shift keeps the template's prefix with the system
// prompt by default in a chat (chat_keep_prefix), else the BOS. Trim is the chat's (cmd_chat).
void apply_context_policy(const CliOptions& o, const Model& m, Session& s, const std::vector<ChatMessage>* chat) {
    int32_t keep = m.tokenizer().add_bos() ? 1 : 0;
    if (o.keep) keep = *o.keep;
    else if (chat) keep = chat_keep_prefix(m, *chat);
    s.set_context_policy({o.context_policy, keep});
}

// A full context under trim: the fewest old turns dropped so that the prompt and a reply fit again,
// down to half the context so that the next turns do not trim (and recompute) again at once.
std::vector<ChatMessage> trimmed_for(const CliOptions& o, const Model& m, const Session& s,
                                     const std::vector<ChatMessage>& messages, size_t* first_kept) {
    if (o.context_policy != ContextPolicy::TRIM) return messages;
    std::vector<ChatMessage> sent(messages.begin(), messages.begin() + (o.system_given ? 1 : 0));
    sent.insert(sent.end(), messages.begin() + long(*first_kept), messages.end());
    const auto count = [&](const std::vector<ChatMessage>& x) { return int32_t(encode_chat(m, x).size()); };
    const int32_t reply = std::min(o.n_predict, s.n_ctx() / 4);
    if (count(sent) + reply < s.n_ctx()) return sent;
    int32_t dropped = 0;
    sent = trim_turns(sent, count, s.n_ctx() / 2, &dropped);
    *first_kept += size_t(dropped);
    std::fprintf(stderr, "(context full: %d old messages no longer sent to the model)\n", dropped);
    return sent;
}

int cmd_generate(const CliOptions& given) {
    CliOptions o = given;  // a replay takes its engine settings from the trace
#ifdef WB_HAVE_TRACE_FILE
    InspectedTrace file;
    const GenerationTrace& recorded = file.trace;
    std::string model_sha256;
    if (!o.replay.empty()) {
        // Before anything runs: on another model file the trace's token ids may not even exist.
        file = read_trace_file(o.replay);
        model_sha256 = sha256_file(resolve_model_path(o));
        if (!replay_model_matches(recorded, model_sha256)) return 1;
        apply_trace_engine(recorded, o);
    }
#endif
    Runtime rt = open_runtime(o);
    const Model& m = *rt.model;
    std::vector<int32_t> prompt;
    SamplingParams sampling = sampling_for(o, m, o.chat);
#ifdef WB_HAVE_TRACE_FILE
    if (!o.replay.empty()) {
        // The file's prompt ids and settings as they were, with the seed the sampler actually drew with.
        prompt = recorded.prompt;
        sampling = recorded.params;
        sampling.seed = recorded.seed_in_use;
        apply_context_policy(o, m, *rt.session, nullptr);
    } else
#endif
    if (o.chat) {
        std::vector<ChatMessage> msgs;
        if (o.system_given) msgs.push_back({"system", o.system});
        msgs.push_back({"user", o.prompt});
        prompt = encode_chat(m, msgs);
        apply_context_policy(o, m, *rt.session, &msgs);
    } else {
        prompt = m.tokenizer().encode(o.prompt, m.tokenizer().add_bos(), true);
        apply_context_policy(o, m, *rt.session, nullptr);
    }
    const LiveSamplingParams params(sampling);
    const bool trace = !o.export_trace.empty() || !o.replay.empty();
    GenerateCapture capture{!o.json && o.replay.empty(), o.top_candidates, !o.dump_attention.empty(), o.layers, o.heads,
                            o.logit_lens, o.head_stats, head_stats_model_window(m.config()), trace, 0,
                            o.trace_attention};
#ifdef WB_HAVE_TRACE_FILE
    if (!o.replay.empty()) replay_capture(file, capture);
#endif
    GenerateObserver obs(capture);
    const GenerateResult r = rt.session->generate(prompt, params, &obs);
    // Read now: --compare-model resets the session, and its stats with it.
    const int32_t shift_keep = rt.session->kv_stats().shift_keep;
    if (!o.dump_attention.empty() && r.reason != StopReason::ERROR)
        obs.write_attention(o.dump_attention, rt.session->context_tokens(), m.tokenizer());
#ifdef WB_HAVE_TRACE_FILE
    if (trace && r.reason != StopReason::ERROR) {
        const GenerationTrace now = trace_of(obs, trace_header(o, rt, model_sha256, sampling, r.seed, prompt, obs));
        // Built once: it takes the observer's attention rows (megabytes per token) rather than copy them.
        const std::vector<TraceStepInspection> inspection = inspection_of(obs);
        if (!o.export_trace.empty()) write_trace_file(o.export_trace, now, inspection);
        if (!o.replay.empty()) return report_replay(file, now, inspection);
    }
#endif
    ModelComparison cmp;
    if (!o.compare_model.empty() && r.reason != StopReason::ERROR) {
        if (!o.json) std::printf("\n");  // the streamed reply ends before the comparison's lines
        cmp = compare_reply(o, rt, prompt, r.tokens);
        if (!o.json) print_compare(o.compare_model, cmp);
    }
    if (o.json) {
        print_json_result(r, prompt, rt.backend.backend->name(), obs, o.top_candidates > 0, o.logit_lens > 0, o, cmp);
        if (r.reason != StopReason::ERROR) return 0;
    }
    if (!o.json) std::printf("\n");
    if (r.reason == StopReason::ERROR) {
        std::fprintf(stderr, "whitebox-cli: error: %s\n", r.error.c_str());
        return 1;
    }
    std::fprintf(stderr, "[%s] %zu prompt tokens, %d generated; prefill %.1f tok/s, decode %.1f tok/s, stop: %s\n",
                 rt.backend.backend->description().c_str(), prompt.size(), int(r.tokens.size()), r.timings.prefill_tps(),
                 r.timings.decode_tps(), stop_reason_name(r.reason));
    if (r.context_shifts > 0)
        std::fprintf(stderr, "context shifts: %d, %d tokens dropped after the first %d\n", r.context_shifts,
                     r.tokens_dropped, shift_keep);
    return 0;
}

int cmd_chat(const CliOptions& o) {
    Runtime rt = open_runtime(o);
    const Model& m = *rt.model;
    std::fprintf(stderr, "WhiteBox chat with %s on %s. /reset starts over, /exit or Ctrl-D quits.\n",
                 m.display_name().c_str(), rt.backend.backend->description().c_str());
    std::vector<ChatMessage> start;
    if (o.system_given) start.push_back({"system", o.system});
    apply_context_policy(o, m, *rt.session, &start);
    size_t first_kept = start.size();  // trim: messages before this (after the system prompt) are not sent
    const LiveSamplingParams params(sampling_for(o, m, true));
    GenerateObserver printer({true, 0, false, {}, {}});
    ChatTurns turns;
    turns.on_reset = [&] {
        first_kept = start.size();
        rt.session->reset();
    };
    turns.reply = [&](const std::vector<ChatMessage>& messages) -> std::optional<std::string> {
        const GenerateResult r = rt.session->generate(encode_chat(m, trimmed_for(o, m, *rt.session, messages, &first_kept)),
                                                      params, &printer);
        if (r.context_shifts > 0)
            std::fprintf(stderr, "(context shift: %d tokens dropped after the first %d)\n", r.tokens_dropped,
                         rt.session->kv_stats().shift_keep);
        std::printf("\n");
        if (r.reason == StopReason::ERROR) {
            std::fprintf(stderr, "error: %s\n", r.error.c_str());
            return std::nullopt;
        }
        if (r.reason == StopReason::CONTEXT_FULL)
            std::fprintf(stderr, "(the context is full: /reset to start over, or --context-policy shift or trim)\n");
        return r.text;
    };
    run_chat_repl(std::cin, stdout, start, turns);
    return 0;
}

}  // namespace wb::cli
