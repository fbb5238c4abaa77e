#!/usr/bin/env bash
# Configures and builds WhiteBox into build/ (Release, Ninja). Extra arguments go to cmake's configure.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${WB_BUILD_DIR:-$root/build}"
jobs="${WB_JOBS:-$(nproc)}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j "$jobs"
