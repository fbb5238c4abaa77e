#!/usr/bin/env python3
"""Random-weight models quantized by llama.cpp's own quantizer, and llama.cpp's logits on them.

The other random-model cases (make_random_reference.py) are written block by block by our own
make_random_gguf, so their quantized blocks never came from llama.cpp. Here make_random_gguf writes one
small model in F32 (qwen2-tiny's shape with one layer, a 256-wide FFN and a tied embedding, so the
files stay small), and `llama_cpp.llama_model_quantize` turns it into every quantized type of the
issue's matrix: Q8_0, Q6_K, Q5_K_M, Q4_K_M, Q3_K_M, Q2_K, IQ4_XS, IQ4_NL, IQ3_S, IQ3_XXS and IQ2_XS, each
with llama.cpp's own choice of types by role. IQ3_XXS and IQ2_XS refuse to go without an importance
matrix; they get a uniform one (every weight matrix, every column 1.0), passed as llama.h's
llama_model_imatrix_data array. (F16 is a conversion, not a quantization: the matrix's f16 cells cover it.)
The types' arithmetic does not depend on the architecture (every architecture runs every type in the
generator-made matrix), so qwen2 carries the types; each other architecture gets one Q4_K_M file from
its own F32 model (Gemma with enough layers for a global one), so that llama.cpp's per-architecture
choices of types by role are met too.
The quantized files are model files, so they are not committed: this script writes them into the
model cache (WHITEBOX_MODELS, default ~/.cache/whitebox/models) and commits only llama.cpp's reference
data on them (random-archs/*-llamaq-*.json, with each file's SHA-256), made exactly as
make_random_reference.py makes its cases (same contexts, sequences and greedy prompts).
tests/model/test_arch_parity.cpp checks a file that is in the cache (SHA-256, then bit-identical logits)
and skips, saying so, one that is not.

Usage (llama-cpp-python 0.3.36 in a venv, as tests/reference/README.md describes):
    /tmp/lcpvenv/bin/python tests/reference/make_quantized_reference.py \\
        --make-random build/tests/make_random_gguf --out tests/reference

With --models-only the script writes the model files and leaves the reference data alone: each file
must have the SHA-256 its committed JSON names (llama.cpp's quantizer is deterministic for a given
build: same sdist, GGML_NATIVE=OFF), and a file that does not is reported and the exit status is 1.
scripts/make-test-models.sh runs it so on a machine that lacks the files (a fresh CI machine).
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_random_reference import MODELS_DIR, evaluate_case  # noqa: E402

import llama_cpp  # noqa: E402

# The F32 model every file is quantized from.
F32_ARGS = ["--shape", "qwen2-tiny", "--layers", "1", "--ff", "256", "--tied", "--quantize",
            "--type", "F32", "--embd-type", "F32", "--output-type", "F32"]
FTYPES = ["Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M", "Q2_K", "IQ4_XS", "IQ4_NL", "IQ3_S", "IQ3_XXS", "IQ2_XS"]
NEEDS_IMATRIX = {"IQ3_XXS", "IQ2_XS"}
# The F32 model's matrices (one layer, every row 256 long: n_embd 256 and FFN 256).
MATRICES = ["token_embd.weight"] + [f"blk.0.{t}.weight" for t in
                                    ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")]
ROW = 256


def uniform_imatrix():
    """llama_model_imatrix_data for every matrix, all ones, ended by an entry with a null name (the
    arrays are returned too: they must outlive the call)."""
    ones = (ctypes.c_float * ROW)(*([1.0] * ROW))
    entries = (llama_cpp.llama_model_imatrix_data * (len(MATRICES) + 1))()
    for e, name in zip(entries, MATRICES):
        e.name, e.data, e.size = name.encode(), ctypes.cast(ones, ctypes.POINTER(ctypes.c_float)), ROW
    entries[len(MATRICES)].name = None
    return entries, ones


# The other architectures: name -> the F32 model's shape arguments (each quantized to Q4_K_M only).
OTHER_ARCHS = {
    "llama31": ["--shape", "llama31-tiny", "--layers", "1"],
    "qwen3": ["--shape", "qwen3-tiny", "--layers", "1"],
    "phi3": ["--shape", "phi3-tiny", "--layers", "1"],
    "gemma2": ["--shape", "gemma2-tiny", "--embd", "256", "--layers", "2"],  # local, then global
    "gemma3": ["--shape", "gemma3-tiny", "--embd", "256", "--layers", "3"],  # two local, one global
}
F32_TAIL = ["--ff", "256", "--tied", "--quantize", "--mix", "pure", "--type", "F32", "--embd-type", "F32", "--output-type", "F32"]


def quantize(src: Path, dst: Path, ftype: str) -> None:
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{ftype}")
    params.nthread = 2
    keep = None
    if ftype in NEEDS_IMATRIX:
        keep = uniform_imatrix()
        params.imatrix = ctypes.cast(keep[0], ctypes.POINTER(llama_cpp.llama_model_imatrix_data))
    rc = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(params))
    if rc != 0:
        sys.exit(f"llama_model_quantize {ftype} failed ({rc})")


def matches_committed(gguf: Path, reference: Path) -> bool:
    """Whether the file just written is the one the committed reference data was made on."""
    want = json.loads(reference.read_text())["sha256"]
    got = hashlib.sha256(gguf.read_bytes()).hexdigest()
    if got == want:
        print(f"{gguf.name}: sha256 matches {reference.name}")
        return True
    print(f"{gguf.name}: sha256 {got} is not {want} named by {reference} (another llama.cpp build or "
          f"make_random_gguf changed); test_arch_parity will fail on it", file=sys.stderr)
    return False


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--make-random", type=Path, required=True, help="path of the built make_random_gguf")
    ap.add_argument("--out", type=Path, required=True, help="tests/reference")
    ap.add_argument("--models-only", action="store_true",
                    help="write the model files only and check them against the committed SHA-256")
    args = ap.parse_args()
    files = MODELS_DIR
    files.mkdir(parents=True, exist_ok=True)
    (args.out / "random-archs").mkdir(parents=True, exist_ok=True)
    cases = [("qwen2", F32_ARGS, ftype) for ftype in FTYPES]
    cases += [(arch, shape + F32_TAIL, "Q4_K_M") for arch, shape in OTHER_ARCHS.items()]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for arch, f32_args, ftype in cases:
            f32 = Path(tmp) / f"{arch}-f32.gguf"
            if not f32.exists():
                subprocess.run([str(args.make_random.resolve()), str(f32), *f32_args], check=True, stdout=subprocess.DEVNULL)
            name = f"{arch}-llamaq-{ftype.lower()}"
            gguf = files / f"{name}.gguf"
            quantize(f32, gguf, ftype)
            if args.models_only:
                ok &= matches_committed(gguf, args.out / "random-archs" / f"{name}.json")
                continue
            evaluate_case(name, gguf, args.out / "random-archs",
                          {"llama_quantized": {"file": f"@models/{gguf.name}", "from_make_random_gguf": f32_args,
                                               "ftype": ftype, "by": f"llama_model_quantize, llama-cpp-python "
                                                                      f"{llama_cpp.__version__}",
                                               "imatrix": "uniform (1.0)" if ftype in NEEDS_IMATRIX else None}})
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
