"""How a stdio MCP server starts: its argv wrapped in an isolating sandbox, its environment.

namespace: bubblewrap with the namespace backend's own command line (new user, pid,
net, ipc, uts and mount namespaces, read-only system directories, a private /tmp, the
workspace at /workspace), started as the sandbox user (``setpriv``) with rlimits
(``prlimit``) when the worker runs as root, held to its memory ceiling (its control
group's, and each process's writable memory, ``RLIMIT_DATA``). docker: ``docker run -i``
with no network, a read-only root, every capability dropped, no new privileges, pids,
memory and CPU limits. Never the bare subprocess backend.

Network: none, unless the entry's ``network`` allowlist names hosts; then the warm
server's egress directory (``tools_app.bridge.egress``) is bound at
``inside.MOUNT_POINT``, the server runs under the forwarder on its own loopback and the
proxy variables point there: the proxy is its only way out (docker keeps ``--network
none``). The entry's ``ro_binds`` (the server's code) are bound read-only into this
server's sandbox only; one missing on this host refuses the start, naming it. Secrets:
the values the broker gave for the server's ``secrets`` become environment variables;
docker's argv names them (``-e NAME``) and the values travel in the client's
environment only, never in an argv. Either way the server's standard output reaches the
client through ``wire_cap``: one message (a line) longer than
``SYNTHORG_BRIDGE_MAX_RESPONSE_BYTES`` stops the server.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from common.config.mcp import McpServer
from common.config.sandbox import SandboxingConfig
from tools_app.egress.mount import MOUNT_POINT as EGRESS_INSIDE
from tools_app.egress.mount import forwarded_argv, proxy_env, sealed_call
from tools_app.sandbox.backends.namespace import (
    HOME_INSIDE,
    TMP_INSIDE,
    WORKSPACE_INSIDE,
    NamespaceSandbox,
)
from tools_app.sandbox.env import build_sandbox_env, is_refused_for_a_secret
from tools_app.sandbox.errors import SandboxUnavailableError
from tools_app.sandbox.linux.cgroups import CallCgroup, detect_cgroup_support
from tools_app.sandbox.linux.identity import SandboxIdentity, resolve_identity
from tools_app.sandbox.linux.limits import ADDRESS_SPACE_HEADROOM_WITH_CGROUP
from tools_app.sandbox.paths import resolve_workspace, restrict_path
from tools_app.sandbox.protocol import MountMode, NetworkPolicy, SandboxSpec, WorkspaceMount
from tools_app.sandbox.runner import SHARED_NPROC_HEADROOM
from tools_app.sandbox.workspace import check_workspace_access

# Between the MCP client and the server's standard output: the cap on one message.
WIRE_CAP = Path(__file__).with_name("wire_cap.py")
# Open files and processes of the server (its own children included).
MAX_OPEN_FILES = 1024
MAX_PROCESSES = 256
# RLIMIT_NPROC counts every process and thread of the sandbox user, and other agents'
# calls run as that user too (hundreds at once when they wait): a ceiling of the
# server's own share alone failed its threads, so its calls, whenever they ran. It gets
# the same room for the user's other sandboxes as a call (tools_app.sandbox.runner);
# its own MAX_PROCESSES is the pids ceiling of its control group (``server_cgroup``).
SERVER_NPROC = MAX_PROCESSES + SHARED_NPROC_HEADROOM
# Run by /bin/sh before anything else of a server: joins the control group(s) named
# before ``--`` (as root, before setpriv drops to the sandbox user), then runs the rest.
# exec keeps the pid, so the server and every process it starts are in the group.
JOIN_CGROUP = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 126; shift; done; shift; exec "$@"'


@dataclass
class Launch:
    """The command the MCP client starts, its environment, and what to remove after."""

    argv: list[str]
    env: dict[str, str]
    scratch: list[Path] = field(default_factory=list)
    cgroup: CallCgroup | None = None
    """The server's control group: its ceilings; what is left in it is killed after."""
    memory_bytes: int | None = None
    """The server's memory ceiling, in bytes."""

    def out_of_memory(self) -> bool:
        """Whether the kernel stopped a process of the server at its memory ceiling."""
        return self.cgroup is not None and self.cgroup.oom_killed()

    def cleanup(self) -> None:
        if self.cgroup is not None:
            # A child the server left behind (one that outlived the client's end of it).
            self.cgroup.kill_all()
            self.cgroup.remove()
        for path in self.scratch:
            shutil.rmtree(path, ignore_errors=True)


def server_cgroup(identity: SandboxIdentity, memory_bytes: int) -> CallCgroup | None:
    """A control group holding a namespace server to ``MAX_PROCESSES`` and
    ``memory_bytes`` (no swap), where there is one.

    Only a worker running as root (one that switches to the sandbox user) joins the
    server to it; elsewhere the rlimits alone bound it.
    """
    support = detect_cgroup_support()
    if not identity.switch or not support.available:
        return None
    return CallCgroup(support, memory_bytes=memory_bytes, max_processes=MAX_PROCESSES)


def server_memory(server: McpServer, config: SandboxingConfig) -> int:
    """The memory ``server`` may hold: its entry's ceiling, else its backend's."""
    if server.memory_limit is not None:
        return server.memory_limit
    if server.backend == "docker":
        return int(config.docker.memory_limit)
    return int(config.namespace.server_memory_limit)


def per_agent(server: McpServer) -> bool:
    """True when each agent gets its own process of ``server`` (it holds state, or works in
    the agent's workspace), so its secrets are that agent's grants; else one process is
    shared by every agent and needs grants without an agent."""
    return server.state == "agent" or server.workspace == "agent"


def _check_ro_binds(server: McpServer) -> None:
    """Refuse to start a server whose own binds are missing here (bubblewrap would
    leave them out and the server would fail without saying why)."""
    missing = [path for path in server.ro_binds if not os.path.exists(path)]
    if missing:
        raise SandboxUnavailableError(
            server.backend,
            f"ro_binds of the MCP server {server.name}: {', '.join(missing)} does not exist "
            "on this worker",
        )


def _empty_workspace(uid: int | None) -> Path:
    made = Path(tempfile.mkdtemp(prefix="synthorg-mcp-"))
    if uid is not None:
        os.chown(made, uid, -1)
    made.chmod(0o700)
    return made


def _namespace(
    server: McpServer, workspace: Path | None, config: SandboxingConfig, *,
    egress_dir: Path | None, secret_env: Mapping[str, str],
) -> Launch:  # fmt: skip
    n = config.namespace
    sandbox = NamespaceSandbox(
        run_as_user=n.run_as_user,
        bwrap_path=n.bwrap_path,
        extra_safe_path_prefixes=n.extra_safe_path_prefixes,
        extra_ro_binds=(*n.extra_ro_binds, *server.ro_binds),
        tmpfs_size_bytes=n.tmpfs_size,
        use_cgroup=False,
    )
    identity = resolve_identity(sandbox.run_as_user, backend="namespace")
    scratch: list[Path] = []
    if workspace is None:
        workspace = _empty_workspace(identity.uid if identity.switch else None)
        scratch.append(workspace)
    real = resolve_workspace(workspace)
    check_workspace_access(real, identity, writable=True)
    spec = SandboxSpec(
        argv=tuple(server.command or ()),
        workspace=WorkspaceMount(real, MountMode.READ_WRITE),
        network=NetworkPolicy.PROXY if egress_dir is not None else NetworkPolicy.NONE,
        egress_dir=egress_dir,
    )
    argv = sandbox.bwrap_argv(spec, real, WORKSPACE_INSIDE)
    path = restrict_path(os.environ.get("PATH"), safe_prefixes=sandbox.safe_prefixes)
    env = build_sandbox_env(
        os.environ, server.env, path=path, home=HOME_INSIDE, tmpdir=TMP_INSIDE, granted=secret_env
    )
    if egress_dir is not None:
        env.update(proxy_env(trust_bundle=sealed_call(egress_dir)))
    # The MCP client adds these from the worker's own environment unless they are set.
    env.update(PWD=WORKSPACE_INSIDE, USER=identity.name, LOGNAME=identity.name)
    env.setdefault("SHELL", "/bin/sh")
    env.setdefault("TERM", "dumb")
    memory = server_memory(server, config)
    group = server_cgroup(identity, memory)
    # Each process's writable memory: the wall where there is no group; with one, the
    # group's ceiling (which counts every process together) comes first.
    data = memory * (ADDRESS_SPACE_HEADROOM_WITH_CGROUP if group is not None else 1)
    limits = ["prlimit", f"--nofile={MAX_OPEN_FILES}", f"--nproc={SERVER_NPROC}",
              f"--data={data}", "--"]  # fmt: skip
    drop: list[str] = []
    if identity.switch:
        drop = ["setpriv", f"--reuid={identity.uid}", f"--regid={identity.gid}",
                "--clear-groups", "--inh-caps=-all", "--"]  # fmt: skip
    join: list[str] = []
    if group is not None:
        join = ["/bin/sh", "-c", JOIN_CGROUP, "synthorg-join", *group.procs_files, "--"]
    return Launch(
        argv=[*join, *drop, *limits, *argv], env=env, scratch=scratch, cgroup=group,
        memory_bytes=memory,
    )  # fmt: skip


def _docker(
    server: McpServer, workspace: Path | None, config: SandboxingConfig, *,
    egress_dir: Path | None, secret_env: Mapping[str, str],
) -> Launch:  # fmt: skip
    d = config.docker
    docker = shutil.which("docker")
    if docker is None:
        raise SandboxUnavailableError("docker", "the docker command line is not installed")
    scratch: list[Path] = []
    if workspace is None:
        workspace = _empty_workspace(None)
        scratch.append(workspace)
    granted = {k: v for k, v in secret_env.items() if not is_refused_for_a_secret(k)}
    env_values = {**server.env, **granted}
    command: tuple[str, ...] = tuple(server.command or ())
    egress_args: list[str] = []
    if egress_dir is not None:
        # Still no interface but loopback: the forwarder relays to the bound-in socket.
        # The proxy variables go in the argv: in the client's environment the docker
        # command line itself would use them.
        command = forwarded_argv(command)
        egress_args = ["-v", f"{egress_dir}:{EGRESS_INSIDE}:ro"]
        variables = proxy_env(trust_bundle=sealed_call(egress_dir))
        egress_args += [a for name, value in variables.items() for a in ("-e", f"{name}={value}")]
    binds = [a for path in server.ro_binds for a in ("-v", f"{path}:{path}:ro")]
    argv = [
        docker, "run", "-i", "--rm", "--network", "none", "--read-only",
        "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
        "--pids-limit", str(d.pids_limit), "--memory", str(server_memory(server, config)),
        "--cpus", str(d.cpu_limit), "--tmpfs", f"{TMP_INSIDE}:size={int(d.tmpfs_size)}",
        "--label", "synthorg.managed=true", "--label", f"synthorg.mcp_server={server.name}",
        "-v", f"{resolve_workspace(workspace)}:{WORKSPACE_INSIDE}:rw", "-w", WORKSPACE_INSIDE,
        *egress_args,
        *binds,
        *[a for name in env_values for a in ("-e", name)],
        d.image, *command,
    ]  # fmt: skip
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env_values}
    if d.docker_host:
        env["DOCKER_HOST"] = d.docker_host
    elif os.environ.get("DOCKER_HOST"):
        env["DOCKER_HOST"] = os.environ["DOCKER_HOST"]
    return Launch(argv=argv, env=env, scratch=scratch, memory_bytes=server_memory(server, config))


def stdio_launch(
    server: McpServer, *, workspace: Path | None, config: SandboxingConfig,
    egress_dir: Path | None = None, secret_env: Mapping[str, str] | None = None,
) -> Launch:  # fmt: skip
    """The sandboxed command line of ``server``; a SandboxError when it cannot run here.

    ``egress_dir``: the server's egress directory (its proxy is the only way out), or
    None for no network. ``secret_env``: the broker's values for its ``secrets``.
    """
    _check_ro_binds(server)
    build = _docker if server.backend == "docker" else _namespace
    launch = build(server, workspace, config, egress_dir=egress_dir, secret_env=secret_env or {})
    # Its standard output reaches the MCP client through the cap on one message.
    cap = str(settings.SYNTHORG_BRIDGE_MAX_RESPONSE_BYTES)
    launch.argv = [sys.executable, "-I", "-S", str(WIRE_CAP), cap, "--", *launch.argv]
    return launch
