#!/usr/bin/env python3
"""Writes grammar_greedy.json: llama.cpp's greedy replies from SmolLM2 under a few GBNF grammars, for
test_grammar_generation.cpp to compare WhiteBox's against token by token.

    /tmp/lcpvenv/bin/python tests/reference/make_grammar_reference.py [MODEL.gguf]

llama.cpp 0.3.36 through llama-cpp-python's low-level API: a chain of llama.cpp's own grammar sampler
and greedy, sampled after each decode (llama_sampler_sample accepts the token into the grammar); the
reply ends at an end-of-generation token or after MAX_TOKENS. The prompt is the ChatML text SmolLM2's
template makes, tokenized by llama.cpp with special tokens parsed; its ids are stored with the reply,
so the test does not depend on WhiteBox's tokenizer.
"""
import ctypes
import json
import os
import sys

import llama_cpp as l

MAX_TOKENS = 48

CASES = [
    ("yes_no", 'root ::= ("yes" | "no") "."', "Is the sea salty? Answer yes or no."),
    ("number", 'root ::= "The answer is " [0-9]+ "."', "What is 7 times 6?"),
    ("cities", 'root ::= city ("," " "? city){2} "."\ncity ::= [A-Z] [a-z]{2,12}', "Name three cities in France."),
    ("json_object",
     'root ::= "{" ws "\\"name\\":" ws str "," ws "\\"age\\":" ws [0-9]{1,3} ws "}"\n'
     'str ::= "\\"" [^"\\\\\\x00-\\x1F]{1,20} "\\""\n'
     'ws ::= [ \\n]{0,4}  # a little room for the model\'s own layout',
     "Describe a dog as JSON with a name and an age."),
    ("list", 'root ::= ("- " [^\\n]{1,40} "\\n"){3}', "Give me three tips for sleeping well, as a list."),
    ("unicode", 'root ::= [\\u00c0-\\u017f a-z]{1,10} "!"', "Say hello in French."),
]


def chatml(user):
    return "<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n"


def tokenize(vocab, text):
    raw = text.encode()
    buf = (l.llama_token * 4096)()
    n = l.llama_tokenize(vocab, raw, len(raw), buf, 4096, False, True)
    assert n > 0, text
    return list(buf[:n])


def greedy_under(model, vocab, grammar, prompt):
    cparams = l.llama_context_default_params()
    cparams.n_ctx = 512
    cparams.n_batch = 512
    cparams.n_threads = cparams.n_threads_batch = 2
    # As the other references: without flash attention (WhiteBox's f16 cache follows that path).
    cparams.flash_attn_type = l.LLAMA_FLASH_ATTN_TYPE_DISABLED
    ctx = l.llama_init_from_model(model, cparams)
    chain = l.llama_sampler_chain_init(l.llama_sampler_chain_default_params())
    grammar_sampler = l.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
    assert grammar_sampler, "llama.cpp refused the grammar: " + grammar
    l.llama_sampler_chain_add(chain, grammar_sampler)
    l.llama_sampler_chain_add(chain, l.llama_sampler_init_greedy())
    ids = (l.llama_token * len(prompt))(*prompt)
    assert l.llama_decode(ctx, l.llama_batch_get_one(ids, len(prompt))) == 0
    out, ended = [], False
    for _ in range(MAX_TOKENS):
        tok = l.llama_sampler_sample(chain, ctx, -1)
        if l.llama_vocab_is_eog(vocab, tok):
            ended = True
            break
        out.append(tok)
        one = (l.llama_token * 1)(tok)
        assert l.llama_decode(ctx, l.llama_batch_get_one(one, 1)) == 0
    l.llama_sampler_free(chain)
    l.llama_free(ctx)
    return out, ended


def piece(vocab, tok):
    buf = ctypes.create_string_buffer(256)
    n = l.llama_token_to_piece(vocab, tok, buf, 256, 0, True)
    return buf.raw[:n]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser(
        "~/.cache/whitebox/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    l.llama_backend_init()
    model = l.llama_model_load_from_file(path.encode(), l.llama_model_default_params())
    vocab = l.llama_model_get_vocab(model)
    cases = []
    for name, grammar, user in CASES:
        prompt = tokenize(vocab, chatml(user))
        reply, ended = greedy_under(model, vocab, grammar, prompt)
        text = b"".join(piece(vocab, t) for t in reply).decode("utf-8", "replace")
        print(f"{name}: {text!r} ({'eog' if ended else 'max tokens'})")
        cases.append({"name": name, "grammar": grammar, "prompt": prompt, "tokens": reply, "ended_by_eog": ended,
                      "text": text})
    out = {"generator": "tests/reference/make_grammar_reference.py", "llama_cpp_python": l.__version__,
           "model": os.path.basename(path), "max_tokens": MAX_TOKENS, "cases": cases}
    dest = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grammar_greedy.json")
    with open(dest, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
