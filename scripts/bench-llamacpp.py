#!/usr/bin/env python3
"""Measure llama.cpp's CPU speed on a GGUF file, for comparison with WhiteBox.

Same protocol as `whitebox-cli bench -p 512 -n 128 -r 3 --threads 2`:

  * prefill: a 512-token prompt evaluated in ONE llama_decode call
    (n_batch = n_ubatch = 512) on an empty KV cache; every repetition starts
    from a fresh (cleared) context. Longer prompts (up to 4096, for decode
    speed at long contexts) also go in as one call, n_batch raised to fit;
  * decode: right after the prefill, 128 tokens evaluated one per llama_decode
    call; each fed token is the argmax of the previous logits (greedy), so the
    work is what a real generation does minus sampling overhead;
  * one untimed warm-up run (short prefill + a few decode steps) first;
  * tokens/s per repetition = tokens / wall time (time.perf_counter around the
    llama_decode calls, including fetching the last row of logits); the report
    gives mean and sample standard deviation over the repetitions.

Uses llama.cpp through the PyPI package llama-cpp-python (CPU build), e.g.:

    /tmp/lcpvenv/bin/python scripts/bench-llamacpp.py \
        --model ~/.cache/whitebox/models/SmolLM2-135M-Instruct.Q4_1.gguf --threads 2

Prints one JSON object:
    {"prefill_tps": {"mean", "sd", "best", "runs"}, "decode_tps": {...},
     "threads", "n_prompt", "n_gen", "reps", "model", "llama_cpp_python"}
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import llama_cpp
from llama_cpp import Llama


def prompt_tokens(llm: Llama, n: int) -> list[int]:
    """A deterministic, realistic prompt of exactly n tokens (no specials)."""
    text = (
        "The history of computing is a story of ever smaller, faster and cheaper machines. "
        "Early computers filled entire rooms and consumed enormous amounts of power, yet they "
        "could perform only a few thousand operations per second. Today a phone in your pocket "
        "executes billions of instructions every second while running on a small battery. "
    )
    toks: list[int] = []
    while len(toks) < n:
        toks += llm.tokenize(text.encode(), add_bos=False, special=False)
    return toks[:n]


def last_argmax(llm: Llama) -> int:
    """Argmax of the logits of the last evaluated token (read straight from llama.cpp)."""
    ptr = llm._ctx.get_logits_ith(-1)
    return int(np.argmax(np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),))))


def run_once(llm: Llama, prompt: list[int], n_gen: int) -> tuple[float, float]:
    llm.reset()
    llm._ctx.kv_cache_clear()  # fresh context: empty KV cache
    t0 = time.perf_counter()
    llm.eval(prompt)  # one llama_decode call (len(prompt) <= n_batch)
    tok = last_argmax(llm)
    t1 = time.perf_counter()
    for _ in range(n_gen):
        llm.eval([tok])
        tok = last_argmax(llm)
    t2 = time.perf_counter()
    return len(prompt) / (t1 - t0), n_gen / (t2 - t1)


def stats(xs: list[float]) -> dict:
    return {
        "mean": round(statistics.fmean(xs), 2),
        "sd": round(statistics.stdev(xs), 2) if len(xs) > 1 else 0.0,
        "best": round(max(xs), 2),
        "runs": [round(x, 2) for x in xs],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, type=Path)
    ap.add_argument("-p", "--n-prompt", type=int, default=512)
    ap.add_argument("-n", "--n-gen", type=int, default=128)
    ap.add_argument("-r", "--reps", type=int, default=3)
    ap.add_argument("-t", "--threads", type=int, default=2)
    args = ap.parse_args()
    if args.n_prompt > 4096:
        print("error: --n-prompt must be <= 4096", file=sys.stderr)
        return 2
    n_batch = max(512, args.n_prompt)  # the prompt is one llama_decode call

    llm = Llama(
        model_path=str(args.model.expanduser()),
        n_ctx=args.n_prompt + args.n_gen + 16,
        n_batch=n_batch,
        n_ubatch=n_batch,
        n_threads=args.threads,
        n_threads_batch=args.threads,
        n_gpu_layers=0,
        logits_all=False,
        flash_attn=False,
        verbose=False,
    )
    prompt = prompt_tokens(llm, args.n_prompt)

    run_once(llm, prompt[:32], 4)  # warm-up (page in weights, allocate buffers)
    pp, tg = [], []
    for _ in range(args.reps):
        a, b = run_once(llm, prompt, args.n_gen)
        pp.append(a)
        tg.append(b)

    print(json.dumps({
        "prefill_tps": stats(pp),
        "decode_tps": stats(tg),
        "threads": args.threads,
        "n_prompt": args.n_prompt,
        "n_gen": args.n_gen,
        "reps": args.reps,
        "model": args.model.name,
        "llama_cpp_python": llama_cpp.__version__,
        "flash_attn": False,
        "kv_type": "f16",
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
