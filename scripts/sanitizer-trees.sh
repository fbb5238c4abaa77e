# Sourced by scripts/test-sanitizers.sh and scripts/fuzz.sh: the sanitizer build trees, configured
# the same way by both (a second configure with the same options changes nothing). -O1 with line
# tables: readable stack traces at a fraction of a full optimised, fully debug-annotated build's
# compile time; no CUDA plugin (no sanitizer runs it). Sets WB_ASAN_TREE and WB_TSAN_TREE.
# The sanitizers' run-time options: stop at the first report (and fail), leaks are errors.
WB_ASAN_TREE="${WB_ASAN_BUILD_DIR:-$root/build-asan}"
WB_TSAN_TREE="${WB_TSAN_BUILD_DIR:-$root/build-tsan}"
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# Qt and GLib are not instrumented: tests/tsan.supp ignores their own libc calls only (it says why),
# and the self-check's Qt canary proves a race between our threads still fails the pass.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/tsan.supp"

# ASan + UBSan with clang, every object also instrumented for libFuzzer (WB_FUZZ): the same tree runs
# the ASan tests and the fuzz targets.
configure_asan_tree() {
  CC=clang CXX=clang++ cmake -S "$root" -B "$WB_ASAN_TREE" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" -DWB_FUZZ=ON -DWB_CUDA=OFF >/dev/null
}

# ThreadSanitizer with gcc.
configure_tsan_tree() {
  cmake -S "$root" -B "$WB_TSAN_TREE" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" -DWB_TSAN=ON -DWB_CUDA=OFF >/dev/null
}
