#!/usr/bin/env python3
"""llama.cpp's KL divergence between two quantizations of one model, for `whitebox-cli perplexity
--save-logits / --kl-base` (test_cli klModeMatchesLlamaCpp).

The model is a random-weight qwen2 written by our own `make_random_gguf` twice from the same Gaussian
floats (`--quantize`): once in Q8_0 (the base), once in Q4_0 (the other quantization). Each file is
evaluated by llama.cpp exactly as make_perplexity_reference.py evaluates a model (the corpus texts
joined by blank lines, twice; chunks of N_CTX tokens from an empty cache, BOS first when the vocabulary
adds one; the logits at chunk positions N_CTX/2 .. N_CTX-2 scored), and per scored position:
  - KL(base || other) over the whole vocabulary, log-softmax in float64 from llama.cpp's float32
    logits: `kl_exact` (mean, max over positions);
  - the same with the base's log-probabilities stored as `whitebox-cli perplexity --save-logits`
    stores them (core/engine/perplexity.h: per row the minimum and a step as float32, one 16-bit code
    per token, renormalised on reading): `kl_stored` (mean, max), which is what the engine reports
    when its logits equal llama.cpp's;
  - whether the other's most likely token is one of the stored base's most likely ones: `same_top`.
The test writes both files again (their SHA-256 must be the recorded ones).

    /tmp/lcpvenv/bin/python tests/reference/make_kl_reference.py \
        --make-random build/tests/make_random_gguf --out tests/reference/random-archs/kl-q8_0-q4_0.json
"""
from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_perplexity_reference import N_CTX, perplexity_text, scored_logprobs  # noqa: E402
from make_reference import sha256_file, write_json  # noqa: E402

import llama_cpp  # noqa: E402

BASE = ["--shape", "qwen2-tiny", "--quantize", "--type", "Q8_0", "--output-type", "Q8_0"]
OTHER = ["--shape", "qwen2-tiny", "--quantize", "--type", "Q4_0", "--output-type", "Q8_0"]


def stored(lp: np.ndarray) -> np.ndarray:
    """A log-prob row as the engine's --save-logits file gives it back (before renormalising)."""
    lo = np.float32(lp.min())
    mx = lp.max()
    step = np.float32((mx - lp.min()) / 65535.0 if mx > lp.min() else 1.0)
    q = np.clip(np.floor((lp - float(lo)) / float(step) + 0.5), 0, 65535)  # lround of non-negative values
    return float(lo) + float(step) * q


def kl(base: np.ndarray, other: np.ndarray) -> float:
    return max(0.0, float(np.sum(np.exp(base) * (base - other))))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--make-random", type=Path, required=True, help="path of the built make_random_gguf")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    text = perplexity_text()
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for name, gen in (("base", BASE), ("other", OTHER)):
            files[name] = Path(tmp) / f"{name}.gguf"
            subprocess.run([str(args.make_random.resolve()), str(files[name]), *gen], check=True,
                           stdout=subprocess.DEVNULL)
        toks, base_rows = scored_logprobs(files["base"], text)
        toks_other, other_rows = scored_logprobs(files["other"], text)
        if toks != toks_other:
            raise SystemExit("the two files tokenize the text differently")
        exact, kept, same_top = [], [], 0
        for (_, b), (_, o) in zip(base_rows, other_rows):
            exact.append(kl(b, o))
            s = stored(b)
            sn = s - math.log(np.exp(s).sum())
            kept.append(kl(sn, o))
            same_top += int(s[int(np.argmax(o))] == s.max())
        write_json(args.out, {
            "generator": f"llama-cpp-python {llama_cpp.__version__}",
            "base": {"make_random_gguf": BASE, "sha256": sha256_file(files["base"])},
            "other": {"make_random_gguf": OTHER, "sha256": sha256_file(files["other"])},
            "text": "corpus/teacher_forced_texts.json: the texts joined by blank lines, twice",
            "n_ctx": N_CTX,
            "n_tokens": len(toks),
            "n_scored": len(base_rows),
            "kl_exact": {"mean": float(np.mean(exact)), "max": float(np.max(exact))},
            "kl_stored": {"mean": float(np.mean(kept)), "max": float(np.max(kept))},
            "same_top": same_top / len(base_rows),
        })
    print(f"{len(base_rows)} positions: KL mean {np.mean(exact):.6g} (stored base {np.mean(kept):.6g}), "
          f"max {np.max(exact):.6g}, same top {same_top}/{len(base_rows)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
