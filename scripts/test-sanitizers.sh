#!/usr/bin/env bash
# The sanitizer passes of the test suite (issue #18), each in its own build directory with only the
# targets it runs, built at -O1 with line tables (a fraction of a full build's time), without the CUDA
# plugin:
#   asan  AddressSanitizer + UBSan (halt on the first error, leak detection on), clang, in build-asan/,
#         which also holds the libFuzzer targets (WB_FUZZ: everything carries the fuzzer's coverage
#         hooks, so scripts/fuzz.sh reuses the tree instead of compiling the engine a second time): the
#         Qt-free unit tests, the fuzz targets' replays and a short model subset (a few-token
#         generation and stop on SmolLM2, the hooks, the tokenizer on the real vocabularies);
#   tsan  ThreadSanitizer, gcc, in build-tsan/: the thread pool, the session's stop and live-parameter
#         paths, the inference worker on its own thread (test_worker_threads: no widgets), and the
#         server's HTTP threads with a job executor (test_job_executor_server).
# Each phase (build, the self-check, ctest, each function list) prints its wall and CPU seconds; a
# failure names the tree, the phase and (for ctest) the tests that failed, every test still runs, and
# the exit status is 1. The self-check (tests/tools/sanitizer_canary.cpp, and under TSan
# tests/tools/sanitizer_canary_qt.cpp for the Qt Test binaries) first proves that a sanitizer finding
# does fail the pass and is named.
# Needs the fetched models (scripts/fetch-models.sh --all). Run by scripts/test.sh after ctest.
#   scripts/test-sanitizers.sh [asan|tsan]...   (default: both)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="${WB_JOBS:-$(nproc)}"
passes=("$@")
[ ${#passes[@]} -gt 0 ] || passes=(asan tsan)
# shellcheck source=scripts/sanitizer-trees.sh
source "$root/scripts/sanitizer-trees.sh"

# Every Qt-free unit test (ctest label unit, no widgets) fast enough under ASan + UBSan: the parsers of
# hostile input (GGUF, Jinja templates, Markdown, GBNF grammars, JSON Schemas, server requests, remote
# streams, conversation files, tokenizers) with their fuzz replays, the SIMD code that reads through raw
# pointers with the most index arithmetic (every quant kernel form, the tiles, the fused matmuls, the
# batched prefill attention), the samplers, the KV cache and its types, the random Gemma 3 model, chat
# formatting, stop strings and the remote client. Their libraries are already built for test_session, so
# each adds one test file to compile; together they run in ~50 s here (test_jinja_fuzz 10 s,
# test_greedy_row 9 s, test_grammar 4 s, test_random_gemma3 4 s, the rest under 3 s each).
# Left out: test_arch_parity (three random-weight architectures against llama.cpp: over 380 s under ASan
# here, where ctest's Release run takes seconds; its kernels run in test_fused_matmul and
# test_random_gemma3) and make_random_gguf_gemma3 (a tool run, not a test executable).
asan_unit=(sanitizer_canary test_gguf test_tokenizer test_jinja test_jinja_templates test_jinja_fuzz test_markdown
  test_server_api test_guarded_server test_remote_stream test_remote_client test_chat test_chat_repl test_stop_strings
  test_grammar test_json_schema test_trace_file test_sampling test_top_logits test_exp_sum test_greedy_row
  test_sampler_stages test_sampler_parity test_quant test_quant_iq test_quant_tiles test_dequant_parts test_q8_parts
  test_fused_matmul test_attention_capture test_token_inspection test_random_gemma3 test_kv_cache test_kv_types
  test_fp16 test_sha256 test_thread_pool
  fuzz_gguf_replay fuzz_jinja_replay fuzz_conversation_replay fuzz_server_request_replay fuzz_remote_stream_replay
  fuzz_grammar_replay fuzz_json_schema_replay)
# With a model: the tokenizers on the real vocabularies, the fuzz tokenizer replay, and of the session
# tests the functions that generate a few tokens, stop and reuse the cache (the whole of test_session
# runs every sampler on the model, minutes under ASan).
asan_model=(test_tokenizer_parity fuzz_tokenizer_replay)
asan_functions=("test_session prefixReuseGivesTheSameAnswer stopFromAnotherThread observerStopEndsThePrefillEvenBeforeItStarts
    liveParametersApplyToTheNextToken tokenEventsCarryTextAndProbability overLongPromptIsAnError
    tokenOutsideTheVocabularyIsAnError"
  "test_hooks")
# test_job_executor_server: the server's HTTP threads and the executor meet there (a job submitted
# and waited on by one thread, pushed to, finished or cancelled by another, the client that leaves
# mid-stream cancelling through the executor, the server stopped while jobs are held).
tsan_tests=(sanitizer_canary sanitizer_canary_qt test_thread_pool test_job_executor_server)
# Under TSan a model runs ~30x slower, so of the model tests only the functions whose threads meet:
# stop from another thread, live parameters, the worker's stop and queue paths on its own thread, and
# the GUI thread's calls during a model switch's teardown (~20 s). newChatAndModelSwitchWhileGenerating
# is left to ctest: its Gemma 3 load and reply take ~60 s under TSan, over half the pass again.
tsan_functions=("test_session stopFromAnotherThread liveParametersApplyToTheNextToken"
  "test_worker_threads stopFromTheGuiThreadEndsTheReply liveParametersApplyToTheRunningReply stopOfAQueuedRequestSkipsItsPrefill
    stopDuringAModelSwitchDoesNotWaitForTheTeardown")

# The self-check of the failure path, first in each pass: each entry TEST:KIND:TEXT has the canary TEST
# (tests/tools/sanitizer_canary*) commit the deliberate bug KIND, run as the pass runs its tests; the
# phase must fail, the output must hold the sanitizer's report (TEXT) and the FAILED line must name the
# tree and the test. A tree built without the sanitizer, run-time options that let a report through
# (no halt_on_error, leaks off) or a suppression that hides our races fail the pass here instead of
# passing it silently. The same canaries run clean in the pass's ctest list (no report on a correct
# program); WB_SANITIZER_CANARY=KIND in the environment makes that run commit the bug too, which shows
# a whole pass turning red (docs/benchmarks.md).
asan_canaries=("sanitizer_canary:heap-overflow:ERROR: AddressSanitizer: heap-buffer-overflow"
  "sanitizer_canary:use-after-free:ERROR: AddressSanitizer: heap-use-after-free"
  "sanitizer_canary:leak:ERROR: LeakSanitizer: detected memory leaks"
  "sanitizer_canary:signed-overflow:runtime error: signed integer overflow")
# The Qt canary's race has Qt frames on every stack, as every race in the Qt Test binaries would: it
# proves that tests/tsan.supp hides none of those (tests/tools/sanitizer_canary_qt.cpp).
tsan_canaries=("sanitizer_canary:data-race:WARNING: ThreadSanitizer: data race"
  "sanitizer_canary_qt:qthread-race:WARNING: ThreadSanitizer: data race")

# cpu_now: sets CPU_NOW to the user + system CPU seconds of every finished child of this shell so
# far (bash's `times`, run in this shell: in a $(...) subshell it would count the subshell's children).
cpu_now() {
  local tmp
  tmp="$(mktemp)"
  times > "$tmp"
  CPU_NOW="$(awk 'NR == 2 { split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.0f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$tmp")"
  rm -f "$tmp"
}

# phase TREE NAME COMMAND...: runs the command, prints its wall and CPU seconds (docs/benchmarks.md
# records them); on failure it names the tree and the phase that failed, and returns its status.
# A command may set failed_detail (ctest_tests: the tests that failed) for the FAILED line.
phase() {
  local tree="$1" name="$2" start=$SECONDS cpu0 rc=0
  shift 2
  failed_detail=""
  cpu_now
  cpu0=$CPU_NOW
  "$@" || rc=$?
  cpu_now
  echo "sanitizers: $tree $name: $((SECONDS - start)) s wall, $((CPU_NOW - cpu0)) CPU-s"
  if [ $rc -ne 0 ]; then
    echo "sanitizers: FAILED in the $tree tree ($(basename "$(tree_dir "$tree")")/): $name${failed_detail:+: $failed_detail} (exit $rc)" >&2
    failed=1
  fi
  return $rc
}

tree_dir() { if [ "$1" = asan ]; then echo "$WB_ASAN_TREE"; else echo "$WB_TSAN_TREE"; fi; }

# ctest_tests DIR TESTS...: the named ctest tests of the build directory; on failure failed_detail
# names the tests that failed (ctest's own list of them).
ctest_tests() {
  local build="$1" rc=0
  shift
  local regex
  regex="^($(IFS='|'; echo "$*"))\$"
  rm -f "$build/Testing/Temporary/LastTestsFailed.log"
  # Qt Test's 300 s watchdog per function is too short for the Jinja limit tests under ASan on a loaded
  # machine (seen: test_jinja's nested loops, 313 s at a load average of 15); ctest's own limit stays.
  (cd "$build" && QTEST_FUNCTION_TIMEOUT=1500000 ctest --output-on-failure --timeout 1500 -R "$regex") || rc=$?
  if [ $rc -ne 0 ] && [ -f "$build/Testing/Temporary/LastTestsFailed.log" ]; then
    failed_detail="$(cut -d: -f2- "$build/Testing/Temporary/LastTestsFailed.log" | paste -sd ' ')"
  fi
  return $rc
}

# self_check TREE: each of the tree's canaries must fail its phase with the sanitizer's report and a
# FAILED line naming the tree and the test (the phase runs in a subshell: its failure is not the pass's).
self_check() {
  local tree="$1" dir entry test rest kind report out rc bad=0
  local -n canaries="${tree}_canaries"
  dir="$(tree_dir "$tree")"
  for entry in "${canaries[@]}"; do
    test="${entry%%:*}" rest="${entry#*:}"
    kind="${rest%%:*}" report="${rest#*:}" rc=0
    out="$(export WB_SANITIZER_CANARY="$kind"; phase "$tree" ctest ctest_tests "$dir" "$test" 2>&1)" || rc=$?
    if [ $rc -ne 0 ] && grep -qF "$report" <<< "$out" &&
       grep -qF "FAILED in the $tree tree ($(basename "$dir")/): ctest: $test (exit" <<< "$out"; then
      echo "sanitizers: self-check: the deliberate $kind failed its phase with the report, named $(basename "$dir")/ and $test"
    else
      echo "sanitizers: self-check: the deliberate $kind was not caught and named in the $tree tree (exit $rc); its output:" >&2
      sed 's/^/    /' <<< "$out" >&2
      bad=1
    fi
  done
  return $bad
}

# function_tests DIR LINE: LINE is a test executable and the test functions to run (several lines
# of the source may make one LINE: read -d '' takes all of it).
function_tests() {
  local build="$1" cmd
  read -r -d '' -a cmd <<< "$2" || true
  echo "sanitizers: ${cmd[*]}"
  # Qt Test's watchdog ends a function after 300 s; under TSan on a loaded machine a model test takes longer.
  (cd "$build" && QT_QPA_PLATFORM=offscreen QTEST_FUNCTION_TIMEOUT=3000000 "tests/${cmd[0]}" "${cmd[@]:1}")
}

# build_tree TREE TARGETS...: configure the tree and build the targets (and what they need) only.
build_tree() {
  local tree="$1"
  shift
  "configure_${tree}_tree" && cmake --build "$(tree_dir "$tree")" -j "$jobs" --target "$@"
}

# run_tree TREE CTEST_TESTS_ARRAY FUNCTION_LINES_ARRAY: configure, build only what runs, run it.
run_tree() {
  local tree="$1"
  local -n tests="$2" functions="$3"
  local dir line executables=("${tests[@]}")
  dir="$(tree_dir "$tree")"
  for line in "${functions[@]}"; do executables+=("${line%% *}"); done
  # Every test runs even after one failed (the end of the log lists all that failed); a tree that
  # does not build runs nothing.
  phase "$tree" build build_tree "$tree" "${executables[@]}" || return 0
  phase "$tree" self-check self_check "$tree" || true
  phase "$tree" ctest ctest_tests "$dir" "${tests[@]}" || true
  for line in "${functions[@]}"; do phase "$tree" "${line%% *}" function_tests "$dir" "$line" || true; done
}

asan_tests=("${asan_unit[@]}" "${asan_model[@]}")
tsan_ctest=("${tsan_tests[@]}")
failed=0
for p in "${passes[@]}"; do
  case "$p" in
    asan) echo "sanitizers: ASan + UBSan ($WB_ASAN_TREE)"; run_tree asan asan_tests asan_functions ;;
    tsan) echo "sanitizers: TSan ($WB_TSAN_TREE)"; run_tree tsan tsan_ctest tsan_functions ;;
    *) echo "test-sanitizers: unknown pass '$p' (asan, tsan)" >&2; exit 2 ;;
  esac
done
exit $failed
