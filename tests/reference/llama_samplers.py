#!/usr/bin/env python3
"""Writes llama_samplers.json: what llama.cpp's own samplers (through llama-cpp-python's low-level
API) keep from fixed logits, for test_sampler_parity.cpp to compare WhiteBox's stages against.

    python3 tests/reference/llama_samplers.py [MODEL.gguf]

The model (default: SmolLM2 in ~/.cache/whitebox/models) is loaded vocabulary-only: DRY's
constructor wants a vocabulary even when it is given no sequence breakers.
"""
import ctypes
import json
import math
import os
import random
import sys

import llama_cpp as l


def make_array(logits):
    n = len(logits)
    data = (l.llama_token_data * n)()
    for i, v in enumerate(logits):
        data[i].id = i
        data[i].logit = v
        data[i].p = 0.0
    arr = l.llama_token_data_array(data=ctypes.cast(data, ctypes.POINTER(l.llama_token_data)), size=n,
                                   selected=-1, sorted=False)
    return arr, data


def read_array(arr):
    out = [(arr.data[i].id, arr.data[i].logit, arr.data[i].p) for i in range(arr.size)]
    return out, arr.selected


def apply(smpl, logits):
    arr, keep = make_array(logits)
    l.llama_sampler_apply(smpl, ctypes.byref(arr))
    return read_array(arr)


def f32(x):
    return ctypes.c_float(x).value


def random_logits(rng, n, spread):
    return [f32(rng.uniform(-spread, spread)) for _ in range(n)]


def zipf_logits(n, s):
    return [f32(-s * math.log(i + 1)) for i in range(n)]


def main():
    model_path = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser(
        "~/.cache/whitebox/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    l.llama_backend_init()
    mp = l.llama_model_default_params()
    mp.vocab_only = True
    model = l.llama_model_load_from_file(model_path.encode(), mp)
    vocab = l.llama_model_get_vocab(model)
    rng = random.Random(17)
    cases = {"top_n_sigma": [], "xtc": [], "mirostat": [], "mirostat_v2": [], "dry": [], "logit_bias": []}

    for n_sigma in (0.5, 1.0, 2.0):
        logits = random_logits(rng, 200, 6.0)
        logits[5] = -math.inf
        # llama.cpp's top-nσ masks logits and leaves p unset; the draw that follows it in a chain
        # (dist) writes the softmax over the survivors, which is the p it draws from.
        smpl = l.llama_sampler_chain_init(l.llama_sampler_chain_default_params())
        l.llama_sampler_chain_add(smpl, l.llama_sampler_init_top_n_sigma(n_sigma))
        l.llama_sampler_chain_add(smpl, l.llama_sampler_init_dist(1234))
        out, _ = apply(smpl, logits)
        kept = sorted([i, p] for i, lg, p in out if lg != -math.inf)
        cases["top_n_sigma"].append({"n": n_sigma, "logits": [None if v == -math.inf else v for v in logits],
                                     "kept": kept})
        l.llama_sampler_free(smpl)

    for threshold in (0.05, 0.1, 0.2):
        logits = zipf_logits(50, 1.3)
        rng.shuffle(logits)
        # probability 1: the sampler always acts, so its random draw does not matter.
        smpl = l.llama_sampler_init_xtc(1.0, threshold, 1, 1234)
        out, _ = apply(smpl, logits)
        cases["xtc"].append({"threshold": threshold, "logits": logits,
                             "kept": [[i, p] for i, _, p in out]})
        l.llama_sampler_free(smpl)

    for version in ("mirostat", "mirostat_v2"):
        tau, eta = 3.0, 0.2
        smpl = (l.llama_sampler_init_mirostat(300, 42, tau, eta, 100) if version == "mirostat"
                else l.llama_sampler_init_mirostat_v2(42, tau, eta))
        steps = []
        for step in range(6):
            logits = zipf_logits(300, 1.1 + 0.1 * step)
            rng.shuffle(logits)
            out, sel = apply(smpl, logits)
            steps.append({"logits": logits, "kept": [[i, p] for i, _, p in out], "selected": out[sel][0]})
            l.llama_sampler_accept(smpl, out[sel][0])
        cases[version].append({"tau": tau, "eta": eta, "steps": steps})
        l.llama_sampler_free(smpl)

    # DRY without sequence breakers (they need WhiteBox's tokenizer; a unit test has none).
    for multiplier, base, allowed, last_n, history in (
            (0.8, 1.75, 2, 64, [1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3]),
            (1.0, 2.0, 1, 8, [5, 6, 5, 6, 5, 6, 7, 5, 6, 5]),
            (0.5, 1.5, 3, 32, [9, 8, 7, 6, 9, 8, 7, 6, 9, 8, 7, 6, 9, 8, 7]),
            (2.0, 3.0, 2, 64, list(range(10, 20)) * 5)):
        smpl = l.llama_sampler_init_dry(vocab, multiplier, base, allowed, last_n, None, 0)
        for t in history:
            l.llama_sampler_accept(smpl, t)
        logits = random_logits(rng, 64, 3.0)
        out, _ = apply(smpl, logits)
        cases["dry"].append({"multiplier": multiplier, "base": base, "allowed_length": allowed, "last_n": last_n,
                             "history": history, "logits": logits,
                             "after": [lg for _, lg, _ in sorted(out)]})
        l.llama_sampler_free(smpl)

    biases = [(3, -math.inf), (7, 2.5), (11, -1.25)]
    arr_t = (l.llama_logit_bias * len(biases))(*[l.llama_logit_bias(t, b) for t, b in biases])
    smpl = l.llama_sampler_init_logit_bias(32, len(biases), arr_t)
    logits = random_logits(rng, 32, 4.0)
    out, _ = apply(smpl, logits)
    cases["logit_bias"].append({"biases": [[t, None if b == -math.inf else b] for t, b in biases], "logits": logits,
                                "after": [None if lg == -math.inf else lg for _, lg, _ in sorted(out)]})
    l.llama_sampler_free(smpl)

    meta = {"generator": "tests/reference/llama_samplers.py", "llama_cpp_python": l.__version__}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llama_samplers.json")
    with open(path, "w") as f:
        json.dump({"meta": meta, **cases}, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", path)


if __name__ == "__main__":
    main()
