#!/usr/bin/env python3
"""Writes vocab_samplers.json: what llama.cpp's own grammar and DRY samplers keep over SmolLM2's whole
vocabulary, for test_vocab_sampler_parity.cpp to compare WhiteBox's GrammarConstraint and DrySampler
against. The two stages that need the model's token texts (a grammar matches pieces, DRY's sequence
breakers are found by text), which llama_samplers.py's vocabulary-free cases cannot check.

    /tmp/lcpvenv/bin/python tests/reference/make_vocab_sampler_reference.py [MODEL.gguf] [OUT.json]

llama.cpp through llama-cpp-python's low-level API, the model loaded vocabulary-only.

Grammar: per case, a GBNF grammar and a text that follows it, tokenized by llama.cpp (no special
tokens). Before each token of the text, and after the last, llama.cpp's grammar sampler is applied to
the whole vocabulary with every logit 0; the survivors (logit not -inf) are recorded as their count,
the SHA-256 of their ids in order as little-endian int32, and the ids themselves when there are at
most 400; then the token is accepted into the grammar. The script checks that each token of the text
survives before accepting it.

DRY: per case, a history of real token ids (a looping text with the default sequence breakers in it),
DRY's settings with llama.cpp's default breakers ["\\n", ":", "\\"", "*"], and random logits over a
candidate list of the history's ids and a few others; `after` is the logit of each candidate after DRY.
"""
import ctypes
import hashlib
import json
import math
import os
import random
import struct
import sys
import types


def import_llama_cpp():
    # Normally the installed package. Where only the sdist and a libllama built from its vendored
    # llama.cpp are at hand (the llama-bench build of scripts/bench-llamabench.py), WB_LLAMA_CPP_SRC
    # names the sdist's llama_cpp folder and LLAMA_CPP_LIB_PATH the library's: the ctypes module is
    # then loaded without the package's __init__ (which needs numpy and the high-level API's
    # dependencies, unused here).
    src = os.environ.get("WB_LLAMA_CPP_SRC")
    if not src:
        import llama_cpp
        return llama_cpp, llama_cpp.__version__
    pkg = types.ModuleType("llama_cpp")
    pkg.__path__ = [src]
    sys.modules["llama_cpp"] = pkg
    import llama_cpp.llama_cpp as low
    with open(os.path.join(src, "__init__.py")) as f:
        version = next(line.split('"')[1] for line in f if line.startswith("__version__"))
    return low, version


l, VERSION = import_llama_cpp()

BREAKERS = ["\n", ":", "\"", "*"]

GRAMMAR_CASES = [
    ("yes_no", 'root ::= ("yes" | "no") "."', "yes."),
    ("json_object",
     'root ::= "{" ws "\\"name\\":" ws str "," ws "\\"age\\":" ws [0-9]{1,3} ws "}"\n'
     'str ::= "\\"" [^"\\\\\\x00-\\x1F]{1,20} "\\""\n'
     'ws ::= [ \\n]{0,4}',
     '{\n  "name": "Max",\n  "age": 12\n}'),
    ("list", 'root ::= ("- " [^\\n]{1,40} "\\n"){2}', "- Sleep early.\n- Read a book.\n"),
    ("unicode", 'root ::= [\\u00c0-\\u017f a-z]{1,10} "!"', "bonjour é!"),
    ("numbers", 'root ::= num ("," " "? num)*\nnum ::= "-"? [0-9]+ ("." [0-9]+)?', "12, -3.5,400"),
]

DRY_CASES = [
    # multiplier, base, allowed_length, last_n, text
    (0.8, 1.75, 2, 64, "a whispered oath, a whispered oath, a whispered oath, a whispered"),
    (1.0, 2.0, 2, -1, "Name: Bob\nName: Bob\nName: Bob\nName:"),
    # The breaker ":" bounds the repeat: " one two three" is penalised by its length after "x:", not by
    # the longer run through "x:" that a DRY without breakers would find.
    (0.8, 1.75, 2, 48, "x: one two three four, x: one two three four, x: one two three"),
]


def tokenize(vocab, text):
    raw = text.encode()
    buf = (l.llama_token * 4096)()
    n = l.llama_tokenize(vocab, raw, len(raw), buf, 4096, False, False)
    assert n > 0, text
    return list(buf[:n])


def apply(smpl, ids, logits):
    n = len(ids)
    data = (l.llama_token_data * n)()
    for i, (t, v) in enumerate(zip(ids, logits)):
        data[i].id = t
        data[i].logit = v
        data[i].p = 0.0
    arr = l.llama_token_data_array(data=ctypes.cast(data, ctypes.POINTER(l.llama_token_data)), size=n,
                                   selected=-1, sorted=False)
    l.llama_sampler_apply(smpl, ctypes.byref(arr))
    return [(arr.data[i].id, arr.data[i].logit) for i in range(arr.size)]


def survivors(smpl, n_vocab):
    out = apply(smpl, list(range(n_vocab)), [0.0] * n_vocab)
    return [t for t, lg in out if lg != -math.inf]


def grammar_case(vocab, n_vocab, name, grammar, text):
    smpl = l.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
    assert smpl, "llama.cpp refused the grammar: " + grammar
    tokens = tokenize(vocab, text)
    steps = []
    for i in range(len(tokens) + 1):
        kept = survivors(smpl, n_vocab)
        step = {"n_kept": len(kept), "sha256": hashlib.sha256(struct.pack("<%di" % len(kept), *kept)).hexdigest()}
        if len(kept) <= 400:
            step["kept"] = kept
        steps.append(step)
        if i < len(tokens):
            assert tokens[i] in kept, "%s: token %d does not survive" % (name, tokens[i])
            l.llama_sampler_accept(smpl, tokens[i])
    l.llama_sampler_free(smpl)
    return {"name": name, "grammar": grammar, "text": text, "tokens": tokens, "steps": steps}


def dry_case(vocab, rng, multiplier, base, allowed, last_n, text):
    history = tokenize(vocab, text)
    enc = [ctypes.c_char_p(b.encode()) for b in BREAKERS]
    arr = (ctypes.c_char_p * len(enc))(*enc)
    smpl = l.llama_sampler_init_dry(vocab, multiplier, base, allowed, last_n, arr, len(enc))
    for t in history:
        l.llama_sampler_accept(smpl, t)
    ids = sorted(set(history) | {rng.randrange(0, 49152) for _ in range(16)})
    logits = [ctypes.c_float(rng.uniform(-3.0, 3.0)).value for _ in ids]
    out = dict(apply(smpl, ids, logits))
    l.llama_sampler_free(smpl)
    return {"multiplier": multiplier, "base": base, "allowed_length": allowed, "last_n": last_n,
            "breakers": BREAKERS, "text": text, "history": history, "ids": ids, "logits": logits,
            "after": [out[t] for t in ids]}


def main():
    model_path = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser(
        "~/.cache/whitebox/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    out_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "smollm2-135m-instruct-q4_1", "vocab_samplers.json")
    l.llama_backend_init()
    mp = l.llama_model_default_params()
    mp.vocab_only = True
    model = l.llama_model_load_from_file(model_path.encode(), mp)
    assert model, model_path
    vocab = l.llama_model_get_vocab(model)
    n_vocab = l.llama_vocab_n_tokens(vocab)
    rng = random.Random(1717)
    grammar = [grammar_case(vocab, n_vocab, *c) for c in GRAMMAR_CASES]
    dry = [dry_case(vocab, rng, *c) for c in DRY_CASES]
    with open(model_path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    meta = {"generator": "tests/reference/make_vocab_sampler_reference.py", "llama_cpp_python": VERSION,
            "model": os.path.basename(model_path), "sha256": sha, "n_vocab": n_vocab}
    with open(out_path, "w") as f:
        json.dump({"meta": meta, "grammar": grammar, "dry": dry}, f, separators=(",", ":"))
        f.write("\n")
    print("wrote", out_path)


if __name__ == "__main__":
    main()
