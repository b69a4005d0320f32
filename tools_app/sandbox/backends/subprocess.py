"""SubprocessSandbox: the console's own file runner, as a confined child process.

Clean environment, restricted PATH, working directory inside the workspace,
rlimits, an unprivileged user, a cgroup where the machine has one, and a kill
that reaches every process the call made. Each command also runs in a private
root (``private_root``, carried out by ``spawn_confine``): its own mount,
IPC and pid namespaces, seeing only read-only system directories and its own
workspace and scratch directory, and its own network namespace with no
network at all unless the call asks for the network (``NetworkPolicy.BRIDGE``,
git clone and push, as on the namespace backend). Where those namespaces
cannot be made the backend refuses every call with the reason; it never runs
a command with the host's view. Only file_system (the console's own runner)
may use it (see ``config``); external programs run on namespace or docker.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Hashable, Iterable
from pathlib import Path

from common.vocabulary.sandbox import DEFAULT_SANDBOX_USER
from tools_app.sandbox.backends.namespace import ETC_ENTRIES
from tools_app.sandbox.env import build_sandbox_env
from tools_app.sandbox.errors import SandboxError, SandboxUnavailableError
from tools_app.sandbox.linux.cgroups import CgroupSupport, detect_cgroup_support
from tools_app.sandbox.linux.etc_view import etc_view
from tools_app.sandbox.linux.identity import SandboxIdentity, resolve_identity
from tools_app.sandbox.linux.private_root import private_root_plan, stage_dir
from tools_app.sandbox.paths import (
    DEFAULT_SANDBOX_PATH,
    SAFE_PATH_PREFIXES,
    resolve_cwd,
    resolve_workspace,
    restrict_path,
)
from tools_app.sandbox.protocol import NetworkPolicy, ProbeReport, SandboxResult, SandboxSpec
from tools_app.sandbox.result import result_from_outcome
from tools_app.sandbox.runner import run_confined, start_confined
from tools_app.sandbox.scratch import ScratchDir
from tools_app.sandbox.spawn.client import ExecFailure
from tools_app.sandbox.standing import StandingLimits, StandingPool, StandingRunner
from tools_app.sandbox.workspace import check_workspace_access

DEFAULT_SCRATCH_ROOT = Path("/tmp/synthorg-sandbox")  # noqa: S108 - a 0711 root, private subdirs


class SubprocessSandbox:
    """Runs a command as a confined child process of the worker."""

    name = "subprocess"
    isolates_network = True

    def __init__(
        self,
        *,
        run_as_user: str = DEFAULT_SANDBOX_USER,
        restricted_path: bool = True,
        extra_safe_path_prefixes: Iterable[str] = (),
        max_timeout_seconds: float | None = None,
        kill_grace_seconds: float = 0.5,
        exit_drain_seconds: float = 0.2,
        scratch_root: Path = DEFAULT_SCRATCH_ROOT,
        use_cgroup: bool = True,
        worker_env: dict[str, str] | None = None,
        warm_python: bool = True,
        standing: StandingLimits | None = None,
    ) -> None:
        self.run_as_user = run_as_user
        self.restricted_path = restricted_path
        self.safe_prefixes = (*SAFE_PATH_PREFIXES, *extra_safe_path_prefixes)
        self.max_timeout_seconds = max_timeout_seconds
        self.kill_grace_seconds = kill_grace_seconds
        self.exit_drain_seconds = exit_drain_seconds
        self.scratch_root = scratch_root
        self.use_cgroup = use_cgroup
        self._worker_env = worker_env
        # ``python3 -I -S -c`` commands run in the spawn server's started
        # interpreter instead of a new one; same confinement and results.
        self.warm_python = warm_python
        # The same /etc entries the namespace backend shows, copied once.
        self._etc_view = etc_view(ETC_ENTRIES)
        # Calls that answer by lines (the file tools): served by standing runners.
        standing = standing if standing is not None else StandingLimits()
        self._standing = StandingPool(standing) if standing.capacity > 0 else None

    def _cgroup_support(self) -> CgroupSupport:
        if not self.use_cgroup:
            return CgroupSupport(None, "cgroups switched off in config")
        return detect_cgroup_support()

    def _sandbox_path(self, candidate: str | None) -> str:
        if not self.restricted_path:
            return candidate or DEFAULT_SANDBOX_PATH
        return restrict_path(candidate, safe_prefixes=self.safe_prefixes)

    def run(self, spec: SandboxSpec) -> SandboxResult:
        """Run ``spec`` as a child process; refusals raise a SandboxError."""
        if spec.network is NetworkPolicy.PROXY:
            raise SandboxUnavailableError(
                self.name,
                "the egress proxy is served only in the namespace and docker sandboxes; "
                "route this tool's category to one of them",
            )
        identity = resolve_identity(self.run_as_user, backend=self.name)
        workspace = resolve_workspace(spec.workspace.host_path)
        cwd = resolve_cwd(workspace, spec.cwd)
        check_workspace_access(workspace, identity, writable=spec.workspace.writable)
        worker_env = self._worker_env if self._worker_env is not None else os.environ
        path = self._sandbox_path(spec.env.get("PATH", worker_env.get("PATH")))
        timeout = spec.timeout_seconds
        if self.max_timeout_seconds is not None:
            timeout = min(timeout, self.max_timeout_seconds)
        if self._standing is not None and _standing_may_serve(spec):
            served = self._standing.ask(
                _standing_key(spec, identity, workspace, path),
                lambda: self._start_standing(spec, identity, workspace, cwd, path),
                spec.stdin,
                timeout_seconds=timeout,
                cap=spec.limits.output_bytes,
                backend=self.name,
            )
            if served is not None:
                return served
        scratch = ScratchDir(self.scratch_root, identity)
        try:
            env = build_sandbox_env(
                worker_env,
                spec.env,
                path=path,
                home=str(scratch.path),
                tmpdir=str(scratch.path),
                granted=spec.secret_env,
            )
            env["PWD"] = str(cwd)
            with self._etc_view.lease() as etc:
                plan = private_root_plan(
                    stage=stage_dir(self.scratch_root),
                    workspace=workspace,
                    writable=spec.workspace.writable,
                    scratch=scratch.path,
                    etc=etc,
                    identity=identity,
                    extra_ro=self.safe_prefixes,
                    network=spec.network is NetworkPolicy.BRIDGE,
                )
                outcome = run_confined(
                    list(spec.argv),
                    env=env,
                    cwd=cwd,
                    stdin=spec.stdin,
                    timeout_seconds=timeout,
                    limits=spec.limits,
                    identity=identity,
                    cgroup_support=self._cgroup_support(),
                    kill_grace_seconds=self.kill_grace_seconds,
                    exit_drain_seconds=self.exit_drain_seconds,
                    warm_python=self.warm_python,
                    private_root=plan,
                )
        finally:
            scratch.remove()
        return result_from_outcome(self.name, outcome)

    def _start_standing(
        self,
        spec: SandboxSpec,
        identity: SandboxIdentity,
        workspace: Path,
        cwd: Path,
        path: str,
    ) -> StandingRunner | SandboxResult:
        """Start ``spec``'s command to stand: confined as a call's own process would be."""
        held = contextlib.ExitStack()
        try:
            scratch = ScratchDir(self.scratch_root, identity)
            held.callback(scratch.remove)
            worker_env = self._worker_env if self._worker_env is not None else os.environ
            env = build_sandbox_env(
                worker_env,
                spec.env,
                path=path,
                home=str(scratch.path),
                tmpdir=str(scratch.path),
                granted={},
            )
            env["PWD"] = str(cwd)
            etc = held.enter_context(self._etc_view.lease())
            plan = private_root_plan(
                stage=stage_dir(self.scratch_root),
                workspace=workspace,
                writable=spec.workspace.writable,
                scratch=scratch.path,
                etc=etc,
                identity=identity,
                extra_ro=self.safe_prefixes,
                network=False,
            )
            started = start_confined(
                list(spec.argv),
                env=env,
                cwd=cwd,
                limits=spec.limits,
                identity=identity,
                cgroup_support=self._cgroup_support(),
                warm_python=self.warm_python,
                private_root=plan,
            )
        except BaseException:
            held.close()
            raise
        if isinstance(started, ExecFailure):
            held.close()
            return SandboxResult(
                backend=self.name,
                exit_code=127 if started.errno == errno.ENOENT else 126,
                stdout="",
                stderr=f"sandbox: cannot run {spec.argv[0]!r}: {started.message}\n",
                duration_ms=0,
            )
        return StandingRunner(
            started,
            cpu_seconds_limit=float(spec.limits.cpu_seconds),
            kill_grace_seconds=self.kill_grace_seconds,
            release=held.close,
        )

    @property
    def standing_runners(self) -> int:
        """How many standing runners this backend holds now."""
        return self._standing.standing if self._standing is not None else 0

    def probe(self) -> ProbeReport:
        """Run ``true`` for real through this backend."""
        return probe_by_running(self)

    def close(self) -> None:
        """End the standing runners.

        The spawn server, pooled cgroups and scratch directories belong to the
        worker process (shared by its backends) and go when it exits.
        """
        if self._standing is not None:
            self._standing.close()


def _standing_may_serve(spec: SandboxSpec) -> bool:
    """A call a standing runner may answer: by lines, no secrets, no network (everything
    else that shapes the process, the workspace's mount among it, is in its key)."""
    return (
        spec.answers_lines
        and not spec.secret_env
        and spec.network is NetworkPolicy.NONE
        and b"\n" not in spec.stdin.rstrip(b"\n")
    )


def _standing_key(
    spec: SandboxSpec, identity: SandboxIdentity, workspace: Path, path: str
) -> Hashable:
    """What a runner must share with a call to answer it: the agent, the workspace (its
    device and inode too, and how it is mounted), the user, the command, its environment
    and limits."""
    found = os.stat(workspace)
    return (
        spec.owner.agent_id if spec.owner is not None else None,
        str(workspace),
        found.st_dev,
        found.st_ino,
        spec.workspace.mode,
        identity.uid,
        identity.gid,
        spec.argv,
        spec.cwd,
        tuple(sorted(spec.env.items())),
        path,
        spec.limits,
    )


def probe_by_running(backend: SubprocessSandbox) -> ProbeReport:
    """Run a trivial command in a throwaway workspace and report what happened."""
    import tempfile

    from tools_app.sandbox.protocol import Limits, WorkspaceMount

    with tempfile.TemporaryDirectory(prefix="synthorg-probe-") as tmp:
        os.chmod(tmp, 0o755)  # noqa: S103 - the sandbox user must enter it
        spec = SandboxSpec(
            argv=("true",),
            workspace=WorkspaceMount(Path(tmp)),
            timeout_seconds=10,
            limits=Limits(),
        )
        cgroup = backend._cgroup_support()
        details: dict[str, object] = {
            "cgroup": cgroup.reason,
            "private_root": "own mount, network, IPC and pid namespaces; only the workspace, "
            "its scratch directory and read-only system directories are visible",
        }
        try:
            result = backend.run(spec)
        except SandboxError as exc:
            return ProbeReport(backend.name, False, exc.reason, details)
    if result.exit_code != 0:
        return ProbeReport(
            backend.name, False, f"`true` exited {result.exit_code}: {result.stderr[:300]}", details
        )
    return ProbeReport(
        backend.name, True, "ran `true` as a confined child process in a private root", details
    )
