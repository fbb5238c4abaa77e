#!/usr/bin/env bash
# The whole test suite from a clean clone: system packages, build, models (fetched, and the
# llama.cpp-quantized ones made: make-test-models.sh), then the passes:
#   ctest  every ctest test of the normal (Release) build;
#   asan   AddressSanitizer + UBSan: unit tests, fuzz replays, a short model subset (test-sanitizers.sh);
#   tsan   ThreadSanitizer: thread pool, session stop / live parameters, the worker (test-sanitizers.sh);
#   fuzz   each libFuzzer target for WB_FUZZ_SECONDS (default 30) seconds (fuzz.sh), from the ASan tree.
# Every pass runs even when an earlier one failed; the end says which passed and which failed, with
# their times, and the exit status is 1 if any failed (a sanitizer failure also names its tree and
# test). Extra arguments go to ctest.
# WB_TEST_PASSES picks passes; the default is all four (each phase's time on the 2-core machine:
# docs/benchmarks.md). asan runs before fuzz, which reuses its tree.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
read -r -a passes <<< "${WB_TEST_PASSES:-ctest asan tsan fuzz}"
bash "$root/scripts/bootstrap.sh"
bash "$root/scripts/build.sh"
bash "$root/scripts/fetch-models.sh" --all
# The llama.cpp-quantized test models: made once per machine (building llama-cpp-python, ~10 minutes).
bash "$root/scripts/make-test-models.sh" "${WB_BUILD_DIR:-$root/build}"

run_pass() {
  case "$1" in
    ctest) (cd "${WB_BUILD_DIR:-$root/build}" && ctest --output-on-failure --timeout 1500 "${@:2}") ;;
    asan) bash "$root/scripts/test-sanitizers.sh" asan ;;
    tsan) bash "$root/scripts/test-sanitizers.sh" tsan ;;
    fuzz) bash "$root/scripts/fuzz.sh" "${WB_FUZZ_SECONDS:-30}" ;;
    *) echo "test.sh: unknown pass '$1' (ctest, asan, tsan, fuzz)" >&2; return 2 ;;
  esac
}

passed=() failed=()
for p in "${passes[@]}"; do
  echo "==== test.sh: pass $p"
  start=$SECONDS
  if run_pass "$p" "$@"; then
    passed+=("$p ($((SECONDS - start)) s)")
  else
    failed+=("$p ($((SECONDS - start)) s)")
    echo "==== test.sh: pass $p FAILED" >&2
  fi
done
echo "==== test.sh: passed: ${passed[*]:-none}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "==== test.sh: FAILED: ${failed[*]}" >&2
  exit 1
fi
