#!/usr/bin/env python3
"""Make llama.cpp reference data for WhiteBox engine parity tests.

The data is produced by llama.cpp through the PyPI package ``llama-cpp-python``
(CPU build, 2 threads, no sampling anywhere) on exactly one GGUF file, whose
SHA-256 is checked before anything runs.

Usage (the exact commands used for the committed data):

    /tmp/lcpvenv/bin/python tests/reference/make_reference.py \
        --model ~/.cache/whitebox/models/SmolLM2-135M-Instruct.Q4_1.gguf \
        --out tests/reference/smollm2-135m-instruct-q4_1

    /tmp/lcpvenv/bin/python tests/reference/make_reference.py --profile gemma3 \
        --model ~/.cache/whitebox/models/gemma-3-270m-Q4_K_M.gguf \
        --out tests/reference/gemma-3-270m-q4_k_m

A profile (--profile, default smollm2) fixes the file's SHA-256, the chat
format of the greedy prompts and whether sequences start with BOS:
    smollm2  ChatML with SmolLM2's default system prompt; no BOS (the vocab's
             add_bos_token is false).
    gemma3   Gemma turns (<start_of_turn>user ... <start_of_turn>model);
             the vocab's add_bos_token is true, so documents and prompts
             start with <bos> as llama.cpp would tokenize them. Also writes
             long.json (below).

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
                         computed in float64 from the float32 logits), and
                         logits_sha256, the SHA-256 of all its float32 logits
                         rows in order (little-endian): equal hashes mean
                         bit-identical logits.
    greedy.json          10 prompts (7 chat-templated, 3 raw), 64 greedy
                         tokens each (argmax of the raw logits, no EOS stop),
                         plus eos_at = index of the first end-of-generation
                         token in the generated ids (or null), and
                         steps_sha256 over the float32 logits each token
                         was chosen from (the prompt's last row, then one
                         row per decoded token).
    long.json            (gemma3) one sequence longer than the 512-token
                         sliding window -- the teacher-forced documents
                         joined -- evaluated in n_batch chunks; the same
                         per-position data as teacher_forced.json for the
                         positions from LONG_FROM on, where local layers see
                         only part of the sequence (logits_sha256 over those
                         rows).

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


HERE = Path(__file__).resolve().parent
CORPUS_TOKENIZE = HERE / "corpus" / "tokenize_corpus.json"
CORPUS_TEACHER = HERE / "corpus" / "teacher_forced_texts.json"

N_THREADS = 2
N_CTX = 1024
N_BATCH = 512
TOP_N = 40
N_PREDICT = 64
MAX_DOC_TOKENS = 512
LONG_MIN_TOKENS = 600   # long.json must exceed the 512-token window by this much at least
LONG_FROM = 448         # first position of long.json with stored distributions

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

GEMMA_ONE_TURN = "<start_of_turn>user\n{prompt}<end_of_turn>\n<start_of_turn>model\n"

# Tokenizer self-check vectors from FACTS.md (third-party, printed only).
SELF_CHECK_SMOLLM2 = [
    ("Hello, we can use", [19556, 28, 392, 416, 722]),
    ("The capital of France is", [504, 3575, 282, 4649, 314]),
    ("\n", [198]),
    ("Hello world! 123", [19556, 905, 17, 216, 33, 34, 35]),
    ("  multiple   spaces", [216, 2701, 256, 5600]),
]


# Gemma ids from FACTS.md 7.4 (tokenized with special-token parsing; printed only).
SELF_CHECK_GEMMA3 = [
    ("<start_of_turn>user\n", [105, 2364, 107]),
    ("<end_of_turn>", [106]),
]

PROFILES = {
    "smollm2": {
        "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "chat": CHATML_ONE_TURN,
        "llama_cpp_template": None,
        "bos": False,
        "self_check": SELF_CHECK_SMOLLM2,
        "self_check_special": False,
        "long": False,
    },
    "gemma3": {
        "sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        "chat": GEMMA_ONE_TURN,
        # The GGUF carries no tokenizer.chat_template; the prompt is checked against llama.cpp's
        # built-in "gemma" template instead.
        "llama_cpp_template": b"gemma",
        "bos": True,
        "self_check": SELF_CHECK_GEMMA3,
        "self_check_special": True,
        "long": True,
    },
}


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


def render_llama_cpp_template(name: bytes, user: str) -> str:
    """Render llama.cpp's built-in chat template `name` for one user turn."""
    msg = (llama_cpp.llama_chat_message * 1)()
    role, content = b"user", user.encode("utf-8")
    msg[0].role, msg[0].content = role, content
    buf = bytes(4096)
    n = llama_cpp.llama_chat_apply_template(name, msg, 1, True, buf, len(buf))
    if n < 0 or n > len(buf):
        raise SystemExit(f"llama_chat_apply_template({name!r}) failed: {n}")
    return buf[:n].decode("utf-8")


def tokenize(llm: Llama, text: str, bos: bool, special: bool = True) -> list[int]:
    return list(map(int, llm.tokenize(text.encode("utf-8"), add_bos=bos, special=special)))


def distribution(z32: np.ndarray) -> tuple[dict, float]:
    """argmax, logsumexp and top-N log-probs of one logits row; also the top-N mass."""
    z = z32.astype(np.float64)
    m = z.max()
    lse = float(m + math.log(np.exp(z - m).sum()))
    lp = z - lse
    top = np.argsort(-lp, kind="stable")[:TOP_N]
    entry = {
        "argmax": int(np.argmax(z)),
        "logsumexp": round(lse, 6),
        "top": [[int(t), round(float(lp[t]), 6)] for t in top],
    }
    return entry, float(np.exp(lp[top]).sum())


def header(llm: Llama, model_path: Path, sha: str) -> dict:
    return {
        "generator": f"llama-cpp-python {llama_cpp.__version__}",
        "model": model_path.name,
        "sha256": sha,
    }


def logits_row(llm: Llama, i: int) -> np.ndarray:
    return np.asarray(llm.scores[i], dtype=np.float32)


def rows_sha256(rows: list[np.ndarray]) -> str:
    """SHA-256 of float32 logits rows in order (little-endian bytes): equal hashes, identical bits."""
    h = hashlib.sha256()
    for r in rows:
        h.update(np.ascontiguousarray(r, dtype="<f4").tobytes())
    return h.hexdigest()


def make_tokenize(llm: Llama, hdr: dict, vocab_add_bos: bool, extra: tuple = ()) -> dict:
    """extra: more strings after the common corpus (a vocabulary's own chat markers)."""
    corpus = json.loads(CORPUS_TOKENIZE.read_text(encoding="utf-8")) + list(extra)
    cases = []
    for s in corpus:
        b = s.encode("utf-8")
        ids_special = list(map(int, llm.tokenize(b, add_bos=False, special=True)))
        if vocab_add_bos:
            # What llama.cpp does with the vocab's add_bos_token: exactly one BOS in front.
            with_bos = list(map(int, llm.tokenize(b, add_bos=True, special=True)))
            if with_bos != [llm.token_bos()] + ids_special:
                raise SystemExit(f"add_bos=True is not BOS + ids for {s!r}: {with_bos}")
        cases.append({
            "text": s,
            "ids_special": ids_special,
            "ids_plain": list(map(int, llm.tokenize(b, add_bos=False, special=False))),
        })
    # add_bos: the ids below have no BOS; vocab_add_bos: llama.cpp's default for this vocabulary
    # (when true, tokenizing with add_bos gives bos_id followed by ids_special, checked above).
    return dict(hdr, add_bos=False, vocab_add_bos=vocab_add_bos, bos_id=int(llm.token_bos()), cases=cases)


def make_teacher_forced(llm: Llama, hdr: dict, bos: bool) -> tuple[dict, list[str]]:
    docs_in = json.loads(CORPUS_TEACHER.read_text(encoding="utf-8"))
    docs = []
    notes = []
    for d in docs_in:
        toks = tokenize(llm, d["text"], bos)
        if len(toks) > MAX_DOC_TOKENS:
            raise SystemExit(f"document {d['name']} has {len(toks)} tokens > {MAX_DOC_TOKENS}")
        llm.reset()
        llm.eval(toks)  # one batch of len(toks) <= n_batch, fresh KV (eval removes cells >= n_tokens = 0)
        positions = []
        masses = []
        for i in range(len(toks)):
            entry, mass = distribution(logits_row(llm, i))
            positions.append(entry)
            masses.append(mass)
        docs.append({
            "name": d["name"],
            "text": d["text"],
            "tokens": toks,
            "logits_sha256": rows_sha256([logits_row(llm, i) for i in range(len(toks))]),
            "top_mass_min": round(min(masses), 6),
            "top_mass_mean": round(sum(masses) / len(masses), 6),
            "positions": positions,
        })
        notes.append(f"{d['name']}: {len(toks)} tokens, top-{TOP_N} mass min {min(masses):.4f} "
                     f"mean {sum(masses) / len(masses):.4f}")
    return dict(hdr, top_n=TOP_N, add_bos=bos, special=True, docs=docs), notes


def make_long(llm: Llama, hdr: dict, bos: bool) -> tuple[dict, str]:
    """One sequence past the sliding window: the teacher-forced documents joined by blank lines."""
    docs_in = json.loads(CORPUS_TEACHER.read_text(encoding="utf-8"))
    text = "\n\n".join(d["text"] for d in docs_in)
    toks = tokenize(llm, text, bos)
    if len(toks) < LONG_MIN_TOKENS or len(toks) > N_CTX:
        raise SystemExit(f"long sequence has {len(toks)} tokens, need {LONG_MIN_TOKENS}..{N_CTX}")
    llm.reset()
    llm.eval(toks)  # llama-cpp-python splits it into n_batch chunks: positions 0..511, then the rest
    positions = []
    masses = []
    for i in range(LONG_FROM, len(toks)):
        entry, mass = distribution(logits_row(llm, i))
        positions.append(entry)
        masses.append(mass)
    out = dict(hdr, top_n=TOP_N, add_bos=bos, special=True, name="joined_documents", text=text, tokens=toks,
               first_position=LONG_FROM,
               logits_sha256=rows_sha256([logits_row(llm, i) for i in range(LONG_FROM, len(toks))]),
               top_mass_min=round(min(masses), 6),
               top_mass_mean=round(sum(masses) / len(masses), 6), positions=positions)
    return out, f"long: {len(toks)} tokens, positions {LONG_FROM}..{len(toks) - 1} stored"


def make_greedy(llm: Llama, hdr: dict, eog: list[int], profile: dict) -> tuple[dict, list[str]]:
    cases = []
    notes = []
    eog_set = set(eog)
    for name, chat, user in GREEDY_CASES:
        if chat:
            prompt = profile["chat"].format(prompt=user)
            rendered = render_chat_template(llm, user)
            if rendered is not None and rendered != prompt:
                raise SystemExit(f"chat template rendering differs for {name}:\n{rendered!r}\nvs\n{prompt!r}")
            if profile["llama_cpp_template"]:
                builtin = render_llama_cpp_template(profile["llama_cpp_template"], user)
                if builtin != prompt:
                    raise SystemExit(f"llama.cpp's template differs for {name}:\n{builtin!r}\nvs\n{prompt!r}")
        else:
            prompt = user
        ids = tokenize(llm, prompt, profile["bos"])
        llm.reset()
        llm.eval(ids)  # prompt in one batch
        gen = []
        steps = []
        for _ in range(N_PREDICT):
            steps.append(logits_row(llm, llm.n_tokens - 1))
            nxt = int(np.argmax(steps[-1]))
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
            "steps_sha256": rows_sha256(steps),
            "eos_at": eos_at,
            "generated_text": text,
        })
        notes.append(f"--- {name} (eos_at={eos_at})\n{text}")
    return dict(hdr, n_predict=N_PREDICT, add_bos=profile["bos"], special=True, eog_ids=eog, cases=cases), notes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, type=Path, help="GGUF file")
    ap.add_argument("--out", required=True, type=Path, help="output directory")
    ap.add_argument("--profile", choices=sorted(PROFILES), default="smollm2", help="model profile (see above)")
    ap.add_argument("--expect-sha256", help="refuse to run unless the model has this SHA-256 (default: the profile's)")
    ap.add_argument("--only", choices=["tokenize", "teacher_forced", "greedy", "long"], action="append",
                    help="generate only these files (default: all)")
    args = ap.parse_args()

    profile = PROFILES[args.profile]
    expected = (args.expect_sha256 or profile["sha256"]).lower()
    model_path = args.model.expanduser().resolve()
    sha = sha256_file(model_path)
    if sha != expected:
        print(f"error: {model_path} has sha256 {sha}, expected {expected}", file=sys.stderr)
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
    vocab_add_bos = bool(llama_cpp.llama_vocab_get_add_bos(vocab))
    if vocab_add_bos != profile["bos"]:
        print(f"error: the vocab's add_bos_token is {vocab_add_bos}, profile {args.profile} expects {profile['bos']}",
              file=sys.stderr)
        return 2
    for text, want in profile["self_check"]:
        got = list(llm.tokenize(text.encode(), add_bos=False, special=profile["self_check_special"]))
        print(f"self-check {text!r}: {'ok' if got == want else f'MISMATCH got {got} want {want}'}")

    args.out.mkdir(parents=True, exist_ok=True)
    only = set(args.only or ["tokenize", "teacher_forced", "greedy"] + (["long"] if profile["long"] else []))
    if "tokenize" in only:
        tok = make_tokenize(llm, hdr, vocab_add_bos)
        write_json(args.out / "tokenize.json", tok)
        print(f"tokenize.json: {len(tok['cases'])} cases")
    if "teacher_forced" in only:
        tf, notes = make_teacher_forced(llm, hdr, profile["bos"])
        write_json(args.out / "teacher_forced.json", tf)
        print(f"teacher_forced.json: {sum(len(d['tokens']) for d in tf['docs'])} positions")
        print("\n".join(notes))
    if "greedy" in only:
        gr, notes = make_greedy(llm, hdr, eog, profile)
        write_json(args.out / "greedy.json", gr)
        print(f"greedy.json: {len(gr['cases'])} cases")
        print("\n".join(notes))
    if "long" in only:
        lg, note = make_long(llm, hdr, profile["bos"])
        write_json(args.out / "long.json", lg)
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
