#pragma once
// The CLI's commands. Each returns the process exit code; errors are thrown as wb::Error and turned
// into one line on stderr by main().
#include "cli/cli_options.h"

namespace wb::cli {

int cmd_info(const CliOptions& o);
int cmd_tokenize(const CliOptions& o);
int cmd_generate(const CliOptions& o);
int cmd_chat(const CliOptions& o);
int cmd_bench(const CliOptions& o);
int cmd_perplexity(const CliOptions& o);

// -m, or the default model in the cache (with a hint to fetch it when it is missing).
std::string resolve_model_path(const CliOptions& o);

}  // namespace wb::cli
