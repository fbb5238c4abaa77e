#pragma once
// The CLI's commands. Each returns the process exit code; errors are thrown as wb::Error and turned
// into one line on stderr by main().
#include "cli/cli_options.h"
#include "cli/generate_observer.h"
#include "engine/model.h"
#ifdef WB_HAVE_TRACE_FILE
#include "engine/trace_inspection.h"
#endif

namespace wb {
class Session;
}

namespace wb::cli {

int cmd_info(const CliOptions& o);
int cmd_tokenize(const CliOptions& o);
int cmd_generate(const CliOptions& o);
int cmd_chat(const CliOptions& o);
int cmd_template(const CliOptions& o);
int cmd_bench(const CliOptions& o);
int cmd_perplexity(const CliOptions& o);
int cmd_serve(const CliOptions& o);
// generate / chat --remote URL (cmd_remote.cpp, built with WB_SERVER).
int cmd_generate_remote(const CliOptions& o);
int cmd_chat_remote(const CliOptions& o);

// --chat-template / --chat-format as a load option (reads the template file; wb::Error if unreadable).
ChatTemplateChoice chat_template_choice(const CliOptions& o);
// Throws the template's parse error, with what to do about it, when it cannot render.
void require_chat_template(const ChatTemplate& t);

#ifdef WB_HAVE_TRACE_FILE
// generate --export-trace / --replay (cmd_trace.cpp): the trace a generation's observer collected
// (header: everything but the steps), the engine settings it ran under, the file written (temporary
// file renamed into place) and read (wb::Error naming the path), and the replay's verdict printed
// (exit code: 0 the same, 1 differs).
GenerationTrace trace_of(const GenerateObserver& obs, GenerationTrace header);
// Per step, the logit lens (--logit-lens) and head statistics (--head-stats) the observer collected:
// the trace file's optional "lens" and "heads" (docs/trace-format.md), and the --trace-attention rows,
// which are moved out of the observer (it holds none after).
std::vector<TraceStepInspection> inspection_of(GenerateObserver& obs);
TraceEngine engine_of(const CliOptions& o, const Session& s);
void write_trace_file(const std::string& path, const GenerationTrace& trace,
                      const std::vector<TraceStepInspection>& inspection);
// The sampler trace and the file's lens and head records (a damaged one is refused).
InspectedTrace read_trace_file(const std::string& path);
// --replay's defaults from the trace: its backend and engine settings, except where a flag was given
// (a note says where they differ).
void apply_trace_engine(const GenerationTrace& t, CliOptions& o);
// --replay records what the file's recording did: its stage candidates' count, and the logit lens and
// the head statistics (of the layers and heads the file names) when it has them, to compare them.
void replay_capture(const InspectedTrace& file, GenerateCapture& capture);
// False, with the replay's message printed, when the trace names another model file.
bool replay_model_matches(const GenerationTrace& recorded, const std::string& model_sha256);
// The first difference in the tokens and sampler trace, then in the lens and head statistics the file
// recorded (inspection_replay.h), printed; 0 when everything is the same, else 1.
int report_replay(const InspectedTrace& recorded, const GenerationTrace& now,
                  const std::vector<TraceStepInspection>& now_inspection);
#endif

// The whole file; wb::Error naming the path when it cannot be read.
std::string read_text_file(const std::string& path);

// -m, or the default model in the cache (with a hint to fetch it when it is missing).
std::string resolve_model_path(const CliOptions& o);

}  // namespace wb::cli
