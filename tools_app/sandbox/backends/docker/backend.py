"""DockerSandbox: each call is a ``docker exec`` in a locked-down, kept-alive container.

Containers: network none by default, read-only root, a small tmpfs ``/tmp``
(noexec, nosuid, nodev), all capabilities dropped, no-new-privileges, the
image's non-root user, memory/CPU/pids limits, the workspace mounted
read-only unless the call asks for read-write, and ``synthorg.managed``
labels. The lifecycle strategy decides reuse. A call the sandbox cuts off
(timeout, output flood) takes its container with it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from common.vocabulary.sandbox import SANDBOX_IMAGE
from tools_app.egress.mount import MOUNT_POINT as EGRESS_INSIDE
from tools_app.egress.mount import forwarded_argv, proxy_env, sealed_call
from tools_app.sandbox.backends.docker.engine import bind_mount, connect, sdk_errors
from tools_app.sandbox.backends.docker.execution import ExecOutcome, run_exec, wrap_command
from tools_app.sandbox.backends.docker.lifecycle import (
    ContainerLease,
    ContainerLifecycle,
    ContainerRequest,
    LifecycleStrategy,
)
from tools_app.sandbox.backends.docker.standing import ContainerProcess, start_container
from tools_app.sandbox.capture import CaptureStop
from tools_app.sandbox.env import build_sandbox_env
from tools_app.sandbox.errors import SandboxUnavailableError
from tools_app.sandbox.linux.identity import SandboxIdentity
from tools_app.sandbox.linux.seccomp import sandbox_seccomp_profile
from tools_app.sandbox.logship import ContainerLogShipper, LogSink, default_sink
from tools_app.sandbox.paths import resolve_cwd, resolve_workspace, restrict_path
from tools_app.sandbox.protocol import (
    KilledBy,
    Limits,
    MountMode,
    NetworkPolicy,
    ProbeReport,
    SandboxResult,
    SandboxSpec,
)
from tools_app.sandbox.runner import MEMORY_FAILURE_MARKERS
from tools_app.sandbox.spawn.client import ExecFailure
from tools_app.sandbox.workspace import check_workspace_access

WORKSPACE_INSIDE = "/workspace"
TMP_INSIDE = "/tmp"  # noqa: S108 - the container's private tmpfs
IMAGE_UID = 10001
IMAGE_USER = f"{IMAGE_UID}:{IMAGE_UID}"
CONTAINER_PATH = "/usr/local/bin:/usr/bin:/bin"
OOM_COUNTER_FILES = "/sys/fs/cgroup/memory.events /sys/fs/cgroup/memory/memory.oom_control"


# The container's pid 1: idles, and reaps the processes execs leave behind
# (they are re-parented to it), so zombies never fill the pids limit.
KEEPALIVE = """# synthorg-keepalive
import os, signal
def reap(*_):
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
signal.signal(signal.SIGCHLD, reap)
signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
while True:
    signal.pause()
"""
KEEPALIVE_COMMAND = ["python3", "-I", "-S", "-c", KEEPALIVE]


@dataclass(frozen=True, slots=True)
class DockerSettings:
    """Container settings shared by every call of one backend."""

    image: str = SANDBOX_IMAGE
    network: NetworkPolicy = NetworkPolicy.NONE
    memory_limit_bytes: int = 512 * 1024 * 1024
    cpu_limit: float = 1.0
    pids_limit: int = 128
    tmpfs_size_bytes: int = 64 * 1024 * 1024
    timeout_seconds: float = 120.0
    strategy: LifecycleStrategy = LifecycleStrategy.PER_AGENT
    grace_period_seconds: float = 30.0
    ship_raw_logs: bool = False
    max_log_bytes: int = 65536
    docker_host: str | None = None
    limits_per_call: bool = False
    """Size each container by its call's own limits (memory, processes; the address space
    from ``Limits.address_space_bytes``, the container's memory cgroup bounding real use):
    the browser and desktop categories' containers, one per call or per session."""


def _engine_client(docker_host: str | None) -> Any:
    return connect(docker_host)


class DockerSandbox:
    """Runs each call as an exec in a container kept per the lifecycle strategy."""

    name = "docker"
    isolates_network = True

    def __init__(
        self,
        settings: DockerSettings | None = None,
        *,
        log_sink: LogSink = default_sink,
        client_factory: Callable[[str | None], Any] = _engine_client,
    ) -> None:
        self.settings = settings or DockerSettings()
        self._client_factory = client_factory
        self._client: Any | None = None
        self._lifecycle: ContainerLifecycle | None = None
        self._guard = threading.Lock()
        self.shipper = ContainerLogShipper(
            sink=log_sink,
            ship_raw=self.settings.ship_raw_logs,
            max_log_bytes=self.settings.max_log_bytes,
        )

    @property
    def engine_address(self) -> str:
        """Where the engine is expected (for error messages)."""
        return self.settings.docker_host or os.environ.get(
            "DOCKER_HOST", "unix:///var/run/docker.sock"
        )

    def lifecycle(self) -> ContainerLifecycle:
        """The container lifecycle, connecting to the engine on first use."""
        with self._guard:
            if self._lifecycle is None:
                try:
                    client = self._client_factory(self.settings.docker_host)
                    client.ping()
                except Exception as exc:
                    raise SandboxUnavailableError(
                        self.name,
                        f"cannot reach the Docker engine at {self.engine_address} ({exc}); "
                        "start dockerd or point DOCKER_HOST at a running engine",
                    ) from exc
                self._client = client
                self._lifecycle = ContainerLifecycle(
                    client,
                    strategy=self.settings.strategy,
                    grace_period_seconds=self.settings.grace_period_seconds,
                    create=self._create_container,
                    shipper=self.shipper,
                )
            return self._lifecycle

    def _create_container(
        self,
        name: str,
        request: ContainerRequest,
        labels: dict[str, str],
        *,
        command: list[str] = KEEPALIVE_COMMAND,
        binds: tuple[tuple[str, str], ...] = (),
        limits: Limits | None = None,
        environment: dict[str, str] | None = None,
        user: str = IMAGE_USER,
        init: bool = False,
    ) -> Any:
        assert self._client is not None
        s = self.settings
        network = request.network if request.network is NetworkPolicy.BRIDGE else s.network
        if request.network is NetworkPolicy.PROXY:
            network = NetworkPolicy.NONE  # the bound-in proxy socket is the only way out
        memory, pids, tmp = s.memory_limit_bytes, s.pids_limit, s.tmpfs_size_bytes
        limits = limits or request.limits
        if s.limits_per_call and limits is not None:
            memory, pids = limits.memory_bytes, limits.max_processes
            # A browser keeps its shared memory in /tmp; what it writes there is charged to
            # the container's memory, so the memory ceiling bounds it.
            tmp = max(tmp, memory)
        return self._client.containers.create(
            s.image,
            command=command,
            name=name,
            detach=True,
            user=user,
            init=init,
            network_mode="bridge" if network is NetworkPolicy.BRIDGE else "none",
            read_only=True,
            tmpfs={TMP_INSIDE: f"size={tmp},noexec,nosuid,nodev,mode=1777"},
            cap_drop=["ALL"],
            security_opt=["no-new-privileges", f"seccomp={sandbox_seccomp_profile()}"],
            mem_limit=memory,
            memswap_limit=memory,
            nano_cpus=int(s.cpu_limit * 1_000_000_000),
            pids_limit=pids,
            ipc_mode="private",
            mounts=[
                bind_mount(
                    str(request.workspace),
                    WORKSPACE_INSIDE,
                    read_only=request.mode is not MountMode.READ_WRITE,
                ),
                *(
                    [bind_mount(str(request.egress_dir), EGRESS_INSIDE, read_only=True)]
                    if request.egress_dir is not None
                    else []
                ),
                *(bind_mount(source, target, read_only=False) for source, target in binds),
            ],
            working_dir=WORKSPACE_INSIDE,
            labels=labels,
            environment=environment or {},
            hostname="synthorg-sandbox",
        )

    def container_client(self) -> Any:
        """The engine's client (connecting on first use)."""
        self.lifecycle()
        assert self._client is not None
        return self._client

    create_container = _create_container

    def standing_user(self) -> tuple[int, int]:
        """Who a standing command runs as: the image's user when this worker may hand it
        the files the command needs (root), else the worker's own user."""
        if os.geteuid() == 0:
            return IMAGE_UID, IMAGE_UID
        return os.geteuid(), os.getegid()

    def start(
        self, spec: SandboxSpec, *, binds: Sequence[tuple[str, str]] = ()
    ) -> tuple[ContainerProcess | ExecFailure, Callable[[], None]]:
        """Start ``spec`` in a container of its own and leave it running (a virtual desktop).

        The caller reads its output from the returned process's pipes, talks to it through
        ``binds`` and ends it with ``ContainerProcess.end``; nothing else needs releasing.
        ``spec.timeout_seconds`` is not enforced here.
        """
        if spec.network is not NetworkPolicy.NONE:
            raise SandboxUnavailableError(
                self.name, "a standing command has no network: a call's proxy ends with it"
            )
        workspace = resolve_workspace(spec.workspace.host_path)
        uid, gid = self.standing_user()
        if uid == IMAGE_UID:
            image_user = SandboxIdentity(
                IMAGE_UID, IMAGE_UID, f"uid {IMAGE_UID} (the image's user)", True
            )
            check_workspace_access(workspace, image_user, writable=spec.workspace.writable)
        env = build_sandbox_env(
            {},
            spec.env,
            path=restrict_path(spec.env.get("PATH", CONTAINER_PATH)),
            home=TMP_INSIDE,
            tmpdir=TMP_INSIDE,
        )
        limits = spec.limits
        command = [
            "prlimit",
            f"--as={self._address_space(limits)}",
            f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}",
            f"--fsize={limits.file_size_bytes}",
            f"--nofile={limits.open_files}",
            "--core=0",
            *spec.argv,
        ]
        request = ContainerRequest(
            spec.owner, workspace, spec.workspace.mode, NetworkPolicy.NONE, None, limits
        )
        started = start_container(
            self,
            spec,
            request,
            command,
            binds=tuple(binds),
            environment=env,
            user=f"{uid}:{gid}",
        )
        return started, lambda: None

    def run(self, spec: SandboxSpec) -> SandboxResult:
        """Run ``spec`` as an exec in the owner's container; refusals raise a SandboxError."""
        started = time.monotonic()
        workspace = resolve_workspace(spec.workspace.host_path)
        cwd = resolve_cwd(workspace, spec.cwd)
        image_user = SandboxIdentity(
            IMAGE_UID, IMAGE_UID, f"uid {IMAGE_UID} (the image's user)", True
        )
        check_workspace_access(workspace, image_user, writable=spec.workspace.writable)
        lifecycle = self.lifecycle()
        rel = os.path.relpath(cwd, workspace)
        workdir = WORKSPACE_INSIDE if rel == "." else f"{WORKSPACE_INSIDE}/{rel}"
        env = build_sandbox_env(
            {},
            spec.env,
            path=restrict_path(spec.env.get("PATH", CONTAINER_PATH)),
            home=TMP_INSIDE,
            tmpdir=TMP_INSIDE,
            granted=spec.secret_env,
        )
        timeout = min(spec.timeout_seconds, self.settings.timeout_seconds)
        request = ContainerRequest(
            spec.owner, workspace, spec.workspace.mode, spec.network, spec.egress_dir, spec.limits
        )
        command = spec.argv
        if spec.network is NetworkPolicy.PROXY:
            # No interface but loopback; the forwarder there relays to the bound-in socket.
            env.update(proxy_env(trust_bundle=sealed_call(spec.egress_dir)))
            command = forwarded_argv(spec.argv)
        argv = wrap_command(
            list(command),
            memory_bytes=self._address_space(spec.limits),
            cpu_seconds=spec.limits.cpu_seconds,
            file_size_bytes=spec.limits.file_size_bytes,
            open_files=spec.limits.open_files,
        )
        lease, outcome = self._exec_with_retry(
            lifecycle, request, argv, env, workdir, spec, timeout, started
        )
        killed_by = self._classify(lease, outcome, spec)
        if outcome.stop is not None:
            lifecycle.destroy(lease, reason=f"call cut off: {outcome.stop.value}")
        else:
            lifecycle.after_call(lease)
        duration_ms = int((time.monotonic() - started) * 1000)
        event = self.shipper.exec_event(
            container_id=lease.container_id,
            owner=spec.owner,
            stdout=outcome.stdout,
            stderr=outcome.stderr,
            exit_code=outcome.exit_code,
            duration_ms=duration_ms,
            truncated=outcome.stdout_truncated or outcome.stderr_truncated,
        )
        self.shipper.ship(event)
        return SandboxResult(
            backend=self.name,
            exit_code=outcome.exit_code if outcome.exit_code is not None else -9,
            stdout=outcome.stdout.decode("utf-8", "replace"),
            stderr=outcome.stderr.decode("utf-8", "replace"),
            duration_ms=duration_ms,
            timed_out=killed_by is KilledBy.TIMEOUT,
            killed_by=killed_by,
            stdout_truncated=outcome.stdout_truncated,
            stderr_truncated=outcome.stderr_truncated,
            container_id=lease.container_id,
            log_metadata={k: v for k, v in event.items() if k not in ("stdout", "stderr")},
        )

    def _address_space(self, limits: Limits) -> int:
        """The call's address-space rlimit: its memory, unless its own container's memory
        cgroup bounds real use (then what it may reserve)."""
        if self.settings.limits_per_call and limits.address_space_bytes is not None:
            return limits.address_space_bytes
        return limits.memory_bytes

    def _exec_with_retry(
        self,
        lifecycle: ContainerLifecycle,
        request: ContainerRequest,
        argv: list[str],
        env: dict[str, str],
        workdir: str,
        spec: SandboxSpec,
        timeout: float,
        started: float,
    ) -> tuple[ContainerLease, ExecOutcome]:
        errors = sdk_errors()
        assert self._client is not None
        for attempt in range(2):
            lease = lifecycle.acquire(request)
            try:
                outcome = run_exec(
                    self._client.api,
                    lease.container_id,
                    argv=argv,
                    env=env,
                    workdir=workdir,
                    user=IMAGE_USER,
                    stdin=spec.stdin,
                    cap=spec.limits.output_bytes,
                    deadline=started + timeout,
                )
                return lease, outcome
            except errors.APIError as exc:
                # A reused container that died or was removed meanwhile: replace it once.
                if attempt == 0 and lease.reused and exc.status_code in (404, 409):
                    lifecycle.forget(lease)
                    continue
                raise
        raise AssertionError("unreachable")

    def _classify(
        self, lease: ContainerLease, outcome: ExecOutcome, spec: SandboxSpec
    ) -> KilledBy | None:
        if outcome.stop is CaptureStop.TIMEOUT:
            return KilledBy.TIMEOUT
        if outcome.stop is CaptureStop.OUTPUT_LIMIT:
            return KilledBy.OUTPUT_LIMIT
        code = outcome.exit_code
        if code == 128 + 24:  # SIGXCPU from the CPU rlimit
            return KilledBy.CPU_TIME
        if code == 137 and self._oom_killed(lease):
            return KilledBy.MEMORY
        if code not in (0, None) and any(
            m in outcome.stderr[-4096:] for m in MEMORY_FAILURE_MARKERS
        ):
            return KilledBy.MEMORY
        # A container of the call's own: the kernel may have killed one of its processes
        # (a browser's renderer) while the command itself answered and exited.
        if self.settings.limits_per_call and self._oom_killed(lease):
            return KilledBy.MEMORY
        return None

    def _oom_killed(self, lease: ContainerLease) -> bool:
        """Ask the container's memory cgroup whether the OOM killer struck."""
        assert self._client is not None
        try:
            container = self._client.containers.get(lease.container_id)
            if container.attrs.get("State", {}).get("OOMKilled"):
                return True
            result = container.exec_run(["sh", "-c", f"cat {OOM_COUNTER_FILES} 2>/dev/null"])
        except Exception:  # a missing counter just means "not known"
            return False
        for line in result.output.decode(errors="replace").splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip().isdigit() and int(value) > 0:
                return True
        return False

    def release(self, owner: Any) -> None:
        """The owner's task ended: per-task containers go, per-agent start their grace period."""
        if self._lifecycle is not None:
            self._lifecycle.release(owner)

    def probe(self) -> ProbeReport:
        """Reach the engine, find the image, and run ``true`` in a throwaway container."""
        from tools_app.sandbox.backends.docker.probe import probe_docker

        return probe_docker(self)

    def close(self) -> None:
        """Destroy every container this backend keeps and drop the engine connection."""
        with self._guard:
            lifecycle, self._lifecycle = self._lifecycle, None
            client, self._client = self._client, None
        if lifecycle is not None:
            lifecycle.cleanup_all()
        if client is not None:
            client.close()
