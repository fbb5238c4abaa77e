#!/usr/bin/env python3
"""Make llama.cpp reference data for WhiteBox engine parity tests.

The data is produced by llama.cpp through the PyPI package ``llama-cpp-python``
(CPU build, 2 threads, no sampling anywhere) on exactly one GGUF file, whose
SHA-256 is checked before anything runs.

Usage (the exact command used for the committed data):

    /tmp/lcpvenv/bin/python tests/reference/make_reference.py \
        --model ~/.cache/whitebox/models/SmolLM2-135M-Instruct.Q4_1.gguf \
        --out tests/reference/smollm2-135m-instruct-q4_1

Inputs (committed next to this script):
    corpus/tokenize_corpus.json        JSON array of strings (tokenizer corpus)
    corpus/teacher_forced_texts.json   JSON array of {"name", "text"} documents

Outputs (in --out):
    tokenize.json        for every corpus string: token ids with special-token
                         parsing on and off (add_bos=False in both cases).
    teacher_forced.json  for every document: its tokens and, for each position
                         i, the distribution of the token after tokens[0..i]:
                         argmax id, logsumexp of the raw logits and the top-N
                         [id, logprob] pairs (log-softmax over the FULL vocab,
                         computed in float64 from the float32 logits).
    greedy.json          10 prompts (7 ChatML-templated, 3 raw), 64 greedy
                         tokens each (argmax of the raw logits, no EOS stop),
                         plus eos_at = index of the first end-of-generation
                         token in the generated ids (or null).

Determinism: llama.cpp's CPU backend is deterministic for a fixed thread count
and batch layout. Documents are evaluated from an empty KV cache in one batch
(n_batch = n_ubatch = 512); greedy prompts are evaluated in one batch, then one
token per llama_decode call. Flash attention is off and the KV cache uses
llama.cpp's default type (F16); both are recorded in the output files.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

import llama_cpp
from llama_cpp import Llama

EXPECTED_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

HERE = Path(__file__).resolve().parent
CORPUS_TOKENIZE = HERE / "corpus" / "tokenize_corpus.json"
CORPUS_TEACHER = HERE / "corpus" / "teacher_forced_texts.json"

N_THREADS = 2
N_CTX = 1024
N_BATCH = 512
TOP_N = 40
N_PREDICT = 64
MAX_DOC_TOKENS = 512

# SmolLM2's default system prompt, inserted by its chat template when the
# conversation does not start with a system message.
SMOLLM2_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
CHATML_ONE_TURN = (
    "<|im_start|>system\n" + SMOLLM2_SYSTEM + "<|im_end|>\n"
    "<|im_start|>user\n{prompt}<|im_end|>\n"
    "<|im_start|>assistant\n"
)

GREEDY_CASES = [
    # (name, chat, text)
    ("question_capital", True, "What is the capital of France?"),
    ("explain_gravity", True, "Explain gravity to a ten-year-old in two sentences."),
    ("instruction_email", True, "Write a short, polite email asking my manager for a day off next Friday."),
    ("code_python_reverse", True, "Write a Python function that reverses a string."),
    ("story_start", True, "Start a story about a robot who learns to paint."),
    ("list_fruits", True, "List five fruits that are rich in vitamin C."),
    ("math_arith", True, "What is 17 + 25? Show your steps."),
    ("raw_story", False, "Once upon a time, in a quiet village by the sea,"),
    ("raw_code_cpp", False, "// C++: return the sum of a vector of ints\nint sum(const std::vector<int>& v) {\n"),
    ("raw_list", False, "The three primary colors are"),
]

# Tokenizer self-check vectors from FACTS.md (third-party, printed only).
SELF_CHECK = [
    ("Hello, we can use", [19556, 28, 392, 416, 722]),
    ("The capital of France is", [504, 3575, 282, 4649, 314]),
    ("\n", [198]),
    ("Hello world! 123", [19556, 905, 17, 216, 33, 34, 35]),
    ("  multiple   spaces", [216, 2701, 256, 5600]),
]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


EXPAND_KEYS = ("cases", "docs", "positions")


def _dumps(obj, indent: str = "") -> str:
    """JSON with one line per top-level key and per element of the big lists
    (cases, docs, positions): small enough to diff, compact enough to commit."""
    def leaf(v):
        return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    if not isinstance(obj, dict):
        return leaf(obj)
    inner = indent + " "
    parts = []
    for k, v in obj.items():
        if k in EXPAND_KEYS and isinstance(v, list):
            items = (",\n" + inner + " ").join(_dumps(x, inner + " ") for x in v)
            val = "[\n" + inner + " " + items + "\n" + inner + "]" if v else "[]"
        elif isinstance(v, dict) and any(isinstance(x, list) for x in v.values()):
            val = _dumps(v, inner)
        else:
            val = leaf(v)
        parts.append(inner + leaf(k) + ":" + val)
    if any(k in EXPAND_KEYS for k in obj):
        return "{\n" + ",\n".join(parts) + "\n" + indent + "}"
    return "{" + ",".join(p.strip() for p in parts) + "}"


def write_json(path: Path, obj) -> None:
    text = _dumps(obj)
    assert json.loads(text) == obj
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")


def eog_ids(llm: Llama) -> list[int]:
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    return [t for t in range(llm.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, t)]


def render_chat_template(llm: Llama, user: str) -> str | None:
    """Render the GGUF's own tokenizer.chat_template (as HF/llama-cpp-python do)."""
    tmpl = llm.metadata.get("tokenizer.chat_template")
    if not tmpl:
        return None
    from jinja2.sandbox import ImmutableSandboxedEnvironment
    import jinja2

    env = ImmutableSandboxedEnvironment(loader=jinja2.BaseLoader(), trim_blocks=True, lstrip_blocks=True)
    return env.from_string(tmpl).render(
        messages=[{"role": "user", "content": user}],
        add_generation_prompt=True,
        bos_token=llm.detokenize([llm.token_bos()], special=True).decode("utf-8"),
        eos_token=llm.detokenize([llm.token_eos()], special=True).decode("utf-8"),
    )


def header(llm: Llama, model_path: Path, sha: str) -> dict:
    return {
        "generator": f"llama-cpp-python {llama_cpp.__version__}",
        "model": model_path.name,
        "sha256": sha,
    }


def logits_row(llm: Llama, i: int) -> np.ndarray:
    return np.asarray(llm.scores[i], dtype=np.float32)


def make_tokenize(llm: Llama, hdr: dict) -> dict:
    corpus = json.loads(CORPUS_TOKENIZE.read_text(encoding="utf-8"))
    cases = []
    for s in corpus:
        b = s.encode("utf-8")
        cases.append({
            "text": s,
            "ids_special": list(map(int, llm.tokenize(b, add_bos=False, special=True))),
            "ids_plain": list(map(int, llm.tokenize(b, add_bos=False, special=False))),
        })
    return dict(hdr, add_bos=False, cases=cases)


def make_teacher_forced(llm: Llama, hdr: dict) -> tuple[dict, list[str]]:
    docs_in = json.loads(CORPUS_TEACHER.read_text(encoding="utf-8"))
    docs = []
    notes = []
    for d in docs_in:
        toks = list(map(int, llm.tokenize(d["text"].encode("utf-8"), add_bos=False, special=True)))
        if len(toks) > MAX_DOC_TOKENS:
            raise SystemExit(f"document {d['name']} has {len(toks)} tokens > {MAX_DOC_TOKENS}")
        llm.reset()
        llm.eval(toks)  # one batch of len(toks) <= n_batch, fresh KV (eval removes cells >= n_tokens = 0)
        positions = []
        masses = []
        for i in range(len(toks)):
            z = logits_row(llm, i).astype(np.float64)
            m = z.max()
            lse = float(m + math.log(np.exp(z - m).sum()))
            lp = z - lse
            top = np.argsort(-lp, kind="stable")[:TOP_N]
            masses.append(float(np.exp(lp[top]).sum()))
            positions.append({
                "argmax": int(np.argmax(z)),
                "logsumexp": round(lse, 6),
                "top": [[int(t), round(float(lp[t]), 6)] for t in top],
            })
        docs.append({
            "name": d["name"],
            "text": d["text"],
            "tokens": toks,
            "top_mass_min": round(min(masses), 6),
            "top_mass_mean": round(sum(masses) / len(masses), 6),
            "positions": positions,
        })
        notes.append(f"{d['name']}: {len(toks)} tokens, top-{TOP_N} mass min {min(masses):.4f} "
                     f"mean {sum(masses) / len(masses):.4f}")
    return dict(hdr, top_n=TOP_N, add_bos=False, special=True, docs=docs), notes


def make_greedy(llm: Llama, hdr: dict, eog: list[int]) -> tuple[dict, list[str]]:
    cases = []
    notes = []
    eog_set = set(eog)
    for name, chat, user in GREEDY_CASES:
        if chat:
            prompt = CHATML_ONE_TURN.format(prompt=user)
            rendered = render_chat_template(llm, user)
            if rendered is not None and rendered != prompt:
                raise SystemExit(f"chat template rendering differs for {name}:\n{rendered!r}\nvs\n{prompt!r}")
        else:
            prompt = user
        ids = list(map(int, llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)))
        llm.reset()
        llm.eval(ids)  # prompt in one batch
        gen = []
        for _ in range(N_PREDICT):
            nxt = int(np.argmax(logits_row(llm, llm.n_tokens - 1)))
            gen.append(nxt)
            llm.eval([nxt])  # one token per decode call
        eos_at = next((k for k, t in enumerate(gen) if t in eog_set), None)
        text = llm.detokenize(gen, special=True).decode("utf-8", errors="replace")
        cases.append({
            "name": name,
            "chat": chat,
            "user": user,
            "prompt": prompt,
            "prompt_ids": ids,
            "generated": gen,
            "eos_at": eos_at,
            "generated_text": text,
        })
        notes.append(f"--- {name} (eos_at={eos_at})\n{text}")
    return dict(hdr, n_predict=N_PREDICT, add_bos=False, special=True, eog_ids=eog, cases=cases), notes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, type=Path, help="GGUF file")
    ap.add_argument("--out", required=True, type=Path, help="output directory")
    ap.add_argument("--expect-sha256", default=EXPECTED_SHA256, help="refuse to run unless the model has this SHA-256")
    ap.add_argument("--only", choices=["tokenize", "teacher_forced", "greedy"], action="append",
                    help="generate only these files (default: all)")
    args = ap.parse_args()

    model_path = args.model.expanduser().resolve()
    sha = sha256_file(model_path)
    if sha != args.expect_sha256.lower():
        print(f"error: {model_path} has sha256 {sha}, expected {args.expect_sha256}", file=sys.stderr)
        return 2

    llm = Llama(
        model_path=str(model_path),
        n_ctx=N_CTX,
        n_batch=N_BATCH,
        n_ubatch=N_BATCH,
        n_threads=N_THREADS,
        n_threads_batch=N_THREADS,
        n_gpu_layers=0,
        logits_all=True,
        flash_attn=False,
        seed=0,
        verbose=False,
    )
    hdr = header(llm, model_path, sha)
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    eog = eog_ids(llm)
    hdr["llama_context"] = {
        "n_threads": N_THREADS, "n_ctx": N_CTX, "n_batch": N_BATCH, "n_ubatch": N_BATCH,
        "flash_attn": False, "type_k": "f16", "type_v": "f16", "backend": "CPU",
    }
    print(f"llama-cpp-python {llama_cpp.__version__}; model {model_path.name} sha256 {sha}")
    print(f"n_vocab {llm.n_vocab()}, bos {llm.token_bos()}, eos {llm.token_eos()}, "
          f"add_bos {bool(llama_cpp.llama_vocab_get_add_bos(vocab))}, "
          f"add_eos {bool(llama_cpp.llama_vocab_get_add_eos(vocab))}, EOG ids {eog}")
    print("chat template:", json.dumps(llm.metadata.get("tokenizer.chat_template")))
    for text, want in SELF_CHECK:
        got = list(llm.tokenize(text.encode(), add_bos=False, special=False))
        print(f"self-check {text!r}: {'ok' if got == want else f'MISMATCH got {got} want {want}'}")

    args.out.mkdir(parents=True, exist_ok=True)
    only = set(args.only or ["tokenize", "teacher_forced", "greedy"])
    if "tokenize" in only:
        tok = make_tokenize(llm, hdr)
        write_json(args.out / "tokenize.json", tok)
        print(f"tokenize.json: {len(tok['cases'])} cases")
    if "teacher_forced" in only:
        tf, notes = make_teacher_forced(llm, hdr)
        write_json(args.out / "teacher_forced.json", tf)
        print(f"teacher_forced.json: {sum(len(d['tokens']) for d in tf['docs'])} positions")
        print("\n".join(notes))
    if "greedy" in only:
        gr, notes = make_greedy(llm, hdr, eog)
        write_json(args.out / "greedy.json", gr)
        print(f"greedy.json: {len(gr['cases'])} cases")
        print("\n".join(notes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
