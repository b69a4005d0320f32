"""The multiprocess directory: named before any metric is made, tidied as processes end.

Pure: no Django imports (settings call it while they load).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
from pathlib import Path

ENV_NAME = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess_dir_ensure(default: Path) -> Path:
    """Name the directory every process of this node writes its metric files to.

    An operator's ``PROMETHEUS_MULTIPROC_DIR`` wins; otherwise ``default`` (under
    var/, private to the console's user). Must run before prometheus_client is
    imported: the library picks its file-backed values at import.
    """
    chosen = Path(os.environ.get(ENV_NAME) or default)
    chosen.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.environ[ENV_NAME] = str(chosen)
    # Read the pid at exit: a forked child inherits this handler.
    atexit.register(lambda: process_metrics_release(os.getpid()))
    return chosen


def process_metrics_release(pid: int) -> None:
    """Drop what only a live process may report (its live gauges), as the library asks
    of every process that exits; its counters stay summed into the totals."""
    from prometheus_client import multiprocess

    with contextlib.suppress(Exception):
        multiprocess.mark_process_dead(pid)


def multiprocess_dir_wipe(path: Path) -> None:
    """Empty the directory before a node's processes start (the library's advice:
    files of a previous run would otherwise be summed in)."""
    if path.is_dir():
        for entry in path.iterdir():
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
