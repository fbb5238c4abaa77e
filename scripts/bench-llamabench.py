#!/usr/bin/env python3
"""WhiteBox beside llama.cpp's own llama-bench on the CPU: the protocol of the CPU speed issue.

For each model, the same tests as llama-bench's, run by both programs on the same file:
  * prefill:  -p P (default 512) tokens in one batch from an empty context;
  * decode:   -n N (default 128) tokens, one forward pass each, with D tokens already in the
              context, for every D of --depths (default 0 512 4096; llama-bench's -d).
Each test is run in PAIRS: llama-bench (its -r repetitions) and `whitebox-cli bench` (the same
repetitions), back to back, the order alternating from pair to pair so that a slow spell of the
machine falls on both. A pair's ratio is WhiteBox's mean tokens/s over llama-bench's; the report gives
every pair, the median ratio and the spread (min - max), as Markdown on stdout and, with --json, every
figure.

llama-bench is built once from the llama.cpp sources inside the llama-cpp-python sdist (PyPI, pinned by
SHA-256) with GGML_NATIVE=ON, into a cache outside the repository (nothing of llama.cpp is committed):
    ${XDG_CACHE_HOME:-~/.cache}/whitebox/llama-bench/

    python3 scripts/bench-llamabench.py -m ~/.cache/whitebox/models/SmolLM2-135M-Instruct.Q4_1.gguf \\
        [-m MODEL ...] [-t 2] [-p 512] [-n 128] [--depths 0 512 4096] [-r 3] [--pairs 3] [--json FILE]

Run it on an idle machine: anything else running makes both programs slower by different amounts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The pinned sdist (shared with scripts/make-test-models.sh): "sha256  llama_cpp_python-X.Y.Z.tar.gz".
SDIST_SHA256, SDIST_FILE = (ROOT / "scripts" / "llama-cpp-python.sha256").read_text().split()
SDIST = "llama-cpp-python==" + SDIST_FILE.removeprefix("llama_cpp_python-").removesuffix(".tar.gz")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(os.environ.get("WB_LLAMA_BENCH_DIR", Path(base) / "whitebox" / "llama-bench"))


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def build_llama_bench(jobs: int) -> Path:
    """The llama-bench binary, built on first use from the pinned sdist."""
    cache = cache_dir()
    binary = cache / "build" / "bin" / "llama-bench"
    if binary.exists():
        return binary
    cache.mkdir(parents=True, exist_ok=True)
    sdist = cache / SDIST_FILE
    if not sdist.exists():
        print(f"bench: downloading the {SDIST} sdist", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", SDIST,
                        "-d", str(cache)], check=True, stdout=subprocess.DEVNULL)
    if sha256_of(sdist) != SDIST_SHA256:
        sdist.unlink()
        sys.exit(f"bench: {sdist.name} does not have the pinned SHA-256; deleted, run again")
    src = cache / "src"
    if not src.exists():
        with tarfile.open(sdist) as tar:
            tar.extractall(src, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(src)
    llama_src = src / SDIST_FILE.removesuffix(".tar.gz") / "vendor" / "llama.cpp"
    build = cache / "build"
    print("bench: building llama-bench (GGML_NATIVE=ON)", file=sys.stderr)
    subprocess.run(["cmake", "-S", str(llama_src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                    "-DGGML_NATIVE=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
                    "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build), "-j", str(jobs), "--target", "llama-bench"], check=True,
                   stdout=subprocess.DEVNULL)
    return binary


def run_llama_bench(binary: Path, model: str, threads: int, p: int, n: int, d: int, reps: int) -> dict:
    out = subprocess.run([str(binary), "-m", model, "-t", str(threads), "-p", str(p), "-n", str(n), "-d", str(d),
                          "-r", str(reps), "-o", "json"], check=True, capture_output=True, text=True).stdout
    rows = json.loads(out)
    if len(rows) != 1:
        sys.exit(f"bench: llama-bench gave {len(rows)} results, expected 1")
    return {"mean": rows[0]["avg_ts"], "sd": rows[0]["stddev_ts"], "samples": rows[0]["samples_ts"]}


def run_whitebox(cli: Path, model: str, threads: int, p: int, n: int, d: int, reps: int) -> dict:
    out = subprocess.run([str(cli), "bench", "-m", model, "--backend", "cpu", "--threads", str(threads), "-p", str(p),
                          "-n", str(n), "-d", str(d), "-r", str(reps), "--json"], check=True, capture_output=True,
                         text=True).stdout
    j = json.loads(out)
    phase = j["prefill"] if p > 0 else j["decode"]
    return {"mean": phase["mean"], "sd": phase["sd"], "samples": phase["samples"], "commit": j["commit"]}


def git_commit() -> str:
    r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model", action="append", required=True, help="GGUF file (repeatable)")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-p", "--prompt", type=int, default=512, help="prefill tokens (0: no prefill test)")
    ap.add_argument("-n", "--decode", type=int, default=128, help="decode tokens (0: no decode tests)")
    ap.add_argument("--depths", type=int, nargs="+", default=[0, 512, 4096], help="decode depths")
    ap.add_argument("-r", "--reps", type=int, default=3, help="repetitions inside each program run")
    ap.add_argument("--pairs", type=int, default=3, help="alternating pairs of runs per test")
    ap.add_argument("--cli", default=str(ROOT / "build" / "app" / "whitebox-cli"))
    ap.add_argument("--json", help="also write every figure to this file")
    args = ap.parse_args()

    binary = build_llama_bench(os.cpu_count() or 2)
    cli = Path(args.cli)
    if not cli.exists():
        sys.exit(f"bench: {cli} not found (build first: scripts/build.sh)")
    tests = ([("pp", args.prompt, 0, 0)] if args.prompt > 0 else []) + \
            ([("tg", 0, args.decode, d) for d in args.depths] if args.decode > 0 else [])
    results = []
    for model in args.model:
        for kind, p, n, d in tests:
            pairs = []
            for k in range(args.pairs):
                order = ("llama", "wb") if k % 2 == 0 else ("wb", "llama")
                got = {}
                for who in order:
                    run = run_llama_bench if who == "llama" else run_whitebox
                    got[who] = run(binary if who == "llama" else cli, model, args.threads, p, n, d, args.reps)
                pairs.append({"llama": got["llama"], "wb": got["wb"], "ratio": got["wb"]["mean"] / got["llama"]["mean"],
                              "first": order[0]})
                print(f"bench: {Path(model).name} {kind}{p or n} d{d} pair {k + 1}: WhiteBox {got['wb']['mean']:.1f}, "
                      f"llama-bench {got['llama']['mean']:.1f} t/s, ratio {pairs[-1]['ratio']:.3f}", file=sys.stderr)
            ratios = [x["ratio"] for x in pairs]
            results.append({"model": Path(model).name, "test": f"{kind}{p or n}", "depth": d, "pairs": pairs,
                            "median_ratio": statistics.median(ratios), "min_ratio": min(ratios),
                            "max_ratio": max(ratios)})

    print(f"WhiteBox {git_commit()} vs llama-bench ({SDIST}, GGML_NATIVE=ON), {args.threads} threads, "
          f"{args.reps} repetitions per run, {args.pairs} alternating pairs, {time.strftime('%Y-%m-%d')}\n")
    print("| model | test | depth | WhiteBox t/s (per pair) | llama-bench t/s (per pair) | median ratio | spread |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        wb = ", ".join(f"{x['wb']['mean']:.1f}" for x in r["pairs"])
        ll = ", ".join(f"{x['llama']['mean']:.1f}" for x in r["pairs"])
        print(f"| {r['model']} | {r['test']} | {r['depth']} | {wb} | {ll} | {r['median_ratio']:.2f}x | "
              f"{r['min_ratio']:.2f} - {r['max_ratio']:.2f} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"commit": git_commit(), "threads": args.threads, "results": results},
                                              indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
