"""NamespaceSandbox: the command runs inside fresh Linux namespaces via bubblewrap.

New user, pid, network, ipc, uts and mount namespaces (plus cgroup where
possible); system directories bound read-only; the workspace bound read-only
or read-write at ``/workspace``; a private tmpfs ``/tmp``; a minimal ``/dev``;
its own ``/proc``. Outside it, the same rlimits, cgroup and unprivileged user
as the subprocess backend, so a fork bomb or memory bomb meets both.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from common.vocabulary.sandbox import DEFAULT_SANDBOX_USER
from tools_app.egress.mount import MOUNT_POINT as EGRESS_INSIDE
from tools_app.egress.mount import forwarded_argv, proxy_env, sealed_call
from tools_app.sandbox.backends.namespace_network import loopback_plan, network_namespaces
from tools_app.sandbox.env import build_sandbox_env
from tools_app.sandbox.errors import SandboxUnavailableError
from tools_app.sandbox.linux.cgroups import CgroupSupport, detect_cgroup_support
from tools_app.sandbox.linux.etc_view import EtcLayout, etc_view
from tools_app.sandbox.linux.identity import SandboxIdentity, resolve_identity
from tools_app.sandbox.linux.userns import DISABLE_USERNS_FLAG, bwrap_disables_userns
from tools_app.sandbox.paths import (
    SAFE_PATH_PREFIXES,
    resolve_cwd,
    resolve_workspace,
    restrict_path,
)
from tools_app.sandbox.protocol import MIB, NetworkPolicy, ProbeReport, SandboxResult, SandboxSpec
from tools_app.sandbox.result import result_from_outcome
from tools_app.sandbox.runner import INFO_FD, StartedProcess, run_confined, start_confined
from tools_app.sandbox.spawn.client import ExecFailure, SpawnError
from tools_app.sandbox.workspace import check_workspace_access

WORKSPACE_INSIDE = "/workspace"
# The kernel releases a finished user namespace's process count a moment
# after it ends, so back-to-back calls need room above the call's own ceiling.
USER_NAMESPACE_NPROC_HEADROOM = 32
TMP_INSIDE = "/tmp"  # noqa: S108 - a private tmpfs inside the namespace
HOME_INSIDE = f"{TMP_INSIDE}/home"
SHM_INSIDE = "/dev/shm"  # noqa: S108 - a private tmpfs inside the namespace
# No pseudo-terminals unless the spec asks for them: each holds kernel memory outside
# every ceiling of the sandbox, and all sandboxes share the host's few thousand. An empty,
# read-only directory hides bubblewrap's devpts (and /dev/ptmx points into it).
PTS_INSIDE = "/dev/pts"
NO_TERMINALS = ("--size", "4096", "--tmpfs", PTS_INSIDE, "--remount-ro", PTS_INSIDE)
SYSTEM_DIRS: tuple[str, ...] = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Only what programs need from /etc; the rest of the host's /etc stays hidden.
ETC_ENTRIES: tuple[str, ...] = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "passwd",
    "group",
    "nsswitch.conf",
    "localtime",
    "timezone",
    "hosts",
    "host.conf",
    "gitconfig",
    "mime.types",
    "python3",
    "python3.11",
    "bash.bashrc",
    "profile",
    "inputrc",
    "magic",
)


class NamespaceSandbox:
    """Runs a command in new Linux namespaces with bubblewrap."""

    name = "namespace"
    isolates_network = True

    def __init__(
        self,
        *,
        run_as_user: str = DEFAULT_SANDBOX_USER,
        bwrap_path: str | None = None,
        extra_safe_path_prefixes: Iterable[str] = (),
        extra_ro_binds: Iterable[str] = (),
        tmpfs_size_bytes: int = 64 * MIB,
        max_timeout_seconds: float | None = None,
        kill_grace_seconds: float = 0.5,
        exit_drain_seconds: float = 0.2,
        use_cgroup: bool = True,
        worker_env: dict[str, str] | None = None,
        loopback_relay: bool = True,
    ) -> None:
        self.run_as_user = run_as_user
        self.bwrap_path = bwrap_path or shutil.which("bwrap")
        self.safe_prefixes = (*SAFE_PATH_PREFIXES, *extra_safe_path_prefixes)
        self.extra_ro_binds = tuple(extra_ro_binds)
        self.tmpfs_size_bytes = tmpfs_size_bytes
        self.max_timeout_seconds = max_timeout_seconds
        self.kill_grace_seconds = kill_grace_seconds
        self.exit_drain_seconds = exit_drain_seconds
        self.use_cgroup = use_cgroup
        self._worker_env = worker_env
        self.loopback_relay = loopback_relay
        """A proxied call's network and relay are made by the spawn server before bubblewrap
        (where the worker is root), instead of a forwarder started inside the sandbox."""
        self._system_args = self._system_binds()
        self._extra_args = [a for e in self.extra_ro_binds for a in ("--ro-bind-try", e, e)]
        self._etc_view = etc_view(ETC_ENTRIES)

    def _cgroup_support(self) -> CgroupSupport:
        if not self.use_cgroup:
            return CgroupSupport(None, "cgroups switched off in config")
        return detect_cgroup_support()

    def nested_userns_args(self) -> list[str]:
        # No nested user namespaces (and so no mount rights) inside the sandbox.
        if self.bwrap_path is not None and bwrap_disables_userns(self.bwrap_path):
            return [DISABLE_USERNS_FLAG]
        return []

    def _system_binds(self) -> list[str]:
        args: list[str] = []
        for directory in SYSTEM_DIRS:
            if os.path.islink(directory):
                # Merged-/usr systems: /bin -> usr/bin; recreate the link.
                args += ["--symlink", os.readlink(directory), directory]
            elif os.path.isdir(directory):
                args += ["--ro-bind", directory, directory]
        return args

    def bwrap_argv(
        self,
        spec: SandboxSpec,
        workspace_real: Path,
        cwd_inside: str,
        info_fd: int | None = None,
        etc: EtcLayout | None = None,
        binds: Sequence[tuple[str, str]] = (),
        *,
        network_ready: bool = False,
    ) -> list[str]:
        """The full bubblewrap command line for ``spec`` (exposed for inspection).

        ``etc`` says how ``/etc`` is made (see ``etc_view``); by default every
        allowed entry is bound on its own. ``binds``: (host directory, place inside)
        pairs bound writable, for a standing command's own control directory.
        ``network_ready``: the spawn server has made the command's network namespace
        and its relay (``loopback_plan``), so bubblewrap makes every namespace but that
        one and runs the command itself, not under the forwarder.
        """
        if self.bwrap_path is None:
            raise SandboxUnavailableError(self.name, "bubblewrap (bwrap) is not installed")
        if etc is None:
            etc = EtcLayout(None, tuple(f"/etc/{entry}" for entry in ETC_ENTRIES))
        etc_args = ["--ro-bind", etc.copy_dir, "/etc"] if etc.copy_dir is not None else []
        for path in etc.binds:
            etc_args += ["--ro-bind-try", path, path]
        args = [
            self.bwrap_path,
            "--unshare-user",
            *self.nested_userns_args(),
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]
        if spec.network is NetworkPolicy.BRIDGE:
            raise SandboxUnavailableError(
                self.name,
                "the namespace sandbox never shares the host's network; a command reaches "
                "the network only through the call's egress proxy (network 'proxy')",
            )
        proxied = spec.network is NetworkPolicy.PROXY and spec.egress_dir is not None
        if network_ready and not proxied:
            raise SandboxUnavailableError(self.name, "only a proxied call has its network made")
        # Loopback only; with PROXY the bound-in socket is the one way out.
        if not network_ready:
            args.append("--unshare-net")
        egress_args: list[str] = []
        argv = spec.argv
        if proxied:
            # Still bound in when the relay runs outside: ssh's tunnel and the trust bundle.
            egress_args = ["--ro-bind", str(spec.egress_dir), EGRESS_INSIDE]
            if not network_ready:
                argv = forwarded_argv(spec.argv)
        args += [
            "--die-with-parent",
            "--new-session",
            *(["--info-fd", str(info_fd)] if info_fd is not None else []),
            "--cap-drop",
            "ALL",
            "--hostname",
            "synthorg-sandbox",
            *self._system_args,
            *etc_args,
            *self._extra_args,
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            # bubblewrap's /dev is a tmpfs of half the host's memory, the sandbox user's
            # to write: files there would hold memory no rlimit counts. Its shared memory
            # gets a tmpfs of the /tmp size, and the rest is read-only (device nodes are
            # still written to: a read-only mount does not stop that).
            "--size",
            str(self.tmpfs_size_bytes),
            "--tmpfs",
            SHM_INSIDE,
            *([] if spec.terminals else NO_TERMINALS),
            "--remount-ro",
            "/dev",
            "--size",
            str(self.tmpfs_size_bytes),
            "--tmpfs",
            TMP_INSIDE,
            "--dir",
            HOME_INSIDE,
            "--bind" if spec.workspace.writable else "--ro-bind",
            str(workspace_real),
            WORKSPACE_INSIDE,
            *egress_args,
            *[word for host, inside in binds for word in ("--bind", host, inside)],
            # Everything not bound explicitly (/, /etc) becomes read-only too.
            "--remount-ro",
            "/",
            "--chdir",
            cwd_inside,
            "--",
            *argv,
        ]
        return args

    def _prepared(self, spec: SandboxSpec) -> tuple[SandboxIdentity, Path, str, dict[str, str]]:
        """Who runs ``spec``, its workspace, its working directory inside, its environment."""
        identity = resolve_identity(self.run_as_user, backend=self.name)
        workspace = resolve_workspace(spec.workspace.host_path)
        cwd = resolve_cwd(workspace, spec.cwd)
        check_workspace_access(workspace, identity, writable=spec.workspace.writable)
        rel = os.path.relpath(cwd, workspace)
        cwd_inside = WORKSPACE_INSIDE if rel == "." else f"{WORKSPACE_INSIDE}/{rel}"
        worker_env = self._worker_env if self._worker_env is not None else os.environ
        path = restrict_path(
            spec.env.get("PATH", worker_env.get("PATH")), safe_prefixes=self.safe_prefixes
        )
        env = build_sandbox_env(
            worker_env,
            spec.env,
            path=path,
            home=HOME_INSIDE,
            tmpdir=TMP_INSIDE,
            granted=spec.secret_env,
        )
        env["PWD"] = cwd_inside
        if spec.network is NetworkPolicy.PROXY:
            env.update(proxy_env(trust_bundle=sealed_call(spec.egress_dir)))
        return identity, workspace, cwd_inside, env

    def start(
        self, spec: SandboxSpec, *, binds: Sequence[tuple[str, str]] = ()
    ) -> tuple[StartedProcess | ExecFailure, Callable[[], None]]:
        """Start ``spec`` confined exactly as ``run`` would, and leave it running.

        For a command that stands across calls (a virtual desktop): the caller talks
        to it through its pipes or ``binds`` and ends it with ``StartedProcess.end``,
        then calls the returned release. ``spec.timeout_seconds`` is not enforced here.
        """
        if spec.network is NetworkPolicy.PROXY:
            raise SandboxUnavailableError(
                self.name, "a standing command has no egress proxy: a call's proxy ends with it"
            )
        identity, workspace, cwd_inside, env = self._prepared(spec)
        held = contextlib.ExitStack()
        try:
            etc = held.enter_context(self._etc_view.lease())
            argv = self.bwrap_argv(spec, workspace, cwd_inside, etc=etc, binds=binds)
            started = start_confined(
                argv,
                env=env,
                cwd=Path("/"),
                limits=spec.limits,
                identity=identity,
                cgroup_support=self._cgroup_support(),
            )
        except BaseException:
            held.close()
            raise
        if isinstance(started, ExecFailure):
            held.close()
        return started, held.close

    def run(self, spec: SandboxSpec) -> SandboxResult:
        """Run ``spec`` inside new namespaces; refusals raise a SandboxError."""
        identity, workspace, cwd_inside, env = self._prepared(spec)
        loopback = self.loopback_plan(spec, identity)
        try:
            return self._run(spec, workspace, cwd_inside, env, identity, loopback)
        except SpawnError as exc:
            if loopback is None or exc.stage != "network" or exc.errno != errno.EPERM:
                raise
            # Root without the right to make a network namespace (a worker in a
            # container): nothing ran; from now on the forwarder starts inside.
            network_namespaces.refuse(exc.reason)
            return self._run(spec, workspace, cwd_inside, env, identity, None)

    def _run(
        self, spec: SandboxSpec, workspace: Path, cwd_inside: str, env: dict[str, str],
        identity: SandboxIdentity, loopback: dict[str, object] | None,
    ) -> SandboxResult:  # fmt: skip
        timeout = spec.timeout_seconds
        if self.max_timeout_seconds is not None:
            timeout = min(timeout, self.max_timeout_seconds)
        with self._etc_view.lease() as etc:
            argv = self.bwrap_argv(
                spec, workspace, cwd_inside, info_fd=INFO_FD, etc=etc,
                network_ready=loopback is not None,
            )  # fmt: skip
            outcome = run_confined(
                argv,
                env=env,
                cwd=Path("/"),
                stdin=spec.stdin,
                timeout_seconds=timeout,
                limits=spec.limits,
                identity=identity,
                cgroup_support=self._cgroup_support(),
                kill_grace_seconds=self.kill_grace_seconds,
                exit_drain_seconds=self.exit_drain_seconds,
                nproc_headroom=USER_NAMESPACE_NPROC_HEADROOM,
                info_pipe=os.pipe(),
                loopback=loopback,
            )
        return result_from_outcome(self.name, outcome)

    def loopback_plan(
        self, spec: SandboxSpec, identity: SandboxIdentity
    ) -> dict[str, object] | None:
        """What the spawn server makes for ``spec`` before bubblewrap, or None
        (``namespace_network.loopback_plan``)."""
        return loopback_plan(spec, identity) if self.loopback_relay else None

    def probe(self) -> ProbeReport:
        """Really create the namespaces and run ``true`` inside; say why not when it fails."""
        from tools_app.sandbox.backends.namespace_probe import (
            probe_namespace,
            probe_nested_userns,
            read_int,
        )

        ok, reason = probe_namespace(self)
        details: dict[str, object] = {
            "bwrap": self.bwrap_path or "missing",
            "cgroup": self._cgroup_support().reason,
            "max_user_namespaces": read_int("/proc/sys/user/max_user_namespaces"),
        }
        if ok:
            details["nested_user_namespaces"] = probe_nested_userns(self)
            # Imported here: the module also serves code a bare system python runs,
            # where the proxy's dependencies are not installed.
            from tools_app.egress.probe import probe_egress

            _, egress = probe_egress(self)
            details["egress_proxy"] = egress
            reason = f"{reason}; {egress}"
        return ProbeReport(self.name, ok, reason, details)

    def close(self) -> None:
        """Nothing of this backend is held between calls.

        The spawn server, pooled cgroups and scratch directories belong to the
        worker process (shared by its backends) and go when it exits.
        """
