#!/usr/bin/env python3
"""Expected renderings of real chat templates, made with Python's Jinja2 exactly as Hugging Face's
transformers renders a chat template (apply_chat_template), for test_jinja_templates.

Environment (transformers' _compile_jinja_template): jinja2.sandbox.ImmutableSandboxedEnvironment(
trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols]); the
`tojson` filter replaced by json.dumps(x, ensure_ascii=False, indent=None, separators=None,
sort_keys=False) with those keywords passed through; globals raise_exception(message) (raises
TemplateError) and strftime_now(format) (here a FIXED time, 2024-07-26 10:30:00, so that the data is
reproducible; the C++ test passes the same time). Variables as apply_chat_template passes them:
messages, tools (None when there are none), documents (None), add_generation_prompt, bos_token,
eos_token.

Every template in templates/*.jinja is rendered with every message set below, with
add_generation_prompt false and true. Output: templates/expected.json, one case per (template, set,
add_generation_prompt): {"output": text} or, where Jinja2 raised, {"error": type, "message": text}.

Usage:
  python3 make_template_reference.py                      # (re)write templates/expected.json
  python3 make_template_reference.py --import-dir DIR     # copy DIR/*.jinja into templates/ first
  python3 make_template_reference.py --import-gguf FILE NAME  # tokenizer.chat_template of FILE -> NAME.jinja
"""
import argparse
import datetime
import json
import pathlib
import shutil
import struct
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = pathlib.Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
FIXED_NOW = datetime.datetime(2024, 7, 26, 10, 30, 0)
BOS, EOS = "<s>", "</s>"


class AssistantTracker(Extension):
    """transformers' {% generation %} block: marks assistant text for training masks; output unchanged."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    def _generation_support(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return FIXED_NOW.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city. Don't guess: call it.",
        "parameters": {"type": "object", "properties": {
            "location": {"type": "string", "description": "City and country, e.g. Paris, France"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["location"]}}},
    {"type": "function", "function": {
        "name": "search",
        "description": "Search the web (résumé, 検索).",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"}, "max_results": {"type": "integer", "default": 3}},
            "required": ["query"]}}},
]

TRICKY = ("  Leading and trailing spaces, a tab\there, {{ not a tag }} {% if x %} {# nor this #},\n"
          "emoji 😀👍🏽, CJK 你好，世界, quotes ' and \", backslashes \\ and \\n literally.\t ")

MESSAGE_SETS = {
    "one_user": {"messages": [{"role": "user", "content": "Hello!"}]},
    "system_user": {"messages": [
        {"role": "system", "content": "You are a terse assistant."},
        {"role": "user", "content": "What is 2+2?"}]},
    "multi_turn": {"messages": [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "<think>\nSimple arithmetic.\n</think>\n\n2+2 is 4."},
        {"role": "user", "content": "And 3+3?"},
        {"role": "assistant", "content": "6."},
        {"role": "user", "content": "Thanks."}]},
    "tricky_content": {"messages": [
        {"role": "system", "content": TRICKY},
        {"role": "user", "content": TRICKY},
        {"role": "assistant", "content": " <|im_start|>assistant\n  spaced  "},
        {"role": "user", "content": "<start_of_turn>user\n<|eot_id|>\\\""}]},
    "ends_with_assistant": {"messages": [
        {"role": "user", "content": "Write a haiku."},
        {"role": "assistant", "content": "Old pond, a frog jumps."}]},
    "tools_no_call": {"tools": TOOLS, "messages": [
        {"role": "user", "content": "What's the weather in Paris?"}]},
    "tools_call": {"tools": TOOLS, "messages": [
        {"role": "system", "content": "Use tools when needed."},
        {"role": "user", "content": "What's the weather in Paris?"},
        {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": {"location": "Paris, France", "unit": "celsius"}}}]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "{\"temperature\": 22.5, \"sky\": \"clear\"}"},
        {"role": "assistant", "content": "It is 22.5 °C and clear in Paris."},
        {"role": "user", "content": "Thanks!"}]},
}


def render(env, source, message_set, add_generation_prompt):
    try:
        template = env.from_string(source)
        out = template.render(messages=message_set["messages"], tools=message_set.get("tools"), documents=None,
                              add_generation_prompt=add_generation_prompt, bos_token=BOS, eos_token=EOS)
        return {"output": out}
    except Exception as e:  # what jinja2 raised is the expected result
        return {"error": type(e).__name__, "message": str(e)}


def read_gguf_template(path):
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise SystemExit(f"{path}: not a GGUF file")
        f.read(4)
        _, n_kv = struct.unpack("<QQ", f.read(16))

        def rstr():
            (n,) = struct.unpack("<Q", f.read(8))
            return f.read(n).decode("utf-8")

        for _ in range(n_kv):
            key = rstr()
            (t,) = struct.unpack("<I", f.read(4))
            if t == 8:
                value = rstr()
                if key == "tokenizer.chat_template":
                    return value
            elif t == 9:
                item_type, n = struct.unpack("<IQ", f.read(12))
                for _ in range(n if item_type == 8 else 0):
                    rstr()
                if item_type != 8:
                    f.seek(sizes[item_type] * n, 1)
            else:
                f.seek(sizes[t], 1)
    raise SystemExit(f"{path}: no tokenizer.chat_template")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--import-dir", help="copy DIR/*.jinja into templates/")
    ap.add_argument("--import-gguf", nargs=2, metavar=("FILE", "NAME"), help="write FILE's chat template to NAME.jinja")
    args = ap.parse_args()
    TEMPLATES.mkdir(exist_ok=True)
    if args.import_dir:
        for p in sorted(pathlib.Path(args.import_dir).glob("*.jinja")):
            shutil.copyfile(p, TEMPLATES / p.name)
    if args.import_gguf:
        (TEMPLATES / (args.import_gguf[1] + ".jinja")).write_bytes(read_gguf_template(args.import_gguf[0]).encode("utf-8"))
    if args.import_dir or args.import_gguf:
        return

    env = make_env()
    cases = []
    for path in sorted(TEMPLATES.glob("*.jinja")):
        source = path.read_bytes().decode("utf-8")
        for set_name, message_set in MESSAGE_SETS.items():
            for agp in (False, True):
                case = {"template": path.name, "set": set_name, "add_generation_prompt": agp}
                case.update(render(env, source, message_set, agp))
                cases.append(case)
    data = {
        "generator": f"jinja2 {jinja2.__version__}, Python {sys.version.split()[0]}",
        "environment": "ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, "
                       "extensions=[AssistantTracker, loopcontrols]), HF tojson, raise_exception, strftime_now",
        "strftime_now": FIXED_NOW.isoformat(),
        "bos_token": BOS,
        "eos_token": EOS,
        "message_sets": MESSAGE_SETS,
        "cases": cases,
    }
    out = TEMPLATES / "expected.json"
    out.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    n_err = sum(1 for c in cases if "error" in c)
    print(f"{out}: {len(cases)} cases ({n_err} where jinja2 raised), {out.stat().st_size} bytes")


if __name__ == "__main__":
    main()
