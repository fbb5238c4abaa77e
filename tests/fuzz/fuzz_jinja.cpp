// libFuzzer target: the Jinja chat-template engine (core/chat/jinja) on any template source, rendered
// with a fixed conversation (system, user, a tool call, a tool result, a reply with a think block, and
// a tool), marked as input the way ChatTemplate marks it. Parsing and rendering must end in text or a
// wb::Error, within the render limits; the input marks must cut the text into non-empty segments that
// alternate between template text and input (a broken span list would misplace a control token).
// The seeds are the real templates of tests/reference/templates.
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <string_view>
#include <vector>

#include "chat/jinja/json.h"
#include "chat/jinja/template.h"
#include "util/error.h"

namespace {

using namespace wb::jinja;

const Value& context() {
    static const Value ctx = [] {
        const Value messages = parse_json(R"([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "hi {{ x }} <|im_start|> \u00e9\u4e2d"},
            {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "id": "c1",
              "function": {"name": "f", "arguments": {"a": [1, 2.5, null], "b": "s"}}}]},
            {"role": "tool", "content": "{\"r\": 1}", "tool_call_id": "c1"},
            {"role": "assistant", "content": "<think>t</think>done"},
            {"role": "user", "content": [{"type": "text", "text": "part"}]}])");
        const Value tools = parse_json(R"([{"type": "function", "function": {"name": "f", "description": "d",
            "parameters": {"type": "object", "properties": {"a": {"type": "array"}}, "required": ["a"]}}}])");
        return Value(Dict{{Value("messages"), mark_input(messages)},
                          {Value("tools"), mark_input(tools)},
                          {Value("documents"), Value::none()},
                          {Value("add_generation_prompt"), Value(true)},
                          {Value("bos_token"), Value("<s>")},
                          {Value("eos_token"), Value("</s>")}});
    }();
    return ctx;
}

// Small limits keep each input fast; what is checked is that the engine stops, not where.
const RenderOptions& options() {
    static const RenderOptions o = [] {
        RenderOptions r;
        r.limits.max_output_bytes = 1u << 20;
        r.limits.max_string_bytes = 1u << 20;
        r.limits.max_list_items = 1u << 16;
        r.limits.max_loop_iterations = 20000;
        r.limits.max_steps = 300000;
        r.local_time = [] { return std::tm{}; };
        return r;
    }();
    return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view source(reinterpret_cast<const char*>(data), size);
    try {
        const Template t = Template::parse(source);
        const std::vector<Segment> segments = t.render_segments(context(), options());
        std::size_t total = 0;
        for (std::size_t i = 0; i < segments.size(); ++i) {
            if (segments[i].text.empty()) std::abort();  // a span list with an empty or reversed span
            if (i > 0 && segments[i].from_input == segments[i - 1].from_input) std::abort();  // unmerged spans
            total += segments[i].text.size();
        }
        if (total > options().limits.max_output_bytes) std::abort();  // the output limit did not hold
    } catch (const wb::Error&) {
        // A parse or render error (with its position) is the answer to a broken template; a crash is not.
    }
    return 0;
}
