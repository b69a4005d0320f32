"""A container whose one command stands across calls (a virtual desktop's host).

The command is the container's own (behind the engine's init, which reaps what it
leaves), confined like a call's container: no network, read-only root, all
capabilities dropped, the call's memory and process ceilings on the container and its
rlimits on the command, the workspace and the caller's ``binds`` mounted. Its
output reaches the caller as two pipes fed from the engine's attach stream, and its
init's host pid (with a pidfd) says when it ends and lets any process of the machine
that may signal it stop it at once.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

from tools_app.sandbox.backends.docker.execution import HEADER
from tools_app.sandbox.backends.docker.lifecycle import (
    LABEL_AGENT,
    LABEL_MANAGED,
    LABEL_STRATEGY,
    LABEL_WORKER,
    ContainerRequest,
    worker_identity,
)
from tools_app.sandbox.protocol import SandboxSpec
from tools_app.sandbox.spawn.client import ExecFailure

STANDING_LABEL = "standing"


@dataclass
class ContainerProcess:
    """A standing container's command, shaped like a started confined process."""

    container: Any
    pid: int
    pidfd: int
    stdout_fd: int
    stderr_fd: int
    _pump: threading.Thread | None = field(default=None, repr=False)

    def end(
        self, *, kill_grace_seconds: float = 0.0, exit_wait_seconds: float = 0.0
    ) -> tuple[int | None, float, bool]:
        """Stop and remove the container; (exit code, CPU seconds unknown: 0, OOM-killed)."""
        for fd in (self.stdout_fd, self.stderr_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        code: int | None = None
        oom = False
        with contextlib.suppress(Exception):
            self.container.stop(timeout=max(0, int(kill_grace_seconds)))
        with contextlib.suppress(Exception):
            self.container.reload()
            state = self.container.attrs.get("State", {})
            code, oom = state.get("ExitCode"), bool(state.get("OOMKilled"))
        with contextlib.suppress(Exception):
            self.container.remove(force=True)
        with contextlib.suppress(OSError):
            os.close(self.pidfd)
        return code, 0.0, oom


def start_container(
    backend: Any,
    spec: SandboxSpec,
    request: ContainerRequest,
    command: list[str],
    *,
    binds: tuple[tuple[str, str], ...],
    environment: dict[str, str],
    user: str,
) -> ContainerProcess | ExecFailure:
    """Create and start the standing container for ``spec``; its process, or why not."""
    client = backend.container_client()
    labels = {
        LABEL_MANAGED: "true",
        LABEL_STRATEGY: STANDING_LABEL,
        LABEL_AGENT: spec.owner.agent_id if spec.owner else "",
        LABEL_WORKER: worker_identity(),
    }
    name = f"synthorg-standing-{uuid.uuid4().hex[:20]}"
    container = backend.create_container(
        name,
        request,
        labels,
        command=command,
        binds=binds,
        limits=spec.limits,
        environment=environment,
        user=user,
        init=True,
    )
    try:
        stream = client.api.attach_socket(
            container.id, params={"stdout": 1, "stderr": 1, "stream": 1, "logs": 1}
        )
        raw = getattr(stream, "_sock", stream)
        stdout_read, stdout_write = os.pipe()
        stderr_read, stderr_write = os.pipe()
        pump = threading.Thread(
            target=_pump,
            args=(raw, stream, stdout_write, stderr_write),
            name=f"standing-{name[-8:]}",
            daemon=True,
        )
        pump.start()
        container.start()
        container.reload()
        pid = int(container.attrs.get("State", {}).get("Pid") or 0)
        pidfd = os.pidfd_open(pid) if pid > 0 else -1
    except Exception as exc:  # the container is removed; the caller hears why
        with contextlib.suppress(Exception):
            container.remove(force=True)
        return ExecFailure(0, f"the container did not start: {exc}")
    return ContainerProcess(container, pid, pidfd, stdout_read, stderr_read, pump)


def _pump(raw: Any, stream: Any, stdout_fd: int, stderr_fd: int) -> None:
    """Copy the engine's multiplexed frames to the two pipes until the stream ends."""
    pending = b""
    targets = {1: stdout_fd, 2: stderr_fd}
    try:
        while True:
            try:
                chunk = raw.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            pending += chunk
            while len(pending) >= HEADER.size:
                kind, length = HEADER.unpack(pending[: HEADER.size])
                if len(pending) < HEADER.size + length:
                    break
                data = pending[HEADER.size : HEADER.size + length]
                pending = pending[HEADER.size + length :]
                with contextlib.suppress(OSError):
                    os.write(targets.get(kind, stderr_fd), data)
    finally:
        for fd in (stdout_fd, stderr_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(Exception):
            stream.close()
