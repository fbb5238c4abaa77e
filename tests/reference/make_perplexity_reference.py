#!/usr/bin/env python3
"""llama.cpp's perplexity on SmolLM2-135M-Instruct Q4_1, for `whitebox-cli perplexity` (test_cli).

The text is the five documents of corpus/teacher_forced_texts.json joined by blank lines, twice
(2157 tokens). Perplexity as llama-perplexity computes it: the tokens (BOS first if the vocabulary
adds one; special-token strings stay text) cut into whole chunks of n_ctx = 256, each evaluated from
an empty cache with its first token replaced by BOS when the vocabulary adds one, and the logits at
chunk positions n_ctx/2 .. n_ctx-2 scored against the next token (log-softmax in float64).

    /tmp/lcpvenv/bin/python tests/reference/make_perplexity_reference.py \
        --model ~/.cache/whitebox/models/SmolLM2-135M-Instruct.Q4_1.gguf \
        --out tests/reference/smollm2-135m-instruct-q4_1/perplexity.json
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_reference import N_THREADS, sha256_file, write_json  # noqa: E402

import llama_cpp  # noqa: E402
from llama_cpp import Llama  # noqa: E402

N_CTX = 256


def perplexity_text() -> str:
    """The corpus texts joined by blank lines, twice."""
    docs = json.loads((Path(__file__).resolve().parent / "corpus" / "teacher_forced_texts.json").read_text("utf-8"))
    return "\n\n".join(d["text"] for d in docs) * 2


def scored_logprobs(model: Path, text: str) -> tuple[list[int], list[tuple[int, np.ndarray]]]:
    """llama-perplexity's scoring of `text` by llama.cpp: the tokens, and per scored position the token
    that follows and the float64 log-softmax row of its logits."""
    llm = Llama(model_path=str(model), n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=N_CTX, n_threads=N_THREADS,
                n_threads_batch=N_THREADS, n_gpu_layers=0, logits_all=True, flash_attn=False, seed=0, verbose=False)
    add_bos = bool(llama_cpp.llama_vocab_get_add_bos(llama_cpp.llama_model_get_vocab(llm.model)))
    toks = list(map(int, llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=False)))
    rows = []
    for c in range(len(toks) // N_CTX):
        chunk = toks[c * N_CTX:(c + 1) * N_CTX]
        if add_bos:
            chunk[0] = llm.token_bos()
        llm.reset()
        llm.eval(chunk)
        for j in range(N_CTX // 2, N_CTX - 1):
            z = np.asarray(llm.scores[j], dtype=np.float64)
            m = z.max()
            rows.append((toks[c * N_CTX + j + 1], z - (m + math.log(np.exp(z - m).sum()))))
    return toks, rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    toks, rows = scored_logprobs(args.model, perplexity_text())
    nll, scored = 0.0, 0
    for nxt, row in rows:
        nll -= row[nxt]
        scored += 1
    write_json(args.out, {
        "generator": f"llama-cpp-python {llama_cpp.__version__}",
        "model": args.model.name,
        "sha256": sha256_file(args.model),
        "text": "corpus/teacher_forced_texts.json: the texts joined by blank lines, twice",
        "n_ctx": N_CTX,
        "n_tokens": len(toks),
        "n_scored": scored,
        "ppl": math.exp(nll / scored),
    })
    return 0


if __name__ == "__main__":
    sys.exit(main())
