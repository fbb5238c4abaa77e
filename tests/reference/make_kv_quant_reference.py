#!/usr/bin/env python3
"""Make llama.cpp reference data for a quantized KV cache (q8_0 / q4_0 keys and values).

The same model files, profiles, documents and greedy prompts as make_reference.py (whose helpers
this imports), evaluated by llama.cpp through llama-cpp-python with the KV cache types set
(llama_context_params.type_k / type_v) and flash attention ON: llama.cpp refuses a quantized V
without it, and with it its CPU backend runs ggml_compute_forward_flash_attn_ext_f16_one_chunk,
the arithmetic WhiteBox's CPU backend follows for a quantized cache
(core/engine/backend_cpu_attention_flash.cpp). Kept short so the ctest suite reading it takes
seconds: the first DOCS teacher-forced documents and N_PREDICT greedy tokens per prompt.

Usage (the exact commands used for the committed data):

    /tmp/lcpvenv/bin/python tests/reference/make_kv_quant_reference.py \\
        --model ~/.cache/whitebox/models/SmolLM2-135M-Instruct.Q4_1.gguf \\
        --out tests/reference/smollm2-135m-instruct-q4_1/kv_quant.json

    /tmp/lcpvenv/bin/python tests/reference/make_kv_quant_reference.py --profile gemma3 \\
        --model ~/.cache/whitebox/models/gemma-3-270m-Q4_K_M.gguf \\
        --out tests/reference/gemma-3-270m-q4_k_m/kv_quant.json

Output: one JSON file with "configs", one per (type_k, type_v) in CONFIGS, each holding
    teacher_forced   as teacher_forced.json's docs (tokens, per-position argmax / logsumexp /
                     top-N log-probs, logits_sha256 over the document's float32 rows);
    greedy           as greedy.json's cases (prompt_ids, N_PREDICT greedy tokens, steps_sha256).
and llama_context (threads 2, n_ctx 1024, n_batch = n_ubatch 512, flash attention on, CPU).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_reference as mr  # noqa: E402
from llama_cpp import Llama  # noqa: E402
import llama_cpp  # noqa: E402

# (type_k, type_v) as llama.cpp names them; ggml type ids from ggml.h.
GGML_TYPES = {"f16": 1, "q4_0": 2, "q8_0": 8}
CONFIGS = [("q8_0", "q8_0"), ("q4_0", "q4_0"), ("f16", "q8_0")]
DOCS = 2          # teacher-forced documents (the first ones of corpus/teacher_forced_texts.json)
N_PREDICT = 24    # greedy tokens per prompt


def teacher_forced(llm: Llama, bos: bool) -> list[dict]:
    docs = []
    for d in json.loads(mr.CORPUS_TEACHER.read_text(encoding="utf-8"))[:DOCS]:
        toks = mr.tokenize(llm, d["text"], bos)
        llm.reset()
        llm.eval(toks)  # one batch (<= n_batch), fresh cache
        rows = [mr.logits_row(llm, i) for i in range(len(toks))]
        docs.append({
            "name": d["name"],
            "tokens": toks,
            "logits_sha256": mr.rows_sha256(rows),
            "positions": [mr.distribution(r)[0] for r in rows],
        })
    return docs


def greedy(llm: Llama, profile: dict) -> list[dict]:
    cases = []
    for name, chat, user in mr.GREEDY_CASES:
        prompt = profile["chat"].format(prompt=user) if chat else user
        ids = mr.tokenize(llm, prompt, profile["bos"])
        llm.reset()
        llm.eval(ids)  # prompt in one batch, then one token per decode call
        gen, steps = [], []
        for _ in range(N_PREDICT):
            steps.append(mr.logits_row(llm, llm.n_tokens - 1))
            gen.append(int(np.argmax(steps[-1])))
            llm.eval([gen[-1]])
        cases.append({"name": name, "prompt_ids": ids, "generated": gen, "steps_sha256": mr.rows_sha256(steps)})
    return cases


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, type=Path, help="GGUF file")
    ap.add_argument("--out", required=True, type=Path, help="output JSON file")
    ap.add_argument("--profile", choices=sorted(mr.PROFILES), default="smollm2")
    args = ap.parse_args()
    profile = mr.PROFILES[args.profile]
    model_path = args.model.expanduser().resolve()
    sha = mr.sha256_file(model_path)
    if sha != profile["sha256"]:
        print(f"error: {model_path} has sha256 {sha}, expected {profile['sha256']}", file=sys.stderr)
        return 2
    out = {
        "generator": f"llama-cpp-python {llama_cpp.__version__}",
        "model": model_path.name,
        "sha256": sha,
        "llama_context": {"n_threads": mr.N_THREADS, "n_ctx": mr.N_CTX, "n_batch": mr.N_BATCH,
                          "n_ubatch": mr.N_BATCH, "flash_attn": True, "backend": "CPU"},
        "top_n": mr.TOP_N, "add_bos": profile["bos"], "n_predict": N_PREDICT,
        "configs": [],
    }
    for type_k, type_v in CONFIGS:
        llm = Llama(model_path=str(model_path), n_ctx=mr.N_CTX, n_batch=mr.N_BATCH, n_ubatch=mr.N_BATCH,
                    n_threads=mr.N_THREADS, n_threads_batch=mr.N_THREADS, n_gpu_layers=0, logits_all=True,
                    flash_attn=True, type_k=GGML_TYPES[type_k], type_v=GGML_TYPES[type_v], seed=0, verbose=False)
        cfg = {"type_k": type_k, "type_v": type_v, "teacher_forced": teacher_forced(llm, profile["bos"]),
               "greedy": greedy(llm, profile)}
        out["configs"].append(cfg)
        n_pos = sum(len(d["tokens"]) for d in cfg["teacher_forced"])
        print(f"K {type_k} V {type_v}: {n_pos} teacher-forced positions, {len(cfg['greedy'])} greedy prompts")
        del llm
    mr.write_json(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
