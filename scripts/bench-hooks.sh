#!/usr/bin/env bash
# The cost of the inspector's hooks in instructions, not seconds: decode instructions per token with no
# observer and with each `bench --capture` mode, counted by valgrind's callgrind (Debian: valgrind).
# Wall-clock tok/s on a shared VM is too noisy to resolve the hooks issue's "< 1 %"; instruction
# counts of a single-threaded run repeat to a few thousand in billions.
#
# Decode per token = (Ir of a run decoding N2 tokens - Ir of one decoding N1) / (N2 - N1): model load,
# prefill and warm-up cancel out. Single-threaded so no spinning thread-pool worker is counted.
#
#   scripts/bench-hooks.sh [BUILD_DIR]     (default build/; about 15 minutes on 2 cores)
# Environment: MODEL (default: the default model), PROMPT (8), N1 (8), N2 (24), MODES (the --capture
# modes, none first: none empty attention candidates layers).
set -euo pipefail
build=${1:-build}
cli=$build/app/whitebox-cli
[ -x "$cli" ] || { echo "bench-hooks: $cli not found (build first)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "bench-hooks: needs valgrind (apt install valgrind)" >&2; exit 1; }
prompt=${PROMPT:-8} n1=${N1:-8} n2=${N2:-24}
model_args=()
[ -n "${MODEL:-}" ] && model_args=(-m "$MODEL")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ir() {  # ir MODE N: total instructions of one bench run
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$cli" bench "${model_args[@]}" -t 1 \
        -p "$prompt" -n "$2" -r 1 --capture "$1" >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; exit 1; }
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/log"
}

echo "| observer (--capture) | decode instructions per token | vs none |"
echo "|---|---|---|"
base=""
for mode in ${MODES:-none empty attention candidates layers}; do
    a=$(ir "$mode" "$n1")
    b=$(ir "$mode" "$n2")
    per=$(((b - a) / (n2 - n1)))
    [ -z "$base" ] && base=$per
    echo "| $mode | $per | $(awk -v p="$per" -v b="$base" 'BEGIN { printf "%+.4f %%", (p - b) * 100 / b }') |"
done
