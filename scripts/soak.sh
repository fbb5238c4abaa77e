#!/usr/bin/env bash
# The soak of issue #18 item 4: 1,000 generations through one inference worker (the model kept
# loaded, New chat every 8), then 50 model switches (the default model and Gemma 3 270M in turn);
# resident memory and open file descriptors must stay within 5 % of their value after the warm-up.
# Builds worker_soak in build/ (scripts/build.sh's tree) and runs it; arguments go to worker_soak
# (--generations N --switches M --new-chat-every K --tokens T --tolerance F). ctest runs a short
# version (worker_soak_short). Needs the fetched models (scripts/fetch-models.sh --all).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${WB_BUILD_DIR:-$root/build}"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "${WB_JOBS:-$(nproc)}" --target worker_soak
exec "$build/tests/worker_soak" "$@"
