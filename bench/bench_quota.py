"""Workspace quota cost: measuring a workspace, and a writing call with and without the guard.

Prints one JSON object per line: {"figure", "unit", "p50", "p95", "note"}.
The guard measures the workspace before and after every writing call, so its
cost grows with the number of entries: measured for workspaces of 10, 1 000 and
10 000 files, and as the added latency of `true` through the namespace backend
with the guard around it (1 000-file workspace). Runs as root (the sandbox user
must be able to enter the workspace). Bounded: a fixed number of runs per figure
and a time budget per figure.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import emit_row, p50_p95_row, time_runs
from bench.measure import lower_pct_3 as p
from tools_app.quota.guard import WorkspaceQuotaGuard
from tools_app.quota.usage import workspace_usage
from tools_app.sandbox.backends.namespace import NamespaceSandbox
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.protocol import MountMode, SandboxSpec, WorkspaceMount

SIZES = (10, 1000, 10_000)
FILES_PER_DIRECTORY = 100
RUNS = 100
QUOTA = 1024**3
BUDGET_SECONDS = 60.0


def measure(action: Callable[[], object], runs: int) -> list[float]:
    """Milliseconds per run, after two warm-up runs, within the time budget."""
    return time_runs(action, runs, warmup=2, budget_seconds=BUDGET_SECONDS)


def emit(figure: str, samples: list[float], note: str) -> None:
    emit_row(p50_p95_row(figure, samples, note))


def make_workspace(root: Path, files: int) -> Path:
    workspace = root / f"ws-{files}"
    workspace.mkdir(mode=0o777)
    for index in range(files):
        directory = workspace / f"d{index // FILES_PER_DIRECTORY}"
        directory.mkdir(mode=0o777, exist_ok=True)
        (directory / f"f{index}.txt").write_bytes(b"x" * 100)
    workspace.chmod(0o777)
    return workspace


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="synthorg-bench-quota-", dir="/tmp"))
    os.chmod(root, 0o755)
    try:
        workspaces = {files: make_workspace(root, files) for files in SIZES}
        for files, workspace in workspaces.items():
            samples = measure(functools.partial(workspace_usage, workspace), RUNS)
            emit(f"quota measure {files} files", samples, "one walk of the workspace")
        workspace = workspaces[1000]
        spec = SandboxSpec(
            argv=("true",), workspace=WorkspaceMount(workspace, MountMode.READ_WRITE)
        )
        backend = NamespaceSandbox()
        try:
            bare = measure(lambda: backend.run(spec), RUNS)
            guarded_backend = WorkspaceQuotaGuard(backend, quota_bytes=QUOTA)
            guarded = measure(lambda: guarded_backend.run(spec), RUNS)
        except SandboxError as exc:
            print(json.dumps({"figure": "quota guard", "error": exc.reason}), flush=True)
            return
        finally:
            backend.close()
        emit("namespace true, no quota", bare, "1 000-file workspace, read-write")
        emit(
            "namespace true, quota guard",
            guarded,
            f"+{p(guarded, 0.5) - p(bare, 0.5):.1f} ms p50 over no quota (two walks)",
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
