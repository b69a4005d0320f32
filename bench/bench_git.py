"""git_status and git_diff: the tool call from check to result, per backend.

- "before": what the tools did until git ran through the launcher: on the
  subprocess backend, one git process to list the repository's config, a
  second for the command;
- the tools as they are, on the subprocess backend and on the namespace
  backend (the version_control default now): one launcher process that checks
  the repository and its config and then becomes git.

Each figure is ``tool.run`` (or the two runs of "before") on a small real
repository with one changed file; the REST/worker path in front of it is the
same for all and measured by bench_pipeline. Prints one JSON object per line.
Bounded: a fixed number of runs per figure and a time budget per figure.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools_app.builtin.base import ToolContext
from tools_app.builtin.git import git_diff, git_status
from tools_app.builtin.git_hardening import HARDENING_ENV, HARDENING_OPTIONS
from tools_app.sandbox.identity import DEFAULT_SANDBOX_USER, resolve_identity
from tools_app.sandbox.namespace import NamespaceSandbox
from tools_app.sandbox.protocol import Owner, SandboxBackend, SandboxSpec, WorkspaceMount
from tools_app.sandbox.subprocess import SubprocessSandbox
from tools_app.sandbox.workspace import grant_workspace

RUNS = 60
WARMUP = 3
BUDGET_SECONDS = 60.0
GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "PATH": "/usr/bin:/bin",
    "HOME": "/nonexistent",
}


def measure(action: Callable[[], object]) -> list[float]:
    """Milliseconds per run after warm-up, within the time budget."""
    for _ in range(WARMUP):
        action()
    samples: list[float] = []
    end = time.monotonic() + BUDGET_SECONDS
    for _ in range(RUNS):
        start = time.perf_counter()
        action()
        samples.append((time.perf_counter() - start) * 1000)
        if time.monotonic() > end:
            break
    return samples


def emit(figure: str, samples: list[float], note: str) -> None:
    ordered = sorted(samples)
    print(
        json.dumps(
            {
                "figure": figure,
                "unit": "ms",
                "p50": round(statistics.median(samples), 3),
                "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3),
                "note": note,
            }
        ),
        flush=True,
    )


def make_workspace(root: Path) -> Path:
    repo = root / "proj"
    repo.mkdir(parents=True)

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    for index in range(20):
        (repo / f"file{index}.txt").write_text(f"line {index}\n" * 50)
    git("add", ".")
    git("commit", "-q", "-m", "first")
    (repo / "file3.txt").write_text("changed\n")
    grant_workspace(root, resolve_identity(DEFAULT_SANDBOX_USER, backend="bench"), writable=True)
    return root


def context(workspace: Path, backend: SandboxBackend) -> ToolContext:
    return ToolContext(
        agent_id="bench",
        agent_name="bench",
        workspace=workspace,
        sandbox=backend,
        owner=Owner("bench"),
        sub_constraints=MappingProxyType({"git": "full"}),
    )


def before(workspace: Path, backend: SandboxBackend, args: tuple[str, ...]) -> Callable[[], None]:
    """The former form: ``env HARDENING git config --list``, then the command."""
    env_words = tuple(f"{k}={v}" for k, v in HARDENING_ENV.items())
    prefix = ("env", *env_words, "git", "--no-pager", *HARDENING_OPTIONS)
    prefix += ("--git-dir=.git", "--work-tree=.")

    def run() -> None:
        for command in (("config", "--local", "--null", "--list"), args):
            spec = SandboxSpec(
                argv=(*prefix, *command),
                workspace=WorkspaceMount(workspace),
                cwd="proj",
                timeout_seconds=30,
            )
            result = backend.run(spec)
            if result.exit_code != 0:
                raise SystemExit(f"before {command}: {result.stderr}")

    return run


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="synthorg-bench-git-"))
    root.chmod(0o755)
    if os.geteuid() == 0:
        script = Path(__file__).resolve().parents[1] / "docker" / "ensure-sandbox-user.sh"
        subprocess.run(["sh", str(script)], check=True, capture_output=True)
    try:
        workspace = make_workspace(root / "ws")
        subprocess_backend = SubprocessSandbox()
        namespace_backend = NamespaceSandbox()
        commands = {
            "git_status": (git_status, ("status", "--porcelain=v1", "--branch")),
            "git_diff": (git_diff, ("diff", "--no-ext-diff", "--no-textconv", "--no-color")),
        }
        for name, (tool, args) in commands.items():
            samples = measure(before(workspace, subprocess_backend, args))
            emit(f"{name} before (subprocess)", samples, "config list + command: 2 processes")
            for label, backend in (
                ("subprocess", subprocess_backend),
                ("namespace", namespace_backend),
            ):
                ctx = context(workspace, backend)

                def call(tool: object = tool, ctx: ToolContext = ctx) -> None:
                    tool.run(ctx, {"path": "proj"})  # type: ignore[attr-defined]

                samples = measure(call)
                emit(f"{name} ({label})", samples, "launcher: checked config, one process")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
