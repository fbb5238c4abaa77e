#pragma once
// A Jinja chat template, parsed once and rendered as Hugging Face's apply_chat_template renders it:
// Jinja2 3.1's ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and the loop controls,
// no autoescape, the globals raise_exception / strftime_now / namespace / range / dict, `tojson` as
// transformers overrides it (non-ASCII kept, insertion order) and `{% generation %}` blocks.
//
// Templates come from downloaded files, so rendering is bounded: recursion, loop iterations, output and
// the size of any string or list a template builds are limited, and a template can reach only the
// values passed to it (no Python attributes, and lists and dicts cannot be changed).
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat/jinja/errors.h"
#include "chat/jinja/value.h"

namespace wb::jinja {

struct RenderLimits {
    std::size_t max_output_bytes = 16u << 20;        // the rendered text, and any one captured block
    std::size_t max_string_bytes = 16u << 20;        // any one string an expression builds
    std::size_t max_list_items = 1u << 20;           // any one list built (range(), `*`, filters)
    std::uint64_t max_loop_iterations = 1'000'000;   // all loops of one render together
    int max_call_depth = 100;                        // macros calling macros (and caller())
    std::uint64_t max_steps = 50'000'000;            // evaluation steps of one render: bounds its time
};

struct RenderOptions {
    RenderLimits limits;
    // strftime_now's clock: local time now when empty. Tests pass a fixed time.
    std::function<std::tm()> local_time;
};

struct Stmt;
class TaintedText;

// A piece of rendered text: from_input when its bytes came from the caller's input (strings of the
// context passed through mark_input), not from the template's own text. See taint.h for the rules.
struct Segment {
    std::string text;
    bool from_input = false;
};

// Every string in v (dict keys included) marked as the caller's input, containers rebuilt: what
// render() is given as messages and tools, so that their text can be told from the template's.
Value mark_input(const Value& v);

class Template {
public:
    // Throws wb::Error "line L, column C: ..." when the source is not a valid template (including an
    // unknown filter or test, as Jinja2 reports them when it compiles a template).
    static Template parse(std::string_view source);

    // `context` is a dict (Value(Dict)) of the template's variables. Throws TemplateRaised (a
    // wb::Error) with the template's message when it calls raise_exception, and wb::Error
    // "line L, column C: ..." on any other error (undefined attribute of an undefined value, a type
    // error, a limit reached).
    std::string render(const Value& context, const RenderOptions& options = {}) const;
    // The same text cut where input marks begin and end (adjacent segments differ in from_input).
    std::vector<Segment> render_segments(const Value& context, const RenderOptions& options = {}) const;

    // Copies share the parsed body, which is never changed after parse.
    Template(const Template&);
    Template& operator=(const Template&);
    Template(Template&&) noexcept;
    Template& operator=(Template&&) noexcept;
    ~Template();

private:
    Template();
    TaintedText render_text(const Value& context, const RenderOptions& options) const;
    std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
};

}  // namespace wb::jinja
