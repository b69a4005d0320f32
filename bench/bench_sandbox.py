"""Sandbox overhead: `true` and `python3 -c pass` through each backend vs a bare subprocess,
and `true` on the namespace backend with the call's egress proxy.

Prints one JSON object per line: {"figure", "unit", "p50", "p95", "note"}.
Goals on this machine: subprocess within 1.3x bare; namespace at most 15 ms
over bare; docker warm exec p50 at most 120 ms, cold at most 800 ms. "Bare"
runs the program the sandbox's restricted PATH resolves to. The file tools'
form, ``python3 -I -S -c``, is also measured with the warm interpreter on
and off.
Docker figures need DOCKER_HOST (or the default socket) and the image.
Bounded: a fixed number of runs per figure and a time budget per figure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import emit_row, p50_p95_row, time_runs
from bench.measure import lower_pct_3 as p
from tools_app.sandbox.backends.docker.backend import DockerSandbox, DockerSettings
from tools_app.sandbox.backends.docker.lifecycle import LifecycleStrategy
from tools_app.sandbox.backends.namespace import NamespaceSandbox
from tools_app.sandbox.backends.subprocess import SubprocessSandbox
from tools_app.sandbox.errors import SandboxError
from tools_app.sandbox.paths import DEFAULT_SANDBOX_PATH
from tools_app.sandbox.protocol import (
    NetworkPolicy,
    Owner,
    SandboxBackend,
    SandboxSpec,
    WorkspaceMount,
)

COMMANDS = {"true": ("true",), "python": ("python3", "-c", "pass")}
# The file tools' form: served by the spawn server's warm interpreter when allowed.
ISOLATED_PYTHON = ("python3", "-I", "-S", "-c", "pass")
RUNS = 200
DOCKER_WARM_RUNS = 60
DOCKER_COLD_RUNS = 15
BUDGET_SECONDS = 60.0


def measure(action: Callable[[], object], runs: int) -> list[float]:
    """Milliseconds per run, after two warm-up runs, within the time budget."""
    return time_runs(action, runs, warmup=2, budget_seconds=BUDGET_SECONDS)


def emit(figure: str, samples: list[float], note: str) -> None:
    emit_row(p50_p95_row(figure, samples, note))


def bare(argv: tuple[str, ...], cwd: Path) -> Callable[[], object]:
    # The program the sandbox would run (its restricted PATH), not whatever
    # this process's PATH finds first (a version-manager shim, a venv).
    program = shutil.which(argv[0], path=DEFAULT_SANDBOX_PATH) or argv[0]

    def run() -> object:
        return subprocess.run((program, *argv[1:]), cwd=cwd, capture_output=True, check=False)

    return run


def through(backend: SandboxBackend, spec: SandboxSpec) -> Callable[[], object]:
    def run() -> object:
        result = backend.run(spec)
        if result.exit_code != 0:
            raise SystemExit(
                f"{backend.name}: {spec.argv} exited {result.exit_code}: {result.stderr}"
            )
        return result

    return run


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="synthorg-bench-"))
    root.chmod(0o755)
    if os.geteuid() == 0:
        script = Path(__file__).resolve().parents[1] / "docker" / "ensure-sandbox-user.sh"
        subprocess.run(["sh", str(script)], check=True, capture_output=True)
    try:
        baseline: dict[str, float] = {}
        for label, argv in COMMANDS.items():
            samples = measure(bare(argv, root), RUNS)
            baseline[label] = p(samples, 0.5)
            emit(f"bare subprocess {label}", samples, "baseline")
        for label, argv in COMMANDS.items():
            spec = SandboxSpec(argv=argv, workspace=WorkspaceMount(root))
            samples = measure(through(SubprocessSandbox(), spec), RUNS)
            ratio = p(samples, 0.5) / baseline[label]
            emit(f"subprocess {label}", samples, f"ratio {ratio:.2f}x bare (goal <= 1.3x)")
        bench_isolated_python(root)
        for label, argv in COMMANDS.items():
            spec = SandboxSpec(argv=argv, workspace=WorkspaceMount(root))
            try:
                samples = measure(through(NamespaceSandbox(), spec), RUNS)
            except (SandboxError, SystemExit) as exc:
                print(json.dumps({"figure": f"namespace {label}", "error": str(exc)}), flush=True)
                continue
            over = p(samples, 0.5) - baseline[label]
            ratio = p(samples, 0.5) / baseline[label]
            note = f"ratio {ratio:.2f}x bare, +{over:.1f} ms (goal <= +15 ms)"
            emit(f"namespace {label}", samples, note)
        bench_proxied(root, baseline["true"])
        bench_docker(root, baseline)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def bench_isolated_python(root: Path) -> None:
    """``python3 -I -S -c pass``: bare, through the warm interpreter, and with it off."""
    samples = measure(bare(ISOLATED_PYTHON, root), RUNS)
    baseline = p(samples, 0.5)
    emit("bare subprocess python -I -S", samples, "baseline")
    spec = SandboxSpec(argv=ISOLATED_PYTHON, workspace=WorkspaceMount(root))
    for label, warm in (("warm", True), ("warm off", False)):
        samples = measure(through(SubprocessSandbox(warm_python=warm), spec), RUNS)
        ratio = p(samples, 0.5) / baseline
        emit(f"subprocess python -I -S ({label})", samples, f"ratio {ratio:.2f}x bare")


def bench_proxied(root: Path, baseline: float) -> None:
    """``true`` with the call's egress proxy (what an agent granted network gets): the
    proxy's start and stop, and the relay on the sandbox's loopback made by the spawn
    server, or the forwarder started inside the sandbox, measured one after the other."""
    from tools_app.egress import LocalEgressGateway, NetworkGrant

    gateway = LocalEgressGateway(agent_name="bench")
    grant = NetworkGrant(mode="allowlist_only", allowed_hosts=("127.0.0.1:9",))
    for label, outside in (("relay by the spawn server", True), ("forwarder inside", False)):
        backend = NamespaceSandbox(loopback_relay=outside)

        def run(backend: NamespaceSandbox = backend) -> object:
            with gateway.session(grant) as port:
                spec = SandboxSpec(
                    argv=("true",), workspace=WorkspaceMount(root),
                    network=NetworkPolicy.PROXY, egress_dir=port.directory,
                )  # fmt: skip
                return through(backend, spec)()

        try:
            samples = measure(run, RUNS)
        except (SandboxError, SystemExit) as exc:
            print(json.dumps({"figure": f"namespace true, proxy, {label}", "error": str(exc)}))
            continue
        over = p(samples, 0.5) - baseline
        emit(f"namespace true, proxy, {label}", samples, f"+{over:.1f} ms over bare true")


def bench_docker(root: Path, baseline: dict[str, float]) -> None:
    warm = DockerSandbox(DockerSettings(strategy=LifecycleStrategy.PER_AGENT))
    cold = DockerSandbox(DockerSettings(strategy=LifecycleStrategy.PER_CALL))
    try:
        for label, argv in COMMANDS.items():
            spec = SandboxSpec(argv=argv, workspace=WorkspaceMount(root), owner=Owner("bench"))
            samples = measure(through(warm, spec), DOCKER_WARM_RUNS)
            emit(
                f"docker warm exec {label}",
                samples,
                f"ratio {p(samples, 0.5) / baseline[label]:.1f}x bare (goal p50 <= 120 ms)",
            )
        spec = SandboxSpec(argv=("true",), workspace=WorkspaceMount(root))
        samples = measure(through(cold, spec), DOCKER_COLD_RUNS)
        emit(
            "docker cold true",
            samples,
            "new container: create, start, exec, remove (goal p50 <= 800 ms)",
        )
    except SandboxError as exc:
        print(json.dumps({"figure": "docker", "error": exc.reason}), flush=True)
    finally:
        warm.close()
        cold.close()


if __name__ == "__main__":
    main()
