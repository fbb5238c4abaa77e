#!/usr/bin/env python3
"""Make llama.cpp reference data for the engine's context shift (ContextPolicy::SHIFT).

llama.cpp shifts a full context through its low-level memory API, as its examples/main and server
do: with n_past tokens cached and n_keep kept, it removes positions [n_keep, n_keep + n_discard)
(llama_memory_seq_rm), moves the later ones down (llama_memory_seq_add by -n_discard; the next
llama_decode re-rotates their stored keys by RoPE, llama_kv_cache::build_rope_shift) and goes
on decoding at position n_past - n_discard. n_discard = (n_past - n_keep) // 2. With a quantized K
(--type-k q8_0 / q4_0) that graph takes every cell of the cache (the kept ones shifted by 0) to f32,
rotates it back by the Hadamard matrix the cache stores K rotated with (attn_rot_k), ropes it, rotates
it forward again and quantizes it back into the cache.

This script does exactly that through llama-cpp-python 0.3.36's bindings of those two functions:
a prompt is evaluated in n_batch chunks, greedy tokens (argmax of the raw logits, no EOS stop) are
decoded one per llama_decode call, and whenever the cache holds n_ctx tokens before the next token
is decoded, the context is shifted. Every step's logits row is hashed (SHA-256 of the float32 row)
so that the engine's test can check bit-identity, and the top 5 (id, logit) are kept for a readable
diff. The test (tests/model/test_context_policy.cpp) runs the engine's Session with the same
context size, batch, n_keep and prompt under ContextPolicy::SHIFT.

Usage (the commands that made the committed data):

    /tmp/lcpvenv/bin/python tests/reference/make_context_shift_reference.py --profile smollm2 \
        --model ~/.cache/whitebox/models/SmolLM2-135M-Instruct.Q4_1.gguf \
        --out tests/reference/smollm2-135m-instruct-q4_1/context_shift.json
    /tmp/lcpvenv/bin/python tests/reference/make_context_shift_reference.py --profile gemma3 \
        --model ~/.cache/whitebox/models/gemma-3-270m-Q4_K_M.gguf \
        --out tests/reference/gemma-3-270m-q4_k_m/context_shift.json
    /tmp/lcpvenv/bin/python tests/reference/make_context_shift_reference.py --profile smollm2 \
        --type-k q8_0 --type-v q8_0 --model ~/.cache/whitebox/models/SmolLM2-135M-Instruct.Q4_1.gguf \
        --out tests/reference/smollm2-135m-instruct-q4_1/context_shift_q8_0.json
    /tmp/lcpvenv/bin/python tests/reference/make_context_shift_reference.py --profile smollm2 \
        --type-k q4_0 --type-v q4_0 --model ~/.cache/whitebox/models/SmolLM2-135M-Instruct.Q4_1.gguf \
        --out tests/reference/smollm2-135m-instruct-q4_1/context_shift_q4_0.json
    /tmp/lcpvenv/bin/python tests/reference/make_context_shift_reference.py --profile gemma3 \
        --type-k q8_0 --type-v q8_0 --model ~/.cache/whitebox/models/gemma-3-270m-Q4_K_M.gguf \
        --out tests/reference/gemma-3-270m-q4_k_m/context_shift_q8_0.json

Profiles: smollm2 (n_ctx 256, a 200-token prompt, n_keep 16, 200 tokens: two shifts) and gemma3
(n_ctx 1024, a 1000-token prompt with <bos>, n_keep 10, 60 tokens: one shift, after which the
512-token sliding window of the local layers reaches back into the kept tokens). 2 threads,
n_batch = n_ubatch = 512, llama.cpp's default full-size SWA cache. The KV cache is f16 with flash
attention off unless --type-k / --type-v name a quantized type: then flash attention is on, the path
llama.cpp needs for a quantized V and the one WhiteBox follows for any quantized cache
(make_kv_quant_reference.py).
"""

from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import struct
import sys
from pathlib import Path

import numpy as np

import llama_cpp
from llama_cpp import Llama

HERE = Path(__file__).resolve().parent
CORPUS_TEACHER = HERE / "corpus" / "teacher_forced_texts.json"

N_THREADS = 2
N_BATCH = 512
# KV cache element types as llama.cpp names them; ggml type ids from ggml.h.
GGML_TYPES = {"f16": 1, "q4_0": 2, "q8_0": 8}

PROFILES = {
    "smollm2": {"sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
                "bos": False, "n_ctx": 256, "prompt_tokens": 200, "n_keep": 16, "n_predict": 200,
                "n_caches": 1},
    "gemma3": {"sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
               "bos": True, "n_ctx": 1024, "prompt_tokens": 1000, "n_keep": 10, "n_predict": 60,
               "n_caches": 2},
}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def row_sha256(row: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(row, dtype="<f4").tobytes()).hexdigest()


def cache_rows_sha256(ctx, n_caches: int) -> list:
    """The K and V rows of sequence 0 as llama.cpp holds them, in position order, hashed per layer.

    Read through llama_state_seq_get_data, whose layout is llama_context::state_seq_get_data and
    llama_kv_cache::state_write (this llama.cpp): u32 magic, i32 seq_id, then per cache (one; two for
    Gemma's, llama_kv_cache_iswa::state_write: the full-attention layers' cache, then the sliding-window
    layers', which writes only the cells inside the window) u32 n_stream, then per stream u32 cell_count,
    per cell (i32 pos, u32 n_seq_id, i32 seq_id each), u32 v_trans, u32 n_layer, per layer (i32 type,
    u64 row bytes, the K rows of the cells in cell order), then the same for V. Per cache: "swa", the
    positions [pos0, pos1) and per layer of that cache (in layer order) the SHA-256 of its K rows and of
    its V rows of positions [pos0, pos1 - 1), the ones the shift re-rotated, moved or kept.
    """
    size = llama_cpp.llama_state_seq_get_size(ctx, 0)
    buf = (ctypes.c_uint8 * size)()
    if llama_cpp.llama_state_seq_get_data(ctx, buf, size, 0) != size:
        raise SystemExit("llama_state_seq_get_data failed")
    data, off = bytes(buf), 0

    def take(fmt: str):
        nonlocal off
        vals = struct.unpack_from("<" + fmt, data, off)
        off += struct.calcsize("<" + fmt)
        return vals

    take("Ii")  # magic, seq_id
    caches = []
    for c in range(n_caches):
        (n_stream,) = take("I")
        if n_stream != 1:
            raise SystemExit(f"{n_stream} KV streams: expected 1")
        (n_cells,) = take("I")
        positions = []
        for _ in range(n_cells):
            pos, n_seq = take("iI")
            take("i" * n_seq)
            positions.append(pos)
        v_trans, n_layer = take("II")
        if v_trans:
            raise SystemExit("V is transposed")
        order = np.argsort(positions, kind="stable")
        pos0 = min(positions)
        if [positions[i] for i in order] != list(range(pos0, pos0 + n_cells)):
            raise SystemExit("the cached positions are not consecutive")
        out = {"swa": c == 1, "pos0": pos0, "pos1": pos0 + n_cells, "k_sha256": [], "v_sha256": []}
        for key in ("k_sha256", "v_sha256"):
            for _ in range(n_layer):
                _type, row_bytes = take("iQ")
                rows = [data[off + i * row_bytes: off + (i + 1) * row_bytes] for i in range(n_cells)]
                off += n_cells * row_bytes
                # The last position is the token stored after the shift: its rows come from attention whose
                # order of summation llama.cpp's cell order changes (see the engine's test), so leave it out.
                out[key].append(hashlib.sha256(b"".join(rows[i] for i in order[:-1])).hexdigest())
        caches.append(out)
    if off != size:
        raise SystemExit(f"{size - off} bytes of the state not read")
    return caches


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--profile", choices=sorted(PROFILES), required=True)
    ap.add_argument("--type-k", choices=sorted(GGML_TYPES), default="f16")
    ap.add_argument("--type-v", choices=sorted(GGML_TYPES), default="f16")
    args = ap.parse_args()
    prof = PROFILES[args.profile]
    model_path = args.model.expanduser().resolve()
    sha = sha256_file(model_path)
    if sha != prof["sha256"]:
        print(f"error: {model_path} has sha256 {sha}, expected {prof['sha256']}", file=sys.stderr)
        return 2
    n_ctx = prof["n_ctx"]
    flash = args.type_k != "f16" or args.type_v != "f16"
    llm = Llama(model_path=str(model_path), n_ctx=n_ctx, n_batch=N_BATCH, n_ubatch=N_BATCH, n_threads=N_THREADS,
                n_threads_batch=N_THREADS, n_gpu_layers=0, logits_all=True, flash_attn=flash,
                type_k=GGML_TYPES[args.type_k], type_v=GGML_TYPES[args.type_v], seed=0, verbose=False)
    mem = llama_cpp.llama_get_memory(llm._ctx.ctx)
    if not llama_cpp.llama_memory_can_shift(mem):
        print("error: llama.cpp says this context cannot shift", file=sys.stderr)
        return 2

    docs = json.loads(CORPUS_TEACHER.read_text(encoding="utf-8"))
    text = "\n\n".join(d["text"] for d in docs)
    toks = list(llm.tokenize(text.encode(), add_bos=prof["bos"], special=True))[: prof["prompt_tokens"]]
    if len(toks) != prof["prompt_tokens"]:
        raise SystemExit(f"the documents give only {len(toks)} tokens")

    n_keep = prof["n_keep"]
    llm.reset()
    llm.eval(toks)  # n_batch chunks
    steps, shifts = [], []
    extra: dict = {}
    for step in range(prof["n_predict"]):
        row = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        nxt = int(np.argmax(row))
        top = np.argsort(-row, kind="stable")[:5]
        steps.append({"token": nxt, "pos": llm.n_tokens, "sha256": row_sha256(row),
                      "top": [[int(i), float(row[i])] for i in top]})
        if llm.n_tokens >= n_ctx:
            n_past = llm.n_tokens
            n_discard = (n_past - n_keep) // 2
            if not llama_cpp.llama_memory_seq_rm(mem, 0, n_keep, n_keep + n_discard):
                raise SystemExit("llama_memory_seq_rm failed")
            llama_cpp.llama_memory_seq_add(mem, 0, n_keep + n_discard, n_past, -n_discard)
            # The Python wrapper's own bookkeeping: its next eval decodes at position n_tokens.
            kept = list(llm.input_ids[:n_keep]) + list(llm.input_ids[n_keep + n_discard:n_past])
            llm.input_ids[: len(kept)] = kept
            llm.n_tokens = n_past - n_discard
            shifts.append({"before_step": step + 1, "n_past": n_past, "n_keep": n_keep, "n_discard": n_discard})
        llm.eval([nxt])
        # The cache right after the first shift (applied by that llama_decode, which then stored one token).
        # Read only with flash attention on: its V rows are not transposed (one row per cell).
        if flash and len(shifts) == 1 and "cache_after_first_shift" not in extra:
            extra["cache_after_first_shift"] = cache_rows_sha256(llm._ctx.ctx, prof["n_caches"])
    out = {
        "generator": f"llama-cpp-python {llama_cpp.__version__}",
        "model": model_path.name,
        "sha256": sha,
        "llama_context": {"n_threads": N_THREADS, "n_ctx": n_ctx, "n_batch": N_BATCH, "n_ubatch": N_BATCH,
                          "flash_attn": flash, "type_k": args.type_k, "type_v": args.type_v, "backend": "CPU"},
        "n_keep": n_keep,
        "prompt": toks,
        "shifts": shifts,
        "steps": steps,
        **extra,
        "text": llm.detokenize([s["token"] for s in steps], special=True).decode("utf-8", errors="replace"),
    }
    args.out.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(steps)} steps, shifts {shifts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
