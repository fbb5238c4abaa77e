#!/usr/bin/env bash
# The whole test suite from a clean clone: system packages, build, models, then every ctest test.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/bootstrap.sh"
bash "$root/scripts/build.sh"
bash "$root/scripts/fetch-models.sh" --all
cd "${WB_BUILD_DIR:-$root/build}"
ctest --output-on-failure --timeout 1500 "$@"
