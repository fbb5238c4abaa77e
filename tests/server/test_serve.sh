#!/usr/bin/env bash
# ctest test_serve_openai: whitebox-cli serve against the official openai Python client.
#   test_serve.sh WHITEBOX_CLI VENV_DIR
# The client lives in a venv of its own (made here on the first run, pinned version, from PyPI), so
# a clean clone needs only python3-venv (scripts/bootstrap.sh installs it).
set -euo pipefail
cli="$1"
venv="$2"
here="$(cd "$(dirname "$0")" && pwd)"
openai_version="3.57.0"
if ! "$venv/bin/python" -c "import openai, sys; sys.exit(openai.__version__ != '$openai_version')" 2>/dev/null; then
  echo "test_serve: installing openai==$openai_version into $venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "openai==$openai_version"
fi
exec "$venv/bin/python" "$here/test_serve_openai.py" "$cli"
