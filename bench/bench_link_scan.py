"""Cost of the hard-link scan ``shell_command`` runs before starting anything.

A workspace shaped like a checked-out project (directories of 20 files each, a
few levels deep) of 1,000 and 10,000 files, on the machine's temporary file
system, warm in the page cache (the scan runs right after the previous call
touched the same tree). Each figure is one whole scan (``multiply_linked``),
p50/p95/p99 wall time over repeated scans, printed as one JSON line for
``bench/run.py``. Run alone with ``uv run python bench/bench_link_scan.py``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.measure import quantile_row
from tools_app.builtin.file_system.links import multiply_linked

SIZES = (1_000, 10_000)
FILES_PER_DIRECTORY = 20
RUNS = 50
MAX_ENTRIES = 200_000


def _workspace(root: Path, files: int) -> None:
    for index in range(files):
        directory = root / f"d{index // 400}" / f"e{index // FILES_PER_DIRECTORY}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"f{index}.py").write_text("x = 1\n")


def main() -> None:
    for files in SIZES:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            _workspace(root, files)
            # The figure is never the cost of doing nothing: a link is found when present.
            os.link(next(root.rglob("*.py")), root / "linked.py")
            assert multiply_linked(str(root), max_entries=MAX_ENTRIES)
            os.unlink(root / "linked.py")
            times = []
            for _ in range(RUNS):
                started = time.perf_counter()
                found = multiply_linked(str(root), max_entries=MAX_ENTRIES)
                times.append((time.perf_counter() - started) * 1000)
                assert found == []
            note = f"{RUNS} scans, warm cache, {FILES_PER_DIRECTORY} files a dir"
            print(json.dumps(quantile_row(f"hard-link scan, {files} files", times, note)))


if __name__ == "__main__":
    main()
