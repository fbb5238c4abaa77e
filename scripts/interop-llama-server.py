#!/usr/bin/env python3
"""WhiteBox's remote engine against another OpenAI-compatible server: llama-cpp-python's (issue 19).

ctest proves `generate/chat --remote` against `whitebox-cli serve`; this proves it against a server we
did not write. It starts llama-cpp-python's server (`python -m llama_cpp.server`, llama-cpp-python built
from the pinned sdist by scripts/llama-cpp-python-venv.sh with its `server` extra) on loopback with an
API key, on the same GGUF file, and checks:
  1. `generate --remote` (/v1/completions), greedy: the text equals what local `whitebox-cli generate`
     writes with the same settings (the engine computes llama.cpp's logits bit for bit, so greedy
     replies agree token for token);
  2. `generate --chat --remote` (/v1/chat/completions, streamed), greedy: the reply equals the local
     one (the server renders the GGUF's Jinja template with Jinja2, the CLI with ours);
  3. `chat --remote`: a two-turn terminal chat through stdin; both replies equal the local chat's;
  4. a wrong API key: exit status non-zero and one line naming the HTTP status (401);
  5. a seeded sampled request (temperature 0.8, seed 7) twice: the same text both times.
Prints one Markdown line per check and exits 1 if any failed. Needs the build (build/app/whitebox-cli)
and the model; llama-cpp-python takes ~10 minutes to build the first time, so this is a script, not a
ctest test (the issue says so). The last result is recorded in docs/architecture.md (The remote client).

    python3 scripts/interop-llama-server.py [--cli build/app/whitebox-cli] [-m MODEL] [-n 24]
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEY = "interop-key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(python: str, model: str, port: int) -> subprocess.Popen:
    cmd = [python, "-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1", "--port", str(port),
           "--api_key", KEY, "--n_ctx", "2048", "--n_threads", "2", "--verbose", "false"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"interop: llama-cpp-python's server exited: {proc.stderr.read()[-2000:]}")
        try:
            req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/models",
                                         headers={"Authorization": f"Bearer {KEY}"})
            with urllib.request.urlopen(req, timeout=2):
                return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    sys.exit("interop: llama-cpp-python's server did not answer within 120 s")


def cli(args, extra: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([args.cli, *extra], input=stdin, capture_output=True, text=True, timeout=300)


def same_as_local(far: subprocess.CompletedProcess, local: subprocess.CompletedProcess) -> str:
    if far.returncode != 0:
        return f"exit {far.returncode}: {far.stderr.strip()[:100]!r}"
    verdict = "identical to" if far.stdout == local.stdout else "DIFFERS from"
    return f"{far.stdout.strip()[:70]!r}, {verdict} local {'' if far.stdout == local.stdout else repr(local.stdout.strip()[:70])}"


def replies_of(chat_output: str) -> list[str]:
    """The assistant replies of a terminal chat transcript (each after the prompt marker '> ')."""
    return [r.strip() for r in chat_output.split("\n> ") if r.strip()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=str(ROOT / "build" / "app" / "whitebox-cli"))
    ap.add_argument("-m", "--model", default=str(Path(os.environ.get("WHITEBOX_MODELS") or
                                                       Path.home() / ".cache" / "whitebox" / "models")
                                                  / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("-n", type=int, default=24)
    args = ap.parse_args()
    python = subprocess.run(["bash", str(ROOT / "scripts" / "llama-cpp-python-venv.sh"), "server"],
                            check=True, capture_output=True, text=True).stdout.strip()
    port = free_port()
    server = start_server(python, args.model, port)
    url = f"http://127.0.0.1:{port}/v1"
    remote = ["--remote", url, "--api-key", KEY]
    # llama-cpp-python's server defaults repeat_penalty to 1.1 where a request does not set it.
    greedy = ["-n", str(args.n), "--temp", "0", "--repeat-penalty", "1"]
    here = ["-m", args.model, "--threads", "2"]  # the local runs (--threads does not apply to --remote)
    results: list[tuple[str, bool, str]] = []

    def check(name: str, ok: bool, detail: str) -> None:
        results.append((name, ok, detail))
        print(f"| {name} | {'pass' if ok else 'FAIL'} | {detail} |", flush=True)

    try:
        print("| check | result | detail |\n|---|---|---|")
        prompt = ["-p", "The three primary colors are"]
        local = cli(args, ["generate", *here, *prompt, *greedy])
        far = cli(args, ["generate", *remote, *prompt, *greedy])
        check("generate --remote, greedy (/v1/completions)", far.returncode == 0 and far.stdout == local.stdout,
              same_as_local(far, local))

        question = ["--chat", "-p", "What is the capital of France?"]
        local = cli(args, ["generate", *here, *question, *greedy])
        far = cli(args, ["generate", *remote, *question, *greedy])
        check("generate --chat --remote, greedy, streamed", far.returncode == 0 and far.stdout == local.stdout,
              same_as_local(far, local))

        turns = "Name a fruit.\nAnd a vegetable?\n/exit\n"
        local = cli(args, ["chat", *here, *greedy], stdin=turns)
        far = cli(args, ["chat", *remote, *greedy], stdin=turns)
        ok = far.returncode == 0 and replies_of(far.stdout) == replies_of(local.stdout) and len(replies_of(far.stdout)) >= 2
        check("chat --remote, two turns, greedy", ok, f"{len(replies_of(far.stdout))} replies, equal to local: "
              f"{replies_of(far.stdout) == replies_of(local.stdout)}")

        bad = cli(args, ["generate", "--remote", url, "--api-key", "wrong", *prompt, *greedy])
        lines = bad.stderr.strip().splitlines()
        check("wrong API key", bad.returncode != 0 and len(lines) == 1 and "401" in lines[0],
              f"exit {bad.returncode}: {bad.stderr.strip()[:100]!r}")

        seeded = ["-n", str(args.n), "--temp", "0.8", "--seed", "7"]
        a = cli(args, ["generate", *remote, *prompt, *seeded])
        b = cli(args, ["generate", *remote, *prompt, *seeded])
        check("seeded sampling reproducible", a.returncode == 0 and a.stdout == b.stdout and a.stdout.strip() != "",
              f"{a.stdout.strip()[:60]!r}")
    finally:
        server.terminate()
        server.wait(timeout=30)
    failed = [name for name, ok, _ in results if not ok]
    print(f"\ninterop: {len(results) - len(failed)} of {len(results)} checks passed"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
