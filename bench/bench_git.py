"""git_status and git_diff: the tool call from check to result, per backend.

- "before": what the tools did until git ran through the launcher: on the
  subprocess backend, one git process to list the repository's config, a
  second for the command;
- the tools as they are, on the subprocess backend and on the namespace
  backend (the version_control default now): one launcher process that checks
  the repository and its config and then becomes git.

Each of those is ``tool.run`` (or the two runs of "before") on a small real
repository with one changed file. Then end to end, as an agent sees it: POST
with wait → result through a real daphne and one Celery worker on the
namespace queue. (version_control can no longer be configured on the
subprocess backend, so "before" exists only at the tool level.) Prints one
JSON object per line. Bounded: a fixed number of runs per figure and a time
budget per figure.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "synthorg_site.settings")

import django

django.setup()

import httpx  # noqa: E402

from bench.measure import lower_pct_3, time_runs  # noqa: E402
from common.testing import free_port, http_status, python_argv, running, wait_until  # noqa: E402
from common.vocabulary.sandbox import DEFAULT_SANDBOX_USER  # noqa: E402
from tools_app.builtin.base import ToolContext  # noqa: E402
from tools_app.builtin.git.hardening import HARDENING_ENV, HARDENING_OPTIONS  # noqa: E402
from tools_app.builtin.git.tools import git_diff, git_status  # noqa: E402
from tools_app.sandbox.backends.namespace import NamespaceSandbox  # noqa: E402
from tools_app.sandbox.backends.subprocess import SubprocessSandbox  # noqa: E402
from tools_app.sandbox.linux.identity import resolve_identity  # noqa: E402
from tools_app.sandbox.protocol import Owner, SandboxBackend, SandboxSpec, WorkspaceMount  # noqa: E402
from tools_app.sandbox.workspace import grant_workspace  # noqa: E402
from trust_app.services.agents import agent_create, workspace_grant  # noqa: E402

RUNS = 60
END_TO_END_CALLS = 40
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


def measure(action: Callable[[], object], runs: int = RUNS) -> list[float]:
    """Milliseconds per run after warm-up, within the time budget."""
    return time_runs(action, runs, warmup=WARMUP, budget_seconds=BUDGET_SECONDS)


def emit(figure: str, samples: list[float], note: str) -> None:
    print(
        json.dumps(
            {
                "figure": figure,
                "unit": "ms",
                "p50": round(statistics.median(samples), 3),
                "p95": lower_pct_3(samples, 0.95),
                "note": note,
            }
        ),
        flush=True,
    )


def make_workspace(root: Path) -> Path:
    repo = root / "proj"
    repo.mkdir(parents=True, exist_ok=True)

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


def end_to_end(commands: dict[str, tuple[object, tuple[str, ...]]]) -> None:
    """POST with wait → result through daphne and a namespace worker."""
    env = dict(os.environ, LOG_LEVEL="WARNING", SYNTHORG_AGENT_RATE_LIMIT_PER_MINUTE="1000000")
    tmp = Path(tempfile.mkdtemp(prefix="bench-git-pipeline-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    daphne = python_argv(
        "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "synthorg_site.asgi:application"
    )
    worker = python_argv(
        "-m", "celery", "-A", "synthorg_site", "worker", "-Q", "sandbox.namespace",
        "-n", f"bench-git-{os.getpid()}@localhost",
        "-l", "WARNING", "--without-gossip", "--without-mingle",
    )  # fmt: skip
    created = agent_create(
        name=f"bench-git-{os.getpid()}", access_level="elevated", autonomy="full"
    )
    workspace = Path(created.agent.workspace)
    make_workspace(workspace)
    workspace_grant(workspace)
    try:
        with (
            running(daphne, env=env, log_path=tmp / "daphne.log"),
            running(worker, env=env, log_path=tmp / "worker.log"),
            httpx.Client(
                base_url=base,
                headers={"Authorization": f"Bearer {created.token}"},
                timeout=60,
            ) as http,
        ):
            wait_until(
                lambda: http_status(base + "/healthz") in (200, 503), timeout=60, what="daphne"
            )
            for name in commands:
                body = {"tool": name, "arguments": {"path": "proj"}, "wait": 30}

                def call(body: dict[str, object] = body) -> None:
                    answer = http.post("/api/v1/invocations/", json=body).json()
                    if answer.get("status") != "succeeded":
                        raise SystemExit(f"{body['tool']} did not succeed: {answer}")

                samples = measure(call, END_TO_END_CALLS)
                emit(
                    f"{name} end to end (POST wait → result), namespace",
                    samples,
                    f"{len(samples)} sequential calls, one namespace worker",
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="synthorg-bench-git-"))
    root.chmod(0o755)
    if os.geteuid() == 0:
        script = Path(__file__).resolve().parents[1] / "docker" / "ensure-sandbox-user.sh"
        subprocess.run(["sh", str(script)], check=True, capture_output=True)
    commands: dict[str, tuple[object, tuple[str, ...]]] = {
        "git_status": (git_status, ("status", "--porcelain=v1", "--branch")),
        "git_diff": (git_diff, ("diff", "--no-ext-diff", "--no-textconv", "--no-color")),
    }
    try:
        workspace = make_workspace(root / "ws")
        subprocess_backend = SubprocessSandbox()
        namespace_backend = NamespaceSandbox()
        for name, (tool, args) in commands.items():
            samples = measure(before(workspace, subprocess_backend, args))
            emit(f"{name} before (subprocess)", samples, "config list + command: 2 processes")
            backends = (("subprocess", subprocess_backend), ("namespace", namespace_backend))
            for label, backend in backends:
                ctx = context(workspace, backend)

                def call(tool: object = tool, ctx: ToolContext = ctx) -> None:
                    tool.run(ctx, {"path": "proj"})  # type: ignore[attr-defined]

                samples = measure(call)
                emit(f"{name} ({label})", samples, "launcher: checked config, one process")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    end_to_end(commands)


if __name__ == "__main__":
    main()
