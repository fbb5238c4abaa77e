// Reading remote streams without a network (core/remote/sse_parser, openai_format): hand-built
// event streams give the same events however their bytes are cut into chunks, an event over the
// size limit is an error, and chunks of both API shapes give their text, logprobs and usage.
// Plain executable (label unit): PASS/FAIL lines, exit status 1 on any failure.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "remote/openai_format.h"
#include "remote/sse_parser.h"
#include "remote_test_support.h"

using namespace wb;
using namespace wb::remote;
using namespace wb_remote_test;

namespace {

std::string show(const std::vector<SseEvent>& evs) {
    std::string s;
    for (const SseEvent& e : evs)
        s += "[" + e.event + "|" + e.id + "|" + e.data + (e.error ? "|error:" + *e.error : "") + "]";
    return s;
}

bool same(const std::vector<SseEvent>& a, const std::vector<SseEvent>& b) { return show(a) == show(b); }

// The events of a stream fed as the given chunks, and whether an event was left unfinished.
std::vector<SseEvent> parse_chunks(const std::vector<std::string>& chunks, bool* unfinished = nullptr) {
    SseParser p;
    std::vector<SseEvent> out;
    for (const std::string& c : chunks) p.feed(c, [&](const SseEvent& e) { out.push_back(e); });
    if (unfinished) *unfinished = p.in_event();
    return out;
}

// Every cut of the stream into two chunks, and byte by byte, give the expected events.
void splits_give(const std::string& name, const std::string& stream, const std::vector<SseEvent>& expected) {
    int bad = 0;
    std::string first_bad;
    for (size_t cut = 0; cut <= stream.size(); ++cut) {
        const auto got = parse_chunks({stream.substr(0, cut), stream.substr(cut)});
        if (!same(got, expected) && bad++ == 0) first_bad = "cut at " + std::to_string(cut) + ": " + show(got);
    }
    std::vector<std::string> bytes;
    for (char c : stream) bytes.emplace_back(1, c);
    const auto one_by_one = parse_chunks(bytes);
    if (!same(one_by_one, expected) && bad++ == 0) first_bad = "byte by byte: " + show(one_by_one);
    report(bad == 0, name + " at all " + std::to_string(stream.size() + 1) + " cuts and byte by byte" +
                         (bad ? " (" + std::to_string(bad) + " differ; " + first_bad + ", expected " + show(expected) + ")"
                              : ""));
}

void events_at_every_cut() {
    splits_give("two events, LF line ends", "data: one\n\ndata: two\n\n", {{"", "one", ""}, {"", "two", ""}});
    splits_give("CRLF line ends", "data: a\r\n\r\ndata: b\r\n\r\n", {{"", "a", ""}, {"", "b", ""}});
    splits_give("CR-only line ends", "data: a\r\rdata: b\r\r", {{"", "a", ""}, {"", "b", ""}});
    splits_give("comments and keep-alives are skipped", ": waiting\n\n:\ndata: x\n: mid-event\n\n", {{"", "x", ""}});
    splits_give("multi-line data joined by LF", "data: first\ndata: second\r\ndata:third\n\n",
                {{"", "first\nsecond\nthird", ""}});
    splits_give("only one space after the colon is dropped", "data:  two spaces\ndata:none\n\n",
                {{"", " two spaces\nnone", ""}});
    splits_give("event and id fields", "event: delta\nid: 7\ndata: {\"a\":1}\n\n", {{"delta", "{\"a\":1}", "7"}});
    splits_give("a field name alone is an empty value", "data\n\ndata:\n\n", {{"", "", ""}, {"", "", ""}});
    splits_give("an event without data is not dispatched", "event: ping\n\nretry: 10\n\ndata: [DONE]\n\n",
                {{"", "[DONE]", ""}});
    splits_give("llama.cpp's error field is kept, without data too",
                "error: {\"message\":\"oom\"}\n\ndata: a\nerror: x\nerror: y\n\n",
                {{"", "", "", "{\"message\":\"oom\"}"}, {"", "a", "", "x\ny"}});
    splits_give("a byte order mark at the start is skipped", "\xEF\xBB\xBF" "data: b\n\n", {{"", "b", ""}});
    splits_give("UTF-8 split anywhere stays intact", "data: caf\xC3\xA9 \xE2\x82\xAC\n\n",
                {{"", "caf\xC3\xA9 \xE2\x82\xAC", ""}});
    splits_give("OpenAI's stream", "data: {\"choices\":[]}\n\ndata: [DONE]\n\n",
                {{"", "{\"choices\":[]}", ""}, {"", "[DONE]", ""}});
}

void unfinished_events() {
    bool unfinished = false;
    auto got = parse_chunks({"data: done\n\ndata: cut"}, &unfinished);
    report(got.size() == 1 && unfinished, "a stream cut inside an event: the finished one only, and in_event()");
    got = parse_chunks({"data: done\n\ndata: x\n"}, &unfinished);
    report(got.size() == 1 && unfinished, "a stream cut before the empty line: in_event()");
    got = parse_chunks({"data: done\n\n"}, &unfinished);
    report(got.size() == 1 && !unfinished, "a stream that ends between events: not in_event()");
}

std::string thrown_by(SseParser& p, const std::string& bytes) {
    try {
        p.feed(bytes, [](const SseEvent&) {});
    } catch (const Error& e) {
        return e.what();
    }
    return {};
}

void event_size_limit() {
    SseParser p(64);
    std::string err = thrown_by(p, "data: " + std::string(100, 'x'));
    report(err.find("over 64 bytes") != std::string::npos, "a line over the limit is an error naming it: " + err);
    SseParser q(64);
    err = thrown_by(q, "data: " + std::string(30, 'a') + "\ndata: " + std::string(30, 'b') + "\n");
    report(!err.empty(), "lines of one event add up to the limit: " + err);
    SseParser r(64);
    std::string many;
    for (int i = 0; i < 50; ++i) many += "data: " + std::string(40, 'c') + "\n\n";
    int n = 0;
    err.clear();
    try {
        r.feed(many, [&](const SseEvent&) { ++n; });
    } catch (const Error& e) {
        err = e.what();
    }
    report(err.empty() && n == 50, "the limit is per event: 50 events of 47 bytes pass a 64-byte limit");
    SseParser d;
    err = thrown_by(d, "data: " + std::string(SseParser::kDefaultMaxEventBytes, 'z'));
    report(err.find("over 8 MiB") != std::string::npos, "the default limit is 8 MiB: " + err);
}

// The error parsing this event's data throws; none when it parses.
std::optional<RemoteError> chunk_error(const std::string& data, bool chat) {
    return error_of([&] { parse_stream_chunk(data, chat); });
}

void chat_chunks() {
    StreamChunk c = parse_stream_chunk(R"({"model":"m","choices":[{"index":0,"delta":{"content":"Hi"},
        "logprobs":{"content":[{"token":"H\ufffd","logprob":-0.5,"bytes":[72,105],
        "top_logprobs":[{"token":"Hi","logprob":-0.5,"bytes":[72,105]},{"token":"Yo","logprob":-9999}]}]},
        "finish_reason":null}]})", true);
    report(c.delta.text == "Hi" && c.model == "m" && !c.finish_reason, "a chat chunk's text and model");
    report(c.delta.tokens.size() == 1 && c.delta.tokens[0].token == "Hi" && c.delta.tokens[0].logprob == -0.5f,
           "chat logprobs: the token from its bytes, not its text");
    report(c.delta.tokens.size() == 1 && c.delta.tokens[0].top.size() == 2 && c.delta.tokens[0].top[0].token == "Hi" &&
               std::isinf(c.delta.tokens[0].top[1].logprob) && c.delta.tokens[0].top[1].token == "Yo",
           "chat top_logprobs in order, -9999 read as -inf, text without bytes kept");
    c = parse_stream_chunk(R"({"choices":[{"delta":{"role":"assistant","content":null},"finish_reason":"length"}]})", true);
    report(c.delta.text.empty() && c.finish_reason == "length", "null content and a finish reason");
    c = parse_stream_chunk(R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}})", true);
    report(c.prompt_tokens == 12 && c.completion_tokens == 5, "the usage chunk");
}

void completion_chunks() {
    const StreamChunk c = parse_stream_chunk(R"({"choices":[{"text":" blue","logprobs":{"tokens":[" blue"],
        "token_logprobs":[-1.25],"top_logprobs":[{" red":-2.0," blue":-1.25," green":-3.5}],"text_offset":[0]}}]})", false);
    report(c.delta.text == " blue" && c.delta.tokens.size() == 1 && c.delta.tokens[0].logprob == -1.25f,
           "a completions chunk's text and token logprob");
    report(c.delta.tokens.size() == 1 && c.delta.tokens[0].top.size() == 3 && c.delta.tokens[0].top[0].token == " blue" &&
               c.delta.tokens[0].top[2].token == " green",
           "completions top_logprobs sorted most likely first (JSON objects keep no order)");
    const StreamChunk n = parse_stream_chunk(R"({"choices":[{"text":"Hi there","logprobs":{"tokens":["Hi"," there"],
        "token_logprobs":[null,-0.5],"top_logprobs":[null,{" there":-0.5}]}}]})", false);
    report(n.delta.tokens.size() == 2 && std::isnan(n.delta.tokens[0].logprob) && n.delta.tokens[1].logprob == -0.5f &&
               n.delta.tokens[0].top.empty(),
           "a null token logprob is NaN (no probability), not 0 (p = 1)");
}

void bad_chunks() {
    expect("an event that is not JSON", chunk_error("{not json", true), RemoteErrorKind::MALFORMED, "not JSON");
    auto e = chunk_error(R"({"id":"x"})", true);
    report(e && e->kind() == RemoteErrorKind::MALFORMED, "a chunk without choices: " + what_of(e));
    e = chunk_error(R"({"choices":[{"delta":{"content":5}}]})", true);
    report(e && e->kind() == RemoteErrorKind::MALFORMED, "content of the wrong type: " + what_of(e));
    e = chunk_error(R"({"choices":[{"text":"a","logprobs":{"tokens":["a","b"],"token_logprobs":[-1]}}]})", false);
    report(e && e->kind() == RemoteErrorKind::MALFORMED, "logprob arrays of different lengths: " + what_of(e));
    expect("an error object in the stream",
           chunk_error(R"({"error":{"message":"the model crashed","type":"server_error"}})", true),
           RemoteErrorKind::HTTP_STATUS, "the model crashed");
}

// A hostile server's deeply nested JSON (an event may be 8 MiB: millions of levels) is read without
// recursing into it: a stack overflow would crash the client instead of giving an error.
void deep_nesting() {
    const size_t depth = 3u << 20;
    const std::string deep = std::string(depth, '[') + std::string(depth, ']');
    const auto e = chunk_error("{\"error\":" + deep + "}", true);
    report(e && e->kind() == RemoteErrorKind::MALFORMED && has(e, "deeper than 64"),
           "an event nested 3 Mi deep is malformed, before it is parsed");
    report(!error_message_of("{\"detail\":" + deep + "}").empty(), "an error body nested 3 Mi deep gives a message");
    bool refused = false;
    try {
        parse_models("{\"data\":" + deep + "}");
    } catch (const RemoteError& m) {
        refused = m.kind() == RemoteErrorKind::MALFORMED;
    }
    report(refused, "a models list nested 3 Mi deep is malformed");
    // 70 brackets inside a string: past the 64-level limit if strings were counted.
    const auto ok = chunk_error(R"({"choices":[{"delta":{"content":")" + std::string(35, '[') + std::string(35, '{') +
                                    R"("}}]})", true);
    report(!ok, "brackets inside strings do not count as nesting " + what_of(ok));
}

void error_bodies() {
    report(error_message_of(R"({"error":{"message":"bad key","type":"x"}})") == "bad key", "OpenAI's error body");
    report(error_message_of(R"({"error":"Model not found"})") == "Model not found", "an error string");
    report(error_message_of(R"({"detail":"Not Found"})") == "Not Found", "FastAPI's detail");
    report(error_message_of("<html>502 Bad Gateway</html>") == "<html>502 Bad Gateway</html>", "a body that is not JSON");
    report(error_message_of("").find("no message") != std::string::npos, "an empty body");
    const std::vector<std::string> ids = parse_models(R"({"object":"list","data":[{"id":"a"},{"id":"b"}]})");
    report(ids == std::vector<std::string>{"a", "b"}, "a models list");
    bool threw = false;
    try {
        parse_models(R"({"models":[]})");
    } catch (const RemoteError& e) {
        threw = e.kind() == RemoteErrorKind::MALFORMED;
    }
    report(threw, "a models list without data is malformed");
}

}  // namespace

int main() {
    events_at_every_cut();
    unfinished_events();
    event_size_limit();
    chat_chunks();
    completion_chunks();
    bad_chunks();
    error_bodies();
    deep_nesting();
    return finish();
}
