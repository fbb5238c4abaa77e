#!/usr/bin/env bash
# The llama.cpp-quantized test models (issue 13), made on a machine that lacks them.
#
# test_arch_parity compares the engine with llama.cpp on random-weight models that llama.cpp's own
# quantizer wrote (tests/reference/make_quantized_reference.py). Those files are model weights, so they
# are not committed; their reference data is, with each file's SHA-256. This script makes them in the
# model cache ($WHITEBOX_MODELS, default ~/.cache/whitebox/models) when one is missing or differs:
#   1. llama-cpp-python in a venv (scripts/llama-cpp-python-venv.sh: built once from the pinned sdist
#      with GGML_NATIVE=OFF, as the reference data was made; about 10 minutes on 2 cores);
#   2. make_quantized_reference.py --models-only: our make_random_gguf writes the F32 models, llama.cpp
#      quantizes them, and each file must have the SHA-256 its committed JSON names.
# When every file is there with the right hash it costs a fraction of a second and prints nothing. Run
# by scripts/test.sh after the build (it needs build/tests/make_random_gguf). Exit status 1 when a file
# cannot be made or has another hash (the parity test would fail on it anyway; this says why).
#   scripts/make-test-models.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-${WB_BUILD_DIR:-$root/build}}"
models="${WHITEBOX_MODELS:-$HOME/.cache/whitebox/models}"
log="${XDG_CACHE_HOME:-$HOME/.cache}/whitebox/make-test-models.log"

# Every file the committed reference data names, with its hash ("sha256  path" lines for sha256sum).
wanted() {
  local json file sha
  for json in "$root"/tests/reference/random-archs/*-llamaq-*.json; do
    file="$(basename "$json" .json).gguf"
    sha="$(grep -m1 -o '"sha256":"[0-9a-f]\{64\}"' "$json" | cut -d'"' -f4)"
    echo "$sha  $models/$file"
  done
}

if wanted | sha256sum --check --status 2>/dev/null; then exit 0; fi
mkdir -p "$models" "$(dirname "$log")"
echo "make-test-models: making the llama.cpp-quantized test models in $models"
python="$(bash "$root/scripts/llama-cpp-python-venv.sh")"
if ! WHITEBOX_MODELS="$models" "$python" "$root/tests/reference/make_quantized_reference.py" --models-only \
    --make-random "$build/tests/make_random_gguf" --out "$root/tests/reference" > "$log" 2>&1; then
  grep -E "is not|Error|error|failed" "$log" | tail -20 >&2 || true
  echo "make-test-models: the quantized models could not be made as the reference data was (log: $log)" >&2
  exit 1
fi
wanted | sha256sum --check --status
echo "make-test-models: $(wanted | wc -l) files made, each with the SHA-256 of its reference data"
