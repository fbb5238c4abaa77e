#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang, ASan and UBSan into build-asan/ (the ASan pass's
# tree, scripts/sanitizer-trees.sh: its objects carry the fuzzer's coverage hooks) and runs each
# for SECONDS (default 60) from a working corpus in the cache (seeded from the committed corpus, kept
# between runs). A crash, leak, timeout or sanitizer report fails the run and names the input to add
# to tests/fuzz/regressions/NAME/.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 600 fuzz_gguf
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_gguf fuzz_tokenizer fuzz_jinja fuzz_server_request fuzz_conversation fuzz_grammar fuzz_json_schema)
work="${WB_FUZZ_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/whitebox/fuzz}"
jobs="${WB_JOBS:-$(nproc)}"

# shellcheck source=scripts/sanitizer-trees.sh
source "$root/scripts/sanitizer-trees.sh"
build="$WB_ASAN_TREE"
configure_asan_tree
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
status=0
for t in "${targets[@]}"; do
  corpus="$work/corpus/$t"
  artifacts="$work/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  cp -n "$root/tests/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null || true
  # The Jinja target is also seeded with the real chat templates of the reference data.
  [ "$t" != fuzz_jinja ] || cp -n "$root/tests/reference/templates/"*.jinja "$corpus/"
  echo "fuzz: $t for ${seconds}s (corpus $corpus)"
  # -timeout: one input may take 10 s at most (a hang is a bug); -rss_limit_mb: no input may make the
  # process grow past 4 GB (a huge allocation from a header count is a bug).
  if ! (cd "$artifacts" && "$build/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
        -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" \
        "$root/tests/fuzz/regressions/$t" > "$artifacts/last-run.log" 2>&1); then
    echo "fuzz: $t FAILED; the input is in $artifacts (log: $artifacts/last-run.log):" >&2
    grep -E "ERROR|SUMMARY|Test unit written" "$artifacts/last-run.log" | head -5 >&2 || true
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$artifacts/last-run.log" | sed "s/^/fuzz: $t /" || true
  fi
done
exit $status
