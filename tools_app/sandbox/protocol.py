"""The contract every sandbox backend keeps: ``run(spec) -> SandboxResult``.

Plain frozen dataclasses, no framework imports, so services and tests can
build specs and read results without a database.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Protocol, runtime_checkable

from tools_app.sandbox.errors import SandboxSpecInvalidError

MIB = 1024 * 1024


class NetworkPolicy(enum.StrEnum):
    """Network reachable from inside the sandbox."""

    NONE = "none"
    """No network at all (loopback only where the backend gives one)."""
    BRIDGE = "bridge"
    """Outbound network through the engine's bridge (docker, by config) or the host's stack
    (the subprocess backend's own runner); the namespace backend refuses it."""
    PROXY = "proxy"
    """Loopback only; the call's egress proxy (``tools_app.egress``), reached through a
    unix socket bound in from ``SandboxSpec.egress_dir``, is the only way out."""


class MountMode(enum.StrEnum):
    """How the workspace is mounted inside the sandbox."""

    READ_ONLY = "ro"
    READ_WRITE = "rw"


class KilledBy(enum.StrEnum):
    """Why the sandbox ended the command before it finished on its own."""

    TIMEOUT = "timeout"
    MEMORY = "memory"
    OUTPUT_LIMIT = "output_limit"
    CPU_TIME = "cpu_time"


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource ceilings for one call. ``None`` means the backend's default applies."""

    memory_bytes: int = 512 * MIB
    cpu_seconds: int = 60
    max_processes: int = 64
    output_bytes: int = 1 * MIB
    file_size_bytes: int = 64 * MIB
    open_files: int = 256
    address_space_bytes: int | None = None
    """The virtual address space a process may reserve, where a memory cgroup bounds what
    it really uses: a browser reserves tens of GiB it never touches. Without such a
    cgroup the address space stays at ``memory_bytes``, the only memory bound then."""

    def __post_init__(self) -> None:
        for name in (
            "memory_bytes",
            "cpu_seconds",
            "max_processes",
            "output_bytes",
            "file_size_bytes",
            "open_files",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise SandboxSpecInvalidError(f"limits.{name} must be a positive integer")
        space = self.address_space_bytes
        if space is not None and (not isinstance(space, int) or space < self.memory_bytes):
            raise SandboxSpecInvalidError(
                "limits.address_space_bytes must be an integer of at least memory_bytes"
            )


@dataclass(frozen=True, slots=True)
class WorkspaceMount:
    """The host directory the command works in, and whether it may write there."""

    host_path: Path
    mode: MountMode = MountMode.READ_ONLY

    @property
    def writable(self) -> bool:
        """True when the command may change files in the workspace."""
        return self.mode is MountMode.READ_WRITE


@dataclass(frozen=True, slots=True)
class Owner:
    """Who a call runs for; lifecycle strategies key containers on it."""

    agent_id: str
    task_id: str | None = None


@dataclass(frozen=True, slots=True)
class SandboxSpec:
    """One command to run in a sandbox.

    ``argv`` is a list of words, never a shell string: ``("git", "status")``.
    ``cwd`` is relative to the workspace root. ``env`` adds variables on top of
    the sandbox's clean environment; the denylist still applies to them.
    """

    argv: tuple[str, ...]
    workspace: WorkspaceMount
    cwd: str = "."
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    stdin: bytes = b""
    timeout_seconds: float = 30.0
    limits: Limits = field(default_factory=Limits)
    network: NetworkPolicy = NetworkPolicy.NONE
    owner: Owner | None = None
    egress_dir: Path | None = None
    """The call's egress directory (proxy socket and forwarder) when ``network`` is PROXY."""
    secret_env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """Named secrets granted for this call, by variable name (set by the worker from
    the call's ``secret_env``; secret-shaped names pass, injection names never)."""
    terminals: bool = False
    """The command opens pseudo-terminals (a terminal emulator on the agent's desktop).
    Without it the namespace backend gives none: each holds kernel memory outside the
    sandbox's ceilings, from a pool every sandbox of the host shares."""
    answers_lines: bool = False
    """The command answers each line of its stdin with one line on stdout and ends at
    the end of its input: a backend may keep it running and give it the stdin of later
    calls equal to this one in everything else (``sandbox.standing``)."""

    def __post_init__(self) -> None:
        if isinstance(self.argv, str):
            raise SandboxSpecInvalidError("argv must be a list of words, not a shell string")
        object.__setattr__(self, "argv", tuple(self.argv))
        if not self.argv or not self.argv[0]:
            raise SandboxSpecInvalidError("argv must name a program to run")
        if any("\x00" in word for word in self.argv):
            raise SandboxSpecInvalidError("argv words must not contain NUL bytes")
        if not self.timeout_seconds > 0:
            raise SandboxSpecInvalidError("timeout_seconds must be greater than zero")
        object.__setattr__(self, "env", MappingProxyType(dict(self.env)))
        object.__setattr__(self, "secret_env", MappingProxyType(dict(self.secret_env)))
        if (self.network is NetworkPolicy.PROXY) != (self.egress_dir is not None):
            raise SandboxSpecInvalidError(
                "network 'proxy' needs the call's egress directory, and only it takes one"
            )


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """What happened to one command.

    ``exit_code`` is the process's exit status, or ``-signal`` when a signal
    ended it, or ``None`` when it never started. ``killed_by`` says when the
    sandbox itself ended it. Output is decoded as UTF-8 with replacement and
    holds at most ``limits.output_bytes`` per stream.
    """

    backend: str
    exit_code: int | None
    stdout: str
    stderr: str
    duration_ms: int
    timed_out: bool = False
    killed_by: KilledBy | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    container_id: str | None = None
    log_metadata: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def truncated(self) -> bool:
        """True when either stream was cut at the output limit."""
        return self.stdout_truncated or self.stderr_truncated

    @property
    def ok(self) -> bool:
        """True when the command ran to completion and exited 0."""
        return self.exit_code == 0 and self.killed_by is None


@dataclass(frozen=True, slots=True)
class ProbeReport:
    """Whether a backend works on this machine, and why not."""

    backend: str
    ok: bool
    reason: str
    details: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))


@runtime_checkable
class SandboxBackend(Protocol):
    """A place to run one command with isolation and limits."""

    name: str
    isolates_network: bool

    def run(self, spec: SandboxSpec) -> SandboxResult:
        """Run ``spec.argv`` and return what happened; raise a SandboxError on refusal."""
        ...

    def probe(self) -> ProbeReport:
        """Try the backend for real and say whether it works here."""
        ...

    def close(self) -> None:
        """Release what the backend holds (containers, timers)."""
        ...
