// whitebox-cli serve: the loaded model behind an OpenAI-compatible HTTP API (core/server/).
#include <csignal>
#include <cstdio>
#include <pthread.h>
#include <thread>

#include "cli/commands.h"
#include "server/http_server.h"
#include "util/error.h"

namespace wb::cli {

namespace {

// The file name without its folder and .gguf: what /v1/models lists and requests name.
std::string model_id_of(const std::string& path) {
    std::string name = path.substr(path.find_last_of('/') + 1);
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".gguf") == 0) name.resize(name.size() - 5);
    return name;
}

}  // namespace

int cmd_serve(const CliOptions& o) {
    // SIGINT / SIGTERM end the server through sigwait on a thread of ours (a handler may not call
    // into the server); every thread started below inherits the mask. A client that hangs up must
    // not kill the process with SIGPIPE.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);

    if (!server::is_loopback_host(o.host) && o.api_key.empty())
        throw Error("refusing to serve on " + o.host + " without --api-key (anyone who can reach it could use the "
                    "model); bind 127.0.0.1, or give a key that clients send as 'Authorization: Bearer KEY'");
    // The server's sessions are sized for an f16 cache (session_kv_bytes) and every request starts
    // from an empty context, so these common flags would be accepted and silently ignored: refuse them.
    if (o.cache_type_k != KvType::F16 || o.cache_type_v != KvType::F16)
        throw Error("serve does not support --cache-type-k/--cache-type-v yet (its sessions use an f16 cache)");
    if (o.context_policy != ContextPolicy::STOP || o.keep)
        throw Error("serve does not support --context-policy/--keep (a request over the context gets a 400)");
    const std::string path = resolve_model_path(o);
    const auto model = Model::load(path, chat_template_choice(o));
    if (!model->chat_template().error().empty())
        std::fprintf(stderr, "warning: %s: chat completions will fail (pass --chat-template or --chat-format)\n",
                     model->chat_template().error().c_str());
    else if (!model->chat_template().warning().empty())
        std::fprintf(stderr, "warning: %s\n", model->chat_template().warning().c_str());

    server::ServerOptions so;
    so.host = o.host;
    so.port = o.port;
    so.api_key = o.api_key;
    so.max_body = size_t(o.max_body_kib) * 1024;
    so.request_timeout_ms = o.request_timeout_s * 1000;
    so.model_id = model_id_of(path);
    so.defaults = o.sampling;
    resolve_logit_bias(o, model->tokenizer(), so.defaults);
    so.queue.parallel = o.parallel;
    so.queue.capacity = o.queue;
    so.queue.session.n_ctx = o.ctx;
    so.queue.backend = parse_backend_kind(o.backend);
    so.queue.threads = o.threads;
    server::HttpServer server(*model, so);
    for (const std::string& note : server.queue().backend_notes()) std::fprintf(stderr, "note: %s\n", note.c_str());
    const int port = server.bind();
    std::fprintf(stderr, "whitebox-cli: serving '%s' at http://%s:%d/v1 on %s (%d session%s, context %d, queue %d)\n",
                 so.model_id.c_str(), o.host.c_str(), port, server.queue().backend_description().c_str(),
                 server.queue().sessions(), server.queue().sessions() == 1 ? "" : "s", server.queue().n_ctx(), o.queue);
    std::fflush(stderr);

    std::thread waiter([&] {
        int sig = 0;
        sigwait(&stop_signals, &sig);
        server.stop();
    });
    server.run();
    // run() also returns when listening fails; wake the waiter so it can be joined.
    pthread_kill(waiter.native_handle(), SIGTERM);
    waiter.join();
    std::fprintf(stderr, "whitebox-cli: server stopped\n");
    return 0;
}

}  // namespace wb::cli
