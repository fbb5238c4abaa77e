#!/usr/bin/env python3
"""llama.cpp's logits on random-weight models of every architecture WhiteBox runs.

Each case is a model written by our own `make_random_gguf` (deterministic in its arguments: the test
writes the same file again and checks its SHA-256 against the one recorded here), evaluated by
llama.cpp through llama-cpp-python exactly as make_reference.py evaluates the real models (CPU, 2
threads, n_ctx 1024, n_batch = n_ubatch = 512, flash attention off, F16 KV cache).

Per case, one JSON file `<case>.json` in --out with:
  - `sha256` of the GGUF and the `make_random_gguf` arguments that wrote it;
  - `docs`: sequences of random token ids evaluated from an empty cache in one batch; per position
    `argmax`, `logsumexp` and the top 10 `[id, logprob]` (log-softmax in float64), and per sequence
    `logits_sha256`, the SHA-256 of all its float32 logits rows in order (little-endian), so that a
    test can assert bit-identity without committing the rows;
  - `cases`: greedy decoding (argmax of the raw logits, one token per decode call) of 32 tokens after
    each of 10 random prompts, with logits for the last row of each batch only (as in generation),
    and `steps_sha256` over the float32 logits of every step (the prompt's last row, then each
    generated token's).

Usage (llama-cpp-python 0.3.36 in a venv, as tests/reference/README.md describes):
    /tmp/lcpvenv/bin/python tests/reference/make_random_reference.py \
        --make-random build/tests/make_random_gguf --out tests/reference/random-archs
"""
from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_reference import (N_BATCH, N_CTX, N_THREADS, distribution, render_chat_template,  # noqa: E402
                            render_llama_cpp_template, sha256_file, tokenize, write_json)

import llama_cpp  # noqa: E402
from llama_cpp import Llama  # noqa: E402

TOP_N = 10
DOC_LENGTHS = (160, 96, 48)
N_PROMPTS = 10
PROMPT_LEN = 8
N_GREEDY = 32

# name -> make_random_gguf arguments: every architecture with Q8_0 and a K-quant or IQ type, and
# one architecture through every other weight type.
CASES = {
    "llama31-q8_0": ["--shape", "llama31-tiny", "--type", "Q8_0"],
    "llama31-q4_1": ["--shape", "llama31-tiny", "--type", "Q4_1", "--output-type", "Q6_K"],
    "llama31-iq4_xs": ["--shape", "llama31-tiny", "--type", "IQ4_XS"],
    "qwen2-q8_0": ["--shape", "qwen2-tiny", "--type", "Q8_0"],
    "qwen2-q4_k": ["--shape", "qwen2-tiny", "--type", "Q4_K", "--output-type", "Q6_K"],
    "qwen2-yarn-q8_0": ["--shape", "qwen2-yarn-tiny", "--type", "Q8_0"],
    # One architecture through every other weight type (the dot products do not depend on it).
    "qwen2-q4_0": ["--shape", "qwen2-tiny", "--type", "Q4_0"],
    "qwen2-q2_k": ["--shape", "qwen2-tiny", "--type", "Q2_K"],
    "qwen2-q3_k": ["--shape", "qwen2-tiny", "--type", "Q3_K"],
    "qwen2-q5_k": ["--shape", "qwen2-tiny", "--type", "Q5_K"],
    "qwen2-q6_k": ["--shape", "qwen2-tiny", "--type", "Q6_K", "--output-type", "Q8_0"],
    "qwen2-iq4_nl": ["--shape", "qwen2-tiny", "--type", "IQ4_NL", "--output-type", "IQ4_NL"],
    "qwen2-iq4_xs": ["--shape", "qwen2-tiny", "--type", "IQ4_XS", "--output-type", "IQ4_XS"],
    "qwen2-tq1_0": ["--shape", "qwen2-tiny", "--type", "TQ1_0"],
    "qwen2-tq2_0": ["--shape", "qwen2-tiny", "--type", "TQ2_0"],
    "qwen2-iq3_s": ["--shape", "qwen2-tiny", "--type", "IQ3_S"],
    "qwen2-iq3_xxs": ["--shape", "qwen2-tiny", "--type", "IQ3_XXS"],
    "qwen2-iq2_s": ["--shape", "qwen2-tiny", "--type", "IQ2_S"],
    "qwen2-iq2_xs": ["--shape", "qwen2-tiny", "--type", "IQ2_XS"],
    "qwen2-iq2_xxs": ["--shape", "qwen2-tiny", "--type", "IQ2_XXS"],
    "qwen2-iq1_s": ["--shape", "qwen2-tiny", "--type", "IQ1_S"],
    "qwen2-iq1_m": ["--shape", "qwen2-tiny", "--type", "IQ1_M", "--output-type", "IQ2_XS", "--embd-type", "IQ3_S"],
    "qwen3-q8_0": ["--shape", "qwen3-tiny", "--type", "Q8_0"],
    "qwen3-q5_0": ["--shape", "qwen3-tiny", "--type", "Q5_0", "--tied"],
    "qwen3-q4_0": ["--shape", "qwen3-tiny", "--type", "Q4_0"],
    # F16 weights, as a converter's --outtype f16 writes them (norms and biases stay F32): llama.cpp
    # dots them with activations rounded to f16, through tinyBLAS in batches and ggml_vec_dot_f16 for
    # single tokens; the "odd" shapes (FFN 514 wide, 1030 tokens) are ones tinyBLAS declines.
    "qwen3-f16": ["--shape", "qwen3-tiny", "--type", "F16", "--embd-type", "F16", "--output-type", "F16"],
    "llama31-f16": ["--shape", "llama31-tiny", "--type", "F16", "--embd-type", "F16", "--output-type", "F16"],
    "qwen2-f16": ["--shape", "qwen2-tiny", "--type", "F16", "--embd-type", "F16", "--output-type", "F16"],
    "qwen2-f16-odd": ["--shape", "qwen2-tiny", "--type", "F16", "--embd-type", "F16", "--output-type", "F16",
                      "--ff", "514", "--vocab", "1030"],
    # F32 and BF16 weights: F32 activations, resp. rounded to BF16; tinyBLAS in batches, else
    # ggml_vec_dot_f32 / ggml_vec_dot_bf16. The odd FFN (542 = 16 runs of 32 and 30) covers the row
    # dots' tails (F32: rounded products in groups of 8 and 4, then fused), and 542 rows and 1030
    # tokens the shapes tinyBLAS declines.
    "qwen2-f32": ["--shape", "qwen2-tiny", "--type", "F32", "--embd-type", "F32", "--output-type", "F32"],
    "qwen2-f32-odd": ["--shape", "qwen2-tiny", "--type", "F32", "--embd-type", "F32", "--output-type", "F32",
                      "--ff", "542", "--vocab", "1030"],
    "qwen2-bf16": ["--shape", "qwen2-tiny", "--type", "BF16", "--embd-type", "BF16", "--output-type", "BF16"],
    "qwen2-bf16-odd": ["--shape", "qwen2-tiny", "--type", "BF16", "--embd-type", "BF16", "--output-type", "BF16",
                       "--ff", "542", "--vocab", "1030"],
    # q/k/v biases where llama.cpp's loader takes them beside qwen2 (every architecture here).
    "qwen3-bias-q8_0": ["--shape", "qwen3-tiny", "--type", "Q8_0", "--qkv-bias"],
    "gemma2-bias-q8_0": ["--shape", "gemma2-tiny", "--type", "Q8_0", "--qkv-bias"],
    "phi3-q8_0": ["--shape", "phi3-tiny", "--type", "Q8_0"],
    "phi3-iq4_nl": ["--shape", "phi3-tiny", "--type", "IQ4_NL"],
    "phi3-q4_k": ["--shape", "phi3-tiny", "--type", "Q4_K", "--output-type", "Q6_K"],
    "gemma2-q8_0": ["--shape", "gemma2-tiny", "--type", "Q8_0"],
    "gemma2-q4_k_m": ["--shape", "gemma2-tiny"],
    "gemma2-iq4_nl": ["--shape", "gemma2-tiny", "--type", "IQ4_NL"],
    # rope.scaling.type none with a factor: llama.cpp scales Gemma 2's sliding-window layers by it anyway.
    "gemma2-none-factor-q8_0": ["--shape", "gemma2-tiny", "--type", "Q8_0", "--rope-scaling", "none", "--rope-factor", "8"],
    # Linear rope scaling: Gemma 3 4B and larger scale their global layers by 8; a Llama file may too.
    "gemma3-linear-q8_0": ["--shape", "gemma3-tiny", "--type", "Q8_0", "--rope-scaling", "linear", "--rope-factor", "8"],
    "llama-linear-q8_0": ["--shape", "llama31-tiny", "--no-rope-freqs", "--type", "Q8_0", "--rope-scaling", "linear",
                          "--rope-factor", "4"],
}


# The matrix: every architecture in every type people download, the _M files with the types
# llama.cpp's quantizer gives each role (make_random_gguf --mix). A cell already named above keeps its
# case; the Gemma shapes are 256 wide here so that K-quant and IQ rows (256 values a block) fit.
# tests/model/test_arch_parity.cpp builds the same list.
MATRIX_SHAPES = {
    "llama31": ["--shape", "llama31-tiny"],
    "qwen2": ["--shape", "qwen2-tiny"],
    "qwen3": ["--shape", "qwen3-tiny"],
    "phi3": ["--shape", "phi3-tiny"],
    "gemma2": ["--shape", "gemma2-tiny", "--embd", "256"],
    "gemma3": ["--shape", "gemma3-tiny", "--embd", "256"],
}
MATRIX_TYPES = {
    "f16": ["--mix", "pure", "--type", "F16", "--embd-type", "F16", "--output-type", "F16"],
    "q8_0": ["--mix", "pure", "--type", "Q8_0"],
    "q6_k": ["--mix", "pure", "--type", "Q6_K", "--output-type", "Q8_0"],
    "q5_k_m": ["--mix", "Q5_K_M"],
    "q4_k_m": ["--mix", "Q4_K_M"],
    "q3_k_m": ["--mix", "Q3_K_M"],
    "q2_k": ["--mix", "pure", "--type", "Q2_K"],
    "iq4_xs": ["--mix", "pure", "--type", "IQ4_XS"],
    "iq4_nl": ["--mix", "pure", "--type", "IQ4_NL"],
    "iq3_s": ["--mix", "pure", "--type", "IQ3_S"],
    "iq3_xxs": ["--mix", "pure", "--type", "IQ3_XXS"],
    "iq2_xs": ["--mix", "pure", "--type", "IQ2_XS"],
}
for _arch, _shape in MATRIX_SHAPES.items():
    for _type, _type_args in MATRIX_TYPES.items():
        CASES.setdefault(f"{_arch}-{_type}", _shape + _type_args)
# Mistral and Ministral files are arch llama without rope_freqs.weight; YaRN on a llama file.
CASES["mistral-q8_0"] = ["--shape", "llama31-tiny", "--no-rope-freqs", "--mix", "pure", "--type", "Q8_0"]
CASES["mistral-q4_k_m"] = ["--shape", "llama31-tiny", "--no-rope-freqs", "--mix", "Q4_K_M"]
CASES["llama-yarn-q8_0"] = ["--shape", "llama31-tiny", "--no-rope-freqs", "--type", "Q8_0", "--rope-scaling", "yarn",
                            "--rope-factor", "4"]

# Random weights under a real vocabulary (the tokenizer.* keys of a fetched GGUF, chat template
# included): besides the random-id sequences, `texts` are tokenized by llama.cpp and decoded greedily,
# so the test checks tokenizer and model together. "@models/" is the model cache
# (scripts/fetch-models.sh qwen2-vocab llama3-vocab).
CASES["qwen2-dsvocab-q4_k_m"] = ["--shape", "qwen2-tiny", "--vocab-from",
                                 "@models/DeepSeek-R1-Distill-Qwen-7B-Q4_K_M.part0000.gguf", "--mix", "Q4_K_M"]
CASES["llama31-l32vocab-q4_k_m"] = ["--shape", "llama31-tiny", "--vocab-from", "@models/Llama-3.2-tokenizer.vocab.gguf",
                                    "--mix", "Q4_K_M"]
PLAIN_TEXTS = (
    "The quick brown fox jumps over the lazy dog. It's 2026-12-06, and 3.14159 is close to pi!",
    "def add(a, b):\n    return a + b  # numbers: 12345 67890\n",
    "Grüße aus Köln — 你好，世界 — こんにちは 🙂",
)
CHAT_USER = "What is the capital of France? Answer in one word."
MODELS_DIR = Path(os.environ.get("WHITEBOX_MODELS") or Path.home() / ".cache" / "whitebox" / "models")


def expand_models(args: list[str]) -> list[str]:
    """make_random_gguf arguments with "@models/NAME" as a path in the model cache."""
    return [str(MODELS_DIR / a.removeprefix("@models/")) if a.startswith("@models/") else a for a in args]


def lcg_tokens(n: int, seed: int, n_vocab: int) -> list[int]:
    """The same stream as wb::random_tokens (tests/tools/random_llama.cpp)."""
    out = []
    for _ in range(n):
        seed = (seed * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
        out.append((seed >> 33) % n_vocab)
    return out


def rows_sha(rows: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for r in rows:
        h.update(np.ascontiguousarray(r, dtype="<f4").tobytes())
    return h.hexdigest()


def top_entry(z32: np.ndarray) -> dict:
    entry, _ = distribution(z32)
    entry["top"] = entry["top"][:TOP_N]
    return entry


def last_logits(llm: Llama) -> np.ndarray:
    """The logits of the last evaluated row (llama-cpp-python keeps no copy without logits_all)."""
    ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float32).copy()


def greedy(llm: Llama, prompt: list[int]) -> tuple[list[int], str]:
    """N_GREEDY argmax tokens after the prompt (one decode call each) and the SHA-256 of their rows."""
    llm.reset()
    llm.eval(prompt)
    rows = [last_logits(llm)]
    generated = []
    while len(generated) < N_GREEDY:
        nxt = int(np.argmax(rows[-1]))
        generated.append(nxt)
        llm.eval([nxt])
        rows.append(last_logits(llm))
    return generated, rows_sha(rows[:-1])


def text_cases(llm: Llama) -> list[dict]:
    """Texts tokenized by llama.cpp (BOS as the vocabulary says unless the text starts with it, special
    tokens parsed), then greedy: the plain texts and one user turn rendered by the file's chat template
    (llama.cpp's llama3 one for a file without)."""
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    add_bos = bool(llama_cpp.llama_vocab_get_add_bos(vocab))
    chat = render_chat_template(llm, CHAT_USER) or render_llama_cpp_template(b"llama3", CHAT_USER)
    out = []
    bos_text = llm.detokenize([llm.token_bos()], special=True).decode("utf-8")
    for text in (*PLAIN_TEXTS, chat):
        bos = add_bos and not text.startswith(bos_text)  # a template that writes BOS itself gets no second
        ids = tokenize(llm, text, bos=bos)
        generated, sha = greedy(llm, ids)
        out.append({"text": text, "add_bos": bos, "ids": ids, "generated": generated, "steps_sha256": sha})
    return out


def make_case(name: str, args: list[str], make_random: Path, out: Path, tmp: Path) -> None:
    gguf = tmp / f"{name}.gguf"
    subprocess.run([str(make_random), str(gguf), *expand_models(args)], check=True, stdout=subprocess.DEVNULL)
    evaluate_case(name, gguf, out, {"make_random_gguf": args}, texts="--vocab-from" in args)


def evaluate_case(name: str, gguf: Path, out: Path, source: dict, texts: bool = False) -> None:
    """llama.cpp's teacher-forced logits and greedy steps on gguf, written to out/NAME.json with `source`
    (what made the file: make_random_gguf's arguments, or the quantizer's) and its SHA-256."""
    llm = Llama(model_path=str(gguf), n_ctx=N_CTX, n_batch=N_BATCH, n_ubatch=N_BATCH, n_threads=N_THREADS,
                n_threads_batch=N_THREADS, n_gpu_layers=0, logits_all=True, flash_attn=False, seed=0, verbose=False)
    n_vocab = llm.n_vocab()
    docs = []
    for d, length in enumerate(DOC_LENGTHS):
        toks = lcg_tokens(length, 1000 + d, n_vocab)
        llm.reset()
        llm.eval(toks)  # one batch from an empty cache
        rows = [np.asarray(llm.scores[i], dtype=np.float32) for i in range(length)]
        docs.append({"tokens": toks, "logits_sha256": rows_sha(rows), "positions": [top_entry(r) for r in rows]})
    # Generation as llama.cpp does it (and the engine): only the last row of a prompt batch gets
    # logits, so the last layer's output projection and FFN run on that row alone.
    llm = Llama(model_path=str(gguf), n_ctx=N_CTX, n_batch=N_BATCH, n_ubatch=N_BATCH, n_threads=N_THREADS,
                n_threads_batch=N_THREADS, n_gpu_layers=0, logits_all=False, flash_attn=False, seed=0, verbose=False)
    cases = []
    for p in range(N_PROMPTS):
        prompt = lcg_tokens(PROMPT_LEN, 2000 + p, n_vocab)
        generated, sha = greedy(llm, prompt)
        cases.append({"prompt_ids": prompt, "generated": generated, "steps_sha256": sha})
    extra = {"texts": text_cases(llm)} if texts else {}
    write_json(out / f"{name}.json", {
        "generator": f"llama-cpp-python {llama_cpp.__version__}",
        "case": name,
        **source,
        "sha256": sha256_file(gguf),
        "llama_context": {"n_threads": N_THREADS, "n_ctx": N_CTX, "n_batch": N_BATCH, "n_ubatch": N_BATCH,
                          "flash_attn": False, "type_k": "f16", "type_v": "f16", "backend": "CPU"},
        "docs": docs,
        "cases": cases,
        **extra,
    })
    print(f"{name}: {sum(DOC_LENGTHS)} positions, {N_PROMPTS} greedy prompts", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--make-random", type=Path, required=True, help="path of the built make_random_gguf")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", nargs="*", help="case names (default: all)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, case_args in CASES.items():
            if args.only and name not in args.only:
                continue
            make_case(name, case_args, args.make_random.resolve(), args.out, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
