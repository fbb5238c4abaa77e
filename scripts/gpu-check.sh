#!/usr/bin/env bash
# One prepared run on the GPU machine (../shared/docs/GPU.md): builds the engine, the CUDA plugin,
# whitebox-cli and the Qt-free tests for the local GPU, runs the GPU tests and the CUDA benchmarks on
# random-weight models, and leaves the logs and a summary table (written after every step, so a run
# cut short still reports what it did) in $OUT.
#
# Needs Debian's libsentencepiece0, libsentencepiece-dev, libprotobuf-lite32 and nlohmann-json3-dev (the
# CLI's --json output) .debs in build-debs/ (fetched on a dev machine: mkdir -p build-debs && cd build-debs &&
#  apt-get download libsentencepiece0 libsentencepiece-dev libprotobuf-lite32 nlohmann-json3-dev), carried along:
#   run(command="bash scripts/gpu-check.sh", carry=["build-debs"], timeout_s=480)
# The steps run most important first (build, GPU tests, small-model benchmarks, then the 7B model);
# on 16 cores expect about 1.5 min to build, 2-3 min of tests (the CPU references of the whole-model
# tests take most of it; the quantized-KV kernel tests run first, capped at 2 min), 3 min of benchmarks. The whole run keeps to BUDGET_S seconds
# (default 450, under the device call's 480): each step's limit is cut to the time left, and steps
# that no longer fit get a "SKIPPED (no time)" row instead of being killed half-way.
# A rerun almost always lands on a fresh machine (a warm one is given back seconds after a call), so
# it builds again; ONLY (an extended regex over step names, e.g. ONLY='bench|model') limits it to
# the steps that matter, after the configure and build that everything needs.
#
# Environment: OUT (results; default ./gpu-check-out), WB_CUDA_ARCHS (default 90), JOBS (default nproc),
# BUDGET_S (default 450), ONLY (default: every step).
# Files in $OUT (the device tool returns at most 8): env.log build.log models.log ctest.log bench.log
# bandwidth.log summary.md
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/gpu-check-out}
ARCHS=${WB_CUDA_ARCHS:-90}
JOBS=${JOBS:-$(nproc)}
BUILD=$ROOT/build-gpu
# The .debs are unpacked here, never into /. A fixed path beside the build (git-ignored), not a
# temporary one: CMake caches the library paths it found, and a rerun must still find them.
DEPS=$ROOT/build-gpu-deps
PREFIX=$DEPS/prefix
SCRATCH=$(mktemp -d)
MODELS=$SCRATCH/models
mkdir -p "$OUT" "$PREFIX" "$DEPS/bin" "$MODELS"
trap 'rm -rf "$SCRATCH"' EXIT

SUMMARY_ROWS=()
BENCH_ROWS=()
TEST_LINES=()
DEADLINE=$(($(date +%s) + ${BUDGET_S:-450}))
ONLY=${ONLY:-}

write_summary() {
    {
        echo "# gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
        echo
        echo "| step | result | seconds | log |"
        echo "|---|---|---|---|"
        printf '%s\n' "${SUMMARY_ROWS[@]}"
        if ((${#BENCH_ROWS[@]})); then
            echo
            echo "| model | backend | prefill tok/s | decode tok/s | weight MB/token | decode GB/s | of copy bw |"
            echo "|---|---|---|---|---|---|---|"
            printf '%s\n' "${BENCH_ROWS[@]}"
        fi
        if ((${#TEST_LINES[@]})); then
            echo
            echo '```'
            printf '%s\n' "${TEST_LINES[@]}"
            echo '```'
        fi
    } >"$OUT/summary.md"
}

# step NAME LOG TIMEOUT CMD...: runs CMD with a time limit (cut to what is left of BUDGET_S), appends
# its output to $OUT/LOG and a row to the summary. Returns CMD's status; 125 for a step not run.
step() {
    local name=$1 log=$2 limit=$3
    shift 3
    local t0 rc left
    t0=$(date +%s)
    if [[ -n $ONLY && $name != configure && $name != build && ! $name =~ $ONLY ]]; then
        SUMMARY_ROWS+=("| $name | not run (ONLY='$ONLY') | 0 | |")
        write_summary
        return 125
    fi
    left=$((DEADLINE - t0))
    if ((left < 15)); then
        SUMMARY_ROWS+=("| $name | SKIPPED (no time left of BUDGET_S) | 0 | |")
        write_summary
        return 125
    fi
    ((limit > left)) && limit=$left
    echo "=== $name: $*" >>"$OUT/$log"
    timeout "$limit" "$@" >>"$OUT/$log" 2>&1
    rc=$?
    local result=ok
    if ((rc == 124)); then result="TIMEOUT (${limit}s)"; elif ((rc != 0)); then result="FAILED (rc $rc)"; fi
    SUMMARY_ROWS+=("| $name | $result | $(($(date +%s) - t0)) | $log |")
    write_summary
    return "$rc"
}

# ---- environment ----
{
    echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
    nvidia-smi || true
    nvcc --version || true
    cmake --version | head -1
    echo "cores: $(nproc)"
    for tool in nvcc cmake ninja pkg-config dpkg python3; do echo "$tool: $(command -v "$tool" || echo MISSING)"; done
    # cuBLAS comes with the toolkit; without it configure stops at the CUDA::cublas target.
    cuda_root=$(dirname "$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")")
    ls "$cuda_root"/include/cublas_v2.h "$cuda_root"/lib64/libcublas.so* 2>&1 | head -4
} >"$OUT/env.log" 2>&1

# ---- sentencepiece from the carried .debs ----
shopt -s nullglob
missing=()
for pkg in libsentencepiece0 libsentencepiece-dev libprotobuf-lite32 nlohmann-json3-dev; do
    found=("$ROOT"/build-debs/"$pkg"_*.deb)
    ((${#found[@]})) || missing+=("$pkg")
done
if ((${#missing[@]})); then
    SUMMARY_ROWS+=("| unpack .debs | FAILED: build-debs/ lacks ${missing[*]} (fetch them, carry build-debs) | 0 | env.log |")
    write_summary
    exit 1
fi
# dpkg -x where dpkg exists; otherwise Python opens the .deb (an ar archive) and its data.tar.xz.
unpack_deb() {
    if command -v dpkg >/dev/null; then
        dpkg -x "$1" "$2"
    else
        python3 - "$1" "$2" <<'PY'
import io, sys, tarfile
deb, dest = sys.argv[1], sys.argv[2]
data = open(deb, "rb").read()
assert data[:8] == b"!<arch>\n", deb + ": not an ar archive"
pos = 8
while pos + 60 <= len(data):
    name, size = data[pos:pos + 16].decode().strip().rstrip("/"), int(data[pos + 48:pos + 58])
    body = data[pos + 60:pos + 60 + size]
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(dest)
        break
    pos += 60 + size + (size & 1)
else:
    sys.exit(deb + ": no data.tar member")
PY
    fi
}
for deb in "$ROOT"/build-debs/*.deb; do unpack_deb "$deb" "$PREFIX" >>"$OUT/env.log" 2>&1 || {
    SUMMARY_ROWS+=("| unpack .debs | FAILED: $(basename "$deb") (see env.log) | 0 | env.log |")
    write_summary
    exit 1
}; done
LIBDIR=$PREFIX/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if command -v pkg-config >/dev/null; then
    export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
    export PKG_CONFIG_SYSROOT_DIR=$PREFIX
else
    # No pkg-config on the machine: a stand-in that answers CMake's FindPkgConfig for the one module
    # the build asks for, with sentencepiece.pc's values (prefix=/usr moved under $PREFIX).
    echo "pkg-config: not installed, using a stand-in for sentencepiece" >>"$OUT/env.log"
    cat >"$DEPS/bin/pkg-config" <<SH
#!/usr/bin/env bash
out=()
for a in "\$@"; do
    case "\$a" in
        --version) echo 0.29.2; exit 0 ;;
        --print-errors | --short-errors | --static | --exists) ;;
        --modversion) out+=(0.1.97) ;;
        --variable=prefix) out+=("$PREFIX/usr") ;;
        --variable=includedir) out+=("$PREFIX/usr/include") ;;
        --variable=libdir) out+=("$LIBDIR") ;;
        --variable=*) out+=("") ;;
        --libs-only-l) out+=(-lsentencepiece -lsentencepiece_train) ;;
        --libs-only-L) out+=("-L$LIBDIR") ;;
        --libs) out+=("-L$LIBDIR" -lsentencepiece -lsentencepiece_train) ;;
        --cflags-only-I | --cflags) out+=("-I$PREFIX/usr/include") ;;
        --libs-only-other | --cflags-only-other) ;;
        sentencepiece) ;;
        -*) echo "pkg-config stand-in: unsupported option \$a" >&2; exit 1 ;;
        *) echo "Package \$a was not found (pkg-config stand-in knows only sentencepiece)" >&2; exit 1 ;;
    esac
done
echo "\${out[*]}"
SH
    chmod +x "$DEPS/bin/pkg-config"
    export PATH=$DEPS/bin:$PATH
fi

# ---- build ----
# WB_SERVER=OFF: the server's HTTP library (cpp-httplib) is not among the carried .debs. nlohmann-json is
# (header-only), found through CMAKE_PREFIX_PATH in the unpacked tree.
step configure build.log 120 cmake -G Ninja -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWB_GUI=OFF \
    "-DCMAKE_PREFIX_PATH=$PREFIX/usr" -DWB_SERVER=OFF -DWB_CUDA=ON "-DWB_CUDA_ARCHS=$ARCHS" || exit 1
step build build.log 360 cmake --build "$BUILD" -j "$JOBS" || exit 1
CLI=$BUILD/app/whitebox-cli
GEN=$BUILD/tests/make_random_gguf

# ---- tests: the GPU tests and the CPU check of the kernels' dequantization ----
# Per-test limit, so one hung kernel leaves time for the rest and the benchmarks.
# The quantized KV cache's kernel-level tests (issue #20) first, in a step of their own: they have
# never run on a GPU, and the general step below may be cut short by the budget. test_gpu_kv's CPU
# references take about what test_gpu_kv_cpu takes (~20 s of CPU time on a dev machine).
# The whole-model kv= tests (test_gpu_model_*_kv_*, CPU references of whole models) and
# test_gpu_kv_cpu (label unit) run in the general step. Same log.
KV_TESTS='test_kv_quant_parts|test_gpu_kv$'
step "ctest quantized KV" ctest.log 120 ctest --test-dir "$BUILD" -L "gpu|unit" -R "$KV_TESTS" --timeout 100 \
    --output-on-failure -V
step "ctest -L gpu|unit" ctest.log 300 ctest --test-dir "$BUILD" -L "gpu|unit" -E "$KV_TESTS" --timeout 200 \
    --output-on-failure -V
# Which tests passed or failed, in the summary: enough to decide on a rerun from the output's tail.
mapfile -t TEST_LINES < <(grep -E '^ *[0-9]+/[0-9]+ Test' "$OUT/ctest.log" 2>/dev/null | sed 's/^ *//')
write_summary
# ctest counts a skip as a pass: on the GPU machine a skipped GPU test means the device was not seen.
n_skipped=$(grep -c 'SKIPPED: no CUDA device' "$OUT/ctest.log")
if ((n_skipped > 0)); then
    SUMMARY_ROWS+=("| gpu tests | SKIPPED ($n_skipped): no CUDA device seen | 0 | ctest.log |")
    write_summary
fi

# ---- copy bandwidth of this GPU (the yardstick for decode GB/s) ----
COPY_GBPS=""
step "copy bandwidth" bandwidth.log 60 python3 - <<'PY'
import torch
n = 1 << 30
x = torch.empty(n, dtype=torch.uint8, device="cuda")
y = torch.empty_like(x)
for _ in range(3):
    y.copy_(x)
torch.cuda.synchronize()
times = []
for _ in range(20):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); y.copy_(x); e.record(); e.synchronize()
    times.append(s.elapsed_time(e))
ms = sorted(times)[len(times) // 2]
print(f"device-to-device copy of 1 GiB: median {ms:.3f} ms")
# Read + write traffic, the same kind of figure as bytes read per token over decode time.
print(f"COPY_GBPS {2 * n / (ms / 1e3) / 1e9:.1f}")
PY
COPY_GBPS=$(sed -n 's/^COPY_GBPS //p' "$OUT/bandwidth.log" | tail -1)

# ---- random-weight models (shapes of SmolLM2-135M Q4_1, Gemma 3 270M Q4_K_M, Llama-2-7B Q4_0) ----
SMOL=$MODELS/random-smollm2-135m.gguf
GEMMA=$MODELS/random-gemma3-270m.gguf
L7B=$MODELS/random-llama2-7b-q4_0.gguf
step "model smollm2-135m" models.log 120 "$GEN" "$SMOL" --shape smollm2-135m

# ---- benchmarks ----
# bench_row MODEL_LABEL BACKEND: the last JSON line of bench.log as a summary row.
cat >"$SCRATCH/bench_row.py" <<'PY'
import json, os, sys
label, backend, line = sys.argv[1], sys.argv[2], sys.argv[3]
j = json.loads(line)
copy = os.environ.get("COPY_GBPS") or ""
gbps = j["decode_weight_gbps"]
frac = "%.0f %%" % (100 * gbps / float(copy)) if copy else "n/a"
print("| %s | %s | %.0f | %.1f | %.1f | %.1f | %s |" % (label, backend, j["prefill_tps"]["mean"],
      j["decode_tps"]["mean"], j["weight_bytes_per_token"] / 1e6, gbps, frac))
PY
bench_row() {
    local label=$1 backend=$2 json row
    json=$(grep '^{' "$OUT/bench.log" | tail -1)
    row=$(COPY_GBPS="$COPY_GBPS" python3 "$SCRATCH/bench_row.py" "$label" "$backend" "$json" 2>/dev/null) ||
        row="| $label | $backend | (no result) | | | | |"
    BENCH_ROWS+=("$row")
    write_summary
}

if step "bench smollm2 cuda" bench.log 120 "$CLI" bench -m "$SMOL" --backend cuda -p 512 -n 256 -r 3 --json; then
    bench_row "random SmolLM2-135M Q4_1" cuda
fi
# Decode without graph replay: shows what the graphs buy on the launch-bound small model.
if step "bench smollm2 cuda, graphs off" bench.log 120 env WB_CUDA_GRAPHS=0 "$CLI" bench -m "$SMOL" --backend cuda -p 512 -n 256 -r 3 --json; then
    bench_row "random SmolLM2-135M Q4_1 (graphs off)" cuda
fi
# Gemma 3 270M's shape: head_dim 256, one kv head, a 512-position window on 5 of 6 layers (the
# decode steps run past it, over released KV blocks), K-quant and legacy matrices, and a 262144-row
# output matrix that is two thirds of the weights. The file (254 MB) takes seconds to write.
if step "model gemma3-270m" models.log 120 "$GEN" "$GEMMA" --shape gemma3-270m &&
    step "bench gemma3 cuda" bench.log 120 "$CLI" bench -m "$GEMMA" --backend cuda -p 512 -n 256 -r 3 --json; then
    bench_row "random Gemma 3 270M (Q4_K_M types)" cuda
fi
# The bandwidth-bound case last: writing 3.8 GB of random blocks takes a while.
if step "model llama2-7b q4_0" models.log 180 "$GEN" "$L7B" --shape llama2-7b &&
    step "bench llama2-7b cuda" bench.log 180 "$CLI" bench -m "$L7B" --backend cuda -p 512 -n 128 -r 3 --json; then
    bench_row "random Llama-2-7B Q4_0" cuda
fi
if step "bench smollm2 cpu" bench.log 120 "$CLI" bench -m "$SMOL" --backend cpu -p 128 -n 32 -r 1 --json; then
    bench_row "random SmolLM2-135M Q4_1" "cpu ($(nproc) threads)"
fi

write_summary
cat "$OUT/summary.md"
