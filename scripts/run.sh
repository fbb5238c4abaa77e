#!/usr/bin/env bash
# The main job from a clean clone: system packages, build, the default model, then start WhiteBox.
# Until the desktop app lands (issue #5) this starts the interactive terminal chat.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/bootstrap.sh"
bash "$root/scripts/build.sh"
bash "$root/scripts/fetch-models.sh"
exec "${WB_BUILD_DIR:-$root/build}/app/whitebox-cli" chat "$@"
