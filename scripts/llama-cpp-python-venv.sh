#!/usr/bin/env bash
# A venv with llama-cpp-python built from the pinned sdist, for the scripts that need llama.cpp itself:
# scripts/make-test-models.sh (llama.cpp's quantizer) and scripts/interop-llama-server.py (its
# OpenAI-compatible server). Nothing of llama.cpp is committed: the sdist comes from PyPI, pinned by
# SHA-256 in scripts/llama-cpp-python.sha256 (the same file scripts/bench-llamabench.py builds
# llama-bench from), and the venv lives in ~/.cache/whitebox/llama-cpp-python.
# Built with GGML_NATIVE=OFF (AVX/AVX2/FMA/F16C), as the committed reference data was made
# (tests/reference/README.md), once: about 10 minutes on 2 cores. Prints the venv's python on stdout;
# progress and errors on stderr; exit status 1 when it cannot be built.
#   scripts/llama-cpp-python-venv.sh [EXTRA]   EXTRA: also install llama-cpp-python's optional
#                                              dependencies of that name (server)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/whitebox"
venv="$cache/llama-cpp-python"
read -r sdist_sha sdist_file < "$root/scripts/llama-cpp-python.sha256"
version="${sdist_file#llama_cpp_python-}"
version="${version%.tar.gz}"
sdist_dir="$cache/llama-bench"  # where scripts/bench-llamabench.py keeps the same sdist
log="$cache/llama-cpp-python-build.log"
mkdir -p "$cache" "$sdist_dir"

if ! "$venv/bin/python" -c "import llama_cpp" 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  sdist="$sdist_dir/$sdist_file"
  if ! echo "$sdist_sha  $sdist" | sha256sum --check --status 2>/dev/null; then
    rm -f "$sdist"
    "$venv/bin/pip" download -q --no-deps --no-binary :all: -d "$sdist_dir" "llama-cpp-python==$version" >&2
    echo "$sdist_sha  $sdist" | sha256sum --check --status \
      || { rm -f "$sdist"; echo "llama-cpp-python-venv: $sdist_file does not have the pinned SHA-256" >&2; exit 1; }
  fi
  echo "llama-cpp-python-venv: building llama-cpp-python $version (GGML_NATIVE=OFF, once; log: $log)" >&2
  launcher=""
  command -v ccache >/dev/null && launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache"
  if ! CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_CURL=OFF $launcher" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      "$venv/bin/pip" install -q "$sdist" > "$log" 2>&1; then
    tail -20 "$log" >&2
    echo "llama-cpp-python-venv: building llama-cpp-python failed (log: $log)" >&2
    rm -rf "$venv"
    exit 1
  fi
fi
if [ $# -gt 0 ]; then
  # The installed version satisfies the requirement, so pip adds only the extra's dependencies.
  "$venv/bin/pip" install -q "llama-cpp-python[$1]==$version" >&2 \
    || { echo "llama-cpp-python-venv: installing llama-cpp-python[$1] failed" >&2; exit 1; }
fi
echo "$venv/bin/python"
