// whitebox-cli generate / chat --remote URL: the reply comes from an OpenAI-compatible server
// (core/remote/) instead of the local engine, streamed to the terminal as it arrives.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <iterator>

#include "cli/chat_repl.h"
#include "cli/commands.h"
#include "remote/openai_client.h"
#include "util/error.h"

namespace wb::cli {

namespace {

// The flags that mean something to a remote server: the text, the length and the sampling
// settings it takes by name (OpenAI's, and llama.cpp server's extensions, which WhiteBox's server
// takes too). Every other flag describes the local engine (the model file, backend, cache,
// inspection output) and would be silently ignored, so it is refused.
constexpr const char* kRemoteFlags[] = {
    "--remote", "--remote-model", "--api-key", "-p", "--prompt", "-n", "--n-predict", "--chat", "--system",
    "--temp", "--top-k", "--top-p", "--min-p", "--typical-p", "--repeat-penalty", "--repeat-last-n",
    "--frequency-penalty", "--presence-penalty", "--seed", "--stop", "--grammar", "--grammar-file", "--json-schema",
    "--logit-bias", "-l", "--ignore-eos", "--dry-multiplier", "--dry-base", "--dry-allowed-length",
    "--dry-penalty-last-n", "--dry-sequence-breaker", "--xtc-probability", "--xtc-threshold", "--top-n-sigma", "--top-nsigma", "--mirostat",
    "--mirostat-ent", "--mirostat-lr", "--samplers"};

bool given(const CliOptions& o, const char* flag) {
    return std::find(o.flags.begin(), o.flags.end(), flag) != o.flags.end();
}

bool listed(const std::string& flag, const char* const* begin, const char* const* end) {
    return std::any_of(begin, end, [&](const char* f) { return flag == f; });
}

// Refuses a local-engine flag; warns of a logit bias by text, which cannot be sent.
void check_remote_flags(const CliOptions& o) {
    for (const std::string& f : o.flags) {
        if (!listed(f, std::begin(kRemoteFlags), std::end(kRemoteFlags)))
            throw Error(f + " does not apply to --remote: the server runs its own model and engine (with --remote, "
                            "-n, --chat, --system, --stop, the sampling flags, --grammar, --grammar-file, "
                            "--json-schema, --logit-bias with token ids, DRY, XTC, top-n-sigma, Mirostat, --samplers and --ignore-eos are sent)");
    }
    // A text key is encoded by the local tokenizer, which a remote model need not share.
    if (!o.logit_bias_text.empty())
        std::fprintf(stderr, "warning: --logit-bias text keys are not sent to the remote server (its vocabulary is not "
                             "known here); give token ids\n");
}

remote::RemoteSampling remote_sampling(const CliOptions& o) {
    const SamplingParams& s = o.sampling;
    remote::RemoteSampling r;
    if (given(o, "--temp")) r.temperature = s.temperature;
    if (given(o, "--top-k")) r.top_k = s.top_k;
    if (given(o, "--top-p")) r.top_p = s.top_p;
    if (given(o, "--min-p")) r.min_p = s.min_p;
    if (given(o, "--typical-p")) r.typical_p = s.typical_p;
    if (given(o, "--repeat-penalty")) r.repeat_penalty = s.repeat_penalty;
    if (given(o, "--repeat-last-n")) r.repeat_last_n = s.repeat_last_n;
    if (given(o, "--frequency-penalty")) r.frequency_penalty = s.frequency_penalty;
    if (given(o, "--presence-penalty")) r.presence_penalty = s.presence_penalty;
    if (given(o, "--seed")) r.seed = s.seed;
    r.stop = s.stop;
    r.grammar = s.grammar;  // --grammar, --grammar-file, or --json-schema compiled to GBNF here
    for (const LogitBias& b : s.logit_bias) r.logit_bias.emplace_back(b.token, b.bias);
    if (given(o, "--dry-multiplier")) r.dry_multiplier = s.dry_multiplier;
    if (given(o, "--dry-base")) r.dry_base = s.dry_base;
    if (given(o, "--dry-allowed-length")) r.dry_allowed_length = s.dry_allowed_length;
    if (given(o, "--dry-penalty-last-n")) r.dry_penalty_last_n = s.dry_penalty_last_n;
    if (given(o, "--dry-sequence-breaker")) {
        if (s.dry_sequence_breakers.empty())
            std::fprintf(stderr, "warning: --dry-sequence-breaker none is not sent to the remote server (it refuses an "
                                 "empty list); the server's default breakers apply\n");
        else
            r.dry_sequence_breakers = s.dry_sequence_breakers;
    }
    if (given(o, "--xtc-probability")) r.xtc_probability = s.xtc_probability;
    if (given(o, "--xtc-threshold")) r.xtc_threshold = s.xtc_threshold;
    if (given(o, "--top-n-sigma") || given(o, "--top-nsigma")) r.top_n_sigma = s.top_n_sigma;
    if (given(o, "--mirostat")) r.mirostat = s.mirostat;
    if (given(o, "--mirostat-ent")) r.mirostat_tau = s.mirostat_tau;
    if (given(o, "--mirostat-lr")) r.mirostat_eta = s.mirostat_eta;
    if (s.samplers != default_sampler_sequence()) r.samplers = s.samplers;
    r.ignore_eos = s.ignore_eos;
    return r;
}

remote::OpenAiClient remote_client(const CliOptions& o) {
    check_remote_flags(o);
    remote::RemoteOptions ro;
    ro.base_url = o.remote;
    ro.api_key = o.api_key;
    ro.model = o.remote_model;
    return remote::OpenAiClient(ro);
}

remote::RemoteRequest remote_request(const CliOptions& o) {
    remote::RemoteRequest r;
    r.sampling = remote_sampling(o);
    r.max_tokens = o.n_predict;
    return r;
}

// Streams one reply to stdout; the error, when there is one, after the text that had arrived.
remote::RemoteResult stream_reply(const remote::OpenAiClient& client, const remote::RemoteRequest& r) {
    bool printed = false;
    try {
        return client.complete(r, [&](const remote::StreamDelta& d) {
            std::fwrite(d.text.data(), 1, d.text.size(), stdout);
            std::fflush(stdout);
            printed = printed || !d.text.empty();
        });
    } catch (const Error&) {
        if (printed) std::printf("\n");
        std::fflush(stdout);
        throw;
    }
}

std::string count_or_unknown(const std::optional<int32_t>& n) { return n ? std::to_string(*n) : "?"; }

}  // namespace

int cmd_generate_remote(const CliOptions& o) {
    const remote::OpenAiClient client = remote_client(o);
    remote::RemoteRequest r = remote_request(o);
    if (o.chat) {
        if (o.system_given) r.messages.push_back({"system", o.system});
        r.messages.push_back({"user", o.prompt});
    } else {
        if (o.system_given) throw Error("--system needs --chat (a plain completion has no system turn)");
        r.prompt = o.prompt;
    }
    const remote::RemoteResult res = stream_reply(client, r);
    std::printf("\n");
    std::fprintf(stderr, "[remote %s, model %s] %s prompt tokens, %s generated, finish: %s\n", client.endpoint().c_str(),
                 res.model.empty() ? "?" : res.model.c_str(), count_or_unknown(res.prompt_tokens).c_str(),
                 count_or_unknown(res.completion_tokens).c_str(),
                 res.finish_reason.empty() ? "?" : res.finish_reason.c_str());
    return 0;
}

int cmd_chat_remote(const CliOptions& o) {
    const remote::OpenAiClient client = remote_client(o);
    const remote::RemoteRequest base = remote_request(o);
    std::fprintf(stderr, "WhiteBox chat with %s. /reset starts over, /exit or Ctrl-D quits.\n", client.endpoint().c_str());
    std::vector<ChatMessage> start;
    if (o.system_given) start.push_back({"system", o.system});
    ChatTurns turns;
    turns.reply = [&](const std::vector<ChatMessage>& messages) -> std::optional<std::string> {
        remote::RemoteRequest r = base;
        r.messages = messages;
        try {
            const remote::RemoteResult res = stream_reply(client, r);
            std::printf("\n");
            return res.text;
        } catch (const remote::RemoteError& e) {
            // The conversation goes on without the turn that failed (the server may come back).
            std::fprintf(stderr, "error: %s\n", e.what());
            return std::nullopt;
        }
    };
    run_chat_repl(std::cin, stdout, start, turns);
    return 0;
}

}  // namespace wb::cli
