#!/usr/bin/env bash
# The sanitizer passes of the test suite (issue #18), each in its own build directory with only what
# it runs:
#   1. AddressSanitizer + UBSan (halt on the first error, leak detection on): the engine's unit tests,
#      the fuzz targets' replays, and a short model subset (sessions, hooks, tokenizer parity, the
#      random-architecture parity suite);
#   2. ThreadSanitizer: the thread pool, the session's stop and live-parameter paths (test_session),
#      and the app's inference worker on its own thread.
# Needs the fetched models (scripts/fetch-models.sh --all). Run by scripts/test.sh after ctest.
#   scripts/test-sanitizers.sh [asan|tsan]...   (default: both)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="${WB_JOBS:-$(nproc)}"
passes=("$@")
[ ${#passes[@]} -gt 0 ] || passes=(asan tsan)

asan_tests=(test_fp16 test_thread_pool test_gguf test_tokenizer test_quant test_quant_iq test_sampling
  test_top_logits test_chat test_kv_cache test_stop_strings test_fused_matmul test_random_gemma3
  test_dequant_parts test_q8_parts test_attention_capture test_token_inspection fuzz_gguf_replay fuzz_jinja_replay
  test_server_api fuzz_server_request_replay
  test_session test_hooks test_tokenizer_parity fuzz_tokenizer_replay test_arch_parity)
tsan_tests=(test_thread_pool test_session test_inference_worker)
# Under TSan a model runs ~30x slower, so of the model tests only the functions whose threads meet:
# stop from another thread, live parameters, the worker's stop paths.
tsan_functions=("test_session stopFromAnotherThread liveParametersApplyToTheNextToken"
  "test_inference_worker stopEndsTheReplyMidway stopRequestedBeforeTheRequestStartsSkipsThePrefill")

# build_pass NAME CMAKE_FLAG TARGETS...: configure build-NAME and build the targets' executables.
build_pass() {
  local name="$1" flag="$2"
  shift 2
  cmake -S "$root" -B "$root/build-$name" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWB_CUDA=OFF "$flag" >/dev/null
  # The arch parity suite runs make_random_gguf.
  cmake --build "$root/build-$name" -j "$jobs" --target "$@" make_random_gguf
}

# ctest_pass NAME TESTS...: the named ctest tests of build-NAME.
ctest_pass() {
  local build="$root/build-$1"
  shift
  local regex
  regex="^($(IFS='|'; echo "$*"))\$"
  (cd "$build" && ctest --output-on-failure --timeout 3000 -R "$regex")
}

run_asan() {
  build_pass asan -DWB_SANITIZE=ON "${asan_tests[@]}"
  ctest_pass asan "${asan_tests[@]}"
}

run_tsan() {
  build_pass tsan -DWB_TSAN=ON "${tsan_tests[@]}"
  ctest_pass tsan test_thread_pool
  local line
  for line in "${tsan_functions[@]}"; do
    read -r -a cmd <<< "$line"
    echo "sanitizers: TSan ${cmd[*]}"
    (cd "$root/build-tsan" && QT_QPA_PLATFORM=offscreen "tests/${cmd[0]}" "${cmd[@]:1}")
  done
}

export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# Qt's own threads (the event dispatcher, QThread start-up) are not instrumented: the reports in the
# suppressions file are inside Qt, not between our threads.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/tsan.supp"
for p in "${passes[@]}"; do
  case "$p" in
    asan) echo "sanitizers: ASan + UBSan"; run_asan ;;
    tsan) echo "sanitizers: TSan"; run_tsan ;;
    *) echo "test-sanitizers: unknown pass '$p' (asan, tsan)" >&2; exit 2 ;;
  esac
done
