#!/usr/bin/env bash
# The main job from a clean clone: system packages, build, the default model, then start WhiteBox
# (the Qt desktop app; it needs a display). The terminal chat stays available as
# build/app/whitebox-cli chat.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/bootstrap.sh"
bash "$root/scripts/build.sh"
bash "$root/scripts/fetch-models.sh"
exec "${WB_BUILD_DIR:-$root/build}/app/whitebox" "$@"
