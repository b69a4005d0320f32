#!/usr/bin/env bash
# Print the path of a usable uv, installing it from PyPI into var/tools when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if command -v uv >/dev/null 2>&1; then command -v uv; exit 0; fi
if [ -x var/tools/bin/uv ]; then echo var/tools/bin/uv; exit 0; fi
# var/ is the console's private state: what is made there is private from the start.
umask 077
mkdir -p var
if ! python3 -m venv var/tools >/dev/null 2>&1; then
  rm -rf var/tools
  echo "uv is missing and python3 cannot create a virtual environment:" >&2
  echo "  install python3-venv (apt-get install python3-venv) or uv itself (pip install uv)" >&2
  echo false; exit 0
fi
var/tools/bin/pip install --quiet --disable-pip-version-check uv >&2
# venv and pip copy their files' modes past the umask: make them private too, so the
# console's first start has nothing under var/ to repair.
chmod -R go-rwx var/tools
echo var/tools/bin/uv
