// whitebox-cli: the headless front end (argument parsing and wiring; the work is in core/).
#include <cstdio>
#include <cstring>
#include <exception>

#include "cli/cli_options.h"
#include "cli/commands.h"
#include "util/error.h"
#include "wb_version.h"

int main(int argc, char** argv) {
    using namespace wb::cli;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--version") == 0) {
            std::printf("whitebox-cli %s (commit %s)\n", WB_VERSION, WB_GIT_COMMIT);
            return 0;
        }
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            std::fputs(usage_text().c_str(), stdout);
            return 0;
        }
    }
    try {
        const CliOptions o = parse_cli(argc, argv);
#ifdef WB_HAVE_SERVER
        if (!o.remote.empty()) return o.command == "chat" ? cmd_chat_remote(o) : cmd_generate_remote(o);
#else
        if (!o.remote.empty()) throw wb::Error("this whitebox-cli was built without HTTP (WB_SERVER=OFF): no --remote");
#endif
        if (o.command == "info") return cmd_info(o);
        if (o.command == "tokenize") return cmd_tokenize(o);
        if (o.command == "generate") return cmd_generate(o);
        if (o.command == "chat") return cmd_chat(o);
        if (o.command == "template") return cmd_template(o);
        if (o.command == "perplexity") return cmd_perplexity(o);
#ifdef WB_HAVE_SERVER
        if (o.command == "serve") return cmd_serve(o);
#else
        if (o.command == "serve") throw wb::Error("this whitebox-cli was built without the server (WB_SERVER=OFF)");
#endif
        return cmd_bench(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "whitebox-cli: error: %s\n", e.what());
        return 1;
    }
}
