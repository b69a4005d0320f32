#!/usr/bin/env bash
# Compile the console's own Python source to bytecode once, ahead of its processes.
# A Python that may not write bytecode (PYTHONDONTWRITEBYTECODE, a read-only tree, another
# user) otherwise compiles every module again at each start: a console then took 12 s of
# CPU more to start, every web node, worker, beat and manage.py command paying for it.
# The dependencies are compiled by `uv sync --compile-bytecode` (the Makefile).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m compileall -q -j 0 -x '(^|/)(\.venv|var|node_modules|\.git)(/|$)' .
