#!/usr/bin/env bash
# Installs the Debian 12 packages that building, running and testing WhiteBox need.
# Idempotent: installs only what is missing and prints nothing when everything is present.
#   scripts/bootstrap.sh
set -euo pipefail

# clang, libclang-rt-14-dev and llvm are for the sanitizer and fuzz passes of scripts/test.sh (gcc's
# ASan/UBSan/TSan runtimes come with g++, libgcc-12-dev): libFuzzer and clang's ASan/UBSan runtimes
# are in libclang-rt-14-dev (only a recommendation of clang, which --no-install-recommends skips);
# llvm gives llvm-symbolizer for readable sanitizer stack traces.
packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  qt6-base-dev qt6-base-dev-tools libgl-dev
  libqcustomplot-dev libqcustomplot2.1-qt6
  libsentencepiece-dev
  libcpp-httplib-dev nlohmann-json3-dev
  python3 python3-pip python3-venv
  xvfb xauth
  clang libclang-rt-14-dev llvm
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "bootstrap: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
