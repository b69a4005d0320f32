"""The file tools' runner before and after its private root, and on bubblewrap instead.

Prints one JSON object per line: {"figure", "unit", "p50", "p95", "note"}.
The runner (``python3 -I -S -c``, a ``stat`` request on stdin) through:
the subprocess backend as it ran before its private root (the host's view,
the worker's network: measured by building no plan), the subprocess backend
now (own mount, network, IPC and pid namespaces, pivoted into a root with only
the workspace, scratch and read-only system directories), and the namespace
backend (bubblewrap), the other way to confine it. Rounds alternate the three
so a busy machine weighs on each alike. Bounded: a fixed number of runs and a
time budget per figure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import lower_pct_3 as p
from bench.measure import timed_ms as timed
from tools_app.builtin.file_system.execution import RUNNER_ARGV
from tools_app.sandbox.backends import subprocess as subprocess_backend
from tools_app.sandbox.backends.namespace import NamespaceSandbox
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.protocol import MountMode, SandboxBackend, SandboxSpec, WorkspaceMount

ROUNDS = 8
RUNS_PER_ROUND = 25
BUDGET_SECONDS = 90.0
REQUEST = {"op": "stat", "anchor": "workspace", "parts": ["notes.txt"], "floor": []}


def runner(backend: SandboxBackend, spec: SandboxSpec, *, confined: bool) -> Callable[[], object]:
    plan = subprocess_backend.private_root_plan

    def run() -> object:
        if not confined:
            # As before the private root: no plan, the host's view.
            subprocess_backend.private_root_plan = lambda **_: None  # type: ignore[assignment]
        try:
            result = backend.run(spec)
        finally:
            subprocess_backend.private_root_plan = plan
        if result.exit_code != 0 or '"ok": true' not in result.stdout:
            raise SystemExit(f"{backend.name}: {result.exit_code} {result.stdout} {result.stderr}")
        return result

    return run


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="synthorg-bench-"))
    root.chmod(0o755)
    (root / "notes.txt").write_text("hello\n")
    (root / "notes.txt").chmod(0o644)
    if os.geteuid() == 0:
        script = Path(__file__).resolve().parents[1] / "docker" / "ensure-sandbox-user.sh"
        subprocess.run(["sh", str(script)], check=True, capture_output=True)
    spec = SandboxSpec(
        argv=RUNNER_ARGV,
        workspace=WorkspaceMount(root, MountMode.READ_ONLY),
        stdin=json.dumps(REQUEST).encode(),
    )
    subprocess_sandbox = SubprocessSandbox()
    figures: dict[str, Callable[[], object]] = {
        "file runner, subprocess before (host view)": runner(
            subprocess_sandbox, spec, confined=False
        ),
        "file runner, subprocess private root (now)": runner(
            subprocess_sandbox, spec, confined=True
        ),
    }
    namespace = NamespaceSandbox()
    try:
        namespace.run(spec)
        figures["file runner, namespace (bubblewrap)"] = runner(namespace, spec, confined=True)
    except SandboxError as exc:
        print(json.dumps({"figure": "file runner, namespace", "error": exc.reason}), flush=True)
    samples: dict[str, list[float]] = {name: [] for name in figures}
    end = time.monotonic() + BUDGET_SECONDS
    try:
        for action in figures.values():
            action()  # warm-up: the spawn server, the /etc copy, pooled cgroups
        for _ in range(ROUNDS):
            for name, action in figures.items():
                samples[name] += [timed(action) for _ in range(RUNS_PER_ROUND)]
            if time.monotonic() > end:
                break
    finally:
        shutil.rmtree(root, ignore_errors=True)
    before = p(samples["file runner, subprocess before (host view)"], 0.5)
    for name, values in samples.items():
        p50 = p(values, 0.5)
        note = (
            "baseline" if p50 == before else f"{p50 / before:.2f}x before, +{p50 - before:.1f} ms"
        )
        print(
            json.dumps(
                {"figure": name, "unit": "ms", "p50": p50, "p95": p(values, 0.95), "note": note}
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
